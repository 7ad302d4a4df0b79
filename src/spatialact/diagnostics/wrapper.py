"""``MirrorWrapper``: FlipEval for a Gymnasium environment of :mod:`spatialact.envs` (docs/diagnostics.md).

Imports Gymnasium (the ``sim`` extra); the rest of :mod:`spatialact.diagnostics` does not. Frames and the mirror
``M = diag(−1, 1, 1, 1)`` as in :mod:`spatialact.diagnostics.mirror`.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from ..action_space import Step, mirror
from ..tasks import Task
from .mirror import flip_image, mirror_info, mirror_K, mirror_observation, mirror_task

__all__ = ["MirrorWrapper", "discrete_mirror_table"]


def discrete_mirror_table(n: int) -> np.ndarray:
    """Index map of the ``discrete`` action mode (``Discrete(n)``): 0 Stay and the gripper actions (13, 14) stay,
    each motion primitive 1–12 becomes its mirror (Truck, Pan and Roll change side)."""
    table = np.arange(n)
    for a in range(1, 13):
        c = [0] * 12
        c[a - 1] = 1
        table[a] = 1 + int(np.argmax(Step(counts=tuple(c)).mirrored().counts))
    return table


class MirrorWrapper(gym.Wrapper):
    """The wrapped environment's task, mirrored left-right.

    Observations come flipped left-right (``rgb``, ``goal_rgb``, ``depth``, ``wrist_rgb``, ``recorded_rgb``);
    ``info`` poses (``pose``, ``goal_pose``, ``commanded_pose``) are ``M T M`` and object positions have x negated;
    :attr:`task` is :func:`~spatialact.diagnostics.mirror_task` of the current task (poses ``M T M``, ground truth
    ``mirror(gt)``, the instruction with left and right swapped). Actions are read in the mirrored world and
    mirrored back before the wrapped environment runs them (:meth:`mirror_action` for the action modes,
    :meth:`apply_step` for one Step, :meth:`answer` for a whole answer). Rewards, termination and success are the
    real episode's (a mirror changes no distance or angle). Spaces are the wrapped environment's.

    A task passed to ``reset(options={"task": task})`` is the task as its file holds it (the original world).
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        base = env.unwrapped
        if not hasattr(base, "apply_step") or not hasattr(base, "action_mode"):
            raise TypeError(f"MirrorWrapper wraps a spatialact environment, got {type(base).__name__}")
        self._discrete = discrete_mirror_table(int(env.action_space.n)) if base.action_mode == "discrete" else None
        self._task_src = None
        self._task_mirrored = None

    @property
    def task(self) -> Task | None:
        """The current task in the mirrored world (None before ``reset``)."""
        src = self.env.unwrapped.task
        if src is None:
            return None
        if src is not self._task_src:
            self._task_src, self._task_mirrored = src, mirror_task(src)
        return self._task_mirrored

    @property
    def pose(self) -> np.ndarray:
        """The controlled frame's C2W pose in the mirrored world."""
        return mirror(self.env.unwrapped.pose)

    @property
    def goal_pose(self) -> np.ndarray:
        return mirror(self.env.unwrapped.goal_pose)

    @property
    def intrinsics(self) -> np.ndarray:
        """Pinhole K (3, 3) of the flipped images."""
        base = self.env.unwrapped
        return mirror_K(base.intrinsics, base.camera.width)

    def reset(self, *, seed=None, options=None):
        obs, info = self.env.reset(seed=seed, options=options)
        return mirror_observation(obs), mirror_info(info)

    def mirror_action(self, action):
        """An action of the wrapped environment's mode given in the mirrored world, as it acts in the original one:
        ``discrete`` swaps the primitive indices, ``step`` negates the truck, pan and roll counts (``a → 2·cap −
        a``), ``continuous`` negates dx, d_roll and d_yaw."""
        base = self.env.unwrapped
        if base.action_mode == "discrete":
            return int(self._discrete[int(np.asarray(action).reshape(()))])
        if base.action_mode == "step":
            a = np.array(action, dtype=np.int64).reshape(7)
            a[[0, 4, 5]] = 2 * base.cap - a[[0, 4, 5]]
            return a
        a = np.array(action, dtype=np.float32).reshape(7)
        a[[0, 3, 5]] = -a[[0, 3, 5]]
        return a

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(self.mirror_action(action))
        return mirror_observation(obs), reward, terminated, truncated, mirror_info(info)

    def answer(self, seq):
        """An answer (ActionSequence or Step) given in the mirrored world, in the wrapped environment's world."""
        return mirror(seq)

    def apply_step(self, step: Step, sizes=None, observe: bool = True):
        """Execute one whole Step given in the mirrored world (``SpatialActEnv.apply_step``, not counted toward
        ``max_steps``); returns the mirrored (obs, info), obs None when ``observe`` is False."""
        obs, info = self.env.unwrapped.apply_step(mirror(step), sizes, observe=observe)
        return (mirror_observation(obs) if obs is not None else None), mirror_info(info)

    def render(self):
        img = self.env.render()
        return None if img is None else flip_image(img)
