"""Task tags are categories: the per-tag tables of a report break scores down by them (SPEC §8).

A continuous quantity (a distance, a turn, a ground-truth length) would give one table row per task, so builders
bin it here, in one place, and keep the exact value in the task's ``meta``. Bin labels read as ranges and sort in
order as plain strings: ``"0-0.5 m" < "0.5-1 m" < "1-2 m" < "2+ m"``. A value on an edge goes to the upper bin.
"""

from __future__ import annotations

import math

import numpy as np

from .. import geometry

__all__ = ["DISTANCE_EDGES_M", "TURN_EDGES_DEG", "STEPS_EDGES", "bin_label", "motion_tags", "steps_tag"]

# Start-to-goal distance, metres: navigation moves about 5x further than a hand or a gripper (SPEC §5.3 ranges).
DISTANCE_EDGES_M = {"nav": (0.5, 1.0, 2.0), "manip": (0.1, 0.2, 0.4), "hand": (0.1, 0.2, 0.4)}
# Start-to-goal turn (geodesic rotation angle), degrees.
TURN_EDGES_DEG = (10.0, 30.0, 90.0)
# Ground-truth length, steps: 1, 2-3, 4-7, 8+.
STEPS_EDGES = (2, 4, 8)


def _num(x: float) -> str:
    return f"{x:g}"


def bin_label(value: float, edges: tuple, unit: str = "", *, integer: bool = False) -> str:
    """The bin of ``value`` among increasing ``edges``: ``"lo-hi unit"``, the last ``"lo+ unit"``.

    ``integer`` bins whole numbers: ``"1"``, ``"2-3"``, ``"8+"`` (bins hold ``lo ≤ v < hi``; the first starts at
    the smallest value, 1 for integers and 0 otherwise).
    """
    if not math.isfinite(value):
        raise ValueError(f"cannot bin {value!r}")
    suffix = f" {unit}" if unit else ""
    lo = 1 if integer else 0
    for hi in edges:
        if value < hi:
            if integer:
                top = int(hi) - 1
                return (f"{lo}" if top == lo else f"{lo}-{top}") + suffix
            return f"{_num(lo)}-{_num(hi)}{suffix}"
        lo = hi
    return f"{_num(lo)}+{suffix}"


def motion_tags(kind: str, start_pose, goal_pose) -> tuple[dict, dict]:
    """``(tags, exact)``: the binned start-to-goal ``distance`` and ``turn``, and the exact ``distance_m`` and
    ``rotation_deg`` for ``meta``. Poses are C2W (4, 4), metres."""
    S, G = np.asarray(start_pose, dtype=np.float64), np.asarray(goal_pose, dtype=np.float64)
    d = float(np.linalg.norm(G[:3, 3] - S[:3, 3]))
    deg = math.degrees(float(geometry.rotation_error(S, G)))
    tags = {"distance": bin_label(d, DISTANCE_EDGES_M[kind], "m"), "turn": bin_label(deg, TURN_EDGES_DEG, "deg")}
    return tags, {"distance_m": round(d, 4), "rotation_deg": round(deg, 2)}


def steps_tag(n_steps: int) -> str:
    """The binned ground-truth length: ``"1"``, ``"2-3"``, ``"4-7"``, ``"8+"`` (``"0"`` for an empty sequence)."""
    if n_steps <= 0:
        return "0"
    return bin_label(n_steps, STEPS_EDGES, integer=True)
