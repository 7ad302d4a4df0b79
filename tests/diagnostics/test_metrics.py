"""Diagnostics as plain functions (docs/diagnostics.md): hand-computed values and their edge cases.

No simulator here: RPDR, the chance-normalised score, the viewpoint δ, label counts and CV, the left/right bias, the
sign confusion, mirror inconsistency, the mirrored task / observation / instruction, the paired bootstrap, the
viewpoint tags and the constant baseline.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import (MIRROR, MOTION_PRIMITIVES, ActionSequence, Primitive, Step, StepSizes, mirror,
                                     parse_response)
from spatialact.diagnostics import (chance_normalised, label_counts, label_cv, lr_bias, lr_units,
                                    mirror_inconsistency, mirror_instruction, mirror_observation, mirror_task, rpdr,
                                    sign_confusion, step_signs, viewpoint_delta)
from spatialact.diagnostics.metrics import normalised_label_cv
from spatialact.diagnostics.mirror import mirror_K, mirror_turn
from spatialact.tasks.tags import camera_attitude, viewpoint_tag
from _fabricate import look_pose, make_task

NAV = StepSizes.navigation()


def seq(*steps, sizes=NAV) -> ActionSequence:
    return ActionSequence(tuple(steps), sizes)


def counts(**kw) -> Step:
    return Step.from_counts({Primitive[k]: v for k, v in kw.items()})


# ----- RPDR, chance-normalised, δ ------------------------------------------------------------------------------
def test_rpdr_hand_computed_with_cap_and_zero_denominator():
    r = rpdr([0.8, 0.4, 0.6, 0.0, 0.5])
    # 0.4/0.8 = 0.5; 0.6/0.4 = 1.5 capped at 1; 0/0.6 = 0; S_prev = 0 → NaN (not 0, not inf)
    assert r[:3] == [0.5, 1.0, 0.0] and math.isnan(r[3]) and len(r) == 4
    assert rpdr([1.0, 1.0, 1.0]) == [1.0, 1.0]
    assert rpdr([0.5]) == [] and rpdr([]) == []
    nan = rpdr([0.5, float("nan"), 0.5])
    assert all(math.isnan(v) for v in nan)
    with pytest.raises(ValueError, match="≥ 0"):
        rpdr([0.5, -0.1])


def test_chance_normalised_hand_computed():
    assert chance_normalised(0.6, 0.2, 1.0) == pytest.approx(0.5)
    assert chance_normalised(0.1, 0.2, 1.0) == pytest.approx(-0.125)  # below random: negative
    assert chance_normalised(1.0, 0.2, 1.0) == 1.0 and chance_normalised(0.2, 0.2, 1.0) == 0.0
    assert math.isnan(chance_normalised(0.5, 0.3, 0.3))  # oracle = random: no room
    a = chance_normalised(np.array([0.2, 0.6, 1.0]), 0.2, np.array([1.0, 1.0, 0.2]))
    assert a[0] == 0.0 and a[1] == pytest.approx(0.5) and math.isnan(a[2])


def test_viewpoint_delta_hand_computed():
    assert viewpoint_delta(0.8, 0.6) == pytest.approx(-0.25)
    assert viewpoint_delta(0.5, 0.75) == pytest.approx(0.5)
    assert viewpoint_delta(0.4, 0.4) == 0.0
    assert math.isnan(viewpoint_delta(0.0, 0.3)) and math.isnan(viewpoint_delta(0.0, 0.0))
    d = viewpoint_delta([0.5, 0.0, 0.4], [0.25, 0.1, 0.5])
    assert isinstance(d, np.ndarray) and d[0] == pytest.approx(-0.5) and math.isnan(d[1])
    assert d[2] == pytest.approx(0.25)
    assert isinstance(viewpoint_delta(0.8, 0.6), float)


# ----- labels and CV ------------------------------------------------------------------------------------------
def test_label_cv_hand_computed():
    assert label_cv([2, 2, 2]) == 0.0
    assert label_cv([4, 0]) == pytest.approx(1.0)  # mean 2, population std 2
    assert label_cv([1, 2, 3, 4]) == pytest.approx(math.sqrt(1.25) / 2.5)
    assert label_cv([5] + [0] * 11) == pytest.approx(math.sqrt(11))  # one label of 12
    assert math.isnan(label_cv([0, 0, 0])) and math.isnan(label_cv([]))


def test_normalised_label_cv_hand_computed():
    # predictions in the ground truth's proportions: ratio 2 everywhere → 0, whatever the truth's imbalance
    assert normalised_label_cv([2, 4, 0], [1, 2, 0]) == 0.0
    # ratios 3/1 and 1/1 over the labels present in the truth (the third is absent there): mean 2, std 1
    assert normalised_label_cv([3, 1, 5], [1, 1, 0]) == pytest.approx(0.5)
    assert math.isnan(normalised_label_cv([1, 2], [0, 0]))
    assert math.isnan(normalised_label_cv([0, 0], [1, 3]))
    with pytest.raises(ValueError):
        normalised_label_cv([1, 2, 3], [1, 2])


def test_label_counts_once_per_step_and_vector_steps():
    s = seq(counts(TRUCK_LEFT=3, PAN_RIGHT=1), counts(TRUCK_LEFT=1), Step.stay())
    c = label_counts(s)
    col = {p: k for k, p in enumerate(MOTION_PRIMITIVES)}
    assert c[col[Primitive.TRUCK_LEFT]] == 2 and c[col[Primitive.PAN_RIGHT]] == 1 and c.sum() == 3
    # a vector step: 0.64 units of truck right is present (rounds to 1), 0.32 units of dolly is not
    v = seq(Step.from_motion([0.04, 0.0, 0.02, 0.0, 0.0, 0.0]))
    cv = label_counts(v)
    assert cv[col[Primitive.TRUCK_RIGHT]] == 1 and cv.sum() == 1
    assert (label_counts([s, v]) == c + cv).all()


def test_lr_bias_hand_computed_and_mirror_flips_it():
    s = seq(counts(TRUCK_LEFT=3, PAN_RIGHT=1), counts(ROLL_CW=2, DOLLY_IN=4))
    assert lr_units(s) == (5.0, 1.0)  # Truck Left 3 + Roll CW 2 ; Pan Right 1 (dolly is neither)
    assert lr_bias(s) == pytest.approx(4 / 6)
    assert lr_bias(mirror(s)) == pytest.approx(-4 / 6)
    assert lr_bias([s, mirror(s)]) == 0.0
    assert math.isnan(lr_bias(seq(Step.stay(), counts(DOLLY_IN=2))))
    assert lr_bias(seq(counts(TRUCK_LEFT=1))) == 1.0 and lr_bias(seq(counts(ROLL_CCW=1))) == -1.0


def test_sign_confusion_hand_computed():
    pred = seq(counts(TRUCK_RIGHT=1))
    gt = seq(counts(TRUCK_LEFT=2), counts(DOLLY_IN=1))
    c = sign_confusion([pred], [gt])
    assert c.shape == (6, 3, 3) and (c.sum(axis=(1, 2)) == 2).all()  # K = 2 steps on every axis
    assert c[0, 0, 2] == 1  # truck: true −, predicted +
    assert c[0, 1, 1] == 1  # truck, step 2: 0 and (missing step) 0
    assert c[2, 2, 1] == 1 and c[2, 1, 1] == 1  # dolly: true + on step 2, predicted nothing
    assert c[[1, 3, 4, 5], 1, 1].tolist() == [2, 2, 2, 2]
    # both signs in one step: the net count decides (2 left − 1 right = left)
    both = Step(counts=tuple(1 if p is Primitive.TRUCK_RIGHT else (2 if p is Primitive.TRUCK_LEFT else 0)
                             for p in MOTION_PRIMITIVES))
    assert step_signs(seq(both))[0, 0] == -1
    with pytest.raises(ValueError):
        sign_confusion([pred], [gt, gt])


# ----- mirror inconsistency ----------------------------------------------------------------------------------
def test_mirror_inconsistency_hand_computed():
    left2 = seq(counts(TRUCK_LEFT=2))
    # the mirrored answer to a mirrored task, mirrored back, equals the plain one: consistent
    assert mirror_inconsistency(left2, mirror(left2)) == 0.0
    # the same words on the mirrored views mean the opposite: translation score 0 both ways; paper+rot (nav
    # default) keeps s_rot = 1: (0 + 1) / 2 = 0.5 per way → 0.5. Under "paper" the rotation does not count → 1.
    assert mirror_inconsistency(left2, left2) == pytest.approx(0.5)
    assert mirror_inconsistency(left2, left2, profile="paper") == pytest.approx(1.0)
    # asymmetric relative distance: Dolly In 1 against 2: s_d 0.5 → (0.5+1)/2 = 0.75; 2 against 1: s_d 0 → 0.5
    d2, d1 = seq(counts(DOLLY_IN=2)), seq(counts(DOLLY_IN=1))
    assert mirror_inconsistency(d2, d1) == pytest.approx(1 - (0.75 + 0.5) / 2)
    assert mirror_inconsistency(d2, d1) == mirror_inconsistency(d1, d2)  # symmetric
    empty = parse_response("no idea").sequence
    assert math.isnan(mirror_inconsistency(left2, empty)) and math.isnan(mirror_inconsistency(empty, left2))
    # manipulation defaults to profile paper (thirds; an unstated gripper is not scored: (0 + 1) / 2)
    m = seq(counts(TRUCK_LEFT=2), sizes=StepSizes.manipulation())
    assert mirror_inconsistency(m, m, kind="manip") == pytest.approx(0.5)
    with pytest.raises(TypeError):
        mirror_inconsistency("Truck Left", left2)


# ----- the mirrored task, observation and instruction -------------------------------------------------------
def test_mirror_instruction_swaps_whole_words_keeping_case():
    assert mirror_instruction("Move left, then turn RIGHT; Left wall.") == "Move right, then turn LEFT; Right wall."
    assert mirror_instruction("roll counter-clockwise, then clockwise (CW), anticlockwise") == \
        "roll clockwise, then counterclockwise (CCW), clockwise"
    assert mirror_instruction("leftover rightly bright") == "leftover rightly bright"  # not whole words
    assert mirror_instruction("the left-hand drawer, rightmost") == "the right-hand drawer, leftmost"
    assert mirror_instruction(None) is None and mirror_instruction("") == ""
    t0 = time.perf_counter()
    big = mirror_instruction("left-" * 200_000 + "x" * 200_000)  # 1.2 MB of adversarial text
    assert time.perf_counter() - t0 < 3.0 and big.startswith("right-right-")


def test_mirror_task_conjugates_and_is_an_involution():
    task = make_task("t1", signed=((2, -1, 3, 0, -2, 1), (0, 0, 1, 1, 0, -1)),
                     instruction="Go left of the sofa.")
    task = task.with_(example={"start_pose": look_pose([1.0, 2.0, 1.5], 0.3).tolist(),
                               "sequence": ActionSequence.from_signed_counts([[1, 0, 0, 0, 2, 0]], task.sizes).to_dict()})
    m = mirror_task(task)
    assert np.allclose(m.start_pose, MIRROR @ task.start_pose @ MIRROR)
    assert np.allclose(m.goal_pose, MIRROR @ task.goal_pose @ MIRROR)
    assert m.gt == mirror(task.gt) and m.instruction == "Go right of the sofa." and m.meta["mirrored"] is True
    assert m.gt.steps[0].signed_counts().tolist() == [-2, -1, 3, 0, 2, -1]
    # the mirrored ground truth replayed from the mirrored start lands on the mirrored goal
    assert np.allclose(m.gt.to_poses(m.start_pose)[-1], m.goal_pose, atol=1e-12)
    ex = ActionSequence.from_dict(m.example["sequence"])
    assert ex.steps[0].signed_counts().tolist() == [-1, 0, 0, 0, -2, 0]
    assert np.allclose(m.example["start_pose"], MIRROR @ np.asarray(task.example["start_pose"]) @ MIRROR)
    back = mirror_task(m)
    assert np.array_equal(back.start_pose, task.start_pose) and back.gt == task.gt
    assert back.instruction == task.instruction and back.id == task.id and back.tags == task.tags


def test_mirror_observation_flips_images_and_conjugates_poses():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 255, (6, 8, 3), dtype=np.uint8)
    depth = rng.random((6, 8)).astype(np.float32)
    K = np.array([[10.0, 0.5, 2.0], [0.0, 10.0, 3.0], [0.0, 0.0, 1.0]])
    T = look_pose([1.0, 2.0, 1.5], 0.4)
    obs = {"rgb": rgb, "goal_rgb": rgb[::-1], "depth": depth, "intrinsics": K, "pose": T, "step_index": 3,
           "simulator": object(), "start_rgb": None}
    out = mirror_observation(obs)
    assert np.array_equal(out["rgb"], rgb[:, ::-1]) and np.array_equal(out["goal_rgb"], rgb[::-1][:, ::-1])
    assert np.array_equal(out["depth"], depth[:, ::-1]) and out["rgb"].flags["C_CONTIGUOUS"]
    assert np.allclose(out["pose"], MIRROR @ T @ MIRROR) and out["step_index"] == 3 and out["start_rgb"] is None
    assert "simulator" not in out  # it would answer in the unmirrored world
    assert out["intrinsics"][0, 2] == 5.0 and out["intrinsics"][0, 1] == -0.5  # W − 1 − cx, skew negated
    assert np.array_equal(obs["rgb"], rgb) and obs["intrinsics"][0, 2] == 2.0  # the input is untouched
    assert np.array_equal(mirror_observation(out)["rgb"], rgb)


def test_mirror_K_is_the_projection_of_the_mirrored_world():
    """A world point X seen by camera T at pixel u is seen at W − 1 − u by camera M T M looking at M X."""
    W, H = 64, 48
    K = np.array([[50.0, 0.0, 30.2], [0.0, 52.0, 22.7], [0.0, 0.0, 1.0]])
    T = look_pose([0.3, -1.0, 1.4], 1.2) @ geometry.make_pose(geometry.rot_z(0.2), [0, 0, 0])
    X = np.array([0.9, 1.5, 1.1, 1.0])

    def project(T, K, X):
        xc = geometry.invert_pose(T) @ X
        uvw = K @ xc[:3]
        return uvw[:2] / uvw[2]

    u, v = project(T, K, X)
    u2, v2 = project(mirror(T), mirror_K(K, W), MIRROR @ X)
    assert u2 == pytest.approx(W - 1 - u) and v2 == pytest.approx(v)


def test_mirror_turn_mirrors_the_parsed_answer_and_keeps_the_text():
    from spatialact.agents.base import turn_from_sequence

    s = seq(counts(TRUCK_LEFT=2, PAN_LEFT=1))
    turn = turn_from_sequence(s, "stepped")
    back = mirror_turn(turn)
    assert back.parse.sequence == mirror(s) and back.text == turn.text and back.info["mirrored"] is True


# ----- the paired bootstrap ---------------------------------------------------------------------------------
def test_bootstrap_means_are_the_one_bootstraps_draws():
    from spatialact.scorers.aggregate import bootstrap_ci, bootstrap_means

    x = np.random.default_rng(3).random(40)
    m = bootstrap_means(x)
    assert m.shape == (1000, 1)
    lo, hi = np.quantile(m[:, 0], [0.025, 0.975])
    assert (lo, hi) == pytest.approx(bootstrap_ci(x))
    pair = bootstrap_means(np.stack([x, 1 - x], axis=1))
    assert np.allclose(pair[:, 0] + pair[:, 1], 1.0)  # whole rows resampled together
    assert bootstrap_means(np.zeros((0, 2))).shape == (0, 2)
    with pytest.raises(ValueError):
        bootstrap_means([[0.5, float("nan")]])


# ----- viewpoint tags ----------------------------------------------------------------------------------------
def test_camera_attitude_and_viewpoint_tags_hand_computed():
    level = look_pose([0.0, 0.0, 1.5], 0.7)
    assert camera_attitude(level) == pytest.approx((0.0, 0.0, 1.5))
    assert viewpoint_tag(level) == "common"
    ccw = level @ geometry.make_pose(geometry.rot_z(math.radians(25.0)), [0, 0, 0])  # Roll CCW: right side dips
    assert camera_attitude(ccw)[1] == pytest.approx(25.0) and viewpoint_tag(ccw) == "uncommon"
    up = level @ geometry.make_pose(geometry.rot_x(math.radians(30.0)), [0, 0, 0])  # Tilt Up
    assert camera_attitude(up)[0] == pytest.approx(30.0) and viewpoint_tag(up) == "intermediate"
    down = level @ geometry.make_pose(geometry.rot_x(math.radians(-41.0)), [0, 0, 0])
    assert viewpoint_tag(down) == "uncommon"
    assert viewpoint_tag(look_pose([0, 0, 0.45])) == "uncommon" and viewpoint_tag(look_pose([0, 0, 2.6])) == "uncommon"
    assert viewpoint_tag(look_pose([0, 0, 2.0])) == "intermediate"  # level, but above eye height
    assert viewpoint_tag(look_pose([0, 0, 0.9]), height=False) == "common"  # a tabletop's observing camera
    slight = level @ geometry.make_pose(geometry.rot_z(math.radians(4.0)), [0, 0, 0])
    assert viewpoint_tag(slight) == "common"


# ----- the constant baseline --------------------------------------------------------------------------------
def test_constant_agent_answers_one_primitive():
    from spatialact.agents import AgentConfigError, make_agent

    task = make_task("t2", signed=((2, 0, 1, 0, 0, 0), (0, 1, 0, 0, 0, 0), (0, 0, 3, 0, 0, 0)))
    a = make_agent("constant", action="Truck Left")
    a.reset(task)
    turn = a.act({"mode": "one-shot"})
    assert parse_response(turn.text, sizes=task.sizes).sequence == turn.parse.sequence
    assert len(turn.parse.sequence) == 3 and lr_bias(turn.parse.sequence) == 1.0
    assert all(s.as_actions() == [(Primitive.TRUCK_LEFT, 1)] for s in turn.parse.sequence.steps)
    assert len(a.act({"mode": "closed-loop"}).parse.sequence) == 1
    b = make_agent("constant", action="turn right", count=3)
    b.reset(task)
    assert b.act({}).parse.sequence.steps[0].as_actions() == [(Primitive.PAN_RIGHT, 3)]
    assert b.describe()["params"] == {"seed": 0, "action": "Pan Right", "count": 3}
    stay = make_agent("constant", action="Stay")
    stay.reset(task)
    assert all(s.is_stay() for s in stay.act({}).parse.sequence.steps)
    for bad in ({"action": "grab"}, {"action": "sideways"}, {"action": 3}, {"count": 0}, {"count": 11},
                {"count": 1.5}, {"colour": "red"}):
        with pytest.raises(AgentConfigError):
            make_agent("constant", **bad)


def test_the_diagnostics_need_only_the_light_core():
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, json, spatialact.diagnostics as d\n"
            "d.rpdr([1, 0.5]); d.label_cv([1, 2])\n"
            "print(json.dumps(sorted(m.split('.')[0] for m in sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(Path(__file__).parents[2] / "src"), "PATH": "/usr/bin:/bin"})
    mods = set(json.loads(out.stdout))
    assert not mods & {"pybullet", "gymnasium", "matplotlib", "torch", "PIL"}
