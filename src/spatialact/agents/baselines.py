"""Calibration baselines: ``random``, ``stay``, ``oracle``, ``noisy-oracle`` and ``constant`` (docs/agents.md).

Their scores are the calibration rows of every report: ``oracle`` is the ceiling (1.0 one-shot), ``stay`` and
``random`` the floors, ``constant`` (always the same primitive) the extreme of a biased answerer for the
diagnostics: the largest left/right bias and the largest mirror inconsistency a one-primitive answer can have. Every baseline answers in the task's answer format with the task's unit sizes, so its text
goes through the same parser and scorer as a model's.

Poses are (4, 4) float64 C2W matrices (metres; world +Z up; camera OpenCV axes: +X right, +Y down, +Z forward);
a step's motion is in the body frame of the pose it starts from.
"""

from __future__ import annotations

import time

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, Primitive, Step, lookup_primitive
from ..scorers import null_answer
from .base import (AgentConfigError, AgentTurn, observation_mode, observation_step, quantise_motion,
                   stay_sequence, task_rng, turn_from_sequence)

__all__ = ["BaselineAgent", "StayAgent", "RandomAgent", "OracleAgent", "NoisyOracleAgent", "ConstantAgent"]


class BaselineAgent:
    """Shared plumbing: the task, the mode and the seed of the episode."""

    name = "baseline"

    def __init__(self, seed: int = 0):
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise AgentConfigError(f"{self.name}: seed must be an integer, got {seed!r}")
        self.seed = int(seed)
        self.model = None
        self.task = None
        self.mode = "one-shot"
        self.episode_seed = 0

    def reset(self, task, mode: str | None = None, seed: int | None = None, **kwargs) -> None:
        self.task = task
        if mode is not None:
            self.mode = mode
        self.episode_seed = int(seed) if seed is not None else 0

    def _require_task(self):
        if self.task is None:
            raise RuntimeError(f"{self.name}: act() called before reset(task)")
        return self.task

    def params(self) -> dict:
        return {"seed": self.seed}

    def describe(self) -> dict:
        return {"agent": self.name, "model": None, "params": self.params()}

    def _turn(self, seq: ActionSequence, t0: float, info: dict | None = None) -> AgentTurn:
        return turn_from_sequence(seq, self.task.answer_format, time.perf_counter() - t0, info)


class StayAgent(BaselineAgent):
    """Answers the null answer (:func:`spatialact.scorers.null_answer`, whose score is the task's s0, the zero of
    skill): one-shot, one Stay step per ground-truth step (so only the motion is judged, not the length);
    closed-loop, Stay at once — one Stay turn, which ends the episode where it started with nothing executed (the
    null answer's empty sequence)."""

    name = "stay"

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self._require_task()
        seq = null_answer(task, observation_mode(observation, self.mode))
        if not len(seq):  # closed-loop: the empty sequence is said as one Stay turn (it executes nothing)
            seq = stay_sequence(task.sizes, task.gt.cap, 1)
        return self._turn(seq, t0)


class RandomAgent(BaselineAgent):
    """Random counts: per step, each of the six axes moves with probability ``p_move`` by 1…``max_count``
    units in a random direction; manipulation and hand steps get a random gripper state. One-shot answers have
    the ground truth's number of steps; closed-loop answers one step. The draws depend only on (seed, task id,
    episode seed, step index)."""

    name = "random"

    def __init__(self, seed: int = 0, p_move: float = 0.5, max_count: int = 5):
        super().__init__(seed)
        if not 0.0 <= float(p_move) <= 1.0:
            raise AgentConfigError(f"random: p_move must lie in [0, 1], got {p_move!r}")
        if int(max_count) < 1:
            raise AgentConfigError(f"random: max_count must be ≥ 1, got {max_count!r}")
        self.p_move, self.max_count = float(p_move), int(max_count)

    def params(self) -> dict:
        return {"seed": self.seed, "p_move": self.p_move, "max_count": self.max_count}

    def _step(self, rng: np.random.Generator, kind: str, cap: int) -> Step:
        move = rng.random(6) < self.p_move
        mag = rng.integers(1, min(self.max_count, cap) + 1, size=6)
        sign = np.where(rng.random(6) < 0.5, -1, 1)
        grip = int(rng.integers(0, 2)) if kind in ("manip", "hand") else None
        return Step.from_signed((move * mag * sign).tolist(), gripper=grip)

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self._require_task()
        mode = observation_mode(observation, self.mode)
        k = observation_step(observation)
        rng = task_rng(self.seed, task.id, self.episode_seed, k)
        n = 1 if mode == "closed-loop" else max(1, task.n_steps)
        seq = ActionSequence(tuple(self._step(rng, task.kind, task.gt.cap) for _ in range(n)), task.sizes,
                             task.gt.cap)
        return self._turn(seq, t0)


class OracleAgent(BaselineAgent):
    """The task's ground truth.

    One-shot: exactly ``task.gt``. Closed-loop with ``observation["pose"]``: while the pose is on the
    ground-truth path (within a quarter unit of the ground-truth pose of the same index), the ground-truth step;
    otherwise (or when that step does nothing and more follow: it would read as Stay and end the episode) the motion from the current pose to the goal pose (``Δ = T_cur⁻¹ T_goal``, body frame), decomposed into (truck, pedestal, dolly, tilt, pan,
    roll), rounded to whole units of the task's sizes and clipped to the cap — one step at a time, Stay when
    every count rounds to 0 (then the goal is within half a unit per axis). The gripper follows the
    ground-truth step of the same index (the last one after the end). Closed-loop without a pose: the
    ground-truth step of the current index, then Stay.
    """

    name = "oracle"

    def _gt_gripper(self, k: int):
        steps = self.task.gt.steps
        if not steps:
            return None
        return steps[min(k, len(steps) - 1)].gripper

    def _closed_loop_step(self, observation: dict) -> tuple[ActionSequence, dict]:
        task = self.task
        k = observation_step(observation)
        pose = observation.get("pose")
        if pose is None:
            if k < len(task.gt):
                return task.gt[k:k + 1], {"source": "gt_step"}
            return stay_sequence(task.sizes, task.gt.cap, 1, self._gt_gripper(k)), {"source": "gt_done"}
        pose = np.asarray(pose, dtype=np.float64)
        gt_step = task.gt.steps[k] if k < len(task.gt) else None
        # A ground-truth step that does nothing (an extraction interval whose motion rounds to zero) would read as
        # Stay and end a closed-loop episode before the goal: plan from the pose instead.
        idle = (gt_step is not None and gt_step.is_stay() and k + 1 < len(task.gt)
                and gt_step.gripper in (None, self._gt_gripper(k - 1) if k else None))
        if gt_step is not None and not idle:
            # Still on the ground-truth path (a kinematic simulator executes steps exactly): follow it, so the
            # closed-loop oracle scores like the one-shot one. Off the path (a controller that lands elsewhere),
            # plan from the pose reached.
            ref = task.gt_poses()[k]
            if (np.linalg.norm(pose[:3, 3] - ref[:3, 3]) <= 0.25 * task.sizes.translation
                    and float(geometry.rotation_error(pose, ref)) <= 0.25 * task.sizes.rotation):
                return task.gt[k:k + 1], {"source": "gt_step"}
        delta = geometry.relative_pose(pose, task.goal_pose)
        counts = quantise_motion(geometry.delta_to_motion(delta), task.sizes, task.gt.cap)
        step = Step.from_signed(counts.tolist(), gripper=self._gt_gripper(k))
        return ActionSequence((step,), task.sizes, task.gt.cap), {"source": "pose"}

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self._require_task()
        if observation_mode(observation, self.mode) == "closed-loop":
            seq, info = self._closed_loop_step(observation)
            return self._turn(seq, t0, info)
        return self._turn(task.gt, t0)


class NoisyOracleAgent(OracleAgent):
    """The oracle with seeded count noise: every signed count gets ``round(N(0, noise))`` added (a vector step
    gets ``N(0, noise)`` units), and each gripper state flips with probability ``grip_flip``."""

    name = "noisy-oracle"

    def __init__(self, seed: int = 0, noise: float = 1.0, grip_flip: float = 0.0):
        super().__init__(seed)
        if not (float(noise) >= 0.0):
            raise AgentConfigError(f"noisy-oracle: noise must be ≥ 0, got {noise!r}")
        if not 0.0 <= float(grip_flip) <= 1.0:
            raise AgentConfigError(f"noisy-oracle: grip_flip must lie in [0, 1], got {grip_flip!r}")
        self.noise, self.grip_flip = float(noise), float(grip_flip)

    def params(self) -> dict:
        return {"seed": self.seed, "noise": self.noise, "grip_flip": self.grip_flip}

    def _perturb(self, seq: ActionSequence, rng: np.random.Generator) -> ActionSequence:
        cap = seq.cap
        out = []
        for s in seq.steps:
            g = s.gripper
            if g is not None and rng.random() < self.grip_flip:
                g = 1 - g
            if s.counts is not None:
                c = s.signed_counts() + np.round(rng.normal(0.0, self.noise, 6)).astype(np.int64)
                out.append(Step.from_signed(np.clip(c, -cap, cap).tolist(), gripper=g))
            else:
                units = seq.sizes.units()
                m = np.asarray(s.motion) + rng.normal(0.0, self.noise, 6) * units
                out.append(Step.from_motion(np.clip(m, -cap * units, cap * units), gripper=g))
        return ActionSequence(tuple(out), seq.sizes, cap)

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self._require_task()
        rng = task_rng(self.seed, task.id, self.episode_seed, observation_step(observation))
        if observation_mode(observation, self.mode) == "closed-loop":
            seq, info = self._closed_loop_step(observation)
            if seq.steps[0].is_stay():
                # Arrived: keep Stay, so the episode can end (noise would keep it wandering to max_steps).
                return self._turn(seq, t0, info)
        else:
            seq, info = task.gt, {}
        return self._turn(self._perturb(seq, rng), t0, info)


class ConstantAgent(BaselineAgent):
    """Always the same primitive, whatever it sees: ``action`` (a motion primitive's name, symbol or alias, e.g.
    ``"Truck Left"``; Push / Pull stand for Dolly In / Out; ``"Stay"`` answers Stay) ``count`` units at a time.
    One-shot: one such step per ground-truth step; closed-loop: one step per turn (so a moving constant agent runs
    to the step limit). No gripper state. A calibration row for the diagnostics: its left/right bias is ±1 for a
    Truck, Pan or Roll primitive, and under a mirror it answers the same words, which mean the opposite side."""

    name = "constant"

    def __init__(self, seed: int = 0, action: str = "Truck Left", count: int = 1):
        super().__init__(seed)
        prim = lookup_primitive(action) if isinstance(action, str) else None
        if prim is not None and prim.spec.motion_as is not None:
            prim = prim.spec.motion_as
        if prim is None or (prim is not Primitive.STAY and prim.spec.axis is None):
            raise AgentConfigError(f"constant: action must name a motion primitive (e.g. \"Truck Left\") or "
                                   f"\"Stay\", got {str(action)[:60]!r}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or not 1 <= int(count) <= 10:
            raise AgentConfigError(f"constant: count must be a whole number from 1 to 10, got {count!r}")
        self.primitive, self.count = prim, int(count)

    def params(self) -> dict:
        return {"seed": self.seed, "action": self.primitive.value, "count": self.count}

    def _step(self, count: int) -> Step:
        if self.primitive is Primitive.STAY:
            return Step.stay()
        return Step.from_counts({self.primitive: count})

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self._require_task()
        n = 1 if observation_mode(observation, self.mode) == "closed-loop" else max(1, task.n_steps)
        step = self._step(min(self.count, task.gt.cap))
        return self._turn(ActionSequence(tuple(step for _ in range(n)), task.sizes, task.gt.cap), t0)
