"""The action space: each primitive's Δ by hand, decomposition vs scipy / transforms3d, properties (hypothesis),
JSON round trips in the three answer formats, the alias table, the cap, gestures and gripper persistence."""

import math

import numpy as np
import pytest
import transforms3d
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from spatialact import geometry
from spatialact.action_space import (
    MIRROR, MOTION_PRIMITIVES, PRIMITIVE_TABLE, ActionSequence, ParseError, Primitive, Step, StepSizes,
    lookup_primitive, mirror, parse_response,
)
from spatialact.action_space.primitives import normalise_name

NAV = StepSizes.navigation()
T_, R_ = NAV.translation, NAV.rotation
c, s = math.cos(R_), math.sin(R_)


def _pose(R=np.eye(3), t=(0.0, 0.0, 0.0)):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = t
    return T


# Written out by hand from the action table of docs/conventions.md (camera +X right, +Y down, +Z forward).
HAND_DELTAS = {
    Primitive.DOLLY_IN: _pose(t=(0, 0, T_)),
    Primitive.DOLLY_OUT: _pose(t=(0, 0, -T_)),
    Primitive.TRUCK_RIGHT: _pose(t=(T_, 0, 0)),
    Primitive.TRUCK_LEFT: _pose(t=(-T_, 0, 0)),
    Primitive.PEDESTAL_DOWN: _pose(t=(0, T_, 0)),
    Primitive.PEDESTAL_UP: _pose(t=(0, -T_, 0)),
    Primitive.PAN_RIGHT: _pose([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
    Primitive.PAN_LEFT: _pose([[c, 0, -s], [0, 1, 0], [s, 0, c]]),
    Primitive.TILT_UP: _pose([[1, 0, 0], [0, c, -s], [0, s, c]]),
    Primitive.TILT_DOWN: _pose([[1, 0, 0], [0, c, s], [0, -s, c]]),
    Primitive.ROLL_CCW: _pose([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
    Primitive.ROLL_CW: _pose([[c, s, 0], [-s, c, 0], [0, 0, 1]]),
    Primitive.STAY: np.eye(4),
    Primitive.PUSH: _pose(t=(0, 0, T_)),
    Primitive.PULL: _pose(t=(0, 0, -T_)),
}


@pytest.mark.parametrize("prim", list(HAND_DELTAS), ids=lambda p: p.value)
def test_each_primitive_delta_is_the_hand_computed_matrix(prim):
    D = Step.from_counts({prim: 1}).as_delta(NAV)
    np.testing.assert_allclose(D, HAND_DELTAS[prim], atol=1e-15)
    # parsed from a one-action answer, too
    seq = parse_response(f'{{"actions": ["{prim.value}"], "step_nums": [1]}}', strict=True).sequence
    np.testing.assert_allclose(seq.to_deltas()[0], HAND_DELTAS[prim], atol=1e-15)


def test_primitive_senses_in_words():
    # Tilt Up turns the forward axis (+Z) toward −Y (up); Pan Right toward +X; Roll CCW dips the right side (+Y).
    def fwd(p, axis=2):
        return Step.from_counts({p: 1}).as_delta(NAV)[:3, axis]
    assert fwd(Primitive.TILT_UP)[1] < 0
    assert fwd(Primitive.PAN_RIGHT)[0] > 0
    assert fwd(Primitive.ROLL_CCW, axis=0)[1] > 0
    assert fwd(Primitive.PEDESTAL_UP, axis=3)[1] < 0


def test_step_with_several_primitives_translates_then_rotates():
    # 2 × Dolly In, 3 × Truck Left, 1 × Pan Right, 2 × Tilt Up, 1 × Roll CW: t is the sum, R = Ry Rx Rz.
    step = Step.from_counts({"W": 2, "A": 3, "→": 1, "↑": 2, "↻": 1})
    D = step.as_delta(NAV)
    np.testing.assert_allclose(D[:3, 3], [-3 * T_, 0, 2 * T_], atol=1e-15)
    R = geometry.rot_y(R_) @ geometry.rot_x(2 * R_) @ geometry.rot_z(-R_)
    np.testing.assert_allclose(D[:3, :3], R, atol=1e-15)
    np.testing.assert_allclose(D[:3, :3], Rotation.from_euler("YXZ", [R_, 2 * R_, -R_]).as_matrix(), atol=1e-15)
    # primitive order inside a step does not matter
    other = Step.from_counts({"↻": 1, "↑": 2, "→": 1, "A": 3, "W": 2})
    assert other == step


def test_opposite_counts_both_kept_and_motion_uses_difference():
    step = Step.from_counts({"W": 5, "S": 2})
    assert step.counts[MOTION_PRIMITIVES.index(Primitive.DOLLY_IN)] == 5
    assert step.counts[MOTION_PRIMITIVES.index(Primitive.DOLLY_OUT)] == 2
    np.testing.assert_allclose(step.as_delta(NAV)[:3, 3], [0, 0, 3 * T_])


def test_decomposition_against_scipy_and_transforms3d_on_random_deltas():
    rng = np.random.default_rng(20)
    R = Rotation.random(300, random_state=21)
    t = rng.normal(size=(300, 3))
    deltas = geometry.make_pose(R.as_matrix(), t)
    seq = ActionSequence.from_deltas(deltas)
    m = seq.as_motions()  # (tx, ty, tz, tilt, pan, roll)
    np.testing.assert_allclose(m[:, :3], t, atol=1e-14)
    pan_tilt_roll = R.as_euler("YXZ")
    np.testing.assert_allclose(m[:, [4, 3, 5]], pan_tilt_roll, atol=1e-10)
    for k in range(10):
        np.testing.assert_allclose(m[k, [4, 3, 5]], transforms3d.euler.mat2euler(R.as_matrix()[k], "ryxz"),
                                   atol=1e-10)
    np.testing.assert_allclose(seq.to_deltas(), deltas, atol=1e-12)


def test_unit_sizes_defaults_and_validation():
    assert StepSizes() == StepSizes.navigation() == StepSizes(0.0626, 0.0725)
    assert StepSizes.for_kind("manip") == StepSizes.for_kind("hand") == StepSizes(0.02, math.radians(5))
    with pytest.raises(ValueError):
        StepSizes.for_kind("fly")
    for bad in (0, -1, float("nan"), float("inf"), "1"):
        with pytest.raises(ValueError):
            StepSizes(bad, 0.1)
    with pytest.raises(ValueError):
        Step(counts=(1,) * 11)
    with pytest.raises(ValueError):
        Step(counts=(-1,) + (0,) * 11)
    # a fractional count is refused, not truncated (int(2.7) == 2 used to pass silently)
    with pytest.raises(ValueError, match="integers"):
        Step(counts=(2.7,) + (0,) * 11)
    with pytest.raises(ValueError, match="integers"):
        Step.from_signed([0.5, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match="integers"):
        Step.from_counts({"W": 1.5})
    assert Step(counts=(2.0,) + (0,) * 11).counts[0] == 2
    assert Step.from_signed(np.array([3, 0, 0, 0, 0, -1])).signed_counts().tolist() == [3, 0, 0, 0, 0, -1]
    with pytest.raises(ValueError):
        Step(motion=(float("nan"),) * 6)
    with pytest.raises(ValueError):
        Step(counts=(0,) * 12, motion=(0.0,) * 6)
    with pytest.raises(ValueError):
        Step.stay(gripper=2)
    with pytest.raises(ValueError):
        Step.stay(gripper=True)
    with pytest.raises(ValueError):
        Step.from_counts({"grab": 1})
    with pytest.raises(ValueError):
        Step.from_counts({"fly": 1})


# ----- alias table ------------------------------------------------------------------------------------
def _variants(name):
    yield name
    yield name.upper()
    yield name.lower()
    yield name.swapcase()
    yield name.replace(" ", "_")
    yield name.replace("_", " ")
    yield "  " + name.replace(" ", "") + " "
    yield name.replace(" ", "__").replace("_", " _ ")


def test_every_alias_resolves_case_and_separator_insensitive():
    n = 0
    for prim, spec in PRIMITIVE_TABLE.items():
        for name in (prim.value, prim.name, spec.symbol, *spec.aliases):
            for v in _variants(name):
                assert lookup_primitive(v) is prim, (name, v)
                n += 1
    assert n > 400


def test_spec_alias_list_is_in_the_table():
    # the aliases the parser accepts, written out by hand (docs/conventions.md, Action space)
    spec = {
        Primitive.DOLLY_IN: ["W", "dolly_in", "forward"], Primitive.DOLLY_OUT: ["S", "back"],
        Primitive.TRUCK_RIGHT: ["D", "right"], Primitive.TRUCK_LEFT: ["A", "left"],
        Primitive.PEDESTAL_DOWN: ["shift", "Q", "down"], Primitive.PEDESTAL_UP: ["space", "E", "up"],
        Primitive.PAN_RIGHT: ["→", "right_arrow", "turn right"],
        Primitive.PAN_LEFT: ["←", "left_arrow", "turn left"],
        Primitive.TILT_UP: ["↑", "up_arrow", "look up"], Primitive.TILT_DOWN: ["↓", "down_arrow", "look down"],
        Primitive.ROLL_CCW: ["↺", "counterclockwise"], Primitive.ROLL_CW: ["↻", "clockwise"],
        Primitive.STAY: ["STOP", "stay", "none"], Primitive.PUSH: ["push"], Primitive.PULL: ["pull"],
        Primitive.GRAB: ["grab"], Primitive.RELEASE: ["release"],
    }
    for prim, names in spec.items():
        for name in names:
            assert lookup_primitive(name) is prim, name
    assert len(PRIMITIVE_TABLE) == 17 and len(MOTION_PRIMITIVES) == 12


def test_lookup_rejects_unknown_and_non_strings():
    for bad in ("fly", "", "Dolly", "Truck", 3, None, ["W"]):
        assert lookup_primitive(bad) is None
    assert normalise_name(" Roll_c c-W ") == "rollccw"


# ----- cap, gestures, gripper -------------------------------------------------------------------------
def test_cap_applies_after_summing_repeats():
    res = parse_response('{"actions": ["W", "Dolly In", "forward"], "step_nums": [4, 3, 2]}', strict=True)
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 9)]
    res = parse_response('{"actions": ["W", "Dolly In"], "step_nums": [6, 7]}')
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 10)]
    assert any("clamped to the cap 10" in r for r in res.repairs)
    with pytest.raises(ParseError, match="Dolly In × 13 clamped"):
        parse_response('{"actions": ["W", "Dolly In"], "step_nums": [6, 7]}', strict=True)
    # each primitive separately: 10 W and 10 S are both within the cap
    res = parse_response('{"actions": ["W", "S"], "step_nums": [10, 10]}', strict=True)
    assert res.sequence[0].is_stay()
    # a different cap
    res = parse_response('{"actions": ["W"], "step_nums": [7]}', cap=5)
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 5)]
    # Push counts toward Dolly In's cap
    res = parse_response('{"actions": ["push", "W"], "step_nums": [6, 6]}')
    assert res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 10)]


def test_grab_release_step_num_ignored_with_repair():
    res = parse_response('{"actions": ["grab"], "step_nums": [3]}')
    assert res.ok and res.sequence[0].gripper == 1 and res.sequence[0].is_stay()
    assert res.repairs == ("answer.actions[0]: Grab sets the gripper; its step_num 3 is ignored",)
    res = parse_response('{"actions": ["Release", "W"], "step_nums": [5, 2]}')
    assert res.sequence[0].gripper == 0 and res.sequence[0].as_actions() == [(Primitive.DOLLY_IN, 2)]
    assert len(res.repairs) == 1 and "Release sets the gripper" in res.repairs[0]
    # step_num 1 or missing: nothing to repair
    assert parse_response('{"actions": ["grab"], "step_nums": [1]}', strict=True).sequence[0].gripper == 1
    assert parse_response('{"actions": ["grab"]}', strict=True).sequence[0].gripper == 1
    with pytest.raises(ParseError, match=r"actions\[0\].*Grab"):
        parse_response('{"actions": ["grab"], "step_nums": [3]}', strict=True)


def test_gripper_persists_until_changed():
    text = ('{"step_1": {"actions": ["W"], "step_nums": [1]},'
            ' "step_2": {"actions": ["D"], "step_nums": [1], "gripper": 1},'
            ' "step_3": {"actions": ["S"], "step_nums": [2]},'
            ' "step_4": {"actions": ["release"]},'
            ' "step_5": {"actions": ["A"], "step_nums": [2]},'
            ' "step_6": {"actions": ["grab", "space"], "step_nums": [1, 1]}}')
    seq = parse_response(text, strict=True).sequence
    assert [st_.gripper for st_ in seq] == [None, 1, 1, 0, 0, 1]
    np.testing.assert_array_equal(seq.grippers(), [-1, 1, 1, 0, 0, 1])
    # the same persistence when a sequence is built directly
    seq = ActionSequence((Step.stay(), Step.stay(1), Step.stay(), Step.stay(0), Step.stay()))
    assert [x.gripper for x in seq] == [None, 1, 1, 0, 0]


def test_gripper_field_wins_over_gesture():
    res = parse_response('{"actions": ["grab"], "gripper": 0}')
    assert res.sequence[0].gripper == 0
    assert any("contradicts" in r for r in res.repairs)
    assert parse_response('{"actions": ["grab"], "gripper": 1}', strict=True).sequence[0].gripper == 1


# ----- properties ---------------------------------------------------------------------------------------
counts_st = st.lists(st.integers(-10, 10), min_size=6, max_size=6)
grip_st = st.sampled_from([None, 0, 1])
count_step_st = st.builds(lambda sc, g_: Step.from_signed(sc, g_), counts_st, grip_st)
motion_st = st.tuples(*[st.floats(-0.6, 0.6)] * 3, *[st.floats(-0.7, 0.7)] * 3)
vector_step_st = st.builds(lambda m, g_: Step.from_motion(m, g_), motion_st, grip_st)
seq_st = st.lists(st.one_of(count_step_st, vector_step_st), min_size=0, max_size=6).map(
    lambda steps: ActionSequence(tuple(steps), NAV))
counts_seq_st = st.lists(count_step_st, min_size=1, max_size=6).map(lambda steps: ActionSequence(tuple(steps), NAV))
pose_st = st.tuples(st.tuples(*[st.floats(-math.pi, math.pi)] * 3),
                    st.tuples(*[st.floats(-5, 5)] * 3)).map(
    lambda a: geometry.make_pose(Rotation.from_euler("zyx", a[0]).as_matrix(), a[1]))


@settings(max_examples=80, deadline=None)
@given(motion_st)
def test_compose_then_decompose_is_identity(m):
    step = Step.from_motion(m)
    D = step.as_delta(NAV)
    back = ActionSequence.from_deltas(D[None]).as_motions()[0]
    np.testing.assert_allclose(back, m, atol=1e-9)
    np.testing.assert_allclose(geometry.motion_to_delta(back), D, atol=1e-12)


@settings(max_examples=80, deadline=None)
@given(seq_st)
def test_mirror_is_an_involution(seq):
    assert mirror(mirror(seq)) == seq
    for step in seq:
        assert mirror(mirror(step)) == step


@settings(max_examples=80, deadline=None)
@given(seq_st, pose_st)
def test_mirrored_sequence_matches_mirrored_poses(seq, T0):
    M = MIRROR
    lhs = mirror(seq).to_poses(M @ T0 @ M)
    rhs = M @ seq.to_poses(T0) @ M
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)
    np.testing.assert_allclose(mirror(seq.to_poses(T0)), rhs, atol=0)


@settings(max_examples=80, deadline=None)
@given(seq_st, pose_st)
def test_to_poses_multiplies_deltas_in_order(seq, T0):
    deltas = seq.to_deltas()
    assert deltas.shape == (len(seq), 4, 4)
    poses = seq.to_poses(T0)
    assert poses.shape == (len(seq) + 1, 4, 4)
    T = T0.copy()
    np.testing.assert_array_equal(poses[0], T0)
    for k, d in enumerate(deltas):
        T = T @ d
        np.testing.assert_allclose(poses[k + 1], T, atol=1e-12)
    np.testing.assert_allclose(seq.net_delta(), np.linalg.multi_dot([np.eye(4), np.eye(4), *deltas]), atol=1e-12)


def test_mirror_swaps_exactly_truck_pan_roll():
    step = Step.from_counts({"D": 1, "space": 2, "W": 3, "↑": 4, "→": 5, "↺": 6}, gripper=1)
    m = mirror(step)
    assert dict(m.as_actions()) == {Primitive.TRUCK_LEFT: 1, Primitive.PEDESTAL_UP: 2, Primitive.DOLLY_IN: 3,
                                    Primitive.TILT_UP: 4, Primitive.PAN_LEFT: 5, Primitive.ROLL_CW: 6}
    assert m.gripper == 1
    v = mirror(Step.from_motion([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))
    assert v.motion == (-0.1, 0.2, 0.3, 0.4, -0.5, -0.6)


# ----- JSON round trips ---------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(counts_seq_st, st.sampled_from(["name", "symbol"]))
def test_stepped_json_round_trip(seq, names):
    obj = seq.to_json("stepped", names=names)
    assert list(obj) == [f"step_{k + 1}" for k in range(len(seq))]
    back = ActionSequence.from_json(obj)
    assert back == seq
    assert ActionSequence.from_json(seq.to_text("stepped", names)) == seq


@settings(max_examples=40, deadline=None)
@given(count_step_st, st.sampled_from(["name", "symbol"]))
def test_flat_json_round_trip(step, names):
    seq = ActionSequence((step,), NAV)
    obj = seq.to_json("flat", names=names)
    assert set(obj) <= {"actions", "step_nums", "gripper"}
    res = parse_response(seq.to_text("flat", names), strict=True)
    assert res.format == "flat" and res.sequence == seq


@settings(max_examples=60, deadline=None)
@given(seq_st)
def test_vector_json_round_trip(seq):
    obj = seq.to_json("vector")
    res = parse_response(seq.to_text("vector"), strict=True) if len(seq) else None
    if res is None:
        assert obj == {}
        return
    assert res.format == "vector"
    np.testing.assert_allclose(res.sequence.as_motions(), seq.as_motions(), atol=1e-12)
    np.testing.assert_array_equal(res.sequence.grippers(), seq.grippers())
    # and the list-of-lists layout
    rows = [obj[k] for k in obj]
    res2 = parse_response(str(rows), strict=True)
    np.testing.assert_allclose(res2.sequence.as_motions(), seq.as_motions(), atol=1e-12)


def test_vector_format_component_order():
    # [dx, dy, dz, d_roll, d_pitch, d_yaw, gripper]: roll about +Z, pitch about +X, yaw about +Y
    step = Step.from_vector([0.01, 0.02, 0.03, 0.1, 0.2, 0.3, 1])
    assert step.motion == (0.01, 0.02, 0.03, 0.2, 0.3, 0.1) and step.gripper == 1
    R = Rotation.from_euler("YXZ", [0.3, 0.2, 0.1]).as_matrix()
    np.testing.assert_allclose(step.as_delta(NAV)[:3, :3], R, atol=1e-15)
    assert step.as_vector(NAV) == [0.01, 0.02, 0.03, 0.1, 0.2, 0.3, 1.0]


def test_to_json_refuses_what_cannot_be_written():
    seq = ActionSequence((Step.stay(), Step.stay()))
    with pytest.raises(ValueError, match="exactly one step"):
        seq.to_json("flat")
    with pytest.raises(ValueError, match="vector"):
        ActionSequence((Step.from_motion([0] * 6),)).to_json("stepped")
    with pytest.raises(ValueError):
        seq.to_json("yaml")
    with pytest.raises(ValueError):
        seq.to_json("stepped", names="emoji")
    assert seq.to_json("stepped") == {"step_1": {"actions": ["Stay"], "step_nums": [1]},
                                      "step_2": {"actions": ["Stay"], "step_nums": [1]}}


@settings(max_examples=60, deadline=None)
@given(seq_st)
def test_to_dict_round_trip_is_lossless(seq):
    import json

    d = json.loads(json.dumps(seq.to_dict()))
    assert ActionSequence.from_dict(d) == seq


def test_sequence_container_protocol():
    a = ActionSequence.from_signed_counts([[1, 0, 0, 0, 0, 0], [0, 2, 0, 0, 0, 0]])
    b = ActionSequence.from_signed_counts([[0, 0, 3, 0, 0, 0]])
    assert len(a + b) == 3 and (a + b)[2] == b[0]
    assert len(a[1:]) == 1 and isinstance(a[1:], ActionSequence)
    with pytest.raises(ValueError):
        ActionSequence.from_signed_counts([[0.5, 0, 0, 0, 0, 0]])
    with pytest.raises(TypeError):
        ActionSequence(("W",))
    with pytest.raises(ValueError):
        a.to_poses(np.eye(4)[None])
