"""Does a task's ground truth lead to its goal? The one definition of the check, for many tasks at once.

A task's ground truth (``gt``) is replayed from its ``start_pose`` (``poses[k+1] = poses[k] @ Δ_k``, the body frame
of docs/conventions.md: Δ from each step's motion ``(tx, ty, tz, tilt, pan, roll)`` in metres and radians); it must
end within the task's success thresholds of ``goal_pose`` (``success.position`` metres, ``success.rotation``
radians, geodesic angle), each with 1e-9 of slack. A task whose ground truth does not (a hand-written task with
the sign of a motion flipped, a goal moved after the fact) is no task: every score against it would be measured
against a sequence that does not lead to the goal. ``eval`` refuses such a task before the run
(:func:`ground_truth_problem`, through ``evaluation.episode.gt_problem``); ``spatialact score`` marks it
(:func:`ground_truth_misses` over the whole task file in one vectorised replay: its answers get score null and
reason ``gt_problem``).

Poses are C2W (4, 4) float64, metres, world +Z up, camera OpenCV axes.
"""

from __future__ import annotations

import math

import numpy as np

from .. import geometry

__all__ = ["ground_truth_ends", "ground_truth_misses", "ground_truth_message", "ground_truth_problem",
           "success_thresholds", "GT_SLACK"]

#: Added to both success thresholds (metres, radians) before the ground truth's end is compared with them.
GT_SLACK = 1e-9


def ground_truth_ends(start_poses: np.ndarray, motions: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Where each task's ground truth ends: (T, 4, 4) C2W poses.

    ``start_poses`` (T, 4, 4) C2W; ``motions`` (ΣK, 6) every task's step motions ``(tx, ty, tz, tilt, pan,
    roll)`` (metres, radians) concatenated in task order; ``lengths`` (T,) steps per task. Vectorised over the
    tasks: one batched matrix product per step index (as many as the longest ground truth has steps)."""
    P = np.array(start_poses, dtype=np.float64, copy=True).reshape(-1, 4, 4)
    lengths = np.asarray(lengths, dtype=np.int64)
    if not len(lengths) or not lengths.max(initial=0):
        return P
    D = geometry.motion_to_delta(np.asarray(motions, dtype=np.float64).reshape(-1, 6))
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    order = np.argsort(-lengths, kind="stable")  # longest first: the tasks still moving are a prefix
    remaining = lengths[order]
    for k in range(int(remaining[0])):
        n = int(np.count_nonzero(remaining > k))
        idx = order[:n]
        P[idx] = P[idx] @ D[offsets[idx] + k]
    return P


def ground_truth_misses(start_poses, goal_poses, motions, lengths, position, rotation):
    """``(miss (T,) bool, distance (T,) metres, angle (T,) radians)``: which ground truths end beyond their task's
    success thresholds of the goal (``position`` (T,) metres, ``rotation`` (T,) radians; inf: no threshold), and
    how far from it they end. See :func:`ground_truth_ends` for the other arguments."""
    end = ground_truth_ends(start_poses, motions, lengths)
    goal = np.asarray(goal_poses, dtype=np.float64).reshape(-1, 4, 4)
    d = np.linalg.norm(end[:, :3, 3] - goal[:, :3, 3], axis=1)
    r = geometry.rotation_error(end, goal).reshape(-1)
    pos = np.asarray(position, dtype=np.float64)
    rot = np.asarray(rotation, dtype=np.float64)
    miss = ~((d <= pos + GT_SLACK) & (r <= rot + GT_SLACK))
    return miss, d, r


def ground_truth_message(distance: float, angle: float, position: float, rotation: float) -> str:
    """The one-line problem of a ground truth that ends ``distance`` m / ``angle`` rad from its goal."""
    return (f"field 'gt': replayed from start_pose it ends {distance:.3g} m / {math.degrees(angle):.3g}° from "
            f"goal_pose, beyond the success thresholds ({position:g} m / {math.degrees(rotation):.3g}°): the ground "
            f"truth does not lead to the goal")


def success_thresholds(success: dict) -> tuple[float, float]:
    """A task's ``success`` as (position metres, rotation radians); a missing one is inf (no threshold)."""
    return float(success.get("position", np.inf)), float(success.get("rotation", np.inf))


def ground_truth_problem(task) -> str | None:
    """Why ``task``'s ground truth is no ground truth (one line naming the field), or None: the check of
    :func:`ground_truth_misses` on one :class:`~spatialact.tasks.Task`."""
    pos, rot = success_thresholds(task.success)
    miss, d, r = ground_truth_misses(task.start_pose[None], task.goal_pose[None], task.gt.as_motions(),
                                     [len(task.gt.steps)], [pos], [rot])
    return ground_truth_message(float(d[0]), float(r[0]), pos, rot) if miss[0] else None
