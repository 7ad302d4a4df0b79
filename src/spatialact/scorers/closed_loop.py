"""Closed-loop metrics (docs/scoring.md, "Closed-loop metrics"): where an executed episode ended, whether it
succeeded, and how directly.

Input: the poses the agent visited, (K+1, 4, 4) C2W (metres, world +Z up, camera OpenCV axes), starting at the
start pose, and the task (goal pose, success thresholds in metres and radians).
"""

from __future__ import annotations

import math

import numpy as np

from .. import geometry
from .step import EPS

__all__ = ["closed_loop_metrics"]


def closed_loop_metrics(poses, task) -> dict:
    """Final errors, success, path length and SPL of one executed episode.

    Returns ``final_position_error`` (m, last pose to ``task.goal_pose``), ``final_rotation_error`` (rad,
    geodesic), ``success`` (both within ``task.success["position"]`` / ``["rotation"]``; an object-state test is
    judged by the simulator, not here), ``path_length`` (m, sum of the straight segments between visited
    positions), ``d0`` (m, ``task.start_pose`` to the goal), ``spl`` (``success · d0 / max(d0, path_length)``;
    ``success`` when ``d0 < ε``), ``n_steps`` (K) and ``flag`` (True when a pose was not finite: then the
    errors are None, success False and SPL 0).
    """
    P = geometry.as_pose(poses)
    if P.ndim == 2:
        P = P[None]
    if P.ndim != 3 or len(P) == 0:
        raise ValueError(f"poses must have shape (K+1, 4, 4) with K >= 0, got {np.shape(poses)}")
    goal, start = task.goal_pose, task.start_pose
    d0 = float(np.linalg.norm(goal[:3, 3] - start[:3, 3]))
    n_steps = len(P) - 1
    if not np.all(np.isfinite(P)):
        return {"final_position_error": None, "final_rotation_error": None, "success": False,
                "path_length": None, "d0": d0, "spl": 0.0, "n_steps": n_steps, "flag": True}
    final = P[-1]
    pos_err = float(np.linalg.norm(final[:3, 3] - goal[:3, 3]))
    rot_err = float(geometry.geodesic_angle(final[:3, :3], goal[:3, :3]))
    thr = task.success or {}
    pos_thr = float(thr.get("position", 0.20 if task.kind == "nav" else 0.05))
    rot_thr = float(thr.get("rotation", math.radians(10.0)))
    success = bool(pos_err <= pos_thr and rot_err <= rot_thr)
    path = float(np.linalg.norm(np.diff(P[:, :3, 3], axis=0), axis=1).sum()) if n_steps else 0.0
    if d0 < EPS:
        spl = float(success)
    else:
        spl = float(success) * d0 / max(d0, path)
    return {"final_position_error": pos_err, "final_rotation_error": rot_err, "success": success,
            "path_length": path, "d0": d0, "spl": spl, "n_steps": n_steps, "flag": False}
