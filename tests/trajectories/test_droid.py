"""DROID in its LeRobot form: write v2.1 and v3.0 datasets (pyarrow parquet + PyAV mp4s, both camera-name sets),
read them back, decode frames, and check the error messages for corrupted datasets."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest
from scipy.spatial.transform import Rotation

from spatialact import geometry
from spatialact.tasks import extract_actions, replay
from spatialact.trajectories import TrajectoryError, guess_format, load_trajectory
from traj_helpers import droid_episode, write_droid


@pytest.fixture(scope="module")
def episodes():
    return [droid_episode(45, seed=1, instruction="put the cup in the sink"),
            droid_episode(30, seed=2, close_at=5, open_at=20, instruction="open the drawer")]


@pytest.mark.parametrize("version, cams", [("v2.1", "short"), ("v2.1", "image"), ("v3.0", "short"),
                                           ("v3.0", "image")])
def test_droid_round_trip(tmp_path, episodes, version, cams):
    root = write_droid(tmp_path / "droid", episodes, version=version, cams=cams)
    assert guess_format(root) == "droid" and guess_format(root / "meta" / "info.json") == "droid"
    for ep, e in enumerate(episodes):
        tr = load_trajectory(root, episode=ep)
        n = len(e["cart"])
        assert len(tr) == n and tr.fps == 15.0 and tr.meta["codebase_version"] == version
        # Poses: xyz + extrinsic "xyz" Euler = scipy's lower-case "xyz", from float32 storage.
        c32 = e["cart"].astype(np.float32).astype(np.float64)
        assert np.allclose(tr.poses[:, :3, :3], Rotation.from_euler("xyz", c32[:, 3:]).as_matrix(), atol=1e-9)
        assert np.allclose(tr.poses[:, :3, 3], c32[:, :3])
        assert np.allclose(tr.poses, e["poses"], atol=1e-5)
        assert np.array_equal(tr.gripper, (e["grip"].astype(np.float32) > 0.5).astype(int))
        assert tr.instruction == e["instruction"] and tr.meta["kind"] == "manip"
        assert np.allclose(tr.timestamps, np.arange(n) / 15.0, atol=1e-6)
        assert np.allclose(tr.camera_poses[0], geometry.pose_from_droid(e["ext"].astype(np.float32)), atol=1e-9)
        assert tr.images is not None and tr.has_frames
    # v3.0: episode 1's frames sit after episode 0's in the shared video; the colour encodes the frame index.
    tr = load_trajectory(root, episode=1)
    frames = tr.frames([0, 7, 29])
    offset = 0 if version == "v2.1" else len(episodes[0]["cart"])
    for img, i in zip(frames, [0, 7, 29]):
        assert img.shape == (32, 48, 3) and img.dtype == np.uint8
        assert abs(int(img[..., 0].mean()) - (8 * (i + offset)) % 256) <= 3


def test_droid_default_episode_and_camera_choice(tmp_path, episodes):
    root = write_droid(tmp_path / "d", episodes, version="v2.1", cams="image")
    tr = load_trajectory(root / "meta" / "info.json")
    assert tr.meta["episode"] == 0 and tr.meta["video_key"] == "observation.images.exterior_image_1_left"
    tr2 = load_trajectory(root, episode=1, camera="wrist_left")  # short name accepted for the long set
    assert tr2.meta["video_key"] == "observation.images.wrist_image_left" and tr2.camera_poses is None
    with pytest.raises(ValueError, match="no video 'observation.images.top'"):
        load_trajectory(root, camera="top")
    with pytest.raises(TrajectoryError, match="episode 7 not in the dataset"):
        load_trajectory(root, episode=7)


def test_droid_extraction_round_trip(tmp_path, episodes):
    root = write_droid(tmp_path / "d", episodes, version="v3.0", video=False)
    tr = load_trajectory(root, episode=0)
    assert tr.images is None
    ex = extract_actions(tr)
    assert ex.sizes.translation == 0.02  # manipulation defaults for DROID
    rep = replay(ex, tr.poses[0])[list(ex.keyframe_steps)]
    assert np.linalg.norm(rep[:, :3, 3] - tr.poses[list(ex.keyframes), :3, 3], axis=1).max() <= 0.02 * 3 ** .5 / 2
    # the gripper closes at frame 15 and opens at 30 (45 frames, 15 fps): those frames start steps
    assert 15 in ex.keyframes and 30 in ex.keyframes
    grips = [s.gripper for s in ex.steps]
    k15 = ex.keyframe_steps[ex.keyframes.index(15)]
    k30 = ex.keyframe_steps[ex.keyframes.index(30)]
    assert grips[k15 - 1] == 0 and grips[k15] == 1 and grips[k30 - 1] == 1 and grips[k30] == 0
    cam = extract_actions(tr, frame="camera")  # DROID's exterior camera extrinsics are known
    assert cam.step_cameras is not None


def test_droid_missing_cartesian_position(tmp_path, episodes):
    for version in ("v2.1", "v3.0"):
        root = write_droid(tmp_path / version, episodes, version=version, video=False,
                           drop="observation.state.cartesian_position")
        with pytest.raises(TrajectoryError, match=r"field 'observation.state.cartesian_position': missing: DROID "
                                                  r"end-effector poses") as ei:
            load_trajectory(root)
        assert ".parquet" in str(ei.value) and "\n" not in str(ei.value)


def _rewrite(path, column, fn):
    import pyarrow as pa

    tb = pq.read_table(path)
    i = tb.column_names.index(column)
    vals = [list(x) if x is not None else None for x in tb.column(column).to_pylist()]
    vals = fn(vals)
    tb = tb.set_column(i, column, pa.array(vals, type=pa.list_(pa.float32())))
    pq.write_table(tb, path)


def test_droid_corrupted_rows_name_the_frame(tmp_path, episodes):
    root = write_droid(tmp_path / "d", episodes, version="v2.1", video=False)
    f = root / "data" / "chunk-000" / "episode_000000.parquet"

    def nan_row(v):
        v[12][3] = float("nan")
        return v

    _rewrite(f, "observation.state.cartesian_position", nan_row)
    with pytest.raises(TrajectoryError, match=r"episode_000000\.parquet: field 'observation.state.cartesian_position'"
                                              r", frame 12: not finite"):
        load_trajectory(root)
    root = write_droid(tmp_path / "e", episodes, version="v2.1", video=False)
    f = root / "data" / "chunk-000" / "episode_000000.parquet"

    def short_row(v):
        v[4] = v[4][:5]
        return v

    _rewrite(f, "observation.state.cartesian_position", short_row)
    with pytest.raises(TrajectoryError, match=r"field 'observation.state.cartesian_position', frame 4: expected 6 "
                                              r"values per frame, got 5"):
        load_trajectory(root)


def test_droid_v3_index_mismatch_and_bad_version(tmp_path, episodes):
    import pyarrow as pa

    root = write_droid(tmp_path / "d", episodes, version="v3.0", video=False)
    ep_file = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    tb = pq.read_table(ep_file)
    i = tb.column_names.index("dataset_to_index")
    tb = tb.set_column(i, "dataset_to_index", pa.array([44, 75], type=pa.int64()))
    pq.write_table(tb, ep_file)
    with pytest.raises(TrajectoryError, match=r"field 'episode_index': episode 0 has 45 frames, the episode metadata"
                                              r" says 44"):
        load_trajectory(root)
    info = json.loads((root / "meta" / "info.json").read_text())
    info["codebase_version"] = "v1.6"
    (root / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(TrajectoryError, match=r"info\.json: field 'codebase_version': unsupported LeRobot layout"):
        load_trajectory(root)


def test_not_a_lerobot_dataset(tmp_path):
    (tmp_path / "x").mkdir()
    with pytest.raises(TrajectoryError, match="not a LeRobot dataset"):
        load_trajectory(tmp_path / "x")
