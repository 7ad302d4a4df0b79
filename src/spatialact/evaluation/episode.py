"""One episode: a task, an agent and (when the task has a scene) a simulator → one result record.

Modes (SPEC §8):

* ``one-shot`` (the paper's): the agent sees the start and goal views once and answers a whole sequence; the
  answer is scored step by step against the ground truth and, when the task has a scene, executed in the
  simulator for the closed-loop metrics;
* ``closed-loop``: observe, act one step (the first step of the agent's answer), repeat until the agent answers
  Stay (or nothing usable) or ``max_steps`` steps have run; the executed steps are scored against the ground
  truth and the visited poses give the closed-loop metrics.

Poses in records are 4×4 C2W matrices in metres (world +Z up, camera OpenCV axes), as nested lists. The record
layout is documented in ``docs/results.md``.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..action_space import ActionSequence
from ..tasks import Task

__all__ = ["EpisodeConfig", "EpisodeFrames", "run_episode", "episode_key", "episode_seed"]

MODES = ("one-shot", "closed-loop")
ENVS = ("pybullet", "habitat", "none")


@dataclass(frozen=True)
class EpisodeConfig:
    """How episodes are run; part of a run's configuration (a changed value refuses a resume).

    ``env``: ``pybullet`` (the embedded default), ``habitat`` (CameraNav on habitat-sim, when installed) or
    ``none`` (one-shot scoring only, no simulator). Images are ``width``×``height`` pixels.
    """

    mode: str = "one-shot"
    env: str = "pybullet"
    renderer: str = "auto"
    width: int = 128
    height: int = 128
    max_steps: int = 20
    profile: str = "paper"
    weights: tuple[float, float, float] | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.env not in ENVS:
            raise ValueError(f"env must be one of {ENVS}, got {self.env!r}")
        if self.profile not in ("paper", "paper+rot"):
            raise ValueError(f"profile must be 'paper' or 'paper+rot' for episodes, got {self.profile!r}")
        if self.weights is not None:
            w = tuple(float(x) for x in self.weights)
            if len(w) != 3 or any(not math.isfinite(x) or x < 0 for x in w) or sum(w) <= 0:
                raise ValueError(f"weights must be three non-negative numbers with a positive sum, got {self.weights!r}")
            object.__setattr__(self, "weights", w)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["weights"] = list(self.weights) if self.weights is not None else None
        return d


@dataclass
class EpisodeFrames:
    """RGB frames (H, W, 3) uint8 of one episode, stored by the caller: start, goal and final view."""

    start: np.ndarray | None = None
    goal: np.ndarray | None = None
    final: np.ndarray | None = None

    def items(self):
        return [(k, v) for k, v in (("start", self.start), ("goal", self.goal), ("final", self.final))
                if v is not None]


def episode_key(task_id: str, agent: str, env: str, mode: str, seed: int) -> str:
    """The resume key of SPEC §8: (task, agent, env, mode, seed)."""
    return "|".join([task_id, agent, env, mode, str(seed)])


def episode_seed(seed: int, task_id: str) -> int:
    """A per-episode seed that depends only on the run seed and the task: episodes give the same result in
    whatever order, process or Ray worker they run."""
    h = hashlib.sha256(f"{seed}|{task_id}".encode()).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF  # fits a C int (OpenCV's RNG seed is one)


def _load_image(path: str | None) -> np.ndarray | None:
    if not path:
        return None
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def env_name(task: Task, cfg: EpisodeConfig) -> str:
    """The simulator an episode runs in: tasks without a scene are scored one-shot without one."""
    return "none" if (cfg.env == "none" or task.scene is None) else cfg.env


def _make_env(task: Task, cfg: EpisodeConfig):
    name = env_name(task, cfg)
    if name == "none":
        return None
    from ..envs import make_env

    return make_env(task.kind, task=task, action_mode="continuous", renderer=cfg.renderer, width=cfg.width,
                    height=cfg.height, seed=cfg.seed, backend=name, max_steps=max(cfg.max_steps, 1),
                    terminate_on_success=False)


def _observation(task: Task, cfg: EpisodeConfig, env, obs: dict | None, info: dict | None, start_rgb,
                 step_index: int) -> dict:
    """What an agent sees (the ``Agent`` protocol's observation dict)."""
    o: dict[str, Any] = {"step_index": step_index, "mode": cfg.mode, "start_rgb": start_rgb, "depth": None,
                         "intrinsics": None}
    if obs is not None:
        u = env.unwrapped
        o["rgb"], o["goal_rgb"] = obs["rgb"], obs["goal_rgb"]
        o["depth"] = obs["depth"] if "depth" in obs else u.observation_depth()  # the rgb camera's depth
        o["intrinsics"] = np.asarray(u.intrinsics, dtype=np.float64)
        o["pose"] = np.asarray(info["pose"], dtype=np.float64)
    else:
        o["rgb"] = _load_image(task.start_image)
        o["goal_rgb"] = _load_image(task.goal_image)
        o["pose"] = task.start_pose
    if o["start_rgb"] is None:
        o["start_rgb"] = o["rgb"]
    return o


def _score(pred: ActionSequence, parse, task: Task, cfg: EpisodeConfig, n_repairs: int) -> dict:
    from ..scorers import score_episode

    s = score_episode(pred, task.gt, kind=task.kind, profile=cfg.profile, weights=cfg.weights).to_dict()
    ok = parse is not None and parse.ok
    out = {"score": float(s["total"]), **{k: s.get(k) for k in ("s_d", "s_theta", "s_step", "s_rot", "s_grip")},
           "per_step": s.get("per_step"), "net_translation_error": s.get("net_translation_error"),
           "net_rotation_error": s.get("net_rotation_error"), "weights": s.get("weights"),
           "ok": bool(ok), "reason": None, "n_repairs": int(n_repairs)}
    if parse is not None and not parse.ok:
        # SPEC §3: text with no usable step scores 0 with reason parse_error.
        out.update(score=0.0, reason="parse_error")
    return out


def run_episode(task: Task, agent, cfg: EpisodeConfig) -> tuple[dict, EpisodeFrames]:
    """Run one episode and return (record, frames). The record holds no images; the caller stores the frames.

    Never raises for a bad model answer: a parse failure scores 0 with reason ``parse_error`` and the (empty)
    answer still executes, so the closed-loop figures exist. An exception inside the simulator or the agent is
    recorded as the episode's ``error`` with a score of 0 and ``reason: "error"``.
    """
    t0 = time.perf_counter()
    frames = EpisodeFrames()
    turns: list = []
    env = None
    try:
        env = _make_env(task, cfg)
        obs, info = env.reset(seed=cfg.seed, options={"task": task}) if env is not None else (None, None)
        observation = _observation(task, cfg, env, obs, info, None, 0)
        frames.start, frames.goal = observation.get("rgb"), observation.get("goal_rgb")
        gl = info.get("renderer") if isinstance(info, dict) else None  # which GL answered (SPEC §6)
        if observation["rgb"] is None or observation["goal_rgb"] is None:
            raise ValueError(f"task {task.id!r} has neither a scene nor start/goal images")
        agent.reset(task)
        if cfg.mode == "one-shot":
            turn = agent.act(observation)
            turns.append(turn)
            pred, parse = turn.parse.sequence, turn.parse
            n_repairs = len(parse.repairs)
            if env is not None:
                from ..envs import execute_sequence

                result = execute_sequence(env, pred, task)
                poses = np.asarray(result.poses)
                frames.final = result.frames[-1] if result.frames is not None else None
                last_info = result.infos[-1] if result.infos else info
            else:
                poses, last_info = pred.to_poses(task.start_pose), None
        else:
            pred, parse, n_repairs, poses, last_info = _closed_loop(task, agent, cfg, env, observation, info,
                                                                   turns, frames)
        scores = _score(pred, parse, task, cfg, n_repairs)
        closed = _closed_metrics(poses, task, last_info, env is not None)
        error = next((t.error for t in turns if getattr(t, "error", None)), None)
        record = _record(task, agent, cfg, scores, closed, pred, turns, poses, error, time.perf_counter() - t0)
        record["gl_renderer"] = gl
    except Exception as e:  # the run goes on; the reason is kept with the episode
        record = _record(task, agent, cfg, None, None, None, turns, task.start_pose[None],
                         f"{e.__class__.__name__}: {e}", time.perf_counter() - t0)
    finally:
        if env is not None:
            env.close()
    return record, frames


def _closed_loop(task, agent, cfg, env, observation, info, turns, frames):
    """Observe, act one step, repeat. Returns (executed sequence, last parse, repairs, visited poses, last info)."""
    if env is None:
        raise ValueError(f"task {task.id!r} has no scene: closed-loop mode needs a simulator")
    start_rgb = observation["rgb"]
    executed, n_repairs, last_info, parse = [], 0, info, None
    poses = [np.asarray(info["pose"], dtype=np.float64)]
    while len(executed) < cfg.max_steps:
        turn = agent.act(observation)
        turns.append(turn)
        parse = turn.parse
        n_repairs += len(parse.repairs)
        seq = parse.sequence
        if not parse.ok or len(seq) == 0:
            break
        step = seq.steps[0]
        prev_grip = executed[-1].gripper if executed else None
        if step.is_stay() and step.gripper in (None, prev_grip):
            break  # Stay ends the episode (SPEC §8)
        obs, last_info = env.unwrapped.apply_step(step, seq.sizes)
        executed.append(step)
        poses.append(np.asarray(last_info["pose"], dtype=np.float64))
        observation = _observation(task, cfg, env, obs, last_info, start_rgb, len(executed))
    frames.final = observation.get("rgb")
    pred = ActionSequence(tuple(executed), task.sizes)
    if parse is not None and not parse.ok and executed:
        parse = None  # a late unusable answer ends the loop; the executed steps still count
    return pred, parse, n_repairs, np.stack(poses), last_info


def _closed_metrics(poses: np.ndarray, task: Task, last_info, simulated: bool) -> dict | None:
    from ..scorers import closed_loop_metrics

    m = dict(closed_loop_metrics(poses, task))
    if simulated and isinstance(last_info, dict) and (task.success or {}).get("object_state"):
        # An object-state test (pick and place) is judged by the simulator, not by the pose.
        m["success"] = bool(last_info.get("success", False))
    m["simulated"] = simulated
    return m


def _record(task, agent, cfg, scores, closed, pred, turns, poses, error, wall_s) -> dict:
    usage = {"prompt_tokens": 0, "completion_tokens": 0}
    for t in turns:
        u = getattr(t, "usage", None) or {}
        for k in usage:
            usage[k] += int(u.get(k, 0) or 0)
    desc = agent.describe() if hasattr(agent, "describe") else {"agent": getattr(agent, "name", "?")}
    agent_name = desc.get("agent") or desc.get("name") or getattr(agent, "name", "?")
    env = env_name(task, cfg)
    scores = scores or {"score": 0.0, "s_d": None, "s_theta": None, "s_step": None, "s_rot": None,
                        "s_grip": None, "per_step": None, "ok": False, "reason": "error", "n_repairs": 0}
    closed = closed or {}
    parse = turns[-1].parse if turns else None
    return {
        "key": episode_key(task.id, agent_name, env, cfg.mode, cfg.seed),
        "task_id": task.id, "kind": task.kind, "source": task.source, "tags": dict(task.tags),
        "agent": agent_name, "model": desc.get("model"), "env": env, "mode": cfg.mode, "seed": cfg.seed,
        **scores,
        "repairs": list(parse.repairs) if parse is not None else [],
        "response": turns[0].text if len(turns) == 1 else [t.text for t in turns],
        "pred": pred.to_dict() if pred is not None else None,
        "gt_poses": task.gt_poses().tolist(),
        "pred_poses": np.asarray(poses).tolist(),
        "start_pose": task.start_pose.tolist(), "goal_pose": task.goal_pose.tolist(),
        "final_position_error": closed.get("final_position_error"),
        "final_rotation_error": closed.get("final_rotation_error"),
        "success": closed.get("success"), "path_length": closed.get("path_length"), "d0": closed.get("d0"),
        "spl": closed.get("spl"), "n_steps": closed.get("n_steps", len(pred) if pred is not None else 0),
        "simulated": closed.get("simulated", False),
        "latency_s": float(sum(getattr(t, "latency_s", 0.0) or 0.0 for t in turns)),
        "usage": usage, "wall_s": float(wall_s), "error": error,
    }
