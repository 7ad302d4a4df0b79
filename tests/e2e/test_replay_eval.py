"""Replay scenes end to end: trajectories in their real layouts → `spatialact tasks from-trajectory` (which writes a
replay scene into every task) → `spatialact eval --mode closed-loop`: the oracle succeeds everywhere in simulation,
within the quantisation bound of action extraction (docs/trajectories.md), exit 0; random and stay score below it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spatialact.cli.main import main
from spatialact.envs.camera import look_at
from spatialact.evaluation.results import read_records
from spatialact.tasks import load_tasks, quantisation_bound

from traj_helpers import droid_down_episode as _droid_down_episode
from traj_helpers import smooth_poses, write_droid, write_egodex, write_kitti, write_re10k, write_tum

SOURCES = ["droid_v2.1", "droid_v3.0", "ep.hdf5", "cam.txt", "kitti.txt", "re10k.txt"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("replay_eval")
    ep = _droid_down_episode()
    write_droid(d / "droid_v2.1", [ep], version="v2.1")
    write_droid(d / "droid_v3.0", [ep], version="v3.0")
    n = 75
    W, _ = smooth_poses(n, 30.0, 1, scale=0.06, rot_scale=0.3)
    W[:, :3, :3] = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]) @ W[:, :3, :3]  # palm down
    W[:, :3, 3] += [0.4, 0.0, 1.0]
    cams = np.stack([look_at([0.0, -0.1, 1.5], W[i, :3, 3]) for i in range(n)])
    write_egodex(d / "ep.hdf5", cams, W, np.where((np.arange(n) > 25) & (np.arange(n) < 50), 0.01, 0.08))
    P, t = smooth_poses(120, 30.0, 2, scale=0.8)
    write_tum(d / "cam.txt", t, P)
    write_kitti(d / "kitti.txt", P[:60])
    P, t = smooth_poses(120, 30.0, 3, scale=0.8)
    write_re10k(d / "re10k.txt", (t * 1e6).astype(np.int64), P)  # non-metric scale: still replayed exactly
    return d


def _build(d, src, capsys, *extra):
    out = d / f"tasks_{src.replace('.', '_')}.jsonl"
    code = main(["tasks", "from-trajectory", str(d / src), "--out", str(out), "--n", "2", "--no-images", *extra])
    capsys.readouterr()
    assert code == 0
    return out


def _eval(task_file, agent, out, capsys):
    code = main(["eval", "--tasks", str(task_file), "--mode", "closed-loop", "--agent", agent, "--out", str(out),
                 "--no-progress", "--json"])
    capsys.readouterr()
    return code, read_records(out)


@pytest.mark.parametrize("src", SOURCES)
def test_oracle_succeeds_closed_loop_on_replayed_trajectory_tasks(files, src, tmp_path, capsys):
    tf = _build(files, src, capsys)
    tasks = load_tasks(tf)
    assert tasks and all(t.scene and t.scene["type"] == "replay" for t in tasks)
    line = json.loads(tf.read_text().splitlines()[0])
    assert not line["scene"]["trajectory"].startswith("/")  # relative to the task file: the folder can move
    assert "poses" not in json.dumps(line["scene"])  # references, never per-frame arrays
    code, recs = _eval(tf, "oracle", tmp_path / "oracle", capsys)
    assert code == 0 and len(recs) == len(tasks)
    bt, br = quantisation_bound(tasks[0].sizes)
    for r in recs:
        assert r["simulated"] is True and r["success"] is True and r["error"] is None
        assert r["final_position_error"] <= bt + 2e-3 and r["final_rotation_error"] <= br + np.radians(1)
    oracle = np.mean([r["score"] for r in recs])
    for agent in ("random", "stay"):
        code, other = _eval(tf, agent, tmp_path / agent, capsys)
        assert code == 0 and all(r["simulated"] for r in other)
        assert np.mean([r["score"] for r in other]) < oracle
        assert np.mean([r["success"] for r in other]) < 1.0


def test_droid_pairs_out_of_reach_are_skipped_and_counted(tmp_path, capsys):
    ep = _droid_down_episode()
    ep["cart"] = ep["cart"].copy()
    ep["cart"][:, 0] += 1.2  # the whole episode 1.2 m further out than the Panda reaches
    write_droid(tmp_path / "far", [ep], version="v2.1", video=False)
    code = main(["tasks", "from-trajectory", str(tmp_path / "far"), "--out", str(tmp_path / "t.jsonl"),
                 "--n", "3", "--no-images"])
    err = capsys.readouterr().err.strip()
    assert "no task: each of the 3 built was skipped (3 start or goal out of the simulated Panda's reach)" in err
    assert code == 2 and "\n" not in err  # nothing left to write: refused in one line, never an empty task file


def test_extrinsics_and_scene_options(files, tmp_path, capsys):
    ext = tmp_path / "ext.json"
    ext.write_text(json.dumps({"extrinsics": [1.0, -0.5, 0.7, -2.2, 0.0, 0.8]}))
    tf = _build(files, "droid_v2.1", capsys, "--extrinsics", str(ext))
    assert all(t.scene["camera"]["extrinsics"] == [1.0, -0.5, 0.7, -2.2, 0.0, 0.8] for t in load_tasks(tf))
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2, 3]")
    code = main(["tasks", "from-trajectory", str(files / "droid_v2.1"), "--out", str(tmp_path / "x.jsonl"),
                 "--extrinsics", str(bad)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--extrinsics" in err[0] and "'extrinsics'" in err[0]
    code = main(["tasks", "from-trajectory", str(files / "cam.txt"), "--out", str(tmp_path / "y.jsonl"),
                 "--scene", str(tmp_path / "missing.glb")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err == [f"spatialact tasks: error: --scene {tmp_path / 'missing.glb'}: no such file"]
    tf = _build(files, "cam.txt", capsys, "--no-scene")
    assert all(t.scene is None for t in load_tasks(tf))


def test_eval_scene_fills_navigation_tasks_without_one(files, tmp_path, capsys):
    import trimesh

    tf = _build(files, "cam.txt", capsys, "--no-scene")
    room = tmp_path / "room.obj"
    trimesh.creation.box(extents=[8.0, 8.0, 8.0]).export(room)  # encloses the camera path (within ±2 m)
    code = main(["eval", "--tasks", str(tf), "--mode", "closed-loop", "--out", str(tmp_path / "a"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "has no scene (scene: null)" in err[0]
    assert not (tmp_path / "a").exists()
    code = main(["eval", "--tasks", str(tf), "--mode", "closed-loop", "--scene", str(room), "--out",
                 str(tmp_path / "b"), "--no-progress", "--json"])
    capsys.readouterr()
    recs = read_records(tmp_path / "b")
    assert code == 0 and len(recs) == 2 and all(r["simulated"] and r["success"] for r in recs)
    droid = _build(files, "droid_v2.1", capsys, "--no-scene")
    code = main(["eval", "--tasks", str(droid), "--scene", str(room), "--out", str(tmp_path / "c"), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "a mesh scene can only hold navigation tasks" in err[0]


def test_one_shot_shows_the_recorded_frames_and_executes_in_the_replay_scene(files, tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(files / "droid_v3.0"), "--out", str(out), "--n", "2"]) == 0
    capsys.readouterr()
    tasks = {t.id: t for t in load_tasks(out)}
    assert all(t.start_image and t.scene["type"] == "replay" for t in tasks.values())
    code, recs = _eval_one_shot(out, tmp_path / "run", capsys)
    assert code == 0
    for r in recs:
        t = tasks[r["task_id"]]
        shown = np.asarray(Image.open(tmp_path / "run" / r["frames"]["start"]))
        np.testing.assert_array_equal(shown, np.asarray(Image.open(t.start_image)))  # the recorded frame
        assert r["simulated"] is True and r["success"] is True  # executed in the replay scene


def _eval_one_shot(task_file, out, capsys):
    code = main(["eval", "--tasks", str(task_file), "--agent", "oracle", "--out", str(out), "--no-progress"])
    capsys.readouterr()
    return code, read_records(out)


def test_droid_tasks_the_panda_cannot_follow_are_not_written(tmp_path, capsys):
    """A DROID episode whose gripper points up: every start and goal is reachable on its own, but the arm following
    IK from its current joints cannot track the ground truth between them (the one-shot oracle ended 5–20 cm off).
    Such tasks are skipped at build time — here all of them, so the command is refused in one line and leaves no
    file or folder — while the gripper-down episode keeps its tasks (the oracle succeeds on them, above)."""
    from traj_helpers import droid_episode

    write_droid(tmp_path / "up", [droid_episode(60, seed=0)], version="v2.1")
    out = tmp_path / "tasks" / "t.jsonl"
    assert main(["tasks", "from-trajectory", str(tmp_path / "up"), "--out", str(out), "--n", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no task: each of the 3 built was skipped" in err
    assert "the simulated Panda does not follow the ground truth to the goal" in err
    assert not (tmp_path / "tasks").exists()
