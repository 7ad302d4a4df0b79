"""Trajectory value + generic readers (npz, json, TUM, KITTI, RealEstate10K): write each layout, read it back,
and check that corrupted files fail with one line naming the file, the field and the frame."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from spatialact import geometry
from spatialact.trajectories import Trajectory, TrajectoryError, guess_format, load_trajectory
from traj_helpers import smooth_poses, write_kitti, write_re10k, write_tum


@pytest.fixture
def poses():
    P, t = smooth_poses(40, fps=20.0, seed=3)
    return P, t


# ----- Trajectory ------------------------------------------------------------------------------------------------
def test_trajectory_is_immutable_and_validates(poses):
    P, t = poses
    tr = Trajectory(P, t, 20.0, gripper=(np.arange(40) > 20).astype(int))
    assert len(tr) == 40 and tr.poses.dtype == np.float64 and tr.gripper.dtype == np.int8
    with pytest.raises(ValueError):
        tr.poses[0, 0, 0] = 5.0
    with pytest.raises(Exception):
        tr.fps = 3.0
    sub = tr.select([5, 6, 7])
    assert np.array_equal(sub.poses, P[5:8]) and np.array_equal(sub.gripper, [0, 0, 0])
    rev = tr.select([9, 8, 7])  # reversed order: timestamps re-based, still increasing
    assert np.all(np.diff(rev.timestamps) > 0) and np.array_equal(rev.poses, P[[9, 8, 7]])
    with pytest.raises(TrajectoryError, match=r"field 'gripper', frame 3: must be 0 or 1"):
        Trajectory(P, t, 20.0, gripper=np.array([0, 0, 0, 2] + [0] * 36))
    with pytest.raises(TrajectoryError, match=r"field 'timestamps', frame 5: not strictly increasing"):
        t2 = t.copy()
        t2[5] = t2[4]
        Trajectory(P, t2, 20.0)


def test_rotations_are_projected_exactly(poses):
    P, t = poses
    noisy = P.astype(np.float32).astype(np.float64)
    tr = Trajectory(noisy, t, 20.0)
    assert np.abs(geometry.orthonormality_error(tr.poses[:, :3, :3])).max() < 1e-12
    assert np.abs(tr.poses - P).max() < 1e-6


# ----- npz / json --------------------------------------------------------------------------------------------------
def test_npz_round_trip(tmp_path, poses):
    P, t = poses
    g = (np.arange(40) >= 10).astype(np.int64)
    K = np.array([[500.0, 0, 320], [0, 500, 240], [0, 0, 1]])
    np.savez(tmp_path / "a.npz", c2w=P, timestamps=t, gripper=g, intrinsics=K, instruction="go")
    tr = load_trajectory(tmp_path / "a.npz")
    assert guess_format(tmp_path / "a.npz") == "npz"
    assert np.allclose(tr.poses, P, atol=1e-12) and np.allclose(tr.timestamps, t)
    assert tr.fps == pytest.approx(20.0) and np.array_equal(tr.gripper, g) and tr.instruction == "go"
    assert np.array_equal(tr.intrinsics, K) and tr.meta["source"] == "generic" and tr.meta["kind"] == "nav"
    np.savez(tmp_path / "b.npz", c2w=P.astype(np.float32))
    tr = load_trajectory(tmp_path / "b.npz", fps=12.5)
    assert tr.fps == 12.5 and np.allclose(tr.timestamps, np.arange(40) / 12.5)


def test_json_round_trip(tmp_path, poses):
    P, t = poses
    (tmp_path / "a.json").write_text(json.dumps({"c2w": P.tolist(), "fps": 20, "gripper": [0] * 40}))
    tr = load_trajectory(tmp_path / "a.json")
    assert np.allclose(tr.poses, P) and tr.fps == 20.0 and np.allclose(tr.timestamps, np.arange(40) / 20)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.pop("c2w"), r"a\.npz: field 'c2w': missing"),
    (lambda d: d.__setitem__("c2w", d["c2w"][:, :3]), r"field 'c2w': expected shape \(N, 4, 4\), got \(40, 3, 4\)"),
    (lambda d: d["c2w"].__setitem__((17, 0, 3), np.nan), r"field 'c2w', frame 17: not finite"),
    (lambda d: d["c2w"].__setitem__((23, 0, 0), 1.5), r"field 'c2w', frame 23: rotation is not orthonormal"),
    (lambda d: d["c2w"].__setitem__((4, 3, 0), 1.0), r"field 'c2w', frame 4: last row must be"),
    (lambda d: d.__setitem__("gripper", np.zeros(39)), r"field 'gripper': expected shape \(40,\)"),
    (lambda d: d.__setitem__("timestamps", np.r_[d["timestamps"][:-1], np.inf]),
     r"field 'timestamps', frame 39: not finite"),
])
def test_npz_corruptions_name_file_field_frame(tmp_path, poses, mutate, message):
    P, t = poses
    d = {"c2w": P.copy(), "timestamps": t.copy()}
    mutate(d)
    np.savez(tmp_path / "a.npz", **d)
    with pytest.raises(TrajectoryError, match=message) as ei:
        load_trajectory(tmp_path / "a.npz")
    assert "\n" not in str(ei.value) and str(tmp_path / "a.npz") in str(ei.value)


def test_non_orthonormal_rotation_in_json(tmp_path, poses):
    P, _ = poses
    bad = P.copy()
    bad[8, :3, :3] *= 1.01  # a scaled rotation
    (tmp_path / "a.json").write_text(json.dumps({"c2w": bad.tolist()}))
    with pytest.raises(TrajectoryError, match=r"a\.json: field 'c2w', frame 8: rotation is not orthonormal"):
        load_trajectory(tmp_path / "a.json")


# ----- TUM ----------------------------------------------------------------------------------------------------------
def test_tum_round_trip_matches_scipy(tmp_path, poses):
    P, t = poses
    write_tum(tmp_path / "traj.txt", t + 1000.0, P)
    assert guess_format(tmp_path / "traj.txt") == "tum"
    tr = load_trajectory(tmp_path / "traj.txt")
    assert np.allclose(tr.poses, P, atol=1e-8)
    # The rotation is scipy's from_quat (x, y, z, w) of the written quaternion.
    line = (tmp_path / "traj.txt").read_text().splitlines()[2 + 7].split()
    assert np.allclose(tr.poses[7, :3, :3], Rotation.from_quat([float(x) for x in line[4:8]]).as_matrix(),
                       atol=1e-8)
    assert tr.fps == pytest.approx(20.0, rel=1e-6) and tr.timestamps[0] == pytest.approx(1000.0)


def test_tum_errors(tmp_path, poses):
    P, t = poses
    write_tum(tmp_path / "traj.txt", t, P, comment=False)
    lines = (tmp_path / "traj.txt").read_text().splitlines()
    lines[6] = " ".join(lines[6].split()[:7])
    (tmp_path / "bad.txt").write_text("\n".join(lines))
    with pytest.raises(TrajectoryError, match=r"bad\.txt: field 't tx ty tz qx qy qz qw', frame 6: line 7 has 7"):
        load_trajectory(tmp_path / "bad.txt", format="tum")
    lines = (tmp_path / "traj.txt").read_text().splitlines()
    parts = lines[3].split()
    parts[2] = "nan"
    lines[3] = " ".join(parts)
    (tmp_path / "nan.txt").write_text("\n".join(lines))
    with pytest.raises(TrajectoryError, match=r"nan\.txt: field 't tx ty tz qx qy qz qw', frame 3: not finite"):
        load_trajectory(tmp_path / "nan.txt", format="tum")


# ----- KITTI --------------------------------------------------------------------------------------------------------
def test_kitti_round_trip_turns_world_to_z_up(tmp_path, poses):
    P, _ = poses
    write_kitti(tmp_path / "00.txt", P)
    assert guess_format(tmp_path / "00.txt") == "kitti"
    tr = load_trajectory(tmp_path / "00.txt")
    # KITTI's world is the first camera (+Y down): R_x(−90°) makes old −Y the new +Z.
    Rx = geometry.make_pose(geometry.rot_x(-np.pi / 2), [0, 0, 0])
    assert np.allclose(tr.poses, Rx @ P, atol=1e-9)
    assert np.allclose(Rx[:3, :3] @ [0, -1, 0], [0, 0, 1])
    assert tr.fps == 10.0 and np.allclose(tr.timestamps, np.arange(40) / 10)
    assert load_trajectory(tmp_path / "00.txt", fps=5).fps == 5.0


def test_kitti_non_orthonormal(tmp_path, poses):
    P, _ = poses
    P = P.copy()
    P[11, 0, 1] += 0.3
    write_kitti(tmp_path / "00.txt", P)
    with pytest.raises(TrajectoryError, match=r"00\.txt: field 'pose', frame 11: rotation is not orthonormal"):
        load_trajectory(tmp_path / "00.txt")


# ----- RealEstate10K ------------------------------------------------------------------------------------------------
def test_realestate10k_round_trip(tmp_path, poses):
    P, t = poses
    write_re10k(tmp_path / "0a1b.txt", t, P)
    assert guess_format(tmp_path / "0a1b.txt") == "realestate10k"
    tr = load_trajectory(tmp_path / "0a1b.txt")
    assert np.allclose(tr.poses, P, atol=1e-9)
    assert np.allclose(np.linalg.inv(tr.poses[3]), geometry.c2w_to_w2c(P[3]), atol=1e-9)  # file holds W2C
    assert tr.meta["metric"] is False and tr.metric is False and tr.meta["intrinsics_normalized"] is True
    assert np.allclose(tr.intrinsics, [[0.5, 0, 0.5], [0, 0.9, 0.5], [0, 0, 1]])
    assert tr.meta["url"].startswith("https://") and tr.fps == pytest.approx(20.0, rel=1e-3)


def test_realestate10k_bad_row(tmp_path, poses):
    P, t = poses
    write_re10k(tmp_path / "x.txt", t, P)
    lines = (tmp_path / "x.txt").read_text().splitlines()
    lines[10] = lines[10] + " 7"
    (tmp_path / "x.txt").write_text("\n".join(lines))
    with pytest.raises(TrajectoryError, match=r"x\.txt: field 'timestamp fx fy cx cy k1 k2 w2c', frame 9: line 11"):
        load_trajectory(tmp_path / "x.txt")


def test_unknown_format_and_missing_file(tmp_path):
    (tmp_path / "x.txt").write_text("1 2 3\n")
    with pytest.raises(TrajectoryError, match="cannot tell the trajectory format"):
        load_trajectory(tmp_path / "x.txt")
    with pytest.raises(FileNotFoundError):
        load_trajectory(tmp_path / "nope.npz")
    with pytest.raises(ValueError, match="unknown trajectory format"):
        load_trajectory(tmp_path / "x.txt", format="bvh")
