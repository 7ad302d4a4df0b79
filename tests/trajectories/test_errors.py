"""Hostile trajectory files, each written in its real layout and then damaged the way a reviewer found it (a
truncated or empty .npz, an fps that is not a number, a DROID info.json with ``chunks_size: 0`` or that is not an
object, an EgoDex dataset stored as a group, non-UTF-8 JSON, text intrinsics, ...): every one must fail with ONE line
naming the file, the field and (where there is one) the frame, both from ``load_trajectory`` and through
``spatialact extract FILE`` (exit status 2, one line on stderr, no traceback)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from spatialact.cli.main import main
from spatialact.trajectories import TrajectoryError, load_trajectory
from traj_helpers import droid_episode, smooth_poses, write_droid, write_egodex, write_mp4, color_frames

N = 24


def _poses():
    P, t = smooth_poses(N, fps=20.0, seed=5)
    return P, t


# ----- generic .npz / .json / text ---------------------------------------------------------------------------------
def _npz_truncated(tmp):
    P, _ = _poses()
    np.savez(tmp / "a.npz", c2w=P)
    b = (tmp / "a.npz").read_bytes()
    (tmp / "a.npz").write_bytes(b[: len(b) // 2])
    return tmp / "a.npz", r"a\.npz: field '\(file\)': not a readable \.npz archive \(File is not a zip file\)"


def _npz_empty(tmp):
    (tmp / "a.npz").write_bytes(b"")
    return tmp / "a.npz", r"a\.npz: field '\(file\)': not a readable \.npz archive"


def _npz_member_corrupt(tmp):
    # The zip directory is intact, the compressed bytes of the 'c2w' member are not.
    P, _ = _poses()
    np.savez_compressed(tmp / "a.npz", c2w=P)
    b = bytearray((tmp / "a.npz").read_bytes())
    mid = len(b) // 3
    b[mid:mid + 64] = bytes(64)
    (tmp / "a.npz").write_bytes(bytes(b))
    return tmp / "a.npz", r"a\.npz: field 'c2w': cannot read this array"


def _npz_fps_text(tmp):
    P, _ = _poses()
    np.savez(tmp / "a.npz", c2w=P, fps="abc")
    return tmp / "a.npz", r"a\.npz: field 'fps': expected a number of frames per second, got the text 'abc'"


def _npz_fps_zero(tmp):
    P, _ = _poses()
    np.savez(tmp / "a.npz", c2w=P, fps=0)
    return tmp / "a.npz", r"a\.npz: field 'fps': must be a positive number of frames per second, got 0$"


def _npz_fps_empty_array(tmp):
    P, _ = _poses()
    np.savez(tmp / "a.npz", c2w=P, fps=np.zeros(0))
    return tmp / "a.npz", r"a\.npz: field 'fps': expected one number, got an array of shape \(0,\)"


def _npz_object_array(tmp):
    P, _ = _poses()
    np.savez(tmp / "a.npz", c2w=np.array([P, None], dtype=object))
    return tmp / "a.npz", r"a\.npz: field 'c2w': cannot read this array \(Object arrays cannot be loaded"


def _npz_text_poses(tmp):
    np.savez(tmp / "a.npz", c2w=np.full((N, 4, 4), "x"))
    return tmp / "a.npz", r"a\.npz: field 'c2w', frame 0: expected numbers, got text"


def _npz_huge_position(tmp):
    P, _ = _poses()
    P[17, 0, 3] = 1e300
    np.savez(tmp / "a.npz", c2w=P)
    return tmp / "a.npz", r"a\.npz: field 'c2w', frame 17: position \(1e\+300, .*\) is beyond ±1e\+09"


def _json(tmp, **fields):
    P, _ = _poses()
    d = {"c2w": P.tolist(), **fields}
    (tmp / "a.json").write_text(json.dumps(d))
    return tmp / "a.json"


def _json_fps_object(tmp):
    return _json(tmp, fps={"value": 30}), r"a\.json: field 'fps': expected a number of frames per second, got an " \
                                          r"object with 1 key"


def _json_fps_list(tmp):
    return _json(tmp, fps=[15, 30]), r"a\.json: field 'fps': expected one number, got a list of 2"


def _json_fps_huge(tmp):
    return _json(tmp, fps=1e300), r"a\.json: field 'fps': 1e\+300 frames per second is above 10000"


def _json_intrinsics_text(tmp):
    return _json(tmp, intrinsics="fx=500"), r"a\.json: field 'intrinsics': expected numbers, got the text 'fx=500'"


def _json_intrinsics_text_rows(tmp):
    return (_json(tmp, intrinsics=[["500", "0", "320"], ["0", "500", "240"], ["0", "0", "1"]]),
            r"a\.json: field 'intrinsics': row 0: expected numbers, got text")


def _json_intrinsics_zero_focal(tmp):
    return (_json(tmp, intrinsics=[[0, 0, 320], [0, 500, 240], [0, 0, 1]]),
            r"a\.json: field 'intrinsics': focal lengths must be positive, got fx 0, fy 500")


def _json_not_utf8(tmp):
    (tmp / "a.json").write_bytes(b'{"c2w": "\xff\xfe"}')
    return tmp / "a.json", r"a\.json: field '\(file\)': not UTF-8 text \(byte 0xff at offset 9\)"


def _json_too_deep(tmp):
    (tmp / "a.json").write_text("[" * 100_000 + "]" * 100_000)
    return tmp / "a.json", r"a\.json: field '\(file\)': nested deeper than 256 levels \(jsonline\.MAX_JSON_DEPTH"


def _json_not_object(tmp):
    (tmp / "a.json").write_text("[1, 2, 3]")
    return tmp / "a.json", r"a\.json: field '\(file\)': expected a JSON object with the key 'c2w', got a list of 3"


def _json_null_timestamp(tmp):
    t = (np.arange(N) / 20.0).tolist()
    t[7] = None
    return _json(tmp, timestamps=t), r"a\.json: field 'timestamps', frame 7: expected numbers, got null"


def _json_ragged_pose(tmp):
    P, _ = _poses()
    c2w = P.tolist()
    c2w[5] = c2w[5][:3]
    (tmp / "a.json").write_text(json.dumps({"c2w": c2w}))
    return tmp / "a.json", r"a\.json: field 'c2w', frame 5: shape \(3, 4\) differs from frame 0's \(4, 4\)"


def _json_instruction_object(tmp):
    return _json(tmp, instruction={"en": "go"}), r"a\.json: field 'instruction': expected text, got an object"


def _json_image_number(tmp):
    names = [f"{i:04d}.png" for i in range(N)]
    names[3] = 3
    return _json(tmp, images=names), r"a\.json: field 'images', frame 3: expected an image path, got the number 3"


def _json_gripper_text(tmp):
    return _json(tmp, gripper="open"), r"a\.json: field 'gripper': expected numbers, got the text 'open'"


def _tum_not_utf8(tmp):
    (tmp / "a.txt").write_bytes(b"\xff\xfe0 1 2 3 0 0 0 1\n")
    return tmp / "a.txt", r"a\.txt: field '\(file\)': not UTF-8 text \(byte 0xff at offset 0\)"


def _npz_encrypted_flag(tmp):
    # A flipped bit in the zip's central directory marks the member encrypted (zipfile raises RuntimeError).
    P, _ = _poses()
    np.savez(tmp / "a.npz", c2w=P)
    b = bytearray((tmp / "a.npz").read_bytes())
    cd = b.find(b"PK\x01\x02")
    b[cd + 8] |= 1
    (tmp / "a.npz").write_bytes(bytes(b))
    return tmp / "a.npz", r"a\.npz: field 'c2w': cannot read this array \(File 'c2w\.npy' is encrypted"


def _npz_huge_rotation(tmp):
    P, _ = _poses()
    P[11, 1, 2] = 1e308
    np.savez(tmp / "a.npz", c2w=P)
    return tmp / "a.npz", r"a\.npz: field 'c2w', frame 11: rotation is not orthonormal \(entry 1e\+308 > 1\)"


GENERIC = [_npz_encrypted_flag, _npz_huge_rotation, _npz_truncated, _npz_empty, _npz_member_corrupt, _npz_fps_text, _npz_fps_zero, _npz_fps_empty_array,
           _npz_object_array, _npz_text_poses, _npz_huge_position, _json_fps_object, _json_fps_list, _json_fps_huge,
           _json_intrinsics_text, _json_intrinsics_text_rows, _json_intrinsics_zero_focal, _json_not_utf8,
           _json_too_deep, _json_not_object, _json_null_timestamp, _json_ragged_pose, _json_instruction_object,
           _json_image_number, _json_gripper_text]


# ----- DROID (LeRobot v2.1 / v3.0) -----------------------------------------------------------------------------------
def _droid(tmp, version="v2.1"):
    return write_droid(tmp / "droid", [droid_episode(N, seed=1)], version=version, video=False)


def _edit_info(root, fn):
    p = root / "meta" / "info.json"
    info = json.loads(p.read_text())
    fn(info)
    p.write_text(json.dumps(info))


def _droid_chunks_zero(tmp):
    root = _droid(tmp)
    _edit_info(root, lambda i: i.update(chunks_size=0))
    return root, r"droid/meta/info\.json: field 'chunks_size': must be at least 1, got 0"


def _droid_chunks_text(tmp):
    root = _droid(tmp)
    _edit_info(root, lambda i: i.update(chunks_size="1000"))
    return root, r"droid/meta/info\.json: field 'chunks_size': expected an integer, got the text '1000'"


def _droid_info_not_object(tmp, version="v2.1"):
    root = _droid(tmp, version)
    (root / "meta" / "info.json").write_text('["codebase_version", "v2.1"]')
    return root, r"droid/meta/info\.json: field '\(file\)': expected a JSON object, got a list of 2"


def _droid_info_not_utf8(tmp):
    root = _droid(tmp, "v3.0")
    (root / "meta" / "info.json").write_bytes(b'{"codebase_version": "v3.0\xff"}')
    return root, r"droid/meta/info\.json: field '\(file\)': not UTF-8 text \(byte 0xff at offset 26\)"


def _droid_fps_text(tmp):
    root = _droid(tmp, "v3.0")
    _edit_info(root, lambda i: i.update(fps="15 Hz"))
    return root, r"droid/meta/info\.json: field 'fps': expected a number of frames per second, got the text '15 Hz'"


def _droid_data_path_placeholder(tmp):
    root = _droid(tmp, "v3.0")
    _edit_info(root, lambda i: i.update(data_path="data/chunk-{chunk_index:03d}/{episode}.parquet"))
    return root, r"droid/meta/info\.json: field 'data_path': template .*placeholder \{episode\} is not one of"


def _droid_data_path_huge_width(tmp):
    root = _droid(tmp)
    _edit_info(root, lambda i: i.update(data_path="data/{episode_index:0999999999d}.parquet"))
    return root, r"droid/meta/info\.json: field 'data_path': template .*placeholder \{episode_index:0999999999d\}"


def _droid_data_path_number(tmp):
    root = _droid(tmp)
    _edit_info(root, lambda i: i.update(data_path=5))
    return root, r"droid/meta/info\.json: field 'data_path': expected a path template, got the number 5"


def _droid_features_list(tmp):
    root = _droid(tmp)
    _edit_info(root, lambda i: i.update(features=["observation.state.cartesian_position"]))
    return root, r"droid/meta/info\.json: field 'features': expected an object"


def _droid_truncated_parquet(tmp):
    root = _droid(tmp)
    f = root / "data" / "chunk-000" / "episode_000000.parquet"
    f.write_bytes(f.read_bytes()[:200])
    return root, r"episode_000000\.parquet: field '\(file\)': not a readable parquet file"


def _droid_truncated_parquet_v3(tmp):
    root = _droid(tmp, "v3.0")
    f = root / "meta" / "episodes" / "chunk-000" / "file-000.parquet"
    f.write_bytes(f.read_bytes()[:-40])
    return root, r"meta/episodes/chunk-000/file-000\.parquet: field '\(file\)': not a readable parquet file"


def _droid_jsonl_not_object(tmp):
    root = _droid(tmp)
    (root / "meta" / "episodes.jsonl").write_text('{"episode_index": 0, "tasks": ["x"], "length": 24}\n[0]\n')
    return root, r"droid/meta/episodes\.jsonl: field '\(record\)': line 2: expected a JSON object, got a list of 1"


def _droid_jsonl_index_text(tmp):
    root = _droid(tmp)
    (root / "meta" / "episodes.jsonl").write_text('{"episode_index": "0", "tasks": ["x"], "length": 24}\n')
    return root, r"droid/meta/episodes\.jsonl: field 'episode_index': expected an integer, got the text '0'"


def _set_column(f, name, make):
    """Rewrite parquet file ``f`` with column ``name`` replaced by ``make(table)`` (a pyarrow array)."""
    import pyarrow.parquet as pq

    tb = pq.read_table(f)
    pq.write_table(tb.set_column(tb.column_names.index(name), name, make(tb)), f)


def _droid_v3_episode_index_text(tmp):
    import pyarrow as pa

    root = _droid(tmp, "v3.0")
    _set_column(root / "meta" / "episodes" / "chunk-000" / "file-000.parquet", "episode_index",
                lambda tb: pa.array(["0"]))
    return root, r"file-000\.parquet: field 'episode_index': expected integers, got type string"


def _droid_cartesian_text(tmp):
    import pyarrow as pa

    root = _droid(tmp)
    _set_column(root / "data" / "chunk-000" / "episode_000000.parquet", "observation.state.cartesian_position",
                lambda tb: pa.array([["0"] * 6] * N, type=pa.list_(pa.string())))
    return root, (r"episode_000000\.parquet: field 'observation\.state\.cartesian_position': expected a list of 6 "
                  r"numbers per frame, got type list<\w+: string>")


def _droid_cartesian_null(tmp):
    import pyarrow as pa

    root = _droid(tmp, "v3.0")
    name = "observation.state.cartesian_position"

    def with_null(tb):
        vals = tb.column(name).to_pylist()
        vals[9] = None
        return pa.array(vals, type=tb.schema.field(name).type)

    _set_column(root / "data" / "chunk-000" / "file-000.parquet", name, with_null)
    return root, r"file-000\.parquet: field 'observation\.state\.cartesian_position', frame 9: missing value \(null\)"


def _droid_jsonl_huge_index(tmp):
    root = _droid(tmp)
    (root / "meta" / "episodes.jsonl").write_text('{"episode_index": 1e308, "tasks": ["x"], "length": 24}\n')
    return root, r"droid/meta/episodes\.jsonl: field 'episode_index': 1e\+308 is beyond 1e\+09"


def _droid_column_name_not_utf8(tmp):
    # One byte of a column name in the parquet footer damaged: pyarrow cannot decode the schema's names.
    root = _droid(tmp)
    f = root / "data" / "chunk-000" / "episode_000000.parquet"
    b = f.read_bytes()
    f.write_bytes(b.replace(b"is_first", b"is_fir\xb0t"))
    return root, r"episode_000000\.parquet: field '\(file\)': not a readable parquet file"


DROID = [_droid_jsonl_huge_index, _droid_column_name_not_utf8, _droid_chunks_zero, _droid_chunks_text, _droid_info_not_object, _droid_info_not_utf8, _droid_fps_text,
         _droid_data_path_placeholder, _droid_data_path_huge_width, _droid_data_path_number, _droid_features_list,
         _droid_truncated_parquet, _droid_truncated_parquet_v3, _droid_jsonl_not_object, _droid_jsonl_index_text,
         _droid_v3_episode_index_text, _droid_cartesian_text, _droid_cartesian_null]


# ----- EgoDex ----------------------------------------------------------------------------------------------------------
def _egodex(tmp, **kw):
    cam, _ = smooth_poses(N, 30.0, 2, scale=0.05, rot_scale=0.2)
    cam[:, :3, 3] += [0.0, 0.0, 1.5]
    wrist, _ = smooth_poses(N, 30.0, 3, scale=0.1, rot_scale=0.5)
    wrist[:, :3, 3] += [0.4, 0.0, 1.0]
    return write_egodex(tmp / "0.hdf5", cam, wrist, np.full(N, 0.08), video=False, **kw)


def _h5_replace(path, name, make):
    import h5py

    with h5py.File(path, "r+") as f:
        del f[name]
        make(f, name)


def _egodex_camera_group(tmp):
    path = _egodex(tmp)
    _h5_replace(path, "transforms/camera", lambda f, n: f.create_group(n))
    return path, r"0\.hdf5: field 'transforms/camera': expected a dataset, got a group"


def _egodex_joint_group(tmp):
    path = _egodex(tmp)
    _h5_replace(path, "transforms/rightThumbTip", lambda f, n: f.create_group(n).create_dataset("x", data=[1.0]))
    return path, r"0\.hdf5: field 'transforms/rightThumbTip': expected a dataset, got a group"


def _egodex_intrinsic_text(tmp):
    path = _egodex(tmp)
    _h5_replace(path, "camera/intrinsic", lambda f, n: f.create_dataset(n, data="fx 736"))
    return path, r"0\.hdf5: field 'camera/intrinsic': expected numbers, got the text 'fx 736'"


def _egodex_confidence_text(tmp):
    path = _egodex(tmp)
    _h5_replace(path, "confidences/rightHand", lambda f, n: f.create_dataset(n, data=np.array([b"high"] * N)))
    return path, r"0\.hdf5: field 'confidences/rightHand', frame 0: expected numbers, got the text 'high'"


def _egodex_empty_dataset(tmp):
    import h5py

    path = _egodex(tmp)
    _h5_replace(path, "transforms/camera", lambda f, n: f.create_dataset(n, data=h5py.Empty("f")))
    return path, r"0\.hdf5: field 'transforms/camera': empty dataset \(no data\)"


def _egodex_broken_link(tmp):
    import h5py

    path = _egodex(tmp)
    _h5_replace(path, "transforms/rightHand", lambda f, n: f.__setitem__(n, h5py.SoftLink("/nowhere")))
    return path, r"0\.hdf5: field 'transforms/rightHand': missing \(a link to nothing\)"


def _egodex_truncated(tmp):
    path = _egodex(tmp)
    b = path.read_bytes()
    path.write_bytes(b[: len(b) // 3])
    return path, r"0\.hdf5: field '\(file\)': not a readable HDF5 file"


def _egodex_description_number(tmp):
    import h5py

    path = _egodex(tmp)
    with h5py.File(path, "r+") as f:
        f.attrs["llm_description"] = 7
    return path, r"0\.hdf5: field 'llm_description \(attribute\)': expected text, got the number 7"


def _egodex_rotation_text_frame(tmp):
    # float32 storage, NaN in one frame's rotation: the frame is named.
    path = _egodex(tmp, corrupt=("transforms/rightLittleFingerKnuckle", lambda a: _set(a, (13, 1, 1), np.inf)))
    return path, r"0\.hdf5: field 'transforms/rightLittleFingerKnuckle', frame 13: not finite"


def _set(a, idx, v):
    a = a.copy()
    a[idx] = v
    return a


EGODEX = [_egodex_camera_group, _egodex_joint_group, _egodex_intrinsic_text, _egodex_confidence_text,
          _egodex_empty_dataset, _egodex_broken_link, _egodex_truncated, _egodex_description_number,
          _egodex_rotation_text_frame]

ALL = GENERIC + DROID + EGODEX


@pytest.mark.parametrize("case", ALL, ids=[c.__name__.lstrip("_") for c in ALL])
def test_reader_error_is_one_line_naming_file_and_field(tmp_path, case):
    path, message = case(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning (overflow) or ResourceWarning (a file left open) either
        with pytest.raises(TrajectoryError) as ei:
            load_trajectory(path)
    text = str(ei.value)
    assert "\n" not in text and "field '" in text
    assert text.startswith(str(path)) or text.startswith(str(path / "meta")) or str(path) in text
    assert re.search(message, text), text


@pytest.mark.parametrize("case", ALL, ids=[c.__name__.lstrip("_") for c in ALL])
def test_cli_extract_exit_2_one_line(tmp_path, capsys, case):
    path, message = case(tmp_path)
    assert main(["extract", str(path)]) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spatialact extract: error: ") and out == ""
    assert re.search(message, lines[0]), lines[0]


@pytest.mark.parametrize("case", [_npz_truncated, _droid_chunks_zero, _egodex_camera_group, _json_not_utf8])
def test_cli_extract_subprocess_no_traceback(tmp_path, case):
    """The installed entry point, as a user runs it: exit 2, one line on stderr, nothing else."""
    path, message = case(tmp_path)
    r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "extract", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr and r.stdout == ""
    assert re.search(message, lines[0]), lines[0]


def test_fps_option_is_checked_before_reading(tmp_path, capsys):
    P, _ = _poses()
    np.savez(tmp_path / "a.npz", c2w=P)
    with pytest.raises(TrajectoryError, match=r"a\.npz: field 'fps \(option\)': must be a positive number of frames "
                                              r"per second, got 0"):
        load_trajectory(tmp_path / "a.npz", fps=0)
    assert main(["extract", str(tmp_path / "a.npz"), "--fps", "-2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'fps (option)'" in err[0] and "got -2" in err[0]
    assert main(["extract", str(tmp_path / "a.npz"), "--fps", "nan"]) == 2
    assert "field 'fps (option)'" in capsys.readouterr().err


def test_entity_errors_name_the_file(tmp_path):
    P, _ = _poses()
    np.savez(tmp_path / "a.npz", c2w=P)
    with pytest.raises(TrajectoryError, match=r"a\.npz: field 'entity': npz trajectories have one moving camera"):
        load_trajectory(tmp_path / "a.npz", entity="rightHand")
    path, _ = _egodex_camera_group(tmp_path)
    with pytest.raises(TrajectoryError, match=r"0\.hdf5: field 'entity': EgoDex entity must be one of"):
        load_trajectory(path, entity="head")


# ----- frames: video shorter than the trajectory, a damaged video, a missing image -----------------------------------
def test_video_shorter_than_trajectory_names_the_frame(tmp_path):
    root = write_droid(tmp_path / "droid", [droid_episode(N, seed=1)], version="v2.1", video=True)
    video = root / "videos" / "chunk-000" / "observation.images.exterior_1_left" / "episode_000000.mp4"
    write_mp4(video, color_frames(10), 15.0)  # 10 frames for a 24-frame episode
    tr = load_trajectory(root)
    assert tr.frame(9)[0, 0, 0] == pytest.approx(8 * 9, abs=3)  # still inside the video
    with pytest.raises(TrajectoryError, match=r"episode_000000\.mp4: field 'video', frame 20: time 1\.333 s is past "
                                              r"the last frame \(0\.6 s\)"):
        tr.frames([3, 20])


def test_damaged_video_and_missing_image(tmp_path):
    root = write_droid(tmp_path / "droid", [droid_episode(N, seed=1)], version="v3.0", video=True)
    video = root / "videos" / "observation.images.exterior_1_left" / "chunk-000" / "file-000.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(300))
    tr = load_trajectory(root)
    with pytest.raises(TrajectoryError, match=r"file-000\.mp4: field 'video', frame 4: cannot decode") as ei:
        tr.frame(4)
    assert "\n" not in str(ei.value)
    P, _ = _poses()
    (tmp_path / "a.json").write_text(json.dumps({"c2w": P.tolist(), "images": [f"{i}.png" for i in range(N)]}))
    tr = load_trajectory(tmp_path / "a.json")
    assert not tr.has_frames
    with pytest.raises(TrajectoryError, match=r"6\.png: field 'image', frame 6: missing file"):
        tr.frame(6)
    (tmp_path / "7.png").write_bytes(b"not a png")
    with pytest.raises(TrajectoryError, match=r"7\.png: field 'image', frame 7: cannot decode"):
        tr.frame(7)
