"""Profile ``lmms-eval`` (docs/lmms_eval_profile.md): lmms-eval's SpatialTreeBench L4 scores, reproduced, and an
exporter.

:func:`score_lmms_eval` returns, for one sample (the model's response text and the sample's ``extra_info``, i.e.
the decoded ``hint`` field of a SpatialTreeBench record), the dict that lmms-eval's ``agenticnaveval``
(``kind="nav"``) or ``manipulateeval`` (``kind="manip"``) returns for it, in
``lmms_eval/tasks/spatialtreebench/metrics/rule_metrics.py`` of EvolvingLMMs-Lab/lmms-eval (commit
``75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3``; the PyPI release 0.7.3 ships the same functions). Where lmms-eval
raises (its caller then logs the error and counts 0), this returns ``{"score": 0, "error": "<one line>"}``.

:func:`to_lmms_extra_info` writes a spatialact task in the ``extra_info`` layout those functions read, and
:func:`to_lmms_answer` writes an ActionSequence as an answer they read.

lmms-eval's pose convention is not ours (see ``docs/lmms_eval_profile.md``). Its 7-vector poses
``[x, y, z, qx, qy, qz, qw]`` live in the frame of ``optimal_rel_pose`` and follow its own update rule, the
*lmms-eval replay*::

    position    <- position + (dx, dy, dz)                           (not rotated by the current orientation)
    orientation <- Rotation.from_euler("zyx", [yaw, pitch, roll]) * orientation       (fixed axes, left side)

with ``dx`` = Truck (right +), ``dy`` = Pedestal (down +), ``dz`` = Dolly (in +), ``yaw`` = Pan (right +),
``pitch`` = Tilt (up +) and ``roll`` = Roll with **clockwise** positive, each summed over a step's actions as
``step size × step_num``. Nothing here converts frames on the way in: scoring reproduces lmms-eval number for
number, so its poses are taken exactly as it takes them.

Fidelity notes. The arithmetic is done with the same primitives lmms-eval uses (Python floats for the per-step
sums, numpy for vectors, scipy's ``Rotation`` for quaternions), on arrays built the same way and *not* coerced
to float, so malformed inputs fail where lmms-eval fails and scipy's own edge cases (a NaN quaternion is refused,
an underflowing one too) carry over. The clamp of the final score uses Python's ``min``/``max``, as lmms-eval
does, which maps a NaN score to 1.0 — a quirk kept on purpose and listed in the docs.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Iterable, Mapping

import numpy as np

# scipy's Rotation is imported on first use (_rotation()), not here: `spatialact score` under profiles paper and
# paper+rot never needs it, and importing scipy.spatial costs about a third of a second at start-up.

__all__ = [
    "LMMS_EVAL_COMMIT",
    "INVALID_RESPONSE",
    "NAV_RESULT_KEYS",
    "NAV_SCORE_KEYS",
    "MANIP_RESULT_KEYS",
    "MANIP_SCORE_KEYS",
    "LMMS_SYMBOLS",
    "score_lmms_eval",
    "to_lmms_extra_info",
    "to_lmms_answer",
    "lmms_replay",
]

LMMS_EVAL_COMMIT = "75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3"

#: The ``error`` lmms-eval itself returns (score 0) when the response holds no JSON / Python-literal object.
INVALID_RESPONSE = "Invalid response format"

#: Result keys, in lmms-eval's order; ``scores`` is a nested dict.
NAV_RESULT_KEYS = ("score", "scores", "final_position_error_m", "final_rotation_error_deg")
NAV_SCORE_KEYS = ("direction_score", "position_score", "rotation_score")
MANIP_RESULT_KEYS = ("score", "scores", "is_successful_binary", "final_position_error_m", "final_rotation_error_deg",
                     "predicted_segments", "total_segments", "gt_movement_magnitude", "pred_movement_magnitude")
MANIP_SCORE_KEYS = NAV_SCORE_KEYS + ("distance_ratio_score",)

# lmms-eval's defaults when a segment entry does not state its step sizes: 0.02 m and 0.5° (in radians).
DEFAULT_TRANSLATION_STEP = 0.02
DEFAULT_ROTATION_STEP = float(np.deg2rad(0.5))

# The only spellings lmms-eval accepts (exact, case-sensitive). Value: (slot, sign) with slots
# 0..2 = dx, dy, dz (scaled by the translation step) and 3..5 = yaw, pitch, roll (scaled by the rotation step);
# None for STOP, which is recognised (so its step_num is still looked up) but moves nothing.
LMMS_SYMBOLS: dict[str, tuple[int, int] | None] = {
    "D": (0, +1), "A": (0, -1),            # Truck Right / Left
    "shift": (1, +1), "space": (1, -1),    # Pedestal Down / Up
    "W": (2, +1), "S": (2, -1),            # Dolly In / Out
    "→": (3, +1), "←": (3, -1),            # Pan Right / Left  -> yaw
    "↑": (4, +1), "↓": (4, -1),            # Tilt Up / Down    -> pitch
    "↻": (5, +1), "↺": (5, -1),            # Roll CW / CCW     -> roll, clockwise positive
    "STOP": None,
}

_KINDS = {"nav": "nav", "agenticnaveval": "nav",
          "manip": "manip", "hand": "manip", "manipulateeval": "manip"}

# ----------------------------------------------------------------------------------------------------------
# Reading the response
# ----------------------------------------------------------------------------------------------------------
# A comma with only whitespace before a closing bracket; the lookahead keeps the bracket.
_DANGLING_COMMA = re.compile(r",\s*(?=[}\]])")
_DIGITS = re.compile(r"\d+")


class _Unreadable(Exception):
    """The response holds no object lmms-eval accepts (it then returns score 0, INVALID_RESPONSE)."""


def fence_group(text: str, opener: str) -> str | None:
    r"""What ``re.search(opener + r"\s*(.*?)\s*```", text, re.DOTALL).group(1)`` gives (None for no match), in time
    linear in ``len(text)``: lmms-eval's own fence patterns (``rule_metrics.py``: ``r"```json\s*(.*?)\s*```"``,
    then ``r"```\s*(.*?)\s*```"``) backtrack cubically on an unclosed fence followed by whitespace (a 3 KB answer
    took 13 s).

    The first ``opener`` is the match's start (if a closing ``` follows it, it follows every later one too);
    the leading \s* takes all the whitespace after it; the lazy group then ends where the whitespace before the
    first ``` after that begins."""
    p = text.find(opener)
    if p < 0:
        return None
    start = p + len(opener)
    a = start + (len(text) - start - len(text[start:].lstrip()))
    c = text.find("```", a)
    return None if c < 0 else text[a:c].rstrip()


def _candidate_text(response: str) -> str:
    """The span lmms-eval tries to decode: the FIRST ```json fence, else the first ``` fence, else first '{' to
    last '}', else everything. (A ```python or ```JSON fence is taken whole, tag included, and fails later.)
    The fences are found by :func:`fence_group`, which gives what lmms-eval's patterns give, in linear time."""
    for opener in ("```json", "```"):
        body = fence_group(response, opener)
        if body is not None:
            return body
    first, last = response.find("{"), response.rfind("}")
    if first != -1 and last > first:
        return response[first:last + 1]
    return response


def _decode_instructions(response: str) -> dict:
    """The answer object, decoded as lmms-eval does; raises ``_Unreadable`` where lmms-eval gives up.

    Order: ``json.loads``; on a JSON syntax error, again with dangling commas removed; on a second syntax error,
    ``ast.literal_eval`` of the *unrepaired* text. A ValueError or SyntaxError anywhere (including a ValueError
    that is not a JSON syntax error, e.g. an over-long integer, which skips the later attempts) means unreadable;
    any other exception (a TypeError from an unhashable literal key, a RecursionError) propagates, as there.
    """
    text = _candidate_text(response)
    try:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError:
            try:
                obj = json.loads(_DANGLING_COMMA.sub("", text))
            except json.JSONDecodeError:
                try:
                    obj = ast.literal_eval(text)
                except (ValueError, SyntaxError):
                    obj = None
    except (ValueError, SyntaxError) as exc:
        raise _Unreadable from exc
    if not isinstance(obj, dict):
        raise _Unreadable
    return obj


# ----------------------------------------------------------------------------------------------------------
# The lmms-eval replay
# ----------------------------------------------------------------------------------------------------------
def _segment_keys(extra_info: Mapping) -> list:
    """The ``"i->j"`` entries, ordered by the integer before the arrow (stable for ties)."""
    keyed = [k for k in extra_info if "->" in k]
    return sorted(keyed, key=lambda k: int(k.split("->")[0]))


def _step_sizes(segment: Any) -> tuple[Any, Any]:
    # Values are used as given (no float()), so a string or list step size fails at the first multiplication
    # that uses it, exactly as it would there; a non-dict segment fails here (AttributeError).
    return (segment.get("translation_step_size", DEFAULT_TRANSLATION_STEP),
            segment.get("rotation_step_size", DEFAULT_ROTATION_STEP))


def _step_increments(actions: Any, step_nums: Any, t_size: Any, r_size: Any) -> list:
    """Per-step sums ``[dx, dy, dz, yaw, pitch, roll]`` from a list of symbols and their step_nums.

    An unknown symbol is skipped without looking at its step_num; a known one (STOP included) takes
    ``step_nums[j]`` when ``j < len(step_nums)``, else 1. step_nums are not rounded, capped or type-checked.
    """
    sums: list = [0.0] * 6
    for j, symbol in enumerate(actions):
        if symbol not in LMMS_SYMBOLS:
            continue
        n = step_nums[j] if j < len(step_nums) else 1
        effect = LMMS_SYMBOLS[symbol]
        if effect is None:
            continue
        slot, sign = effect
        amount = (t_size if slot < 3 else r_size) * n
        sums[slot] = sums[slot] + amount if sign > 0 else sums[slot] - amount
    return sums


_ROTATION: list = []


def _rotation():
    """scipy's ``Rotation`` class, imported on first use (an import statement per call cost 14 µs)."""
    if not _ROTATION:
        from scipy.spatial.transform import Rotation

        _ROTATION.append(Rotation)
    return _ROTATION[0]


def _advance(pose, orientation, sums: list) -> np.ndarray:
    """One lmms-eval step from a 7-vector ``[x, y, z, qx, qy, qz, qw]`` whose quaternion was already read into
    ``orientation`` (lmms-eval reads it before the actions, which decides which error a bad input raises):
    translation added unrotated, rotation ``from_euler("zyx", [yaw, pitch, roll])`` multiplied on the left,
    quaternion renormalised (with its 1e-12)."""
    dx, dy, dz, yaw, pitch, roll = sums
    position = pose[:3] + np.array([dx, dy, dz])
    q = (_rotation().from_euler("zyx", [yaw, pitch, roll]) * orientation).as_quat()
    out = np.zeros(7)
    out[:3] = position
    out[3:] = q / (np.linalg.norm(q) + 1e-12)
    return out


def _ordered_step_keys(keys: Iterable) -> list:
    """Answer keys by the first integer in each (``step_2`` before ``step_10``), stable for ties; when some key has
    no digit at all, plain sorted order instead. A non-string key raises TypeError, as there."""
    keys = list(keys)
    numbers = []
    for k in keys:
        m = _DIGITS.search(k)
        if m is None:
            return sorted(keys)
        try:
            numbers.append(int(m.group()))
        except ValueError:  # more digits than Python's int() accepts from a string
            return sorted(keys)
    order = sorted(range(len(keys)), key=numbers.__getitem__)
    return [keys[i] for i in order]


def _replay_stepped(instructions: dict, start, extra_info: Mapping) -> list:
    """manipulateeval's replay: answer step i uses segment i's step sizes; steps beyond the segments are dropped;
    a step whose value is not a dict is skipped (it still uses up its segment). Returns the poses, start first."""
    segments = _segment_keys(extra_info)
    poses = [start.copy()]
    current = start.copy()
    for i, key in enumerate(_ordered_step_keys(instructions.keys())):
        if i >= len(segments):
            break
        t_size, r_size = _step_sizes(extra_info[segments[i]])
        step = instructions[key]
        if not isinstance(step, dict):
            continue
        actions, step_nums = step.get("actions", []), step.get("step_nums", [])
        orientation = _rotation().from_quat(current[3:])
        current = _advance(current, orientation, _step_increments(actions, step_nums, t_size, r_size))
        poses.append(current)
    return poses


def _replay_flat(instructions: dict, start, extra_info: Mapping) -> np.ndarray:
    """agenticnaveval's replay: ONE step from the answer's top-level ``actions`` / ``step_nums``, with the step
    sizes of the last segment (an IndexError when there is none)."""
    segments = _segment_keys(extra_info)
    t_size, r_size = _step_sizes(extra_info[segments[-1]])
    actions, step_nums = instructions.get("actions", []), instructions.get("step_nums", [])
    current = start.copy()
    orientation = _rotation().from_quat(current[3:])
    return _advance(current, orientation, _step_increments(actions, step_nums, t_size, r_size))


def lmms_replay(motions, start=None) -> np.ndarray:
    """Poses (K+1, 7) ``[x, y, z, qx, qy, qz, qw]`` that the lmms-eval replay reaches from ``start`` (default
    the identity) for K steps given as our body-frame motions ``(tx, ty, tz, tilt, pan, roll)`` (metres,
    radians, roll counter-clockwise positive, docs/conventions.md): dx, dy, dz = tx, ty, tz; yaw = pan; pitch = tilt;
    roll = −roll (theirs is clockwise positive). The poses are in lmms-eval's convention, not ours."""
    m = np.asarray(motions, dtype=np.float64).reshape(-1, 6)
    current = np.array([0.0, 0, 0, 0, 0, 0, 1]) if start is None else np.asarray(start, dtype=np.float64)
    out = [current]
    for tx, ty, tz, tilt, pan, roll in m:
        sums = [float(tx), float(ty), float(tz), float(pan), float(tilt), -float(roll)]
        current = _advance(current, _rotation().from_quat(current[3:]), sums)
        out.append(current)
    return np.stack(out)


# ----------------------------------------------------------------------------------------------------------
# The comparison
# ----------------------------------------------------------------------------------------------------------
def _turn_between(q_a, q_b) -> float:
    """Angle (rad) of ``inv(A) * B`` for quaternions given as xyzw (scipy ``magnitude``)."""
    return (_rotation().from_quat(q_a).inv() * _rotation().from_quat(q_b)).magnitude()


def _path_turn(rows) -> float:
    """Sum of the angles between consecutive orientations, in order (0 for fewer than two rows)."""
    total = 0
    for i in range(1, len(rows)):
        total += _turn_between(rows[i - 1][3:], rows[i][3:])
    return total


def _probe_first_turns(rows) -> None:
    # lmms-eval computes (and never uses) whether any of the first four steps of the ground truth turns by more
    # than 5°, stopping at the first that does. The quaternions it reads on the way can still raise, so the same
    # reads happen here.
    for i in range(1, min(5, len(rows))):
        if _turn_between(rows[i - 1][3:], rows[i][3:]) > np.deg2rad(5):
            break


def _net_figures(start, pred, goal) -> dict:
    """The three components lmms-eval averages, from the start, predicted final and ground-truth final poses."""
    gt_vec = goal[:3] - start[:3]
    pred_vec = pred[:3] - start[:3]
    gt_len = np.linalg.norm(gt_vec)
    pred_len = np.linalg.norm(pred_vec)
    if gt_len < 1e-6 and pred_len < 1e-6:
        direction = 1.0
    elif gt_len > 1e-6 and pred_len > 1e-6:
        # Python's max: a NaN cosine gives 0, a cosine a hair above 1 is kept.
        direction = max(0, np.dot(gt_vec, pred_vec) / (gt_len * pred_len))
    else:
        direction = 0.0
    position_error = np.linalg.norm(pred[:3] - goal[:3])
    rotation_error_deg = np.rad2deg(_turn_between(pred[3:], goal[3:]))
    return {
        "direction": direction,
        "position": np.exp(-13.863 * position_error),  # 0.5 at 0.2 m
        "rotation": np.exp(-0.0154 * (rotation_error_deg / 5.0) ** 2),
        "position_error": position_error,
        "rotation_error_deg": rotation_error_deg,
        "gt_len": gt_len,
        "pred_len": pred_len,
    }


def _blend(f: dict, factor: float = 1.0) -> float:
    raw = (0.4 * f["direction"] + 0.35 * f["position"] + 0.25 * f["rotation"]) * factor
    return max(0.0, min(1.0, raw))  # Python min/max on purpose: a NaN becomes 1.0, as in lmms-eval


def _score_nav(instructions: dict, extra_info: Mapping) -> dict:
    rows = np.array(extra_info["optimal_rel_pose"])
    start = rows[-2]  # the second-to-last row, whatever the number of rows
    pred = _replay_flat(instructions, start, extra_info)
    # lmms-eval counts the predicted "segments" as len(pose) - 1 = 6 and compares with rows[:7][-1].
    goal = rows[:7][-1]
    _probe_first_turns(rows)
    f = _net_figures(start, pred, goal)
    return {
        "score": float(_blend(f)),
        "scores": {
            "direction_score": float(f["direction"]),
            "position_score": float(f["position"]),
            "rotation_score": float(f["rotation"]),
        },
        "final_position_error_m": float(f["position_error"]),
        "final_rotation_error_deg": float(f["rotation_error_deg"]),
    }


def _score_manip(instructions: dict, extra_info: Mapping) -> dict:
    rows = np.array(extra_info["optimal_rel_pose"])
    start = rows[0]
    path = _replay_stepped(instructions, start, extra_info)
    pred_rows = np.array(path)
    n_pred = len(pred_rows) - 1
    n_total = len(_segment_keys(extra_info))
    goal = rows[:n_pred + 1][-1]
    pred = pred_rows[-1]
    _probe_first_turns(rows)
    f = _net_figures(start, pred, goal)

    factor = 1.0
    if f["gt_len"] > 0.1 and f["pred_len"] < 0.03:  # had to move >10 cm, moved <3 cm
        factor *= 0.7
    must_turn = len(rows) > 1 and _path_turn(rows) > np.deg2rad(5)
    did_turn = len(pred_rows) > 1 and _path_turn(pred_rows) > np.deg2rad(2)
    if must_turn and not did_turn:
        factor *= 0.5

    # Reported, not used in the score.
    if f["gt_len"] > 1e-6:
        distance_ratio = np.exp(-15.0 * (f["pred_len"] / f["gt_len"] - 1.0) ** 2)
    else:
        distance_ratio = 1.0 if f["pred_len"] < 1e-6 else 0.0

    success = (n_pred == n_total) and (f["position_error"] < 0.2) and (f["rotation_error_deg"] < 10)
    return {
        "score": float(_blend(f, factor)),
        "scores": {
            "direction_score": float(f["direction"]),
            "position_score": float(f["position"]),
            "rotation_score": float(f["rotation"]),
            "distance_ratio_score": float(distance_ratio),
        },
        "is_successful_binary": bool(success),
        "final_position_error_m": float(f["position_error"]),
        "final_rotation_error_deg": float(f["rotation_error_deg"]),
        "predicted_segments": int(n_pred),
        "total_segments": int(n_total),
        "gt_movement_magnitude": float(f["gt_len"]),
        "pred_movement_magnitude": float(f["pred_len"]),
    }


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"lmms-eval would raise {type(exc).__name__}" + (f": {text[:200]}" if text else "")


def score_lmms_eval(response: str, extra_info: Mapping | str, kind: str = "nav") -> dict:
    """Score one SpatialTreeBench L4 sample exactly as lmms-eval does.

    ``response``: the model's raw answer text. ``extra_info``: the sample's metric info (the decoded ``hint`` of
    a SpatialTreeBench record, or that JSON text), with ``optimal_rel_pose`` as rows ``[x, y, z, qx, qy, qz, qw]``
    (metres; poses in lmms-eval's own convention, see the module docstring) and ``"i->j"`` segment entries, each a
    dict that may give ``translation_step_size`` (m) and ``rotation_step_size`` (rad).
    ``kind``: ``"nav"`` (``agenticnaveval``) or ``"manip"`` (``manipulateeval``; ``"hand"`` is scored the same).

    Returns lmms-eval's dict (keys :data:`NAV_RESULT_KEYS` or :data:`MANIP_RESULT_KEYS`), or
    ``{"score": 0, "error": "Invalid response format"}`` for an unreadable response (lmms-eval's own answer), or
    ``{"score": 0, "error": "lmms-eval would raise ..."}`` where lmms-eval raises. Never raises for bad data.
    """
    mode = _KINDS.get(kind)
    if mode is None:
        raise ValueError(f"kind must be 'nav' or 'manip' (or 'hand'), got {kind!r}")
    try:
        # The response is read before extra_info is looked at, so an unreadable answer wins over bad info.
        try:
            instructions = _decode_instructions(response)
        except _Unreadable:
            return {"score": 0, "error": INVALID_RESPONSE}
        if isinstance(extra_info, str):
            extra_info = json.loads(extra_info)
        with np.errstate(all="ignore"):
            if mode == "nav":
                return _score_nav(instructions, extra_info)
            return _score_manip(instructions, extra_info)
    except Exception as exc:  # lmms-eval's caller catches everything and scores 0
        return {"score": 0, "error": _one_line(exc)}


# ----------------------------------------------------------------------------------------------------------
# Export: our tasks in lmms-eval's layout
# ----------------------------------------------------------------------------------------------------------
# Our primitive (by canonical name) -> lmms-eval symbol. Same meaning, sign for sign (Roll CW is ↻ in both).
_NAME_TO_SYMBOL = {
    "Truck Right": "D", "Truck Left": "A", "Pedestal Down": "shift", "Pedestal Up": "space",
    "Dolly In": "W", "Dolly Out": "S", "Pan Right": "→", "Pan Left": "←",
    "Tilt Up": "↑", "Tilt Down": "↓", "Roll CW": "↻", "Roll CCW": "↺",
}


def _lmms_step_object(step) -> dict:
    acts = step.as_actions()
    if not acts:
        return {"actions": ["STOP"], "step_nums": [1]}
    return {"actions": [_NAME_TO_SYMBOL[p.value] for p, _ in acts], "step_nums": [int(n) for _, n in acts]}


def _merged(seq):
    """The sequence's steps summed into one step (counts add; for continuous steps the motions add)."""
    from ..action_space import ActionSequence, Step

    if not len(seq):
        return ActionSequence((Step.stay(),), seq.sizes, seq.cap)
    if seq.has_vectors:
        return ActionSequence((Step.from_motion(seq.as_motions().sum(axis=0)),), seq.sizes, seq.cap)
    counts = np.sum([s.counts for s in seq.steps], axis=0)
    return ActionSequence((Step(counts=tuple(int(c) for c in counts)),), seq.sizes, seq.cap)


def to_lmms_answer(seq, kind: str = "nav") -> str:
    """An ActionSequence as answer text lmms-eval reads: its symbols (``W``, ``→``, ``↻``, ...), flat for ``nav``
    (all steps summed into one, since agenticnaveval reads one step) and ``{"step_1": ...}`` for ``manip``.
    Gripper states are left out (lmms-eval scores none). Continuous (vector) steps raise ValueError: lmms-eval
    reads symbols only."""
    mode = _KINDS.get(kind)
    if mode is None:
        raise ValueError(f"kind must be 'nav' or 'manip' (or 'hand'), got {kind!r}")
    if seq.has_vectors:
        raise ValueError("lmms-eval reads symbolic actions only; this sequence has continuous (vector) steps")
    if mode == "nav":
        obj: dict = _lmms_step_object(_merged(seq).steps[0])
    else:
        obj = {f"step_{k + 1}": _lmms_step_object(s) for k, s in enumerate(seq.steps)}
    return json.dumps(obj, ensure_ascii=False)


def _pose_rows(T) -> list[list[float]]:
    """(N, 4, 4) poses as rows ``[x, y, z, qx, qy, qz, qw]`` (one scipy call for all: the same quaternions as one
    call per pose, at a fraction of the cost)."""
    T = np.asarray(T).reshape(-1, 4, 4)
    q = _rotation().from_matrix(T[:, :3, :3]).as_quat().reshape(-1, 4)
    return [[float(x) for x in t] + [float(x) for x in qq] for t, qq in zip(T[:, :3, 3], q)]


def to_lmms_extra_info(task, geometry: bool = True) -> dict:
    """A spatialact ``Task`` as lmms-eval's ``extra_info`` (what its ``hint`` field decodes to).

    Decision (docs/lmms_eval_profile.md): ``optimal_rel_pose`` rows are the poses the *lmms-eval replay* reaches
    when it executes the task's ground truth from the identity (relative to the start, in lmms-eval's convention),
    with the task's step sizes written into every segment entry so lmms-eval's defaults never apply. Hence the
    ground truth, written by :func:`to_lmms_answer`, scores exactly the maximum under lmms-eval, and a model
    answer is judged by lmms-eval's own rule. ``nav`` tasks get two rows and one segment ``"0->1"`` (the
    ground truth summed into one step, as agenticnaveval reads one step); ``manip`` and ``hand`` tasks get
    K + 1 rows and segments ``"0->1"`` ... ``"K-1->K"``. The geometric relative poses in OUR convention (C2W of
    each ground-truth pose in the start's camera frame, OpenCV axes, xyzw) are kept beside them under
    ``spatialact.rel_pose`` for reference; lmms-eval ignores that key. ``geometry=False`` leaves the whole
    ``spatialact`` block out (scoring never reads it; offline scoring uses this).
    """
    mode = "nav" if task.kind == "nav" else "manip"
    seq = task.gt.with_sizes(task.sizes)
    t_size, r_size = float(task.sizes.translation), float(task.sizes.rotation)
    steps = _merged(seq) if mode == "nav" else seq

    # Rows come from the same replay the scorer runs on answer text (same sums, same order), so the ground
    # truth written by to_lmms_answer lands on them to the last bit.
    info: dict = {}
    current = np.array([0.0, 0, 0, 0, 0, 0, 1])
    rows = [current]
    for k, step in enumerate(steps.steps):
        entry: dict = {"translation_step_size": t_size, "rotation_step_size": r_size}
        if step.is_vector:
            tx, ty, tz, tilt, pan, roll = (float(x) for x in step.motion)
            sums = [tx, ty, tz, pan, tilt, -roll]
            entry["motion"] = [float(x) for x in step.motion]
        else:
            entry.update(_lmms_step_object(step))
            sums = _step_increments(entry["actions"], entry["step_nums"], t_size, r_size)
        current = _advance(current, _rotation().from_quat(current[3:]), sums)
        rows.append(current)
        info[f"{k}->{k + 1}"] = entry
    info = {"optimal_rel_pose": [[float(x) for x in r] for r in rows], **info}
    if not geometry:
        return info

    from .. import geometry as geo

    gt_poses = task.gt_poses()
    rel = geo.relative_pose(gt_poses[0], gt_poses)
    info["spatialact"] = {
        "task_id": task.id,
        "kind": task.kind,
        "profile": "lmms-eval",
        "lmms_eval_commit": LMMS_EVAL_COMMIT,
        "rows": "lmms-eval replay of the ground truth from the identity",
        "rel_pose": _pose_rows(rel),
        "rel_pose_frame": "spatialact: C2W in the start camera frame, OpenCV axes, [x, y, z, qx, qy, qz, qw]",
    }
    return info
