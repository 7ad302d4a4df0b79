"""Closed-loop metrics (docs/scoring.md, "Closed-loop metrics"): where an executed episode ended, whether it
succeeded, and how directly.

Input: the poses the agent visited, (K+1, 4, 4) C2W (metres, world +Z up, camera OpenCV axes), starting at the
start pose, and the task (goal pose, success thresholds in metres and radians). No success, no SPL: success is
settled first (by the pose, or by the simulator's object-state test when one is given), and SPL is computed from
it afterwards, so a failed episode always has SPL 0.

The shortest distance ``d0`` of SPL: the task's ``meta["d0"]`` when present (a game level's geodesic start→goal
distance at the player's radius, stored by its task builder; ``d0_kind`` "geodesic"), else the straight line from
the start to the goal position (``d0_kind`` "straight": in the procedural rooms the straight sweep is clear by
construction).
"""

from __future__ import annotations

import math

import numpy as np

from .. import geometry
from .step import EPS

__all__ = ["closed_loop_metrics"]


def _shortest_distance(task) -> tuple[float, str]:
    """(d0 in the task's pose units (metres), "geodesic" | "straight"); raises ValueError naming the task and
    field for a ``meta.d0`` that is not a finite non-negative number."""
    meta = getattr(task, "meta", None) or {}
    if meta.get("d0") is not None:
        d0 = meta["d0"]
        if isinstance(d0, bool) or not isinstance(d0, (int, float)) or not math.isfinite(d0) or d0 < 0:
            raise ValueError(f"task {task.id!r}: field meta.d0 must be a finite non-negative number (the geodesic "
                             f"start-goal distance in metres), got {str(d0)[:40]!r}")
        return float(d0), "geodesic"
    return float(np.linalg.norm(task.goal_pose[:3, 3] - task.start_pose[:3, 3])), "straight"


def closed_loop_metrics(poses, task, object_success: bool | None = None) -> dict:
    """Final errors, success, path length and SPL of one executed episode.

    Returns ``final_position_error`` (m, last pose to ``task.goal_pose``), ``final_rotation_error`` (rad,
    geodesic), ``success``, ``path_length`` (m, sum of the straight segments between visited positions), ``d0``
    (m, the shortest start-goal distance) and ``d0_kind`` (``"geodesic"``: the task's ``meta["d0"]``;
    ``"straight"``: the straight line from ``task.start_pose``), ``spl`` (``success · d0 / max(d0,
    path_length)``; ``success`` when ``d0 < ε``), ``n_steps`` (K) and ``flag`` (True when a pose was not finite:
    then the errors are None, success False and SPL 0).

    ``success``: the simulator's object-state test when ``object_success`` is given (pick and place: the pose
    alone does not say whether the object arrived), else both final errors within ``task.success["position"]`` /
    ``["rotation"]``. SPL is computed once success is final: a failed episode has SPL 0 however close it ended.
    """
    P = geometry.as_pose(poses)
    if P.ndim == 2:
        P = P[None]
    if P.ndim != 3 or len(P) == 0:
        raise ValueError(f"poses must have shape (K+1, 4, 4) with K >= 0, got {np.shape(poses)}")
    goal = task.goal_pose
    d0, d0_kind = _shortest_distance(task)
    n_steps = len(P) - 1
    if not np.all(np.isfinite(P)):
        return {"final_position_error": None, "final_rotation_error": None, "success": False,
                "path_length": None, "d0": d0, "d0_kind": d0_kind, "spl": 0.0, "n_steps": n_steps, "flag": True}
    final = P[-1]
    pos_err = float(np.linalg.norm(final[:3, 3] - goal[:3, 3]))
    rot_err = float(geometry.geodesic_angle(final[:3, :3], goal[:3, :3]))
    if object_success is not None:
        success = bool(object_success)
    else:
        thr = task.success or {}
        pos_thr = float(thr.get("position", 0.20 if task.kind == "nav" else 0.05))
        rot_thr = float(thr.get("rotation", math.radians(10.0)))
        success = bool(pos_err <= pos_thr and rot_err <= rot_thr)
    path = float(np.linalg.norm(np.diff(P[:, :3, 3], axis=0), axis=1).sum()) if n_steps else 0.0
    # success is final here: SPL follows from it (no success, no SPL)
    if not success:
        spl = 0.0
    elif d0 < EPS:
        spl = 1.0
    else:
        spl = d0 / max(d0, path)
    return {"final_position_error": pos_err, "final_rotation_error": rot_err, "success": success,
            "path_length": path, "d0": d0, "d0_kind": d0_kind, "spl": float(spl), "n_steps": n_steps,
            "flag": False}
