"""Profile lmms-eval: hand-worked known answers, properties, the export round trip, and a comparison with
lmms-eval's own functions on random samples (lmms-eval 0.7.3's metric file, read from lmms-eval's own environment
.lmms-venv, which set-up makes: lmms-eval is not installed in .venv).

Conventions used in the hand-worked numbers (lmms-eval's, docs/lmms_eval_profile.md):
  score = 0.4·direction + 0.35·exp(−13.863·d) + 0.25·exp(−0.0154·(θ°/5)²)   (× penalties in manip)
  13.863 ≈ 20·ln 2, so exp(−13.863·0.1) ≈ 1/4 and exp(−13.863·0.2) ≈ 1/16.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import io
import json
import math
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from spatialact import geometry
from spatialact.action_space import ActionSequence, StepSizes
from spatialact.scorers.lmms_eval import (INVALID_RESPONSE, MANIP_RESULT_KEYS, NAV_RESULT_KEYS, fence_group,
                                          lmms_replay, score_lmms_eval, to_lmms_answer, to_lmms_extra_info)
from spatialact.tasks import Task

I7 = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
DEG = math.pi / 180
SEG = {"translation_step_size": 0.02, "rotation_step_size": 1 * DEG}


def yaw_row(x, y, z, deg):
    """A row [x, y, z, qx, qy, qz, qw] turned by `deg` about z (lmms-eval's yaw axis)."""
    h = math.radians(deg) / 2
    return [x, y, z, 0.0, 0.0, math.sin(h), math.cos(h)]


# Navigation sample: start at the origin, goal 0.1 m ahead (+z), no turn; 0.02 m and 1° per step.
NAV = {"optimal_rel_pose": [I7, [0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0]], "0->1": dict(SEG)}

# Manipulation sample: step 1 = 0.1 m right (+x); step 2 = 0.1 m ahead and a 10° yaw.
MANIP = {
    "optimal_rel_pose": [I7, [0.1, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], yaw_row(0.1, 0.0, 0.1, 10)],
    "0->1": dict(SEG),
    "1->2": dict(SEG),
}


def nav(text, info=NAV):
    return score_lmms_eval(text, info, kind="nav")


def manip(text, info=MANIP):
    return score_lmms_eval(text, info, kind="manip")


def flat(actions, nums=None):
    d = {"actions": actions}
    if nums is not None:
        d["step_nums"] = nums
    return json.dumps(d, ensure_ascii=False)


def stepped(*steps):
    return json.dumps({f"step_{k + 1}": {"actions": a, "step_nums": n} for k, (a, n) in enumerate(steps)},
                      ensure_ascii=False)


# ------------------------------------------------------------------------------------------------------------
# Navigation (agenticnaveval), hand-worked
# ------------------------------------------------------------------------------------------------------------
def test_nav_perfect_answer_scores_one_with_the_exact_keys():
    # W ×5 at 0.02 m: dz = 0.1 -> the goal exactly. direction 1, exp(0) = 1, exp(0) = 1 -> 0.4 + 0.35 + 0.25 = 1.
    r = nav(flat(["W"], [5]))
    assert tuple(r) == NAV_RESULT_KEYS
    assert tuple(r["scores"]) == ("direction_score", "position_score", "rotation_score")
    assert r["score"] == pytest.approx(1.0, abs=1e-12)
    assert r["final_position_error_m"] < 1e-15 and r["final_rotation_error_deg"] == 0.0
    assert all(type(v) is float for v in (r["score"], *r["scores"].values()))


def test_nav_wrong_direction():
    # S ×5: p = (0, 0, −0.1), g = (0, 0, 0.1): cos = −1 -> direction max(0, −1) = 0.
    # d = 0.2 m -> exp(−2.7726) ≈ 1/16; rotation error 0 -> 1. score = 0.35·exp(−2.7726) + 0.25 ≈ 0.271875.
    r = nav(flat(["S"], [5]))
    pos = math.exp(-13.863 * 0.2)
    assert pos == pytest.approx(1 / 16, rel=2e-5)
    assert r["scores"]["direction_score"] == 0.0
    assert r["final_position_error_m"] == pytest.approx(0.2, abs=1e-15)
    assert r["score"] == pytest.approx(0.35 * pos + 0.25, abs=1e-12)
    assert r["score"] == pytest.approx(0.271875, abs=1e-5)


def test_nav_rotation_only_answer():
    # → ×10 at 1°: a 10° yaw, no translation. Predicted translation 0 < 1e-6 while the truth moved -> direction 0.
    # d = 0.1 -> exp(−1.3863) ≈ 1/4; θ = 10° -> exp(−0.0154·(10/5)²) = exp(−0.0616) ≈ 0.94026.
    r = nav(flat(["→"], [10]))
    assert r["scores"]["direction_score"] == 0.0
    assert r["final_rotation_error_deg"] == pytest.approx(10.0, abs=1e-9)
    expected = 0.35 * math.exp(-13.863 * 0.1) + 0.25 * math.exp(-0.0616)
    assert r["score"] == pytest.approx(expected, abs=1e-12)
    assert r["score"] == pytest.approx(0.0875 + 0.2350648, abs=1e-5)


@pytest.mark.parametrize("text", ["", "   ", "go forward three steps", "[1, 2]", '"W"', "```python\n{}\n```",
                                  "```JSON\n{\"actions\": [\"W\"], \"step_nums\": [5]}\n```",
                                  '{"actions": ["W"], "step_nums": [5]'])
def test_unreadable_answers_get_lmms_evals_own_zero(text):
    # No object: lmms-eval returns {"score": 0, "error": "Invalid response format"} (before reading extra_info).
    # A ```python or ```JSON fence is taken whole by its generic-fence pattern, tag included, so it never parses.
    for kind in ("nav", "manip"):
        assert score_lmms_eval(text, NAV if kind == "nav" else MANIP, kind) == {"score": 0, "error": INVALID_RESPONSE}
    # ... even when extra_info is unusable
    assert score_lmms_eval(text, {}, "nav") == {"score": 0, "error": INVALID_RESPONSE}


@pytest.mark.parametrize("text", [
    '```json\n{"actions": ["W"], "step_nums": [5]}\n```',
    'Sure!\n```\n{"actions": ["W"], "step_nums": [5]}\n```\nDone.',
    'I think {"actions": ["W"], "step_nums": [5]} is it',
    '{"actions": ["W",], "step_nums": [5,],}',                        # dangling commas removed
    "{'actions': ['W'], 'step_nums': [5]}",                           # a Python literal
    '{"actions": ["W", "W", "W", "W", "W"]}',                          # step_num missing -> 1 each
    '{"actions": ["W", "W"], "step_nums": [4]}',                      # 4 + (missing) 1
    '{"actions": ["W", "Dolly In", "w", "X"], "step_nums": [5, 9, 9, 9]}',  # only exact symbols count
    '```json {"actions": ["W"], "step_nums": [5]} ``` ```json {"actions": ["S"]} ```',  # FIRST json fence
])
def test_nav_answer_reading(text):
    assert nav(text)["score"] == pytest.approx(1.0, abs=1e-12)


def test_nav_ignores_stepped_answers_and_names():
    # agenticnaveval reads only the top-level "actions": a stepped answer, or names instead of symbols, move
    # nothing. Then direction 0, d = 0.1 -> exp(−1.3863), θ = 0 -> 1: score = 0.35·exp(−1.3863) + 0.25 ≈ 0.3375.
    still = 0.35 * math.exp(-13.863 * 0.1) + 0.25
    for text in (stepped((["W"], [5])), flat(["Dolly In"], [5]), "{}"):
        r = nav(text)
        assert r["score"] == pytest.approx(still, abs=1e-12)
        assert r["score"] == pytest.approx(0.3375, abs=1e-5)


def test_nav_default_step_sizes():
    # Without sizes in the segment entry lmms-eval uses 0.02 m and 0.5°: W ×5 = 0.1 m; → ×10 = 5°.
    info = {"optimal_rel_pose": NAV["optimal_rel_pose"], "0->1": {}}
    assert nav(flat(["W"], [5]), info)["score"] == pytest.approx(1.0, abs=1e-12)
    assert nav(flat(["W", "→"], [5, 10]), info)["final_rotation_error_deg"] == pytest.approx(5.0, abs=1e-9)


def test_nav_uses_the_last_segment_sizes_and_second_to_last_row():
    # Three rows: lmms-eval starts from rows[-2] (here (5, 5, 5)) and aims at rows[-1]; the step sizes come from
    # the segment with the largest start index ("1->2": 0.05 m), not the first.
    info = {"optimal_rel_pose": [[9.0, 9.0, 9.0, 0, 0, 0, 1], [5.0, 5.0, 5.0, 0, 0, 0, 1], [5.0, 5.0, 5.1, 0, 0, 0, 1]],
            "1->2": {"translation_step_size": 0.05}, "0->1": {"translation_step_size": 0.5}}
    assert nav(flat(["W"], [2]), info)["score"] == pytest.approx(1.0, abs=1e-12)  # 2 × 0.05 = 0.1


def test_nav_more_than_seven_rows_aims_at_row_six():
    # Its comparison pose is rows[: len(pose7) - 1 + 1][-1] = rows[:7][-1]: with 9 rows that is row 6, while the
    # start is row 7. Row 6 is 0.1 m to the right of row 7, row 8 0.1 m ahead: Truck Right wins.
    rows = [I7] * 6 + [[0.1, 0, 0, 0, 0, 0, 1], I7, [0, 0, 0.1, 0, 0, 0, 1]]
    info = {"optimal_rel_pose": rows, "0->1": dict(SEG)}
    assert nav(flat(["D"], [5]), info)["score"] == pytest.approx(1.0, abs=1e-12)
    assert nav(flat(["W"], [5]), info)["scores"]["direction_score"] == 0.0


def test_nav_roll_clockwise_is_positive_about_x():
    # ↻ ×90 at 1° = from_euler("zyx", [0, 0, +90°]): +90° about x. Goal row: quaternion (sin45°, 0, 0, cos45°).
    s = math.sqrt(0.5)
    info = {"optimal_rel_pose": [I7, [0, 0, 0, s, 0, 0, s]], "0->1": dict(SEG)}
    assert nav(flat(["↻"], [90]), info)["final_rotation_error_deg"] == pytest.approx(0.0, abs=1e-6)
    assert nav(flat(["↺"], [90]), info)["final_rotation_error_deg"] == pytest.approx(180.0, abs=1e-6)
    # The rotation is composed on the left (fixed axes): yaw 90° then pitch 90° as separate steps is R_y·R_z.
    q = (Rotation.from_euler("y", 90, degrees=True) * Rotation.from_euler("z", 90, degrees=True)).as_quat()
    rows = [I7, [0, 0, 0, *Rotation.from_euler("z", 90, degrees=True).as_quat()], [0, 0, 0, *q]]
    info = {"optimal_rel_pose": rows, "0->1": dict(SEG), "1->2": dict(SEG)}
    assert manip(stepped((["→"], [90]), (["↑"], [90])), info)["final_rotation_error_deg"] == pytest.approx(0, abs=1e-6)


def test_nan_step_num_quirk():
    # JSON NaN is accepted by json.loads. A NaN translation makes the position error NaN, so the raw score is
    # NaN, and lmms-eval's clamp max(0.0, min(1.0, NaN)) returns 1.0 (Python's min keeps its first argument when
    # the comparison is False). Direction: neither `< 1e-6` nor `> 1e-6` holds for NaN -> 0.
    r = nav('{"actions": ["W"], "step_nums": [NaN]}')
    assert r["score"] == 1.0
    assert r["scores"]["direction_score"] == 0.0 and math.isnan(r["scores"]["position_score"])
    # A NaN rotation gives a NaN quaternion; scipy (the same library lmms-eval uses) may refuse it.
    try:
        Rotation.from_quat([np.nan] * 4)
        refuses_nan = False
    except ValueError:
        refuses_nan = True
    r = nav('{"actions": ["→"], "step_nums": [NaN]}')
    if refuses_nan:
        assert r["score"] == 0 and r["error"].startswith("lmms-eval would raise ValueError")
    else:
        assert r["score"] == 1.0


@pytest.mark.parametrize("info, why", [
    ({"0->1": dict(SEG)}, "KeyError"),                                                 # no optimal_rel_pose
    ({"optimal_rel_pose": [I7, I7]}, "IndexError"),                                   # no segment entry (nav)
    ({"optimal_rel_pose": [I7], "0->1": dict(SEG)}, "IndexError"),                    # one row: no rows[-2]
    ({"optimal_rel_pose": [I7, [0, 0, 0, 0, 0, 0, 0]], "0->1": dict(SEG)}, "ValueError"),  # zero quaternion
    ({"optimal_rel_pose": [I7, I7], "0->1": [0.02]}, "AttributeError"),              # segment not a dict
    ({"optimal_rel_pose": [I7, I7], "a->b": dict(SEG)}, "ValueError"),                # key not "int->..."
    ({"optimal_rel_pose": [I7, I7[:6]], "0->1": dict(SEG)}, "ValueError"),           # ragged rows
    ({"optimal_rel_pose": [I7, I7], "0->1": {"translation_step_size": "0.02"}}, "TypeError"),  # str size used
])
def test_nav_where_lmms_eval_raises(info, why):
    r = nav(flat(["W"], [5]), info)
    assert set(r) == {"score", "error"} and r["score"] == 0
    assert r["error"].startswith(f"lmms-eval would raise {why}") and "\n" not in r["error"]


def test_unused_bad_step_size_is_harmless_and_json_text_info_is_accepted():
    # A string step size is only a problem where it is multiplied: a rotation-only answer never touches it.
    info = {"optimal_rel_pose": NAV["optimal_rel_pose"], "0->1": {"translation_step_size": "x",
                                                                 "rotation_step_size": DEG}}
    assert "error" not in nav(flat(["→"], [10]), info)
    assert nav(flat(["W"], [5]), json.dumps(NAV)) == nav(flat(["W"], [5]))
    with pytest.raises(ValueError):
        score_lmms_eval("{}", NAV, kind="robot")


# ------------------------------------------------------------------------------------------------------------
# Manipulation (manipulateeval), hand-worked
# ------------------------------------------------------------------------------------------------------------
PERFECT = stepped((["D"], [5]), (["W", "→"], [5, 10]))
E_DIAG = math.exp(-13.863 * math.sqrt(0.02))   # d = |(0.1, 0, 0.1)| = 0.141421 m -> ≈ 0.140785
R10 = math.exp(-0.0154 * (10 / 5) ** 2)        # θ = 10° -> exp(−0.0616) ≈ 0.940259


def test_manip_perfect_answer():
    # Step 1: D ×5 -> (0.1, 0, 0) = row 1. Step 2: W ×5 and → ×10 -> (0.1, 0, 0.1) with a 10° yaw = row 2.
    r = manip(PERFECT)
    assert tuple(r) == MANIP_RESULT_KEYS
    assert tuple(r["scores"]) == ("direction_score", "position_score", "rotation_score", "distance_ratio_score")
    assert r["score"] == pytest.approx(1.0, abs=1e-12)
    assert r["is_successful_binary"] is True
    assert (r["predicted_segments"], r["total_segments"]) == (2, 2)
    assert r["gt_movement_magnitude"] == pytest.approx(math.sqrt(0.02), abs=1e-15)
    assert r["scores"]["distance_ratio_score"] == pytest.approx(1.0, abs=1e-12)
    assert type(r["predicted_segments"]) is int and type(r["is_successful_binary"]) is bool


def test_manip_more_steps_than_segments_are_dropped():
    # A third step has no segment: it is dropped, so the answer is scored as the perfect two-step one.
    text = json.dumps({**json.loads(PERFECT), "step_3": {"actions": ["S"], "step_nums": [10]}})
    r = manip(text)
    assert r["predicted_segments"] == 2 and r["score"] == pytest.approx(1.0, abs=1e-12)


def test_manip_prefix_is_compared_with_the_intermediate_pose_but_penalised_for_the_whole_path():
    # One correct step: compared with row 1 (direction 1, d 0, θ 0 -> raw 1.0). The truth's whole path turns 10°
    # (> 5°) and the answer does not turn (≤ 2°) -> × 0.5. gt movement to row 1 is 0.1, not > 0.1 -> no ×0.7.
    r = manip(stepped((["D"], [5])))
    assert r["score"] == pytest.approx(0.5, abs=1e-12)
    assert (r["predicted_segments"], r["total_segments"], r["is_successful_binary"]) == (1, 2, False)


def test_manip_wrong_direction():
    # A ×5 then S ×5 with → ×10: p = (−0.1, 0, −0.1) against g = (0.1, 0, 0.1): cos = −1 -> 0.
    # d = |(−0.2, 0, −0.2)| = 0.282843 -> exp(−3.92104) ≈ 0.019818; θ = 0 -> 1. It moved and turned: no penalty.
    r = manip(stepped((["A"], [5]), (["S", "→"], [5, 10])))
    expected = 0.35 * math.exp(-13.863 * math.sqrt(0.08)) + 0.25
    assert r["score"] == pytest.approx(expected, abs=1e-12)
    assert r["score"] == pytest.approx(0.256937, abs=1e-5)


def test_manip_rotation_only_gets_the_movement_penalty():
    # → ×10 then STOP: no translation (direction 0), d = 0.141421 -> E_DIAG, θ = 0 -> 1.
    # gt moved 0.1414 > 0.1 m, the answer 0 < 0.03 m -> × 0.7. It turned 10° > 2° -> no rotation penalty.
    r = manip(stepped((["→"], [10]), (["STOP"], [1])))
    assert r["score"] == pytest.approx((0.35 * E_DIAG + 0.25) * 0.7, abs=1e-12)
    assert r["score"] == pytest.approx(0.209492, abs=1e-5)
    assert r["scores"]["distance_ratio_score"] == pytest.approx(math.exp(-15.0), abs=1e-15)  # ratio 0


def test_manip_both_penalties():
    # STOP, STOP: direction 0, E_DIAG, θ = 10° -> R10; × 0.7 (did not move) × 0.5 (did not turn) = × 0.35.
    r = manip(stepped((["STOP"], [1]), (["STOP"], [1])))
    assert r["score"] == pytest.approx((0.35 * E_DIAG + 0.25 * R10) * 0.35, abs=1e-12)
    assert r["score"] == pytest.approx(0.099519, abs=1e-5)


def test_manip_empty_and_flat_answers_quirk():
    # "{}" has no step: 0 predicted segments, so the comparison pose is row 0 = the start, and "staying" is a
    # perfect match (direction 1: both moved < 1e-6; d 0; θ 0). Only the whole-path rotation penalty applies: 0.5.
    # A flat answer is the same: its keys "actions" and "step_nums" have no digit (alphabetical order) and hold
    # lists, not dicts, so both are skipped.
    for text in ("{}", flat(["D", "W", "→"], [5, 5, 10])):
        r = manip(text)
        assert r["score"] == pytest.approx(0.5, abs=1e-12)
        assert r["predicted_segments"] == 0 and r["scores"]["distance_ratio_score"] == 1.0


def test_manip_step_key_order_and_non_dict_steps():
    # "step_2" sorts before "step_10" (by the integer in the key), not as strings.
    text = json.dumps({"step_10": {"actions": ["W", "→"], "step_nums": [5, 10]},
                       "step_2": {"actions": ["D"], "step_nums": [5]}}, ensure_ascii=False)
    assert manip(text)["score"] == pytest.approx(1.0, abs=1e-12)
    # A step that is not a dict is skipped but still uses up its segment: one predicted pose, compared with row 1.
    text = json.dumps({"step_1": "D5", "step_2": {"actions": ["D"], "step_nums": [5]}})
    r = manip(text)
    assert r["predicted_segments"] == 1 and r["scores"]["direction_score"] == pytest.approx(1.0, abs=1e-12)
    # Each step uses its own segment's sizes: segment 1 here has 0.05 m, so D ×2 then W ×2 reach row 2's position.
    info = dict(MANIP, **{"0->1": {"translation_step_size": 0.05}, "1->2": {"translation_step_size": 0.05,
                                                                            "rotation_step_size": 5 * DEG}})
    r = manip(stepped((["D"], [2]), (["W", "→"], [2, 2])), info)
    assert r["score"] == pytest.approx(1.0, abs=1e-12)


def test_manip_errors():
    bad = dict(MANIP, optimal_rel_pose=[I7, [0, 0, 0, 0, 0, 0, 0], MANIP["optimal_rel_pose"][2]])
    assert manip(PERFECT, bad)["error"].startswith("lmms-eval would raise ValueError")  # zero quaternion
    assert manip(PERFECT, {"optimal_rel_pose": []})["error"].startswith("lmms-eval would raise IndexError")
    # Unhashable action symbols and non-string answer keys fail there too.
    assert manip(stepped(([["D"]], [5])))["error"].startswith("lmms-eval would raise TypeError")
    assert manip("{1: {'actions': ['D']}}")["error"].startswith("lmms-eval would raise TypeError")
    # A manip sample needs no segment entries: with none, every step is dropped (0 of 0 segments, success).
    r = manip(PERFECT, {"optimal_rel_pose": [I7]})
    assert r["predicted_segments"] == 0 and r["total_segments"] == 0 and r["is_successful_binary"] is True


# ------------------------------------------------------------------------------------------------------------
# Properties
# ------------------------------------------------------------------------------------------------------------
def _random_case(rng, n_rows):
    rows = [I7]
    for _ in range(n_rows - 1):
        rows.append(list(rng.uniform(-0.3, 0.3, 3)) + list(Rotation.random(random_state=rng).as_quat()))
    info = {"optimal_rel_pose": rows}
    for k in range(n_rows - 1):
        info[f"{k}->{k + 1}"] = {"translation_step_size": float(rng.uniform(0.005, 0.05)),
                                 "rotation_step_size": float(rng.uniform(0.2, 5) * DEG)}
    symbols = ["W", "S", "A", "D", "space", "shift", "←", "→", "↑", "↓", "↺", "↻", "STOP"]
    steps = []
    for _ in range(int(rng.integers(0, n_rows + 1))):
        k = int(rng.integers(1, 5))
        steps.append(([symbols[i] for i in rng.integers(0, 13, k)], [int(x) for x in rng.integers(0, 11, k)]))
    return info, steps


def test_scores_lie_in_the_documented_ranges():
    rng = np.random.default_rng(0)
    for _ in range(150):
        info, steps = _random_case(rng, int(rng.integers(2, 5)))
        for kind, text in (("nav", flat(*steps[0]) if steps else "{}"), ("manip", stepped(*steps))):
            r = score_lmms_eval(text, info, kind)
            assert 0.0 <= r["score"] <= 1.0
            assert all(0.0 <= v <= 1.0 + 1e-12 for v in r["scores"].values())
            assert r["final_position_error_m"] >= 0 and 0 <= r["final_rotation_error_deg"] <= 180 + 1e-9
            if kind == "manip":
                assert 0 <= r["predicted_segments"] <= r["total_segments"]


def _rows_from_counts(steps, t, r):
    """lmms-eval's update written out: p += (dx, dy, dz); R <- E(yaw about z, pitch about y, roll about x)·R."""
    axis = {"D": (0, 1), "A": (0, -1), "shift": (1, 1), "space": (1, -1), "W": (2, 1), "S": (2, -1),
            "→": (3, 1), "←": (3, -1), "↑": (4, 1), "↓": (4, -1), "↻": (5, 1), "↺": (5, -1)}
    p, R = np.zeros(3), Rotation.identity()
    rows = [I7]
    for actions, nums in steps:
        v = np.zeros(6)
        for a, n in zip(actions, nums):
            if a in axis:
                i, s = axis[a]
                v[i] += s * n * (t if i < 3 else r)
        p = p + v[:3]
        R = Rotation.from_euler("zyx", v[3:]) * R
        rows.append(list(p) + list(R.as_quat()))
    return rows


def test_the_answer_that_made_the_rows_scores_the_maximum():
    rng = np.random.default_rng(1)
    for _ in range(60):
        _, steps = _random_case(rng, int(rng.integers(2, 6)))
        if not steps:
            continue
        rows = _rows_from_counts(steps, 0.02, 2 * DEG)
        info = {"optimal_rel_pose": rows, **{f"{k}->{k + 1}": {"translation_step_size": 0.02,
                                                              "rotation_step_size": 2 * DEG}
                                             for k in range(len(steps))}}
        assert manip(stepped(*steps), info)["score"] == pytest.approx(1.0, abs=1e-9)
        nav_info = {"optimal_rel_pose": rows[:1] + _rows_from_counts(steps[:1], 0.02, 2 * DEG)[1:],
                    "0->1": info["0->1"]}
        assert nav(flat(*steps[0]), nav_info)["score"] == pytest.approx(1.0, abs=1e-9)


def test_score_is_monotone_in_the_distance_error():
    # Goal: 0.1 m to the right (D ×5). D ×n for n = 1..5 gets closer, n = 5..10 overshoots more: the direction
    # stays 1 and the rotation 1, so the score falls strictly with |n − 5|.
    info = {"optimal_rel_pose": [I7, [0.1, 0, 0, 0, 0, 0, 1]], "0->1": dict(SEG)}
    scores = [nav(flat(["D"], [n]), info)["score"] for n in range(1, 11)]
    assert all(a < b for a, b in zip(scores[:4], scores[1:5]))
    assert all(a > b for a, b in zip(scores[4:], scores[5:]))
    assert scores[4] == pytest.approx(1.0, abs=1e-12)


# ------------------------------------------------------------------------------------------------------------
# Export round trip
# ------------------------------------------------------------------------------------------------------------
def _task(kind, signed, sizes, start=None, **kw):
    gt = ActionSequence.from_signed_counts(signed, sizes=sizes, **kw)
    start = np.eye(4) if start is None else start
    return Task(id=f"t-{kind}", kind=kind, source="test", start_pose=start, goal_pose=gt.to_poses(start)[-1],
                gt=gt, sizes=sizes, answer_format="flat" if (kind == "nav" and len(gt) == 1) else "stepped")


START = geometry.make_pose(Rotation.from_euler("xyz", [10, -20, 30], degrees=True).as_matrix(), [1.0, 2.0, 0.5])


def test_round_trip_nav():
    sizes = StepSizes.navigation()
    task = _task("nav", [[2, -1, 5, 3, -4, 2]], sizes, START)
    info = to_lmms_extra_info(task)
    assert len(info["optimal_rel_pose"]) == 2 and info["optimal_rel_pose"][0] == I7
    assert info["0->1"]["translation_step_size"] == sizes.translation
    assert info["0->1"]["rotation_step_size"] == sizes.rotation
    text = task.gt.to_text("flat", names="symbol")  # our own ground-truth answer text
    assert text == to_lmms_answer(task.gt, "nav")
    r = score_lmms_eval(text, json.loads(json.dumps(info, ensure_ascii=False)), "nav")
    # The rows are reached exactly; only the direction cosine can sit an ulp below 1.
    assert r["final_position_error_m"] == 0.0 and r["final_rotation_error_deg"] == 0.0
    assert r["score"] == pytest.approx(1.0, abs=1e-12)


def test_round_trip_nav_multi_step_ground_truth_is_summed():
    task = _task("nav", [[1, 0, 3, 0, 2, 0], [0, -2, 1, 1, 0, -1]], StepSizes.navigation(), START)
    info = to_lmms_extra_info(task)
    assert [k for k in info if "->" in k] == ["0->1"]
    text = to_lmms_answer(task.gt, "nav")
    # Summed counts in our table order: truck +1, pedestal −2 (Up), dolly +4, tilt +1, pan +2, roll −1 (CW).
    assert json.loads(text) == {"actions": ["D", "space", "W", "↑", "→", "↻"], "step_nums": [1, 2, 4, 1, 2, 1]}
    assert score_lmms_eval(text, info, "nav")["score"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kind", ["manip", "hand"])
def test_round_trip_manip(kind):
    sizes = StepSizes.manipulation()
    signed = [[3, 0, 2, 0, 1, 0], [0, -2, 0, 2, 0, 3], [0, 0, 0, 0, 0, 0], [-1, 1, 4, -1, -2, -1]]
    task = _task(kind, signed, sizes, START, gripper=[0, 1, -1, 0])
    info = to_lmms_extra_info(task)
    assert [k for k in info if "->" in k] == ["0->1", "1->2", "2->3", "3->4"]
    assert len(info["optimal_rel_pose"]) == 5
    text = task.gt.to_text("stepped", names="symbol")  # includes "gripper" fields, which lmms-eval ignores
    r = score_lmms_eval(text, info, kind)
    assert r["final_position_error_m"] == 0.0 and r["final_rotation_error_deg"] == 0.0
    assert r["score"] == pytest.approx(1.0, abs=1e-12) and r["is_successful_binary"] is True
    assert (r["predicted_segments"], r["total_segments"]) == (4, 4)
    assert score_lmms_eval(to_lmms_answer(task.gt, kind), info, kind)["score"] == pytest.approx(1.0, abs=1e-12)
    # Every prefix is compared with its own intermediate row and matches it.
    steps = json.loads(text)
    for k in range(1, 4):
        part = json.dumps({key: steps[key] for key in list(steps)[:k]}, ensure_ascii=False)
        assert score_lmms_eval(part, info, kind)["final_position_error_m"] == 0.0


def test_export_rows_against_geometry():
    # Pure translation: lmms-eval's replay and our body-frame motion agree, so row 1 is our relative translation.
    sizes = StepSizes.navigation()
    task = _task("nav", [[2, -1, 5, 0, 0, 0]], sizes, START)
    info = to_lmms_extra_info(task)
    rel = info["spatialact"]["rel_pose"]
    assert np.allclose(info["optimal_rel_pose"][1][:3], [2 * sizes.translation, -sizes.translation,
                                                         5 * sizes.translation], atol=1e-15)
    assert np.allclose(rel[1], info["optimal_rel_pose"][1], atol=1e-12)
    # Pan Right 90°: ours turns about the camera's +Y (down); lmms-eval's replay labels Pan "yaw" and turns about
    # its +Z. The rows keep lmms-eval's reading; rel_pose keeps ours.
    sizes = StepSizes(translation=0.02, rotation=math.radians(9))
    task = _task("manip", [[0, 0, 0, 0, 10, 0]], sizes)
    info = to_lmms_extra_info(task)
    s = math.sqrt(0.5)
    assert np.allclose(info["optimal_rel_pose"][1], [0, 0, 0, 0, 0, s, s], atol=1e-12)
    assert np.allclose(info["spatialact"]["rel_pose"][1], [0, 0, 0, 0, s, 0, s], atol=1e-12)
    # spatialact.rel_pose is inv(start) @ pose_k of the ground truth, as [x, y, z, qx, qy, qz, qw].
    task = _task("manip", [[3, 0, 2, 0, 1, 0], [0, -2, 0, 2, 0, 3]], StepSizes.manipulation(), START)
    rel = np.asarray(to_lmms_extra_info(task)["spatialact"]["rel_pose"])
    T = geometry.relative_pose(START, task.goal_pose)
    assert np.allclose(rel[-1][:3], T[:3, 3], atol=1e-12)
    assert Rotation.from_quat(rel[-1][3:]).approx_equal(Rotation.from_matrix(T[:3, :3]), atol=1e-12)


def test_export_without_geometry_is_the_same_minus_the_spatialact_block():
    task = _task("manip", [[3, 0, 2, 0, 1, 0], [0, -2, 0, 2, 0, 3]], StepSizes.manipulation(), START)
    full, light = to_lmms_extra_info(task), to_lmms_extra_info(task, geometry=False)
    assert "spatialact" in full and {k: v for k, v in full.items() if k != "spatialact"} == light
    text = json.dumps({"step_1": {"actions": ["D", "W"], "step_nums": [3, 1]}})
    assert score_lmms_eval(text, full, "manip") == score_lmms_eval(text, light, "manip")
    # the quaternions of rel_pose, written in one scipy call, are those of one call per pose
    rel = full["spatialact"]["rel_pose"]
    poses = geometry.relative_pose(START, task.gt_poses())
    assert [list(Rotation.from_matrix(T[:3, :3]).as_quat()) for T in poses] == [r[3:] for r in rel]


def test_export_vector_ground_truth():
    seq = ActionSequence.from_motions([[0.01, 0.0, 0.03, 0.1, -0.2, 0.05]], sizes=StepSizes.manipulation())
    task = Task(id="v", kind="manip", source="test", start_pose=np.eye(4), goal_pose=seq.to_poses()[-1], gt=seq,
                sizes=StepSizes.manipulation(), answer_format="vector")
    info = to_lmms_extra_info(task)
    # dx, dy, dz = tx, ty, tz; yaw = pan = −0.2, pitch = tilt = 0.1, roll = −(our CCW roll) = −0.05.
    expect = Rotation.from_euler("zyx", [-0.2, 0.1, -0.05]).as_quat()
    assert np.allclose(info["optimal_rel_pose"][1], [0.01, 0.0, 0.03, *expect], atol=1e-12)
    assert np.allclose(lmms_replay(seq.as_motions())[1], info["optimal_rel_pose"][1], atol=1e-15)
    with pytest.raises(ValueError):
        to_lmms_answer(seq, "manip")


# ------------------------------------------------------------------------------------------------------------
# Optional: lmms-eval's own functions as the reference
# ------------------------------------------------------------------------------------------------------------
LMMS_VENV = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), ".lmms-venv")
RULE_METRICS = os.path.join("lmms_eval", "tasks", "spatialtreebench", "metrics", "rule_metrics.py")


def _load_reference():
    """lmms-eval's rule_metrics.py, loaded by file path from lmms-eval's own environment (.lmms-venv, made by
    scripts/setup.sh; its package __init__ pulls torch & co., this file needs only numpy and scipy, so it runs
    here). None when .lmms-venv is missing."""
    found = sorted(glob.glob(os.path.join(LMMS_VENV, "lib", "python3*", "site-packages", RULE_METRICS)))
    if not found:
        return None
    mspec = importlib.util.spec_from_file_location("_lmms_eval_rule_metrics_reference", found[-1])
    module = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(module)
    return module


REFERENCE = _load_reference()


@pytest.fixture
def reference():
    """lmms-eval's metric module; skipped only where .lmms-venv is missing outside CI (set-up always makes it in
    CI, so there it must run)."""
    if REFERENCE is None:
        if os.environ.get("CI"):
            pytest.fail(f"lmms-eval's {RULE_METRICS} is not in {LMMS_VENV}: set-up makes it (bash scripts/setup.sh)")
        pytest.skip(".lmms-venv is missing here (bash scripts/setup.sh makes it)")
    return REFERENCE


def _close(a, b, tol=1e-9):
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and list(a) == list(b) and all(
            _close(a[k], b[k], tol) for k in a)
    if isinstance(a, (bool, str)) or isinstance(b, (bool, str)):
        return a == b and type(a) is type(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= tol


def _fuzz_sample(rng):
    """A random sample, mostly well-formed, with the malformations seen in real answers mixed in."""
    n_rows = int(rng.integers(2, 10)) if rng.random() > 0.03 else 1
    rows = []
    for _ in range(n_rows):
        pos = [float(x) for x in rng.normal(0, 0.15, 3)] if rng.random() > 0.2 else [0.0, 0.0, 0.0]
        q = [float(x) for x in Rotation.random(random_state=rng).as_quat()] if rng.random() > 0.3 else [0, 0, 0, 1]
        rows.append(pos + q)
    u = rng.random()
    if u < 0.02:
        rows[int(rng.integers(n_rows))][3:] = [0, 0, 0, 0]
    elif u < 0.04:
        rows = [[int(round(x)) for x in r] for r in rows]
    elif u < 0.05:
        rows[0] = rows[0][:6]
    info = {"optimal_rel_pose": rows}
    n_seg = int(rng.integers(1, n_rows + 1)) if rng.random() > 0.03 else 0
    keys = [f"{k}->{k + 1}" for k in range(n_seg)]
    rng.shuffle(keys)
    for key in keys:
        seg = {}
        if rng.random() < 0.7:
            seg["translation_step_size"] = float(rng.uniform(0.005, 0.08))
        if rng.random() < 0.7:
            seg["rotation_step_size"] = float(rng.uniform(0.1, 8) * DEG)
        info[key] = seg if rng.random() > 0.02 else [1]
    if rng.random() < 0.02:
        info["x->y"] = {}
    if rng.random() < 0.1:
        info["metricfunc"] = "manipulateeval"

    symbols = ["W", "S", "A", "D", "space", "shift", "←", "→", "↑", "↓", "↺", "↻", "STOP",
               "Dolly In", "w", "Q", "", "pan right"]

    def one_step():
        k = int(rng.integers(0, 5))
        acts = [symbols[i] if rng.random() > 0.1 else symbols[int(rng.integers(0, 13))]
                for i in rng.integers(0, len(symbols), k)]
        d = {"actions": acts}
        v = rng.random()
        if v < 0.7:
            d["step_nums"] = [int(x) for x in rng.integers(0, 11, k)]
        elif v < 0.8:
            d["step_nums"] = [float(x) for x in rng.uniform(-3, 12, max(0, k - 1))]
        elif v < 0.85:
            d["step_nums"] = [float("nan")] * k
        if rng.random() < 0.1:
            d["gripper"] = int(rng.integers(0, 2))
        return d

    form = rng.random()
    if form < 0.35:
        obj = one_step()
    else:
        names = ["step_%d" % (i + 1) for i in range(int(rng.integers(0, n_rows + 2)))]
        if rng.random() < 0.1:
            names = ["first", "second", "step_3"][: len(names)]
        rng.shuffle(names)
        obj = {name: (one_step() if rng.random() > 0.05 else "D 5") for name in names}
        if rng.random() < 0.1:
            obj["actions"] = ["W"]
    text = json.dumps(obj, ensure_ascii=False)
    w = rng.random()
    if w < 0.2:
        text = f"```json\n{text}\n```"
    elif w < 0.3:
        text = f"Reasoning first.\n```\n{text}\n```\nThat's it."
    elif w < 0.4:
        text = f"The answer is {text}. Hope it helps {{sic}}"
    elif w < 0.5:
        text = text.replace("]", ", ]").replace("}", ",}")
    elif w < 0.57:
        text = text.replace('"', "'")
    elif w < 0.6:
        text = text[: int(len(text) * rng.random())]
    elif w < 0.62:
        text = f"```python\n{text}\n```"
    elif w < 0.64:
        text = ""
    return text, info


@pytest.mark.parametrize("kind", ["nav", "manip"])
def test_matches_lmms_eval_on_random_samples(kind, reference):
    reference = reference.agenticnaveval if kind == "nav" else reference.manipulateeval
    rng = np.random.default_rng(2024 if kind == "nav" else 2025)
    outcomes = {"scored": 0, "invalid": 0, "raised": 0}
    for i in range(250):
        text, info = _fuzz_sample(rng)
        try:
            with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
                expected = reference(text, None, json.loads(json.dumps(info)))
        except Exception as exc:  # noqa: BLE001 - lmms-eval's caller catches everything
            expected = exc
        got = score_lmms_eval(text, info, kind)
        if isinstance(expected, Exception):
            outcomes["raised"] += 1
            assert got["score"] == 0 and got["error"].startswith(
                f"lmms-eval would raise {type(expected).__name__}"), (i, text, info, expected, got)
        else:
            outcomes["invalid" if "error" in expected else "scored"] += 1
            assert _close(got, expected), (i, text, info, expected, got)
    # The generator must exercise all three outcomes, mostly real scores.
    assert outcomes["scored"] > 150 and outcomes["invalid"] > 5 and outcomes["raised"] > 3, outcomes


# Hand-picked malformed answers and infos: every pair must give lmms-eval's dict, or an error naming the exception
# type lmms-eval raises.
_ODD_TEXTS = [
    "```json```", "``````", '```json {"actions": ["W"]}', '{"actions": "WWW"}', '{"actions": "space"}',
    '{"actions": ["W"], "step_nums": "5"}', '{"actions": ["W"], "step_nums": {"0": 3}}',
    "{'actions': ['W'], 'step_nums': {0: 3}}", '{"actions": ["STOP"], "step_nums": "x"}',
    '{"actions": ["STOP"], "step_nums": null}', '{"actions": null}', '{"actions": ["W"], "step_nums": [true]}',
    '{"actions": ["W"], "step_nums": [Infinity]}', '{"actions": ["→"], "step_nums": [1e300]}',
    "{'actions': ['W'], 'step_nums': [1j]}", "{'actions': ('W',), 'step_nums': (5,)}", "{[1]: 2}",
    '{"a": ' + "1" * 5000 + "}", "{'step_١': {'actions': ['D'], 'step_nums': [5]}}",
    "{b'step_1': {'actions': ['D']}}", '{"step_1": {"actions": ["D"], "step_nums": [5]}, "step_01": {"actions": ["W"]}}',
    '{"step_' + "9" * 5000 + '": {"actions": ["D"], "step_nums": [5]}}', '{"actions": [["W"]]}', '{"actions": 5}',
    '{"actions": ["W"], "step_nums": [5], "step_1": {"actions": ["D"], "step_nums": [5]}}',
    "text { not json } more }", '{"actions": ["W"], "step_nums": [5]}\x00', "None",
]
_ODD_INFOS = [
    NAV, MANIP,
    {"optimal_rel_pose": [I7, [0, 0, None, 0, 0, 0, 1], [0, 0, 0.1, 0, 0, 0, 1]], "0->1": SEG, "1->2": SEG},
    {"optimal_rel_pose": [[True] * 7, [True] * 7], "0->1": SEG},
    {"optimal_rel_pose": [I7, [0, 0, 1, 0, 0, 0, 1]], "0->1": {"translation_step_size": True, "rotation_step_size": 2}},
    {"optimal_rel_pose": [[I7]] * 3, "0->1": SEG},
    {"optimal_rel_pose": [I7, [float("nan"), 0, 0, 0, 0, 0, 1]], "0->1": SEG, "1->2": SEG},
    {"optimal_rel_pose": [I7, ["0", "0", "0.1", "0", "0", "0", "1"]], "0->1": SEG},
    {"optimal_rel_pose": [I7, [0, 0, 0.1, 0, 0, 0, 1]], " 1->2": SEG, "+0->1": SEG, "00->1": {"translation_step_size": 0.05}},
    {"optimal_rel_pose": [I7, [0, 0, 2 ** 70, 0, 0, 0, 1]], "0->1": SEG},
    {"optimal_rel_pose": [I7, [0, 0, 0.1, 1e-300, 0, 0, 0]], "0->1": SEG},
    {"optimal_rel_pose": [I7, [0, 0, 0.1, 1e200, 1e200, 0, 0]], "0->1": SEG},
    {"optimal_rel_pose": [I7, [0, 0, 0.1, 0, 0, 0, 1]], "0->1": {"translation_step_size": [0.02]}},
]


@pytest.mark.parametrize("kind", ["nav", "manip"])
def test_matches_lmms_eval_on_malformed_inputs(kind, reference):
    import warnings

    reference = reference.agenticnaveval if kind == "nav" else reference.manipulateeval
    for text in _ODD_TEXTS:
        for info in _ODD_INFOS:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    with contextlib.redirect_stdout(io.StringIO()), np.errstate(all="ignore"):
                        expected = reference(text, None, info)
                except Exception as exc:  # noqa: BLE001
                    expected = exc
                got = score_lmms_eval(text, info, kind)
            if isinstance(expected, Exception):
                assert got["score"] == 0 and got["error"].startswith(
                    f"lmms-eval would raise {type(expected).__name__}"), (text, info, expected, got)
            else:
                assert _close(got, expected), (text, info, expected, got)


# ------------------------------------------------------------------------------------------------------------
# lmms-eval's fence patterns, found in linear time
# ------------------------------------------------------------------------------------------------------------
# The patterns as lmms-eval 0.7.3's rule_metrics.py writes them (agenticnaveval and manipulateeval): the oracle.
LMMS_FENCES = {"```json": re.compile(r"```json\s*(.*?)\s*```", re.DOTALL),
               "```": re.compile(r"```\s*(.*?)\s*```", re.DOTALL)}


def test_the_reference_patterns_are_lmms_evals(reference):
    source = open(reference.__file__, encoding="utf-8").read()
    for pattern in LMMS_FENCES.values():
        assert f're.search(r"{pattern.pattern}", response, re.DOTALL)' in source


def _regex_group(text, opener):
    m = LMMS_FENCES[opener].search(text)
    return None if m is None else m.group(1)


@settings(max_examples=800, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("` \t\n\u00a0\u2003json{}x1")), max_size=24))
def test_fence_group_is_lmms_evals_regex_group(text):
    for opener in LMMS_FENCES:
        assert fence_group(text, opener) == _regex_group(text, opener), (text, opener)


def test_fence_group_on_short_strings_exhaustively_sampled():
    rng = np.random.default_rng(3)
    alphabet = ["`", "``", "```", "```json", " ", "\n", "\u00a0", "j", "{", "}", "x"]
    hits = 0
    for _ in range(20_000):
        text = "".join(alphabet[i] for i in rng.integers(0, len(alphabet), int(rng.integers(0, 12))))
        for opener in LMMS_FENCES:
            got = fence_group(text, opener)
            assert got == _regex_group(text, opener), (text, opener)
            hits += got is not None
    assert hits > 5000  # fences closed, unclosed, empty and nested are all in there


def test_an_unclosed_fence_with_a_megabyte_of_whitespace_is_scored():
    """lmms-eval's patterns backtrack cubically here (3 KB took 13 s); the same verdict, at once: the text after
    the fence is decoded as lmms-eval would, and is unreadable."""
    for text in ("```" + " " * 1_000_000, "```json" + "\n" * 1_000_000 + "{", "```json ```" + " " * 1_000_000):
        assert score_lmms_eval(text, NAV, "nav") == {"score": 0, "error": INVALID_RESPONSE}
    small = "```json" + " " * 300
    assert fence_group(small, "```json") == _regex_group(small, "```json") is None
