"""Action extraction (docs/trajectories.md): keyframes, metric closed-loop quantisation with the cap, frames mode,
body and camera frames, replay. Hand-worked answers plus round-trip properties on random and long trajectories."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import ActionSequence, Primitive, StepSizes
from spatialact.tasks import extract_actions, quantisation_bound, replay
from spatialact.tasks.extraction import frame_motions, keyframe_indices
from spatialact.trajectories import Trajectory
from traj_helpers import smooth_poses

NAV = StepSizes.navigation()
MANIP = StepSizes.manipulation()


def _check_bound(traj, ex, slack=1e-9):
    """Replayed poses at every keyframe are within the quantisation bound; returns the errors."""
    rep = replay(ex, traj.poses[0])[list(ex.keyframe_steps)]
    true = traj.poses[list(ex.keyframes)]
    pe = np.linalg.norm(rep[:, :3, 3] - true[:, :3, 3], axis=1)
    re = geometry.rotation_error(rep, true)
    bt, br = quantisation_bound(ex.sizes)
    assert pe.max() <= bt + slack, (pe.max(), bt)
    assert re.max() <= br + slack, (re.max(), br)
    assert np.allclose(pe, ex.position_errors) and np.allclose(re, ex.rotation_errors)
    return pe, re


def _actions(step):
    return {p: n for p, n in step.as_actions()}


# ----- keyframes --------------------------------------------------------------------------------------------------
def test_keyframes_hand_worked():
    g = np.zeros(35, dtype=int)
    g[17:29] = 1
    # every 10 frames, the gripper changes at 17 (close) and 29 (open), and the last frame.
    assert keyframe_indices(35, 10.0, g).tolist() == [0, 10, 17, 20, 29, 30, 34]
    assert keyframe_indices(35, 10.0).tolist() == [0, 10, 20, 30, 34]
    assert keyframe_indices(31, 10.0).tolist() == [0, 10, 20, 30]
    assert keyframe_indices(1, 10.0).tolist() == [0]
    assert keyframe_indices(7, 29.97).tolist() == [0, 6]


def test_gripper_change_starts_a_step_with_the_new_state():
    n = 35
    P = np.repeat(np.eye(4)[None], n, 0)
    P[:, 0, 3] = np.linspace(0, 0.6, n)
    g = np.zeros(n, dtype=int)
    g[17:29] = 1
    tr = Trajectory(P, np.arange(n) / 10, 10.0, gripper=g)
    ex = extract_actions(tr, sizes=MANIP)
    assert ex.keyframes == (0, 10, 17, 20, 29, 30, 34)
    # one step per interval here (no motion above the cap); steps from 17 and 20 are closed, from 29 open again.
    assert [s.gripper for s in ex.steps] == [0, 0, 1, 1, 0, 0]
    assert ex.step_interval == (0, 1, 2, 3, 4, 5)


def test_gripper_change_on_last_frame_adds_a_final_stay():
    n = 21
    P = np.repeat(np.eye(4)[None], n, 0)
    g = np.zeros(n, dtype=int)
    g[-1] = 1
    for mode in ("metric", "frames"):
        ex = extract_actions(Trajectory(P, np.arange(n) / 10, 10.0, gripper=g), mode=mode)
        assert [s.gripper for s in ex.steps] == [0, 0, 1]
        assert ex.steps[-1].is_stay() and ex.keyframes == (0, 10, 20)


# ----- metric mode: hand-worked -------------------------------------------------------------------------------------
def test_metric_decomposition_hand_worked():
    u_t, u_r = NAV.translation, NAV.rotation
    T0 = geometry.make_pose(geometry.ptr_to_matrix(0.3, -0.2, 0.1), [1.0, 2.0, 0.5])
    # Truck Right 3, Pedestal Up 1, Dolly Out 2, Pan Right 4, Tilt Down 2, Roll CW 1 — in T0's own frame.
    d = geometry.motion_to_delta([3 * u_t, -1 * u_t, -2 * u_t, -2 * u_r, 4 * u_r, -1 * u_r])
    P = np.stack([T0, T0 @ d])
    ex = extract_actions(Trajectory(P, [0.0, 1.0], 1.0), sizes=NAV)
    assert len(ex) == 1
    assert _actions(ex.steps[0]) == {Primitive.TRUCK_RIGHT: 3, Primitive.PEDESTAL_UP: 1, Primitive.DOLLY_OUT: 2,
                                     Primitive.PAN_RIGHT: 4, Primitive.TILT_DOWN: 2, Primitive.ROLL_CW: 1}
    assert np.allclose(replay(ex, T0)[-1], P[1], atol=1e-12)
    flat = ex.to_json("flat")
    assert dict(zip(flat["actions"], flat["step_nums"])) == {"Truck Right": 3, "Pedestal Up": 1, "Dolly Out": 2,
                                                             "Pan Right": 4, "Tilt Down": 2, "Roll CW": 1}


def test_rounding_is_half_away_from_zero_and_bounded():
    u = MANIP.translation
    P = np.repeat(np.eye(4)[None], 2, 0)
    P[1, :3, 3] = [2.5 * u, -2.5 * u, 0.49 * u]
    ex = extract_actions(Trajectory(P, [0.0, 1.0], 1.0), sizes=MANIP)
    assert ex.steps[0].signed_counts().tolist() == [3, -3, 0, 0, 0, 0]


def test_cap_splits_into_sub_targets():
    u = NAV.translation
    # 1.5 m of dolly in one second = 24 units: ⌈24/10⌉ = 3 steps of 8 toward interpolated sub-targets.
    P = np.repeat(np.eye(4)[None], 2, 0)
    P[1, 2, 3] = 24 * u
    ex = extract_actions(Trajectory(P, [0.0, 1.0], 1.0), sizes=NAV)
    assert [s.signed_counts()[2] for s in ex.steps] == [8, 8, 8]
    assert ex.step_interval == (0, 0, 0) and ex.keyframe_steps == (0, 3)
    # A large pan and a move: every count within the cap, the bound holds at the keyframe.
    P[1] = geometry.make_pose(geometry.rot_y(2.0), [1.3, -0.4, 2.2])
    ex = extract_actions(Trajectory(P, [0.0, 1.0], 1.0), sizes=NAV)
    assert max(max(s.counts) for s in ex.steps) <= 10 and len(ex) >= math.ceil(2.0 / NAV.rotation / 10)
    _check_bound(Trajectory(P, [0.0, 1.0], 1.0), ex)


def test_closed_loop_does_not_drift_where_open_loop_would():
    # Constant slow dolly: 0.4 units per second. Rounding each second's true motion (open loop) gives 0 every time
    # and drifts without bound; the closed loop steps whenever the replay falls half a unit behind.
    u = NAV.translation
    n = 301
    P = np.repeat(np.eye(4)[None], n, 0)
    P[:, 2, 3] = 0.4 * u * np.arange(n) / 10
    tr = Trajectory(P, np.arange(n) / 10, 10.0)
    open_loop = np.round(0.4) * 30 * u
    assert abs(open_loop - P[-1, 2, 3]) > 10 * u  # what rounding per interval would give
    ex = extract_actions(tr, sizes=NAV)
    pe, _ = _check_bound(tr, ex)
    assert sum(s.signed_counts()[2] for s in ex.steps) == round(0.4 * 30)  # 12 units over 30 s
    assert pe[-1] <= u / 2 + 1e-12


# ----- metric mode: round trip properties -----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sizes", [NAV, MANIP, StepSizes(0.005, 0.01)])
def test_round_trip_random_smooth(seed, sizes):
    P, t = smooth_poses(240, fps=30.0, seed=seed, scale=0.6, rot_scale=0.8)
    tr = Trajectory(P, t, 30.0)
    ex = extract_actions(tr, sizes=sizes)
    _check_bound(tr, ex)
    assert all(max(s.counts) <= 10 for s in ex.steps)
    assert ex.keyframe_steps[-1] == len(ex)
    # The same numbers from a plain ActionSequence: replay is to_poses.
    assert np.array_equal(replay(ex.sequence, P[0]), ex.sequence.to_poses(P[0]))


@pytest.mark.slow
def test_round_trip_long_error_does_not_grow():
    n = 9000  # five minutes at 30 fps
    P, t = smooth_poses(n, fps=30.0, seed=11, scale=1.5, rot_scale=1.0)
    tr = Trajectory(P, t, 30.0)
    ex = extract_actions(tr, sizes=NAV)
    pe, re = _check_bound(tr, ex)
    k = len(pe)
    # Error in the last tenth is no larger than the bound and of the same size as in the first tenth.
    bt, br = quantisation_bound(NAV)
    assert pe[-k // 10:].max() <= bt and re[-k // 10:].max() <= br
    assert pe[-k // 10:].mean() < 2 * pe[: k // 10].mean() + 0.01
    short = Trajectory(P[:300], t[:300], 30.0)
    pe_short, _ = _check_bound(short, extract_actions(short, sizes=NAV))
    assert pe.max() <= bt and pe_short.max() <= bt


def test_determinism():
    P, t = smooth_poses(200, seed=4)
    tr = Trajectory(P, t, 30.0)
    a, b = extract_actions(tr), extract_actions(tr)
    assert a.to_dict() == b.to_dict() and a.keyframes == b.keyframes


# ----- camera frame ----------------------------------------------------------------------------------------------------
def test_camera_frame_hand_worked_and_round_trip():
    u = MANIP.translation
    # The observing camera's +X is world +Y (camera rotated 90° about world Z); the body turns arbitrarily.
    C = geometry.make_pose(geometry.rot_z(np.pi / 2), [0.0, -1.0, 0.5])
    B0 = geometry.make_pose(geometry.ptr_to_matrix(0.7, 0.3, -0.4), [0.5, 0.0, 0.2])
    B1 = B0.copy()
    B1[:3, 3] += [0.0, 3 * u, 0.0]  # world +Y = camera +X: "Truck Right ×3 in the image"
    P = np.stack([B0, B1])
    tr = Trajectory(P, [0.0, 1.0], 1.0, camera_poses=np.stack([C, C]))
    ex = extract_actions(tr, sizes=MANIP, frame="camera")
    assert _actions(ex.steps[0]) == {Primitive.TRUCK_RIGHT: 3}
    assert np.allclose(replay(ex, B0)[-1], B1, atol=1e-12)
    body = extract_actions(tr, sizes=MANIP)  # in the body's own frame the same motion reads differently
    assert _actions(body.steps[0]) != {Primitive.TRUCK_RIGHT: 3}
    # A camera-frame pan rotates the body about the camera's +Y axis (world −X here), about the body's origin.
    B2 = B0.copy()
    B2[:3, :3] = C[:3, :3] @ geometry.rot_y(2 * MANIP.rotation) @ C[:3, :3].T @ B0[:3, :3]
    tr2 = Trajectory(np.stack([B0, B2]), [0.0, 1.0], 1.0, camera_poses=np.stack([C, C]))
    assert _actions(extract_actions(tr2, sizes=MANIP, frame="camera").steps[0]) == {Primitive.PAN_RIGHT: 2}


@pytest.mark.parametrize("seed", range(3))
def test_camera_frame_round_trip_with_moving_camera(seed):
    P, t = smooth_poses(200, fps=30.0, seed=seed, scale=0.3)
    Cm, _ = smooth_poses(200, fps=30.0, seed=seed + 100, scale=0.2)
    tr = Trajectory(P, t, 30.0, camera_poses=Cm)
    ex = extract_actions(tr, sizes=MANIP, frame="camera")
    _check_bound(tr, ex)
    assert ex.step_cameras.shape == (len(ex), 4, 4)
    with pytest.raises(ValueError, match="needs the observing camera"):
        extract_actions(Trajectory(P, t, 30.0), frame="camera")


# ----- frames mode -------------------------------------------------------------------------------------------------------
def _frames_traj():
    fps = 10.0
    n = 21
    m = np.zeros((n - 1, 6))
    m[0:6, 0] = 0.005                             # 0.05 m/s truck right, frames 0..5: counted
    m[6:10, 0] = 0.0005 * np.array([1, -1, 1, -1])  # 0.005 m/s jitter: below 0.01 m/s, dropped
    m[10:13, 4] = -0.02                           # pan left 0.2 rad/s: counted ×3
    m[13:15, 4] = 0.02                            # pan right ×2 (both signs in one step)
    m[15:20, 3] = np.radians(0.03)                # tilt 0.3°/s: below 0.5°/s, dropped
    P = [np.eye(4)]
    for row in m:
        P.append(P[-1] @ geometry.motion_to_delta(row))
    return Trajectory(np.stack(P), np.arange(n) / fps, fps), m


def test_frames_mode_hand_worked():
    tr, m = _frames_traj()
    ex = extract_actions(tr, mode="frames")
    assert ex.keyframes == (0, 10, 20) and len(ex) == 2
    assert _actions(ex.steps[0]) == {Primitive.TRUCK_RIGHT: 6}
    assert _actions(ex.steps[1]) == {Primitive.PAN_LEFT: 3, Primitive.PAN_RIGHT: 2}
    # unit sizes: the mean per-frame motion of the counted frames
    assert ex.sizes.translation == pytest.approx(0.005) and ex.sizes.rotation == pytest.approx(0.02)
    # higher thresholds drop the truck too; lower ones pick up the jitter and the slow tilt
    hi = extract_actions(tr, mode="frames", thresholds=(0.1, np.radians(0.5)))
    assert _actions(hi.steps[0]) == {}
    lo = extract_actions(tr, mode="frames", thresholds={"translation": 0.001, "rotation": np.radians(0.1)})
    assert _actions(lo.steps[0]) == {Primitive.TRUCK_RIGHT: 8, Primitive.TRUCK_LEFT: 2}
    assert _actions(lo.steps[1])[Primitive.TILT_UP] == 5


def test_frames_mode_splits_at_cap():
    fps = 30.0
    n = 31
    P = np.repeat(np.eye(4)[None], n, 0)
    P[:26, 2, 3] = 0.01 * np.arange(26)  # 25 frames of dolly in, 0.3 m/s
    P[26:, 2, 3] = 0.25
    ex = extract_actions(Trajectory(P, np.arange(n) / fps, fps), mode="frames")
    assert [s.signed_counts()[2] for s in ex.steps] == [9, 8, 8]
    assert ex.sizes.translation == pytest.approx(0.01)
    assert np.allclose(replay(ex, P[0])[-1], P[-1], atol=1e-12)  # exact here: every frame moved one unit


def test_frame_motions_vectorised_equals_per_frame_loop():
    P, _ = smooth_poses(50, seed=2)
    C, _ = smooth_poses(50, seed=3)
    ref = np.stack([geometry.delta_to_motion(np.linalg.inv(P[i]) @ P[i + 1]) for i in range(49)])
    assert np.allclose(frame_motions(P), ref, atol=1e-12)
    ref_c = []
    for i in range(49):
        Rc = C[i, :3, :3]
        t = Rc.T @ (P[i + 1, :3, 3] - P[i, :3, 3])
        pan, tilt, roll = geometry.matrix_to_ptr(Rc.T @ P[i + 1, :3, :3] @ P[i, :3, :3].T @ Rc)
        ref_c.append([*t, tilt, pan, roll])
    assert np.allclose(frame_motions(P, C), ref_c, atol=1e-12)


def test_bad_arguments():
    P, t = smooth_poses(20)
    tr = Trajectory(P, t, 30.0)
    with pytest.raises(ValueError, match="mode"):
        extract_actions(tr, mode="fast")
    with pytest.raises(ValueError, match="cap"):
        extract_actions(tr, cap=0)
    with pytest.raises(ValueError, match="keyframes"):
        extract_actions(tr, keyframes=[0, 50])
    ex = extract_actions(tr, keyframes=[5, 19])
    assert ex.keyframes == (0, 5, 19)
    assert isinstance(ex, ActionSequence) and len(extract_actions(tr[[3]])) == 0


def test_a_jump_of_a_million_metres_is_refused_in_one_line_not_split_for_minutes(tmp_path, capsys):
    """A trajectory in the wrong units (a 10^6 m jump) would split into millions of capped steps: refused at once,
    naming the file and the frames, in the API and through `spatialact extract` (exit 2, one line)."""
    import time

    from spatialact.cli.main import main
    from spatialact.tasks.extraction import MAX_STEPS
    from spatialact.trajectories import load_trajectory
    from traj_helpers import smooth_poses, write_tum

    P, t = smooth_poses(60, 30.0, 0)
    P[40:, 0, 3] += 1e6
    write_tum(tmp_path / "jump.txt", t, P)
    traj = load_trajectory(tmp_path / "jump.txt")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=rf"jump.txt: frames 30→59: the motion \(1e\+06 m\) needs \d+ steps .* more "
                                         rf"than {MAX_STEPS} steps in all"):
        extract_actions(traj)
    assert time.perf_counter() - t0 < 5
    assert main(["extract", str(tmp_path / "jump.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "more than 100000 steps in all" in err[0]


@pytest.mark.parametrize("scale", [1000.0, 10000.0])
def test_a_long_move_while_turning_reaches_every_keyframe(scale):
    """Steps are sized from the start frame's counts; while the camera turns a translation's largest component in the
    current frame grows, the capped steps fall behind and the steps after them catch up. A camera path scaled ×1000
    (hundreds of metres a keyframe interval) stopped with 'did not converge' (a traceback); it must reach every
    keyframe within the quantisation bound, in fewer than twice the planned steps."""
    P, t = smooth_poses(90, 30.0, 1)
    P[:, :3, 3] *= scale
    ex = extract_actions(Trajectory(P, t, 30.0))
    bt, br = quantisation_bound(ex.sizes)
    assert ex.position_errors.max() <= bt + 1e-9 and ex.rotation_errors.max() <= br + 1e-9
    rp = replay(ex, P[0])
    assert np.allclose(rp[list(ex.keyframe_steps)][:, :3, 3], P[list(ex.keyframes)][:, :3, 3], atol=bt + 1e-6)
