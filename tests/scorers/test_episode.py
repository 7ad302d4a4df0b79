"""Episode scores, answer scoring and closed-loop metrics (docs/scoring.md): hand-worked known answers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import ActionSequence, Step, StepSizes
from spatialact.scorers import (EpisodeScore, closed_loop_metrics, score_answer, score_episode, score_lmms_eval,
                                to_lmms_answer, to_lmms_extra_info)
from spatialact.tasks import Task

NAV = StepSizes.navigation()
MAN = StepSizes.manipulation()
U = NAV.translation


def seq(steps, sizes=NAV):
    """steps: list of ({name: count}, gripper)."""
    return ActionSequence(tuple(Step.from_counts(c, gripper=g) for c, g in steps), sizes)


def nav_task(gt, **kw):
    return Task(id=kw.pop("id", "t1"), kind="nav", source="test", start_pose=np.eye(4),
                goal_pose=gt.to_poses(np.eye(4))[-1], gt=gt, sizes=gt.sizes, **kw)


# ---------------------------------------------------------------- one-step episodes -----------------------------
def test_half_distance_nav():
    # gt: Dolly In ×4 + Pan Right ×2; pred: Dolly In ×2 + Pan Right ×2 → s_d = 1 − 2/4 = 0.5, s_θ = 1, s_rot = 1.
    gt = seq([({"Dolly In": 4, "Pan Right": 2}, None)])
    pred = seq([({"Dolly In": 2, "Pan Right": 2}, None)])
    e = score_episode(pred, gt, "nav")
    assert e.total == pytest.approx(0.5, abs=1e-12)
    assert e.s_d == pytest.approx(0.5) and e.s_theta == 1.0 and e.s_rot == 1.0 and e.s_grip is None
    assert score_episode(pred, gt, "nav", "paper+rot").total == pytest.approx(0.75, abs=1e-12)
    assert e.translation == e.s_step and e.rotation == e.s_rot and e.gripper is None


def test_perfect_is_exactly_one():
    gt = seq([({"Truck Left": 1, "Pedestal Up": 4, "Tilt Down": 3}, None), ({"Roll CCW": 2, "Dolly Out": 7}, None)])
    for kind in ("nav", "manip", "hand"):
        for prof in ("paper", "paper+rot"):
            e = score_episode(gt, gt, kind, prof, weights=(0.1, 0.2, 0.7))
            assert e.total == 1.0
            assert e.net_translation_error == 0.0 and e.net_rotation_error == 0.0


def test_missing_and_extra_steps():
    a = ({"Dolly In": 3}, None)
    b = ({"Truck Right": 2}, None)
    gt = seq([a, b])
    e = score_episode(seq([a]), gt)  # second step missing → (1 + 0) / 2
    assert e.total == pytest.approx(0.5, abs=1e-15)
    assert [s["status"] for s in e.per_step] == ["scored", "missing"]
    assert e.n_pred == 1 and e.n_gt == 2
    e = score_episode(seq([a, b, a]), gt)  # padding costs: (1 + 1 + 0) / 3
    assert e.total == pytest.approx(2 / 3, abs=1e-15)
    assert e.per_step[2]["status"] == "extra"
    assert score_episode(seq([]), gt).total == 0.0
    assert score_episode(seq([]), seq([])).total == 1.0  # nothing asked, nothing done


def test_stay_on_a_zero_translation_step():
    gt = seq([({"Pan Left": 3}, None)])  # rotation only: ‖g‖ = 0
    assert score_episode(seq([({"Pan Left": 3}, None)]), gt).total == 1.0
    # a one-unit move when the truth does not translate: s_step = 1 − u/u = 0
    assert score_episode(seq([({"Pan Left": 3, "Dolly In": 1}, None)]), gt).total == 0.0
    # Stay on a rotation-only step: translation perfect, rotation 3·0.0725 rad off in paper+rot
    e = score_episode(seq([({}, None)]), gt, "nav", "paper+rot")
    assert e.total == pytest.approx((1 + (1 - 3 * NAV.rotation / math.pi)) / 2, abs=1e-12)


def test_opposite_direction_episode():
    e = score_episode(seq([({"Truck Left": 2}, None)]), seq([({"Truck Right": 2}, None)]))
    assert e.total == 0.0 and e.s_theta == pytest.approx(-1.0)


def test_manipulation_gripper():
    gt = seq([({"Truck Right": 5}, 1)], MAN)
    e = score_episode(seq([({"Truck Right": 5}, 0)], MAN), gt, "manip")
    assert e.total == pytest.approx(2 / 3, abs=1e-15) and e.s_grip == 0.0
    e = score_episode(seq([({"Truck Right": 5}, None)], MAN), gt, "hand")  # None vs a state: a miss
    assert e.total == pytest.approx(2 / 3, abs=1e-15)
    e = score_episode(seq([({"Truck Right": 5}, 1)], MAN), gt, "manip", weights=(1, 1, 2))
    assert e.total == 1.0 and e.weights == (0.25, 0.25, 0.5)
    # a 180° roll error: s_rot = 0 → (1 + 0 + 1) / 3
    gt = ActionSequence((Step.from_motion([0.1, 0, 0, 0, 0, 0], 1),), MAN)
    pred = ActionSequence((Step.from_motion([0.1, 0, 0, 0, 0, math.pi], 1),), MAN)
    e = score_episode(pred, gt, "manip")
    assert e.s_rot == pytest.approx(0.0, abs=1e-12) and e.total == pytest.approx(2 / 3, abs=1e-12)
    assert e.net_rotation_error == pytest.approx(math.pi, abs=1e-9)


def test_gripper_state_persists_in_prediction():
    # pred states the gripper on step 1 only; it persists into step 2 (ActionSequence resolves it).
    gt = seq([({"Dolly In": 1}, 1), ({"Dolly In": 1}, 1)], MAN)
    pred = seq([({"Dolly In": 1}, 1), ({"Dolly In": 1}, None)], MAN)
    assert score_episode(pred, gt, "manip").total == 1.0


def test_net_motion_errors():
    # Same net motion split differently: per-step 0.25, net errors 0.
    gt = seq([({"Dolly In": 4}, None), ({"Dolly In": 2}, None)])
    pred = seq([({"Dolly In": 6}, None)])
    e = score_episode(pred, gt)
    assert e.total == pytest.approx(0.25, abs=1e-12)  # step 1: s_d = 1 − 2/4; step 2 missing
    assert e.net_translation_error == pytest.approx(0.0, abs=1e-12)
    # Pan Right ×3 against ×1: 2 units off in rotation, no translation
    e = score_episode(seq([({"Pan Right": 3}, None)]), seq([({"Pan Right": 1}, None)]))
    assert e.net_rotation_error == pytest.approx(2 * NAV.rotation, abs=1e-12)
    # Truck Right 3 then pan vs. the reverse: the composed translations differ by the rotation of the second.
    e = score_episode(seq([({"Pan Right": 10}, None), ({"Dolly In": 5}, None)]),
                      seq([({"Dolly In": 5}, None), ({"Pan Right": 10}, None)]))
    a = 10 * NAV.rotation
    want = 5 * U * math.hypot(math.sin(a), 1 - math.cos(a))
    assert e.net_translation_error == pytest.approx(want, abs=1e-12)


def test_episode_to_dict_is_json():
    gt = seq([({"Dolly In": 4}, 1), ({"Roll CW": 2}, 0)], MAN)
    e = score_episode(seq([({"Dolly In": 3}, 1)], MAN), gt, "hand")
    d = json.loads(json.dumps(e.to_dict()))
    assert d["total"] == e.total and len(d["per_step"]) == 2 and d["weights"] == list(e.weights)
    assert isinstance(e, EpisodeScore)
    with pytest.raises(ValueError):
        score_episode(gt, gt, "car")
    with pytest.raises(ValueError, match="lmms-eval"):
        score_episode(gt, gt, "nav", "lmms-eval")


def test_per_step_matches_reference_totals():
    gt = seq([({"Dolly In": 4, "Pan Right": 1}, 1), ({"Truck Left": 2}, 0)], MAN)
    pred = seq([({"Dolly In": 3}, 1), ({"Truck Left": 2, "Tilt Up": 2}, 1)], MAN)
    e = score_episode(pred, gt, "manip")
    assert e.total == pytest.approx(sum(s["total"] for s in e.per_step) / 2)


# ---------------------------------------------------------------- answers --------------------------------------
def test_score_answer_good_bad_and_repaired():
    gt = seq([({"Truck Left": 1, "Pedestal Up": 4}, None)])
    task = nav_task(gt, answer_format="flat")
    r = score_answer(gt.to_text("flat"), task)
    assert r["score"] == 1.0 and r["ok"] and r["reason"] is None and r["n_repairs"] == 0
    assert r["task_id"] == "t1" and r["total"] == 1.0
    r = score_answer("I would move left, then up a bit.", task)
    assert r["score"] == 0.0 and r["ok"] is False and r["reason"] == "parse_error" and r["error"]
    r = score_answer('{"actions": ["Truck Left", "Pedestal Up"], "step_nums": [1]}', task)  # missing num → 1
    assert r["n_repairs"] >= 1 and r["ok"]
    assert r["score"] == pytest.approx(score_episode(seq([({"Truck Left": 1, "Pedestal Up": 1}, None)]), gt).total)
    assert json.loads(json.dumps(r))["pred"]["steps"]
    for bad in ["", None, "```json\n{]\n```", "{" * 5000]:
        assert score_answer(bad, task)["score"] == 0.0


def test_score_answer_uses_task_sizes():
    # 2 manipulation units (0.04 m) stated in a manip task are compared with the task's own units.
    gt = seq([({"Dolly In": 2}, 1)], MAN)
    task = Task(id="m", kind="manip", source="test", start_pose=np.eye(4), goal_pose=gt.to_poses()[-1], gt=gt,
                sizes=MAN)
    assert score_answer(gt.to_text(), task)["score"] == 1.0


def test_score_answer_lmms_profile():
    gt = seq([({"Dolly In": 4, "Pan Right": 2}, None)])
    task = nav_task(gt)
    text = to_lmms_answer(gt, "nav")
    r = score_answer(text, task, profile="lmms-eval")
    want = score_lmms_eval(text, to_lmms_extra_info(task), "nav")
    assert r["score"] == want["score"] and r["lmms"] == want and r["profile"] == "lmms-eval"
    assert r["score"] == pytest.approx(1.0)
    r = score_answer("no json here", task, profile="lmms-eval")
    assert r["score"] == 0 and r["reason"] == "parse_error"
    with pytest.raises(ValueError):
        score_answer(text, task, profile="nope")


# ---------------------------------------------------------------- closed loop ----------------------------------
def _pose(x=0.0, y=0.0, z=0.0, pan=0.0):
    return geometry.make_pose(geometry.rot_y(pan), [x, y, z])


def _task(goal, kind="nav", start=None):
    gt = seq([({"Dolly In": 1}, None)])
    return Task(id="c", kind=kind, source="test", start_pose=_pose() if start is None else start, goal_pose=goal,
                gt=gt, sizes=NAV)


def test_closed_loop_straight_and_detour():
    task = _task(_pose(z=1.0))
    m = closed_loop_metrics(np.stack([_pose(), _pose(z=0.5), _pose(z=1.0)]), task)
    assert m["success"] and m["path_length"] == pytest.approx(1.0) and m["d0"] == pytest.approx(1.0)
    assert m["spl"] == pytest.approx(1.0) and m["n_steps"] == 2 and m["final_position_error"] == 0.0
    m = closed_loop_metrics(np.stack([_pose(), _pose(x=0.5, z=0.5), _pose(z=1.0)]), task)
    assert m["path_length"] == pytest.approx(math.sqrt(2)) and m["spl"] == pytest.approx(1 / math.sqrt(2))


def test_closed_loop_thresholds():
    task = _task(_pose(z=1.0))
    m = closed_loop_metrics(np.stack([_pose(), _pose(z=0.7)]), task)  # 0.3 m short of 0.20 m
    assert not m["success"] and m["spl"] == 0.0 and m["final_position_error"] == pytest.approx(0.3)
    m = closed_loop_metrics(np.stack([_pose(), _pose(z=0.85)]), task)  # 0.15 m: inside
    assert m["success"] and m["spl"] == pytest.approx(1.0)  # path 0.85 < d0 → d0/max(d0, path) = 1
    m = closed_loop_metrics(np.stack([_pose(), _pose(z=1.0, pan=math.radians(15))]), task)
    assert not m["success"] and m["final_rotation_error"] == pytest.approx(math.radians(15))
    m = closed_loop_metrics(np.stack([_pose(), _pose(z=1.0, pan=math.radians(5))]), task)
    assert m["success"]
    # manipulation: 0.05 m
    m = closed_loop_metrics(np.stack([_pose(), _pose(z=0.93)]), _task(_pose(z=1.0), "manip"))
    assert not m["success"]


def test_closed_loop_zero_distance_and_nan():
    task = _task(_pose(pan=0.3), start=_pose(pan=0.3))
    m = closed_loop_metrics(_pose(pan=0.3)[None], task)
    assert m["d0"] == 0.0 and m["success"] and m["spl"] == 1.0 and m["n_steps"] == 0 and m["path_length"] == 0.0
    bad = np.stack([_pose(), _pose(z=np.nan)])
    m = closed_loop_metrics(bad, _task(_pose(z=1.0)))
    assert m["flag"] and m["success"] is False and m["spl"] == 0.0 and m["final_position_error"] is None


def test_no_success_no_spl_with_the_simulators_object_test():
    task = _task(_pose(z=1.0), "manip")
    at_goal = np.stack([_pose(), _pose(z=1.0)])
    assert closed_loop_metrics(at_goal, task)["spl"] == pytest.approx(1.0)  # the pose alone: success
    m = closed_loop_metrics(at_goal, task, object_success=False)  # the object did not arrive
    assert m["success"] is False and m["spl"] == 0.0 and m["final_position_error"] == 0.0
    # the object test decides success either way: far from the goal pose, the object placed, SPL from the path
    far = np.stack([_pose(), _pose(x=0.5, z=0.5), _pose(z=0.5)])
    m = closed_loop_metrics(far, task, object_success=True)
    assert m["success"] is True and m["path_length"] == pytest.approx(math.sqrt(0.5) + 0.5)
    assert m["spl"] == pytest.approx(1.0 / (math.sqrt(0.5) + 0.5))
    # a non-finite pose: a broken episode, whatever the object test said
    bad = closed_loop_metrics(np.stack([_pose(), _pose(z=np.nan)]), task, object_success=True)
    assert bad["flag"] and bad["success"] is False and bad["spl"] == 0.0


def test_d0_geodesic_from_meta_else_straight():
    task = _task(_pose(z=1.0))
    path = np.stack([_pose(), _pose(x=0.5, z=0.5), _pose(z=1.0)])  # sqrt(2) m around an obstacle
    m = closed_loop_metrics(path, task)
    assert m["d0_kind"] == "straight" and m["d0"] == pytest.approx(1.0)
    assert m["spl"] == pytest.approx(1 / math.sqrt(2))
    task.meta.update({"d0": 1.3, "d0_kind": "geodesic"})  # the shortest way round is 1.3 m
    m = closed_loop_metrics(path, task)
    assert m["d0_kind"] == "geodesic" and m["d0"] == 1.3 and m["spl"] == pytest.approx(1.3 / math.sqrt(2))
    # a path shorter than the geodesic (through a wall) cannot score above 1
    assert closed_loop_metrics(np.stack([_pose(), _pose(z=1.0)]), task)["spl"] == 1.0
    task.meta["d0"] = "far"
    with pytest.raises(ValueError, match="meta.d0"):
        closed_loop_metrics(path, task)
