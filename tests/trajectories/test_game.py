"""Game trajectories: recorded by the explorer in a real Freedoom level, written as a folder, read back by
load_trajectory as source 'game'; refusals of damaged folders in one line naming the file, the field and the
frame."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from traj_helpers import copy_recording, edit_meta

pytest.importorskip("vizdoom")

from spatialact.envs.doom.engine import DoomEngine, depth_to_metres  # noqa: E402
from spatialact.envs.doom.record import record_level  # noqa: E402
from spatialact.trajectories import TrajectoryError, guess_format, load_trajectory  # noqa: E402
from spatialact.trajectories.game import read_depth, read_game_arrays  # noqa: E402

SRC = str(Path(__file__).parents[2] / "src")
SECONDS = 2.0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("game") / "map01"
    record_level(out, map="MAP01", seconds=SECONDS, seed=3)
    return out


def _digest(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_record_then_load_round_trip(recorded):
    assert guess_format(recorded) == "game" and guess_format(recorded / "meta.json") == "game"
    traj = load_trajectory(recorded)
    n = int(round(SECONDS * 35)) + 1
    assert len(traj) == n and traj.fps == 35.0
    assert traj.meta["source"] == "game" and traj.meta["kind"] == "nav" and traj.meta["map"] == "MAP01"
    assert traj.meta["wad"] == "freedoom2.wad"
    assert traj.meta["wad_sha256"] == hashlib.sha256(_wad_path().read_bytes()).hexdigest()
    assert traj.meta["engine"] == "vizdoom" and traj.meta["engine_version"]
    assert np.allclose(np.diff(traj.timestamps), 1 / 35)
    K = traj.intrinsics
    assert K[1, 1] / K[0, 0] == pytest.approx(1.2) and K[0, 0] == pytest.approx(160.0)
    arrays = read_game_arrays(recorded)
    assert np.array_equal(arrays["c2w"], traj.poses)
    assert np.array_equal(arrays["tics"], arrays["tics"][0] + np.arange(n))
    # poses are level C2W in metres (the camera's +Y is world down), walking pace between frames
    assert np.allclose(traj.poses[:, :3, 1], [0, 0, -1])
    assert np.linalg.norm(np.diff(traj.positions, axis=0), axis=1).max() * 35 <= 1.45
    # frame 0 is the map's start: the same view as a fresh engine's (rgb through lossy H.264; depth exact)
    with DoomEngine(map="MAP01", resolution=(320, 240)) as e:
        rgb, levels = e.render_raw()
        assert np.allclose(e.pose(), traj.poses[0])
    img = traj.frame(0)
    assert img.shape == (240, 320, 3) and np.abs(img.astype(float) - rgb.astype(float)).mean() < 4.0
    d0, d_last = read_depth(traj, [0, n - 1])
    assert d0.dtype == np.float32 and d0.shape == (240, 320)
    assert np.allclose(d0, depth_to_metres(levels, 240), atol=1e-5)
    assert not np.array_equal(d0, d_last)
    # a selection keeps each frame's depth
    sub = traj.select([n - 1, 0])
    assert np.array_equal(read_depth(sub, [0])[0], d_last)
    meta = json.loads((recorded / "meta.json").read_text())
    assert meta["format"] == "spatialact-game" and meta["version"] == 1
    assert meta["depth"]["quantisation_m"] == pytest.approx(7.14 / 32)
    assert meta["units"]["map_unit_m"] == 1 / 32


def _wad_path():
    from spatialact.envs.doom.wad import resolve_wad

    return resolve_wad("freedoom2.wad")


def test_same_seed_identical_files_other_seed_other_poses(recorded, tmp_path):
    again = tmp_path / "again"
    record_level(again, map="MAP01", seconds=SECONDS, seed=3)
    assert _digest(again) == _digest(recorded)
    other = tmp_path / "other"
    record_level(other, map="MAP01", seconds=SECONDS, seed=4)
    assert not np.array_equal(load_trajectory(other).poses, load_trajectory(recorded).poses)


def test_two_recordings_in_one_process_under_load_are_the_same_bytes(recorded, tmp_path):
    """The same seed recorded twice more in this process while a busy process competes for the cores: the same
    files each time (the video once differed: x264's macroblock tree read memory it never wrote)."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        for k in range(2):
            again = tmp_path / f"again{k}"
            record_level(again, map="MAP01", seconds=SECONDS, seed=3)
            assert _digest(again) == _digest(recorded), k
    finally:
        busy.kill()
        busy.wait()
    assert json.loads((recorded / "meta.json").read_text())["rgb"]["options"]["mbtree"] == "0"


_ENCODE = """
import hashlib, sys
import numpy as np
from spatialact.envs.doom.record import depth_meta
from spatialact.trajectories.game import GameTrajectoryWriter
frames = np.load(sys.argv[1])
K = [[160.0, 0.0, 159.5], [0.0, 192.0, 119.5], [0.0, 0.0, 1.0]]
w = GameTrajectoryWriter(sys.argv[2], fps=35.0, width=320, height=240, intrinsics=K, depth=depth_meta(240), meta={})
for i, rgb in enumerate(frames):
    w.add(rgb, np.zeros((240, 320), np.uint8), np.eye(4), i, (0, 0, 0, 0, 0))
w.close()
print(hashlib.sha256(open(sys.argv[2] + "/rgb.mp4", "rb").read()).hexdigest())
"""


def test_the_video_does_not_depend_on_what_the_heap_held(recorded, tmp_path):
    """The same frames encoded in processes whose new heap memory glibc fills with different bytes
    (MALLOC_PERTURB_): one file. With x264's macroblock tree on, every fill value gave other bytes."""
    import av

    with av.open(str(recorded / "rgb.mp4")) as c:
        frames = np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)][:40])
    np.save(tmp_path / "frames.npy", frames)
    digests = set()
    for fill in ("0", "77", "165"):
        r = subprocess.run([sys.executable, "-c", _ENCODE, str(tmp_path / "frames.npy"), str(tmp_path / f"v{fill}")],
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": SRC, "MALLOC_PERTURB_": fill})
        assert r.returncode == 0, r.stderr
        digests.add(r.stdout.strip())
    assert len(digests) == 1, digests


def test_replaying_the_recorded_inputs_reaches_each_recorded_frame_exactly(recorded):
    traj = load_trajectory(recorded)
    arrays = read_game_arrays(recorded)
    with DoomEngine(map="MAP01", resolution=(320, 240)) as e:
        for k in (1, 40, len(traj) - 1):
            e.replay(arrays["actions"][1:k + 1])
            assert np.array_equal(e.pose(), traj.poses[k])
            _, levels = e.render_raw()
            assert np.allclose(depth_to_metres(levels, 240), read_depth(traj, [k])[0], atol=1e-5)


def test_extract_reads_a_game_trajectory(recorded):
    r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "extract", str(recorded), "--format", "game",
                        "--json"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["source"] == "game" and out["frames"] == int(round(SECONDS * 35)) + 1
    assert any("Dolly In" in step["actions"] for step in out["answer"].values())


def _poses(d: Path, **changes):
    with np.load(d / "poses.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(d / "poses.npz", **arrays)


def _refusal(d: Path) -> str:
    with pytest.raises(TrajectoryError) as e:
        load_trajectory(d)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_refusals_name_the_file_the_field_and_the_frame(recorded, tmp_path):
    d = copy_recording(recorded, tmp_path)
    (d / "meta.json").write_text("{not json")
    assert _refusal(d).startswith(f"{d / 'meta.json'}: field '(file)': not valid JSON")

    d = copy_recording(recorded, tmp_path / "v")
    edit_meta(d, version=2)
    assert "field 'version': version 2 (written by a newer spatialact); this reader reads version 1" in _refusal(d)
    edit_meta(d, version="1")
    assert "field 'version': expected a whole number" in _refusal(d)

    d = copy_recording(recorded, tmp_path / "o")
    with np.load(d / "poses.npz") as z:
        c2w = z["c2w"].copy()
    c2w[5, :3, :3] *= 1.1
    _poses(d, c2w=c2w)
    assert _refusal(d).startswith(f"{d / 'poses.npz'}: field 'c2w', frame 5: rotation is not orthonormal")
    c2w[5, :3, :3] /= 1.1
    c2w[7, 0, 3] = np.nan
    _poses(d, c2w=c2w)
    assert "field 'c2w', frame 7: not finite" in _refusal(d)
    c2w[7, 0, 3] = 0.0
    _poses(d, c2w=c2w[:-1])
    assert "field 'c2w': 70 poses, but meta.json says 71 frames" in _refusal(d)

    d = copy_recording(recorded, tmp_path / "m")
    edit_meta(d, intrinsics=[[0, 0, 1], [0, 192, 119.5], [0, 0, 1]])
    assert "field 'intrinsics': focal lengths must be positive" in _refusal(d)
    d = copy_recording(recorded, tmp_path / "s")
    edit_meta(d, wad={"name": "freedoom2.wad", "sha256": "abc"})
    assert "field 'wad.sha256': expected 64 lower-case hex digits" in _refusal(d)
    d = copy_recording(recorded, tmp_path / "f")
    edit_meta(d, format="something-else")
    assert "field 'format': expected 'spatialact-game'" in _refusal(d)

    d = copy_recording(recorded, tmp_path / "d")
    (d / "depth" / "000012.png").unlink()
    assert _refusal(d).startswith(f"{d / 'depth' / '000012.png'}: field 'depth', frame 12: missing")
    d = copy_recording(recorded, tmp_path / "r")
    (d / "rgb.mp4").unlink()
    assert "rgb.mp4: field 'video': missing" in _refusal(d)
    d = copy_recording(recorded, tmp_path / "p")
    (d / "poses.npz").write_bytes(b"not a zip")
    assert "poses.npz: field '(file)': not a readable .npz archive" in _refusal(d)

    d = copy_recording(recorded, tmp_path / "x")
    traj = load_trajectory(d)
    (d / "depth" / "000003.png").write_bytes(b"\x89PNG broken")
    with pytest.raises(TrajectoryError, match=r"000003\.png: field 'depth', frame 3: cannot decode"):
        read_depth(traj, [3])
