"""EgoDex: write episodes in the real layout (h5py: float32 (T, 4, 4) transforms in the ARKit +Y-up world,
confidences, camera/intrinsic, llm_description; PyAV mp4), read them back, and check corrupted files."""

from __future__ import annotations

import numpy as np
import pytest

from spatialact import geometry
from spatialact.tasks import extract_actions, replay
from spatialact.trajectories import TrajectoryError, guess_format, load_trajectory
from spatialact.trajectories.egodex import grip_from_distance
from traj_helpers import hysteresis_reference, smooth_poses, write_egodex

N = 60


def _episode(seed=0):
    cam, _ = smooth_poses(N, 30.0, seed, scale=0.05, rot_scale=0.2)
    cam[:, :3, 3] += [0.0, 0.0, 1.5]
    wrist, _ = smooth_poses(N, 30.0, seed + 1, scale=0.1, rot_scale=0.5)
    wrist[:, :3, 3] += [0.4, 0.0, 1.0]
    d = np.r_[np.linspace(0.08, 0.01, 20), np.full(15, 0.03), np.linspace(0.031, 0.061, 25)]
    return cam, wrist, d


@pytest.fixture
def episode(tmp_path):
    cam, wrist, d = _episode()
    path = write_egodex(tmp_path / "0.hdf5", cam, wrist, d)
    return path, cam, wrist, d


def test_egodex_right_hand(episode):
    path, cam, wrist, d = episode
    assert guess_format(path) == "egodex"
    tr = load_trajectory(path)
    assert tr.meta["entity"] == "rightHand" and tr.meta["kind"] == "hand" and tr.fps == 30.0 and len(tr) == N
    # The hand frame (docs/conventions.md), rebuilt from joint positions, is the one the file was written from
    # (float32 storage).
    assert np.allclose(tr.poses, wrist, atol=2e-5)
    assert np.allclose(tr.camera_poses, cam, atol=2e-5)
    assert tr.instruction == "pick up the cup" and tr.meta["attrs"]["llm_type"] == "reversible"
    assert np.allclose(tr.intrinsics, [[736.6339, 0, 960], [0, 736.6339, 540], [0, 0, 1]], atol=1e-3)
    assert np.allclose(tr.confidence, 0.9)
    assert np.array_equal(tr.gripper, hysteresis_reference(d))
    assert tr.gripper[:10].tolist() == [0] * 10 and tr.gripper[20:35].all() and not tr.gripper[-1]
    img = tr.frame(33)
    assert img.shape == (32, 48, 3) and abs(int(img[..., 0].mean()) - (8 * 33) % 256) <= 3


def test_egodex_camera_and_left_hand(episode):
    path, cam, wrist, d = episode
    tr = load_trajectory(path, entity="camera")
    assert np.allclose(tr.poses, cam, atol=2e-5) and tr.gripper is None and tr.meta["kind"] == "nav"
    # In the file the camera looks down its −Z (ARKit) in a +Y-up world.
    import h5py

    with h5py.File(path) as f:
        raw = f["transforms/camera"][5].astype(np.float64)
    assert np.allclose(geometry.yup_to_zup(raw)[:3, :3] @ [0, 0, -1], cam[5, :3, 2], atol=1e-5)
    left = load_trajectory(path, entity="leftHand")
    assert left.gripper.tolist() == [0] * N  # the left hand keeps a 10 cm pinch
    expect = wrist @ geometry.make_pose(np.eye(3), [-0.3, 0, 0])
    assert np.allclose(left.poses, expect, atol=2e-5)
    with pytest.raises(ValueError, match="entity must be one of"):
        load_trajectory(path, entity="head")


def test_grip_hysteresis_vectorised_matches_loop():
    rng = np.random.default_rng(0)
    for _ in range(20):
        d = np.clip(np.cumsum(rng.normal(0, 0.01, 300)) + 0.03, 0, 0.1)
        assert np.array_equal(grip_from_distance(d), hysteresis_reference(d))
    # hand-worked: dead band keeps the state
    assert grip_from_distance(np.array([0.05, 0.03, 0.019, 0.03, 0.039, 0.041, 0.03])).tolist() == \
        [0, 0, 1, 1, 1, 0, 0]
    assert grip_from_distance(np.array([0.025, 0.035, 0.045])).tolist() == [1, 1, 0]


def test_egodex_extraction_round_trip(episode):
    path, _, _, d = episode
    tr = load_trajectory(path)
    ex = extract_actions(tr)
    assert ex.sizes.translation == 0.02
    rep = replay(ex, tr.poses[0])[list(ex.keyframe_steps)]
    assert np.linalg.norm(rep[:, :3, 3] - tr.poses[list(ex.keyframes), :3, 3], axis=1).max() <= 0.02 * 3 ** .5 / 2
    # the grip closes at the first frame under 2 cm (17) and that frame starts a step carrying it
    first = int(np.flatnonzero(d < 0.02)[0])
    assert first == 17
    k = ex.keyframes.index(first)
    assert ex.steps[ex.keyframe_steps[k]].gripper == 1 and ex.steps[ex.keyframe_steps[k] - 1].gripper == 0
    camex = extract_actions(tr, frame="camera")  # the head camera observes the hand
    assert camex.frame == "camera" and len(camex) >= 2


@pytest.mark.parametrize("drop, corrupt, message", [
    ("transforms/rightThumbTip", None, r"0\.hdf5: field 'transforms/rightThumbTip': missing"),
    ("transforms/camera", None, r"field 'transforms/camera': missing"),
    (None, ("transforms/rightHand", lambda a: a[:, :3]),
     r"field 'transforms/rightHand': expected shape \(N, 4, 4\), got \(60, 3, 4\)"),
    (None, ("transforms/camera", lambda a: _set(a, (41, 1, 3), np.nan)), r"transforms/camera', frame 41: not finite"),
    (None, ("transforms/rightMiddleFingerKnuckle", lambda a: _set(a, (7, 0, 0), 3.0)),
     r"field 'transforms/rightMiddleFingerKnuckle', frame 7: rotation is not orthonormal"),
    (None, ("transforms/rightIndexFingerTip", lambda a: a[:50]),
     r"field 'transforms/rightIndexFingerTip': expected 60 frames \(as transforms/camera\), got 50"),
    (None, ("camera/intrinsic", lambda a: a[:2]),
     r"field 'camera/intrinsic': expected a \(3, 3\) matrix, got shape \(2, 3\)"),
])
def test_egodex_corruptions(tmp_path, drop, corrupt, message):
    cam, wrist, d = _episode(3)
    path = write_egodex(tmp_path / "0.hdf5", cam, wrist, d, video=False, drop=drop, corrupt=corrupt)
    with pytest.raises(TrajectoryError, match=message) as ei:
        load_trajectory(path)
    assert "\n" not in str(ei.value)


def test_egodex_degenerate_hand(tmp_path):
    import h5py

    cam, wrist, d = _episode(4)
    path = write_egodex(tmp_path / "0.hdf5", cam, wrist, d, video=False)
    with h5py.File(path, "r+") as f:  # the middle knuckle on the wrist in frame 12
        k = f["transforms/rightMiddleFingerKnuckle"][()]
        k[12, :3, 3] = f["transforms/rightHand"][12, :3, 3]
        f["transforms/rightMiddleFingerKnuckle"][...] = k
    with pytest.raises(TrajectoryError, match=r"field 'transforms/rightHand', frame 12: degenerate right hand"):
        load_trajectory(path)


def _set(a, idx, v):
    a = a.copy()
    a[idx] = v
    return a
