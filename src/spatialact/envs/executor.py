"""Execute a whole :class:`~spatialact.action_space.ActionSequence` in an environment (docs/environments.md).

The executor turns ``terminate_on_success`` off and raises ``max_steps`` to at least the sequence length for the
duration of the run (and restores both), so every step runs, as the paper's one-shot evaluation executes an answer.
Poses are (4, 4) C2W float64 (metres, world +Z up, OpenCV axes) of the controlled frame: the camera for CameraNav,
the measured end-effector for GripperManip, the hand for HandManip.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..action_space import ActionSequence
from ..tasks import Task

__all__ = ["ExecutionResult", "execute_sequence"]


@dataclass(frozen=True)
class ExecutionResult:
    """``poses`` (K+1, 4, 4) visited poses starting at the start pose; ``frames`` (K+1, H, W, 3) uint8 observations
    (or None); ``infos`` the K+1 info dicts; final ``success``, ``position_error`` (m), ``rotation_error`` (rad)."""

    poses: np.ndarray
    frames: np.ndarray | None
    infos: tuple
    success: bool
    position_error: float
    rotation_error: float


def execute_sequence(env, seq: ActionSequence, task: Task | None = None, render: bool = True) -> ExecutionResult:
    """Run ``seq`` (with its own unit sizes) from ``task``'s start (the env is reset to it), or from the current
    state when ``task`` is None."""
    if not isinstance(seq, ActionSequence):
        raise TypeError(f"execute_sequence takes an ActionSequence, got {type(seq).__name__}")
    base = env.unwrapped
    saved = (base.terminate_on_success, base.max_steps)
    base.terminate_on_success = False
    base.max_steps = max(base.max_steps, len(seq))
    try:
        if task is not None:
            obs, info = env.reset(options={"task": task})
        elif base.task is None:
            raise RuntimeError("execute_sequence needs a task, or an environment that has been reset")
        else:
            obs, info = base.last_observation if render else None, base.current_info()
            if render and obs is None:
                obs = base.observe()
        poses, frames, infos = [base.pose], [obs["rgb"]] if render else None, [info]
        for step in seq.steps:
            obs, info = base.apply_step(step, seq.sizes, observe=render)
            poses.append(base.pose)
            infos.append(info)
            if render:
                frames.append(obs["rgb"])
    finally:
        base.terminate_on_success, base.max_steps = saved
    last = infos[-1]
    return ExecutionResult(poses=np.stack(poses), frames=np.stack(frames) if render else None, infos=tuple(infos),
                           success=bool(last["success"]), position_error=float(last["position_error"]),
                           rotation_error=float(last["rotation_error"]))
