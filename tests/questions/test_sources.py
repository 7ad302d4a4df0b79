"""Questions from recordings: a game trajectory recorded here in a real Freedoom level, the DROID and EgoDex
samples of examples/. Every answer is recomputed by hand from the raw files (poses.npz, depth PNGs, meta.json,
the DROID parquet, the EgoDex HDF5), not through the code that built it; images are the recorded frames."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pybullet")
pytest.importorskip("av")

from spatialact.cli.main import main  # noqa: E402
from spatialact.questions import build_questions, load_questions  # noqa: E402
from spatialact.trajectories import load_trajectory  # noqa: E402

ROOT = Path(__file__).parents[2]
DROID = ROOT / "examples" / "droid"
EGODEX = ROOT / "examples" / "egodex" / "basic_pick_place" / "0.hdf5"
GAME_TYPES = {"relative_pose", "fov", "depth", "relative_depth", "tracking"}


def _png(path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def _option_value(q):
    return q["option_values"][ord(q["answer"]) - ord("A")]


def _check_relative_pose(q, C, atol=1e-9):
    """The correct option (or the judgment's verdict) is inv(C1) @ C2 of the recorded C2W poses ``C(view)``."""
    T1, T2 = (C(q, k) for k in (0, 1))
    truth = np.linalg.inv(T1) @ T2
    for k, T in enumerate((T1, T2)):
        assert np.allclose(q["views"][k]["pose"], T, atol=atol)
    if q["format"] == "multiple_choice":
        assert np.allclose(_option_value(q), truth, atol=atol)
        others = [np.asarray(v) for i, v in enumerate(q["option_values"]) if chr(65 + i) != q["answer"]]
        assert all(not np.allclose(v, truth, atol=1e-3) for v in others)
    else:
        shown = np.asarray(q["meta"]["shown_pose"])
        assert (q["answer"] == "A") == bool(np.allclose(shown, truth, atol=atol))


# ----- a game recording --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def game(tmp_path_factory):
    pytest.importorskip("vizdoom")
    from spatialact.envs.doom.record import record_level

    d = tmp_path_factory.mktemp("game_q")
    rec = record_level(d / "map01", map="MAP01", seconds=6, seed=3, resolution=(160, 120))
    res = build_questions(d / "q.jsonl", n=2, seed=0, trajectory=load_trajectory(rec))
    return rec, res


def _game_raw(rec: Path):
    z = np.load(rec / "poses.npz")
    return json.loads((rec / "meta.json").read_text()), z["c2w"]


def _game_depth(rec: Path, meta: dict, frame: int) -> np.ndarray:
    levels = _png(rec / "depth" / f"{frame:06d}.png")[..., 0].astype(np.float64)
    return meta["depth"]["offset_m"] + levels * meta["depth"]["scale_m"]


def test_game_questions_every_type_a_recording_gives(game):
    rec, res = game
    qs = res.questions
    assert {q["type"] for q in qs} == GAME_TYPES and res.skipped == {}
    assert len(qs) == 2 * 7  # relative_pose ×2 formats, fov ×2, depth, relative_depth, tracking
    assert all(q["source"] == "game" and q["scene"]["type"] == "recording" and q["scene"]["map"] == "MAP01"
               for q in qs)
    assert load_questions(res.path) == qs  # a valid question file


def test_game_answers_from_the_recorded_poses_frames_and_intrinsics(game):
    rec, res = game
    meta, c2w = _game_raw(rec)
    traj = load_trajectory(rec)
    K = np.asarray(meta["intrinsics"])
    W, H = meta["image"]["width"], meta["image"]["height"]
    assert K[1, 1] == pytest.approx(1.2 * K[0, 0])  # the non-square pixels the questions must use
    for q in res.questions:
        frames = q["meta"]["frames"]
        for v in q["views"]:
            assert (v["width"], v["height"]) == (W, H)
            assert [v["intrinsics"][k] for k in ("fx", "fy", "cx", "cy")] == [K[0, 0], K[1, 1], K[0, 2], K[1, 2]]
        if q["type"] == "relative_pose":
            _check_relative_pose(q, lambda q, k: c2w[q["meta"]["frames"][k]])
            for im in q["images"]:  # the recorded frames themselves, unmarked: not re-rendered
                assert np.array_equal(_png(im["path"]), traj.frame(frames[im["view"]]))
        if q["type"] == "fov":
            axis = q["meta"]["axis"]
            want = (2 * math.degrees(math.atan(W / (2 * K[0, 0]))) if axis == "horizontal"
                    else 2 * math.degrees(math.atan(H / (2 * K[1, 1]))))
            got = q["answer"] if q["format"] == "numeric" else _option_value(q)
            assert got == pytest.approx(want, abs=1e-9)
            assert "fy = 1.20·fx" in q["question"] and axis in q["question"]
    fovs = {(q["meta"]["axis"], round(q["answer"] if q["format"] == "numeric" else _option_value(q), 6))
            for q in res.questions if q["type"] == "fov"}
    # horizontal 90° (fx = W/2); a vertical one is 2·atan(H / 2fy), not the square-pixel 2·atan(H / 2fx)
    square_pixel_vertical = 2 * math.degrees(math.atan(H / (2 * K[0, 0])))
    for axis, v in fovs:
        if axis == "horizontal":
            assert v == pytest.approx(90.0)
        else:
            assert abs(v - square_pixel_vertical) > 5.0


def test_game_depth_answers_exceed_the_quantisation_margin(game):
    rec, res = game
    meta, c2w = _game_raw(rec)
    q_step = meta["depth"]["quantisation_m"]
    K = np.asarray(meta["intrinsics"])
    far = meta["depth"]["offset_m"] + meta["depth"]["far_level"] * meta["depth"]["scale_m"]
    n_checked = 0
    for q in res.questions:
        if q["type"] not in ("depth", "relative_depth"):
            continue
        D = _game_depth(rec, meta, q["meta"]["frames"][0])
        assert np.allclose(np.load(q["views"][0]["depth"]), D, atol=1e-5)
        z = [D[p["pixel"][1], p["pixel"][0]] for p in q["points"]]
        assert all(v < far for v in z)
        for p, zp in zip(q["points"], z):  # the marked world point: the pixel unprojected with fx and fy apart
            x, y = p["pixel"]
            pc = np.array([(x - K[0, 2]) / K[0, 0] * zp, (y - K[1, 2]) / K[1, 1] * zp, zp])
            T = c2w[q["meta"]["frames"][0]]
            assert np.allclose(p["world"], T[:3, :3] @ pc + T[:3, 3], atol=1e-4)
        if q["type"] == "depth":
            assert q["answer"] == pytest.approx(z[0], abs=1e-5)
            assert 0.05 * q["answer"] > q_step  # the finest scoring tolerance exceeds the quantisation step
        else:
            zs = sorted(z)
            assert all(b - a > q_step for a, b in zip(zs, zs[1:]))  # the order holds for the true depths too
            k = int(np.argmin(z) if q["meta"]["asks"] == "closest" else np.argmax(z))
            assert q["answer"] == "ABCD"[k]
        n_checked += 1
    assert n_checked == 4


def test_game_tracking_projects_with_fx_and_fy(game):
    rec, res = game
    meta, c2w = _game_raw(rec)
    K = np.asarray(meta["intrinsics"])
    q_step = meta["depth"]["quantisation_m"]
    qs = [q for q in res.questions if q["type"] == "tracking"]
    assert len(qs) == 2
    for q in qs:
        fa, fb = q["meta"]["frames"]
        x, y = q["points"][0]["pixel"]
        z = _game_depth(rec, meta, fa)[y, x]

        def to_b(zz):
            pc = np.array([(x - K[0, 2]) / K[0, 0] * zz, (y - K[1, 2]) / K[1, 1] * zz, zz])
            Pw = c2w[fa][:3, :3] @ pc + c2w[fa][:3, 3]
            qc = np.linalg.inv(c2w[fb]) @ np.append(Pw, 1.0)
            return np.array([K[0, 0] * qc[0] / qc[2] + K[0, 2], K[1, 1] * qc[1] / qc[2] + K[1, 2]])

        cands = np.asarray(q["option_values"], dtype=np.float64)
        k = ord(q["answer"]) - 65
        assert np.allclose(cands[k], to_b(z), atol=1e-6)
        for zz in (z - q_step / 2, z + q_step / 2):  # anywhere in the depth's quantisation step: still the answer
            d = np.linalg.norm(cands - to_b(zz), axis=1)
            assert int(np.argmin(d)) == k


def test_game_build_is_deterministic_and_refuses_what_a_recording_lacks(game, tmp_path, capsys):
    rec, _ = game
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name / "q.jsonl"
        assert main(["questions", "build", "--out", str(out), "--trajectory", str(rec), "--n", "1", "--seed", "5",
                     "--types", "relative_pose,depth,tracking", "--no-progress"]) == 0
        outs.append(out)
    capsys.readouterr()
    assert outs[0].read_bytes() == outs[1].read_bytes()
    for p in sorted((outs[0].parent / "q_images").iterdir()):
        assert p.read_bytes() == (outs[1].parent / "q_images" / p.name).read_bytes()
    for typ, why in (("primitive", "view after a motion"), ("distance", "object labels"),
                     ("task_flow", "whole units")):
        assert main(["questions", "build", "--out", str(tmp_path / "x.jsonl"), "--trajectory", str(rec),
                     "--types", typ]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"no {typ} questions from a game recording" in err and why in err, err
    assert main(["questions", "build", "--out", str(tmp_path / "x.jsonl"), "--trajectory", str(rec),
                 "--size", "64"]) == 2
    assert "not re-rendered" in capsys.readouterr().err
    assert not (tmp_path / "x.jsonl").exists()


# ----- DROID ------------------------------------------------------------------------------------------------------
def _droid_extrinsics(camera: str) -> np.ndarray:
    """C2W poses of a DROID camera from the parquet by hand: xyz + extrinsic 'xyz' Euler angles."""
    import pyarrow.parquet as pq
    from scipy.spatial.transform import Rotation

    t = pq.read_table(DROID / "data" / "chunk-000" / "file-000.parquet")
    e = np.asarray(t.column(f"camera_extrinsics.{camera}").to_pylist(), dtype=np.float64)
    T = np.tile(np.eye(4), (len(e), 1, 1))
    T[:, :3, :3] = Rotation.from_euler("xyz", e[:, 3:]).as_matrix()
    T[:, :3, 3] = e[:, :3]
    return T


def test_droid_relative_poses_are_the_recorded_camera_extrinsics(tmp_path, capsys):
    out = tmp_path / "droid.jsonl"
    assert main(["questions", "build", "--out", str(out), "--trajectory", str(DROID), "--episode", "0", "--n", "3",
                 "--no-progress"]) == 0
    assert "relative_pose" in capsys.readouterr().out
    qs = load_questions(out)
    assert len(qs) == 6 and {q["type"] for q in qs} == {"relative_pose"}
    assert all(q["source"] == "droid" and q["scene"]["episode"] == 0 for q in qs)
    assert set(qs[0]["scene"]["cameras"]) == {"wrist_left", "exterior_1_left", "exterior_2_left"}
    ext = {c: _droid_extrinsics(c) for c in ("wrist_left", "exterior_1_left", "exterior_2_left")}
    frames = {}
    for q in qs:
        _check_relative_pose(q, lambda q, k: ext[q["meta"]["cameras"][k]][q["meta"]["frames"][k]])
        assert "assumed" in q["meta"]["intrinsics"]
        for im in q["images"]:
            cam, f = q["meta"]["cameras"][im["view"]], q["meta"]["frames"][im["view"]]
            if cam not in frames:
                frames[cam] = load_trajectory(DROID, episode=0, camera=cam)
            assert np.array_equal(_png(im["path"]), frames[cam].frame(f))


@pytest.mark.parametrize("argv,msg", [
    (["--types", "fov"], "fov needs the recorded intrinsics; DROID stores none"),
    (["--types", "depth"], "depth needs recorded depth"),
    (["--types", "tracking"], "no tracking questions from a droid recording"),
    (["--camera", "exterior_1_left"], "no two recorded frames moved"),
    (["--renderer", "egl"], "--renderer: "),
    (["--render-quality", "high"], "--render-quality: "),
    (["--scene", "room.glb"], "--scene: "),
])
def test_droid_refusals_are_one_line(argv, msg, tmp_path, capsys):
    code = main(["questions", "build", "--out", str(tmp_path / "q.jsonl"), "--trajectory", str(DROID),
                 "--episode", "0", "--no-progress", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and msg in err, err
    assert not (tmp_path / "q.jsonl").exists()


def test_episode_and_camera_go_with_droid(tmp_path, capsys):
    walk = ROOT / "examples" / "camera_walk.txt"
    for extra, msg in ((["--episode", "0"], "--episode goes with a LeRobot (DROID) dataset"),
                       (["--camera", "wrist_left"], "--camera goes with a DROID episode")):
        assert main(["questions", "build", "--out", str(tmp_path / "q.jsonl"), "--trajectory", str(walk),
                     *extra]) == 2
        assert msg in capsys.readouterr().err
    assert main(["questions", "build", "--out", str(tmp_path / "q.jsonl"), "--episode", "0"]) == 2
    assert "--episode goes with --trajectory" in capsys.readouterr().err


# ----- EgoDex -----------------------------------------------------------------------------------------------------
def test_egodex_questions_from_the_head_camera(tmp_path):
    import h5py

    res = build_questions(tmp_path / "ego.jsonl", n=1, seed=2, trajectory=load_trajectory(EGODEX))
    qs = res.questions
    assert {q["type"] for q in qs} == {"relative_pose", "fov"} and len(qs) == 4
    with h5py.File(EGODEX, "r") as f:
        raw = np.asarray(f["transforms/camera"][()], dtype=np.float64)  # ARKit: +Y up, camera looks along −Z
        K = np.asarray(f["camera/intrinsic"][()], dtype=np.float64)
    flip = np.diag([1.0, -1.0, -1.0, 1.0])  # OpenGL → OpenCV camera axes
    zup = np.eye(4)
    zup[:3, :3] = [[1, 0, 0], [0, 0, -1], [0, 1, 0]]  # R_x(+90°): the ARKit world turned to +Z up
    traj = load_trajectory(EGODEX)
    for q in qs:
        if q["type"] == "relative_pose":
            _check_relative_pose(q, lambda q, k: zup @ raw[q["meta"]["frames"][k]] @ flip, atol=1e-6)
            rel = np.asarray(_option_value(q) if q["format"] == "multiple_choice" else q["meta"]["shown_pose"])
            if q["format"] == "multiple_choice":  # the world's turn cancels: flip · inv(A) · B · flip
                a, b = q["meta"]["frames"]
                assert np.allclose(rel, flip @ np.linalg.inv(raw[a]) @ raw[b] @ flip, atol=1e-6)
        else:
            got = q["answer"] if q["format"] == "numeric" else _option_value(q)
            assert got == pytest.approx(2 * math.degrees(math.atan(1920 / (2 * K[0, 0]))), abs=1e-9)
            assert "square pixels" in q["question"] and "1920 x 1080" in q["question"]
        for im in q["images"]:
            assert np.array_equal(_png(im["path"]), traj.frame(q["meta"]["frames"][im["view"]]))
