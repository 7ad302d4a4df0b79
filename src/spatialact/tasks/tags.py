"""Task tags are categories: the per-tag tables of a report break scores down by them (docs/tasks.md).

A continuous quantity (a distance, a turn, a ground-truth length) would give one table row per task, so builders
bin it here, in one place, and keep the exact value in the task's ``meta``. Bin labels read as ranges and sort in
order as plain strings: ``"0-0.5 m" < "0.5-1 m" < "1-2 m" < "2+ m"``. A value on an edge goes to the upper bin.
"""

from __future__ import annotations

import math

import numpy as np

from .. import geometry
__all__ = ["DISTANCE_EDGES_M", "TURN_EDGES_DEG", "STEPS_EDGES", "bin_label", "motion_tags", "steps_tag",
           "camera_attitude", "viewpoint_tag", "VIEWPOINT_COMMON", "VIEWPOINT_UNCOMMON", "VIEWPOINTS"]

# Start-to-goal distance, metres: navigation moves about 5x further than a hand or a gripper (docs/trajectories.md
# ranges).
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


# ----- viewpoints (3DSRBench) and difficulty levels (Spatial457): docs/diagnostics.md ---------------------------------
#: A common view: level, nearly horizontal and, for a navigation camera, at eye height above the floor.
VIEWPOINT_COMMON = {"max_roll_deg": 5.0, "max_pitch_deg": 15.0, "height_m": (1.2, 1.8)}
#: An uncommon view: any one of a large roll, a steep pitch, or (navigation) a camera near the floor or up high.
VIEWPOINT_UNCOMMON = {"min_roll_deg": 20.0, "min_pitch_deg": 40.0, "below_m": 0.5, "above_m": 2.5}
#: The ``viewpoint`` tag's values; a view that is neither common nor uncommon is ``intermediate``.
VIEWPOINTS = ("common", "uncommon", "intermediate")
#: The ``level`` tag's values: the difficulty ladder (``spatialact.taskgen.ladder.LEVEL_FACTORS``).


def camera_attitude(T, floor_z: float = 0.0) -> tuple[float, float, float]:
    """``(pitch_deg, roll_deg, height_m)`` of a C2W camera pose (OpenCV axes; world +Z up) against gravity.

    Pitch: the optical axis (+Z) above the horizontal plane (positive looking up, in [−90°, 90°]). Roll: the turn
    of the image about the optical axis, ``atan2(−x·up, −y·up)`` — positive when the camera's right side dips,
    as after Roll CCW (docs/conventions.md). Height: the camera centre above ``floor_z`` (metres)."""
    T = np.asarray(T, dtype=np.float64)
    x, y, z = T[:3, 0], T[:3, 1], T[:3, 2]
    pitch = math.degrees(math.asin(float(np.clip(z[2], -1.0, 1.0))))
    roll = math.degrees(math.atan2(-float(x[2]), -float(y[2])))
    return pitch, roll, float(T[2, 3]) - float(floor_z)


def viewpoint_tag(T, floor_z: float = 0.0, height: bool = True) -> str:
    """``common``, ``uncommon`` or ``intermediate`` for a camera pose (3DSRBench's split, with the thresholds of
    :data:`VIEWPOINT_COMMON` and :data:`VIEWPOINT_UNCOMMON`): common is |roll| ≤ 5° and |pitch| ≤ 15° (and with
    ``height``, 1.2–1.8 m above ``floor_z``); uncommon is |roll| ≥ 20°, or |pitch| ≥ 40°, or (with ``height``)
    below 0.5 m or above 2.5 m. ``height=False`` for a manipulation scene's observing camera, whose height is the
    table's business, not the viewer's."""
    pitch, roll, h = camera_attitude(T, floor_z)
    c, u = VIEWPOINT_COMMON, VIEWPOINT_UNCOMMON
    if abs(roll) >= u["min_roll_deg"] or abs(pitch) >= u["min_pitch_deg"] or \
            (height and (h < u["below_m"] or h > u["above_m"])):
        return "uncommon"
    if abs(roll) <= c["max_roll_deg"] and abs(pitch) <= c["max_pitch_deg"] and \
            (not height or c["height_m"][0] <= h <= c["height_m"][1]):
        return "common"
    return "intermediate"
