"""Task building from trajectories (docs/trajectories.md) and the `extract` / `tasks` CLI commands."""

from __future__ import annotations

import json

import numpy as np
import pytest

from spatialact import geometry
from spatialact.action_space import StepSizes, parse_response
from spatialact.cli.main import main
from spatialact.tasks import load_tasks, pairs_from_trajectory, quantisation_bound, save_tasks
from spatialact.trajectories import Trajectory, load_trajectory
from traj_helpers import droid_episode, smooth_poses, write_droid, write_egodex


def _lands(task):
    """The ground truth replayed from the start pose lands on the goal within the quantisation bound."""
    end = task.gt_poses()[-1]
    bt, br = quantisation_bound(task.sizes)
    pe = np.linalg.norm(end[:3, 3] - task.goal_pose[:3, 3])
    re = float(geometry.rotation_error(end, task.goal_pose))
    assert pe <= bt + 1e-9 and re <= br + 1e-9, (pe, re)
    assert pe <= task.success["position"] and re <= task.success["rotation"]
    return pe, re


@pytest.fixture(scope="module")
def droid_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("droid")
    return write_droid(root / "ds", [droid_episode(90, seed=5)], version="v3.0")


@pytest.fixture(scope="module")
def egodex_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("egodex")
    cam, _ = smooth_poses(90, 30.0, 7, scale=0.05, rot_scale=0.2)
    cam[:, :3, 3] += [0, 0, 1.5]
    wrist, _ = smooth_poses(90, 30.0, 8, scale=0.15, rot_scale=0.5)
    wrist[:, :3, 3] += [0.4, 0.0, 1.0]
    dist = np.r_[np.linspace(0.08, 0.01, 30), np.full(30, 0.012), np.linspace(0.012, 0.07, 30)]
    return write_egodex(d / "3.hdf5", cam, wrist, dist, description="put the lid on the jar")


def test_droid_tasks(tmp_path, droid_root):
    tr = load_trajectory(droid_root)
    tasks = pairs_from_trajectory(tr, n=6, seed=1, image_dir=tmp_path / "img")
    assert len(tasks) == 6 and all(t.kind == "manip" and t.source == "droid" for t in tasks)
    for t in tasks:
        _lands(t)
        i, j = t.meta["start_frame"], t.meta["goal_frame"]
        assert np.array_equal(t.start_pose, tr.poses[i]) and np.array_equal(t.goal_pose, tr.poses[j])
        assert 0.05 <= np.linalg.norm(tr.positions[j] - tr.positions[i]) <= 0.40
        assert t.instruction == "put the cup in the sink" and t.scene is None
        assert all(s.gripper in (0, 1) for s in t.gt.steps)  # manipulation ground truth carries the gripper
        # the start image is frame i of the exterior video (the colour encodes the frame index)
        from PIL import Image

        img = np.asarray(Image.open(t.start_image))
        assert abs(int(img[..., 0].mean()) - (8 * i) % 256) <= 3
        # the example: its sequence leads from the example pose to the task's start
        ex = t.example
        from spatialact.action_space import ActionSequence

        seq = ActionSequence.from_dict(ex["sequence"])
        end = seq.to_poses(np.asarray(ex["start_pose"]))[-1]
        assert np.linalg.norm(end[:3, 3] - t.start_pose[:3, 3]) <= quantisation_bound(t.sizes)[0] + 1e-9
    path = save_tasks(tasks, tmp_path / "tasks.jsonl")
    back = load_tasks(path)
    assert [t.id for t in back] == [t.id for t in tasks]
    assert all(np.allclose(a.gt_poses(), b.gt_poses()) for a, b in zip(tasks, back))
    rec = json.loads(path.read_text().splitlines()[0])
    assert not rec["start_image"].startswith("/")  # written relative to the task file


def test_egodex_hand_tasks(tmp_path, egodex_file):
    tr = load_trajectory(egodex_file)
    tasks = pairs_from_trajectory(tr, n=5, seed=0, image_dir=tmp_path / "img")
    assert tasks and all(t.kind == "hand" and t.source == "egodex" for t in tasks)
    for t in tasks:
        _lands(t)
        assert t.instruction == "put the lid on the jar" and t.start_image is not None
    grips = {s.gripper for t in tasks for s in t.gt.steps}
    assert grips <= {0, 1}
    save_tasks(tasks, tmp_path / "hand.jsonl")
    assert len(load_tasks(tmp_path / "hand.jsonl")) == len(tasks)


def test_nav_tasks_from_smooth_trajectory(tmp_path):
    P, t = smooth_poses(300, 30.0, seed=9, scale=1.0)
    np.savez(tmp_path / "cam.npz", c2w=P, timestamps=t)
    tr = load_trajectory(tmp_path / "cam.npz")
    a = pairs_from_trajectory(tr, n=8, seed=3)
    b = pairs_from_trajectory(tr, n=8, seed=3)
    c = pairs_from_trajectory(tr, n=8, seed=4)
    assert [x.to_dict() for x in a] == [x.to_dict() for x in b]  # determinism
    assert [x.id for x in a] != [x.id for x in c]
    u = StepSizes.navigation().translation
    for task in a:
        _lands(task)
        assert task.kind == "nav" and task.start_image is None and task.goal_image is None
        g = task.gt_poses()[-1][:3, 3] - task.start_pose[:3, 3]
        assert np.linalg.norm(g) >= 2 * u  # navigation: ‖g‖ ≥ 2·u_t
        assert all(s.gripper is None for s in task.gt.steps)
    # a ground truth is a valid answer: its JSON parses back to the same sequence
    text = a[0].gt.to_text("stepped")
    assert parse_response(text, strict=True, sizes=a[0].sizes).sequence.to_dict()["steps"] == \
        a[0].gt.to_dict()["steps"]
    flat = pairs_from_trajectory(tr, n=4, seed=0, answer_format="flat", max_motion=0.5)
    assert all(len(x.gt) == 1 for x in flat)


def test_bound_must_fit_success_thresholds():
    P, t = smooth_poses(60, 30.0, seed=1)
    tr = Trajectory(P, t, 30.0)
    with pytest.raises(ValueError, match="too coarse for the success thresholds"):
        pairs_from_trajectory(tr, n=2, kind="manip", sizes=StepSizes(0.1, 0.05))
    with pytest.raises(ValueError, match="too coarse"):
        pairs_from_trajectory(tr, n=2, kind="nav", sizes=StepSizes(0.0626, 0.4509))  # the paper's appendix value
    with pytest.raises(ValueError, match="min_motion"):
        pairs_from_trajectory(tr, n=2, min_motion=1.0, max_motion=0.5)
    assert pairs_from_trajectory(tr, n=3, min_motion=50.0, max_motion=60.0) == []


# ----- CLI ------------------------------------------------------------------------------------------------------------
def test_cli_extract(tmp_path, capsys, droid_root):
    assert main(["extract", str(droid_root), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "droid" and out["mode"] == "metric" and out["max_position_error"] <= 0.0174
    seq = parse_response(json.dumps(out["answer"]), strict=True, sizes=StepSizes.manipulation()).sequence
    assert len(seq) == out["n_steps"]
    assert main(["extract", str(droid_root), "--mode", "frames"]) == 0
    text = capsys.readouterr().out
    assert "frames mode" in text and text.strip().splitlines()[-1].startswith("{\"step_1\"")
    assert main(["extract", str(tmp_path / "missing.npz")]) == 2
    err = capsys.readouterr().err
    assert "spatialact extract: error:" in err and len(err.strip().splitlines()) == 1


def test_cli_extract_egodex_entity(capsys, egodex_file):
    assert main(["extract", str(egodex_file), "--entity", "camera", "--answer-format", "vector", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "egodex" and all(len(v) == 6 for v in out["answer"].values())


def test_cli_tasks_from_trajectory(tmp_path, capsys):
    # the gripper pointing down, as a Panda over a table can follow (tasks of a gripper-up episode are skipped:
    # e2e/test_replay_eval.py)
    from traj_helpers import droid_down_episode as _droid_down_episode

    droid_root = write_droid(tmp_path / "ds", [_droid_down_episode(90, seed=5)], version="v3.0")
    out = tmp_path / "t" / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(droid_root), "--out", str(out), "--n", "3", "--seed", "2",
                 "--json"]) == 0
    cap = capsys.readouterr()
    res = json.loads(cap.out)
    tasks = load_tasks(out)
    # pairs whose start or goal the simulated Panda cannot reach are skipped and counted, never clamped
    skipped = sum(int(w.split()[3]) for w in cap.err.splitlines() if w.startswith("spatialact tasks: skipped"))
    assert res["n"] == len(tasks) and len(tasks) + skipped == 3 and len(tasks) >= 1
    assert [t.id for t in tasks] == res["ids"] and all(t.scene["type"] == "replay" for t in tasks)
    assert all(t.start_image and (tmp_path / "t" / "tasks_images").is_dir() for t in tasks)
    for t in tasks:
        _lands(t)


@pytest.mark.slow
def test_cli_tasks_procedural(tmp_path, capsys):
    out = tmp_path / "p.jsonl"
    assert main(["tasks", "procedural", "--kind", "nav", "--n", "2", "--seed", "0", "--out", str(out)]) == 0
    tasks = load_tasks(out)
    assert len(tasks) == 2 and all(t.scene is not None for t in tasks)
