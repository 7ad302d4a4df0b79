"""`spatialact replay`: side-by-side video, contact sheet and pose errors; --help; one-line errors (exit 2)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spatialact import geometry
from spatialact.cli.main import main
from spatialact.envs.camera import look_at

from traj_helpers import droid_episode, smooth_poses, write_droid, write_tum


@pytest.fixture(scope="module")
def droid_ds(tmp_path_factory):
    d = tmp_path_factory.mktemp("droid")
    ep = droid_episode(n=40, seed=3)
    P = ep["poses"].copy()
    P[:, :3, :3] = geometry.rot_x(np.pi) @ P[:, :3, :3]
    P[:, :3, 3] -= [0.0, 0.0, 0.05]
    ep["cart"] = geometry.pose_to_droid(P)
    ep["ext"] = geometry.pose_to_droid(look_at([1.1, -0.6, 0.7], [0.5, 0.0, 0.15]))
    return write_droid(d / "ds", [ep, ep], version="v3.0")


def test_replay_writes_video_sheet_and_errors(droid_ds, tmp_path, capsys):
    import av
    from PIL import Image

    out = tmp_path / "out"
    assert main(["replay", str(droid_ds), "--episode", "1", "--out", str(out), "--height", "48"]) == 0
    summary = json.loads((out / "replay.json").read_text())
    k = len(summary["keyframes"])
    assert k >= 3 and summary["source"] == "droid" and summary["recorded_frames"]
    assert max(summary["position_errors_m"]) <= summary["bound_m"] + 2e-3
    with av.open(str(out / "replay.mp4")) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == k
    assert frames[0].shape == (48, 2 * 85, 3)  # recorded | simulated, each 85 × 48 (16:9)
    sheet = np.asarray(Image.open(out / "contact_sheet.png"))
    assert sheet.shape[1] > 2 * 85 and sheet.shape[0] > min(k, 8) * 48
    assert "keyframes replayed in a droid scene" in capsys.readouterr().out


def test_replay_scene_file_and_mesh(tmp_path):
    import trimesh

    P, t = smooth_poses(60, 30.0, 4, scale=0.5)
    write_tum(tmp_path / "cam.txt", t, P)
    box = trimesh.creation.box(extents=[12, 12, 8])
    box.invert()  # faces inward: a room around the path
    box.export(tmp_path / "room.ply")
    out = tmp_path / "o"
    assert main(["replay", str(tmp_path / "cam.txt"), "--scene", str(tmp_path / "room.ply"), "--out", str(out),
                 "--height", "32"]) == 0
    summary = json.loads((out / "replay.json").read_text())
    assert summary["scene"]["mesh"].endswith("room.ply") and not summary["recorded_frames"]
    # a replay scene JSON with a relative trajectory path
    scene = {"type": "replay", "source": "camera_path", "format": "tum", "trajectory": "cam.txt",
             "keyframes": [0, 30, 59], "room": {"center": [0, 0, 0], "size": [20, 20, 20], "up": "+z"}}
    (tmp_path / "scene.json").write_text(json.dumps(scene))
    assert main(["replay", str(tmp_path / "cam.txt"), "--scene", str(tmp_path / "scene.json"), "--out",
                 str(tmp_path / "o2"), "--height", "32"]) == 0
    assert json.loads((tmp_path / "o2" / "replay.json").read_text())["keyframes"] == [0, 30, 59]


def test_replay_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["replay", "--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "--scene FILE" in text and "recorded" in text


@pytest.mark.parametrize("args, needle", [
    (["{missing}"], "no such file"),
    (["{ds}", "--episode", "7"], "episode"),
    (["{ds}", "--scene", "{bad}"], "--scene:"),
    (["{ds}", "--height", "2"], "--height"),
    (["{ds}", "--max-keyframes", "1"], "--max-keyframes"),
])
def test_replay_errors_are_one_line(droid_ds, tmp_path, capsys, args, needle):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    fill = {"missing": str(tmp_path / "nope.txt"), "ds": str(droid_ds), "bad": str(bad)}
    argv = ["replay"] + [a.format(**fill) for a in args] + ["--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("spatialact replay: error:") and needle in err and "\n" not in err


def test_replay_with_the_gl_renderer(tmp_path):
    """--renderer gl replays in the project's renderer, and replay.json names the GL renderer that answered."""
    from spatialact.envs.gl import gl_available

    ok, why = gl_available()
    if not ok:
        pytest.skip(f"the gl renderer cannot start here: {why}")
    P, t = smooth_poses(60, 30.0, 4, scale=0.5)
    write_tum(tmp_path / "cam.txt", t, P)
    scene = {"type": "replay", "source": "camera_path", "format": "tum", "trajectory": "cam.txt",
             "keyframes": [0, 30, 59], "room": {"center": [0, 0, 0], "size": [20, 20, 20], "up": "+z"}}
    (tmp_path / "scene.json").write_text(json.dumps(scene))
    assert main(["replay", str(tmp_path / "cam.txt"), "--scene", str(tmp_path / "scene.json"), "--out",
                 str(tmp_path / "o"), "--height", "32", "--renderer", "gl"]) == 0
    summary = json.loads((tmp_path / "o" / "replay.json").read_text())
    assert summary["renderer"].startswith("spatialact-gl on "), summary["renderer"]
