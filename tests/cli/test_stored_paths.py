"""Paths inside task and question files: relative to the file's folder when under it, else absolute — also when
the command was given relative paths (relative to the working directory), so a file written from one directory
loads from any other."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from spatialact.cli.main import main
from spatialact.jsonline import stored_path

SIM = importlib.util.find_spec("pybullet") is not None


def test_stored_path_by_hand(tmp_path, monkeypatch):
    base = tmp_path / "files"
    base.mkdir()
    assert stored_path(str(base / "imgs" / "a.png"), base) == os.path.join("imgs", "a.png")
    assert stored_path(str(tmp_path / "other" / "b.png"), base) == str(tmp_path / "other" / "b.png")
    monkeypatch.chdir(tmp_path)
    assert stored_path("files/imgs/a.png", "files") == os.path.join("imgs", "a.png")  # both relative to the cwd
    assert stored_path("other/b.png", "files") == str(tmp_path / "other" / "b.png")
    assert stored_path(None, base) is None and stored_path("", base) == ""


@pytest.mark.skipif(not SIM, reason="questions are rendered with the sim extra (PyBullet)")
def test_a_question_file_built_with_a_relative_out_loads_from_elsewhere(tmp_path, monkeypatch, capsys):
    from spatialact.questions import load_questions

    monkeypatch.chdir(tmp_path)
    assert main(["questions", "build", "--out", "sub/q.jsonl", "--n", "1", "--types", "depth", "--size", "32",
                 "--no-progress", "--json"]) == 0
    capsys.readouterr()
    raw = (tmp_path / "sub" / "q.jsonl").read_text()
    assert '"path": "q_images/' in raw and '"sub/' not in raw
    monkeypatch.chdir(tmp_path / "sub" / "q_images")
    for q in load_questions(tmp_path / "sub" / "q.jsonl"):
        assert all(Path(im["path"]).is_file() for im in q["images"])
        assert all(Path(v["depth"]).is_file() for v in q["views"] if v.get("depth"))
    assert main(["questions", "score", str(tmp_path / "sub" / "q.jsonl"), "--agent", "oracle",
                 "--out", str(tmp_path / "run"), "--no-progress", "--json"]) == 0


@pytest.mark.skipif(not SIM, reason="task images are rendered with the sim extra (PyBullet)")
def test_a_task_file_built_with_relative_paths_loads_from_elsewhere(tmp_path, monkeypatch, capsys):
    from spatialact.tasks import load_tasks

    from traj_helpers import smooth_poses, write_tum

    P, t = smooth_poses(120, 30.0, 2, scale=0.8)
    write_tum(tmp_path / "cam.txt", t, P)
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "from-trajectory", "cam.txt", "--out", "sub/t.jsonl", "--n", "1", "--json"]) == 0
    capsys.readouterr()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    (task,) = load_tasks(tmp_path / "sub" / "t.jsonl")
    assert Path(task.scene["trajectory"]) == tmp_path / "cam.txt"  # outside the file's folder: stored absolute
    assert '"trajectory": "' + str(tmp_path / "cam.txt") + '"' in (tmp_path / "sub" / "t.jsonl").read_text()
    # the replay scene it names runs from here: the oracle succeeds closed-loop
    assert main(["eval", "--tasks", str(tmp_path / "sub" / "t.jsonl"), "--agent", "oracle", "--mode", "closed-loop",
                 "--out", str(tmp_path / "run"), "--no-progress", "--json"]) == 0
