"""The output rule (spatialact.outputs) in every command that writes: a FIFO, a read-only file, a folder where a file
is wanted and a file where a folder is wanted are refused in one line naming the option (exit 2) and left as they
were; a symbolic link is followed and stays a link; a character device is written through and stays a device (made
with mknod as root, skipped otherwise); ``-`` is standard output where one file is written. Checked on the nodes
afterwards. (``score --out`` has its own tests with the offline scorer.)"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from _fabricate import make_task
from spatialact.cli.main import main
from spatialact.tasks import save_tasks

SIM = importlib.util.find_spec("pybullet") is not None
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
needs_sim = pytest.mark.skipif(not SIM, reason="needs the sim extra (PyBullet)")


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _read_only(path: Path, text: str = "keep\n") -> Path:
    path.write_text(text)
    path.chmod(0o444)
    return path


def _char_device(path: Path) -> Path:
    os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device
    return path


def _refused(argv, capsys, *, option="--out") -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err and option in err, err
    return err


def _is_fifo(p: Path) -> bool:
    return stat.S_ISFIFO(os.lstat(p).st_mode)


@pytest.fixture
def traj(tmp_path) -> Path:
    """A generic camera path (JSON, 40 poses 5 cm apart), no frames."""
    poses = []
    for k in range(40):
        T = np.eye(4)
        T[0, 3] = 0.05 * k
        poses.append(T.tolist())
    p = tmp_path / "traj.json"
    p.write_text(json.dumps({"c2w": poses, "fps": 10}))
    return p


@pytest.fixture
def image_tasks(tmp_path) -> Path:
    """A task file of two tasks with image files and no scene (eval scores them without a simulator)."""
    rng = np.random.default_rng(0)
    for name in ("s", "g"):
        Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp_path / f"{name}.png")
    ts = [make_task(f"t{k}", start_image=str(tmp_path / "s.png"), goal_image=str(tmp_path / "g.png"))
          for k in range(2)]
    return save_tasks(ts, tmp_path / "tasks.jsonl")


# ----- tasks ------------------------------------------------------------------------------------------------------
def _from_traj(traj, out):
    return ["tasks", "from-trajectory", str(traj), "--out", str(out), "--no-scene", "--n", "2", "--json"]


def test_tasks_refuses_fifo_read_only_and_folder(tmp_path, traj, capsys):
    fifo = _fifo(tmp_path / "fifo.jsonl")
    assert "is a named pipe (FIFO)" in _refused(_from_traj(traj, fifo), capsys)
    assert _is_fifo(fifo)
    ro = _read_only(tmp_path / "ro.jsonl")
    assert "is read-only" in _refused(_from_traj(traj, ro), capsys)
    assert ro.read_text() == "keep\n" and stat.S_IMODE(os.stat(ro).st_mode) == 0o444
    (tmp_path / "d").mkdir()
    assert "is a folder; name a file" in _refused(_from_traj(traj, tmp_path / "d"), capsys)
    # the PNG folder beside the task file, by the same rule
    _fifo(tmp_path / "x_images")
    err = _refused(["tasks", "from-trajectory", str(traj), "--out", str(tmp_path / "x.jsonl"), "--no-scene"], capsys)
    assert "image folder" in err and "named pipe" in err and _is_fifo(tmp_path / "x_images")
    assert not (tmp_path / "x.jsonl").exists()


def test_tasks_follows_a_link_and_refuses_stdout_where_images_go(tmp_path, traj, capsys):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "t.jsonl").write_text("old\n")
    link = tmp_path / "t.jsonl"
    link.symlink_to(tmp_path / "real" / "t.jsonl")
    assert main(_from_traj(traj, link)) == 0
    assert link.is_symlink() and len((tmp_path / "real" / "t.jsonl").read_text().splitlines()) == 2
    assert "standard output cannot be used here" in _refused(_from_traj(traj, "-"), capsys)


@needs_sim
def test_tasks_procedural_to_stdout_and_through_a_device(tmp_path, capfd):
    assert main(["tasks", "procedural", "--n", "1", "--out", "-", "--json"]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["id"] == json.loads(err)["ids"][0]  # the task on stdout, the summary on stderr
    if ROOT:
        dev = _char_device(tmp_path / "null")
        assert main(["tasks", "procedural", "--n", "1", "--out", str(dev), "--json"]) == 0
        assert stat.S_ISCHR(os.lstat(dev).st_mode) and os.lstat(dev).st_rdev == os.makedev(1, 3)


# ----- questions --------------------------------------------------------------------------------------------------
@needs_sim
def test_questions_build_refuses_before_any_work(tmp_path, capsys):
    argv = ["questions", "build", "--n", "1", "--types", "depth", "--out"]
    fifo = _fifo(tmp_path / "q.jsonl")
    assert "named pipe" in _refused([*argv, str(fifo)], capsys) and _is_fifo(fifo)
    ro = _read_only(tmp_path / "ro.jsonl")
    assert "read-only" in _refused([*argv, str(ro)], capsys) and ro.read_text() == "keep\n"
    (tmp_path / "q2_images").write_text("a file\n")
    assert "image folder" in _refused([*argv, str(tmp_path / "q2.jsonl")], capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.jsonl", "q2_images", "ro.jsonl"]


@pytest.fixture(scope="module")
def qfile(tmp_path_factory):
    if not SIM:
        pytest.skip("the question file is generated with the sim extra (PyBullet)")
    from spatialact.questions import build_questions

    d = tmp_path_factory.mktemp("qs")
    res = build_questions(d / "q.jsonl", n=1, seed=0, size=32, types=["depth"])
    answers = d / "answers.jsonl"
    answers.write_text("".join(json.dumps({"question_id": q["id"], "rotation": 0, "response": "A"}) + "\n"
                               for q in res.questions))
    return res.path, answers


def test_questions_score_answers_by_the_rule(tmp_path, qfile, capfd):
    q, answers = qfile
    argv = ["questions", "score", str(q), "--answers", str(answers), "--json", "--out"]
    fifo = _fifo(tmp_path / "s.jsonl")
    assert main([*argv, str(fifo)]) == 2 and "named pipe" in capfd.readouterr().err and _is_fifo(fifo)
    ro = _read_only(tmp_path / "ro.jsonl")
    assert main([*argv, str(ro)]) == 2 and "read-only" in capfd.readouterr().err and ro.read_text() == "keep\n"
    (tmp_path / "real.jsonl").write_text("old\n")
    (tmp_path / "link.jsonl").symlink_to("real.jsonl")
    assert main([*argv, str(tmp_path / "link.jsonl")]) == 0
    capfd.readouterr()
    assert (tmp_path / "link.jsonl").is_symlink()
    lines = (tmp_path / "real.jsonl").read_text().splitlines()
    assert lines and all(json.loads(x)["question_id"] for x in lines)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left
    assert main([*argv, "-"]) == 0
    out, err = capfd.readouterr()
    assert [json.loads(x) for x in out.splitlines()] == [json.loads(x) for x in lines]
    assert json.loads(err)["out"] == "-"
    if ROOT:
        dev = _char_device(tmp_path / "null")
        assert main([*argv, str(dev)]) == 0 and stat.S_ISCHR(os.lstat(dev).st_mode)
        capfd.readouterr()


def test_questions_score_checks_its_default_scores_file(tmp_path, qfile, capsys):
    q, answers = qfile
    local = tmp_path / "answers.jsonl"
    local.write_bytes(answers.read_bytes())
    fifo = _fifo(tmp_path / "answers.jsonl.scores.jsonl")
    err = _refused(["questions", "score", str(q), "--answers", str(local)], capsys, option="scores file")
    assert "named pipe" in err and _is_fifo(fifo)


# ----- run folders: eval, report, demo ------------------------------------------------------------------------------
def test_eval_and_report_by_the_rule(tmp_path, image_tasks, capsys):
    base = ["eval", "--tasks", str(image_tasks), "--agent", "oracle", "--env", "none", "--no-progress", "--json"]
    fifo = _fifo(tmp_path / "fifo")
    assert "is a named pipe (FIFO); name a folder" in _refused([*base, "--out", str(fifo)], capsys)
    assert _is_fifo(fifo)
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    try:
        assert "read-only" in _refused([*base, "--out", str(tmp_path / "ro")], capsys)
        assert list((tmp_path / "ro").iterdir()) == []
    finally:
        (tmp_path / "ro").chmod(0o755)
    # a link to a run folder is followed
    (tmp_path / "runs" / "real").mkdir(parents=True)
    (tmp_path / "run").symlink_to(tmp_path / "runs" / "real")
    assert main([*base, "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert (tmp_path / "run").is_symlink() and (tmp_path / "runs" / "real" / "results.jsonl").is_file()

    # report: what it replaces in its folder is checked before any work
    rep = tmp_path / "rep"
    rep.mkdir()
    _fifo(rep / "report.md")
    assert "named pipe" in _refused(["report", str(tmp_path / "run"), "--out", str(rep)], capsys)
    assert sorted(p.name for p in rep.iterdir()) == ["report.md"] and _is_fifo(rep / "report.md")
    (rep / "report.md").unlink()
    _read_only(rep / "report.html")
    assert "read-only" in _refused(["report", str(tmp_path / "run"), "--out", str(rep)], capsys)
    (rep / "report.html").chmod(0o644)
    (rep / "report.html").unlink()
    (tmp_path / "elsewhere").mkdir()
    (rep / "figures").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere" / "precious.txt").write_text("mine\n")
    assert "figures/ is not a plain folder" in _refused(["report", str(tmp_path / "run"), "--out", str(rep)], capsys)
    assert (tmp_path / "elsewhere" / "precious.txt").read_text() == "mine\n"
    (rep / "figures").unlink()
    (tmp_path / "md.real").write_text("old\n")
    (rep / "report.md").symlink_to(tmp_path / "md.real")
    assert main(["report", str(tmp_path / "run"), "--out", str(rep), "--json"]) == 0
    capsys.readouterr()
    assert (rep / "report.md").is_symlink() and (tmp_path / "md.real").read_text().startswith("# spatialact report")
    if ROOT:
        (rep / "report.html").unlink()
        _char_device(rep / "report.html")
        assert main(["report", str(tmp_path / "run"), "--out", str(rep), "--json"]) == 0
        capsys.readouterr()
        assert stat.S_ISCHR(os.lstat(rep / "report.html").st_mode)


def test_demo_checks_its_report_before_the_runs(tmp_path, capsys):
    (tmp_path / "demo" / "report").mkdir(parents=True)
    _fifo(tmp_path / "demo" / "report" / "report.html")
    assert "named pipe" in _refused(["demo", "--out", str(tmp_path / "demo")], capsys)
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == ["report"]  # no run was started


# ----- prompt, replay ---------------------------------------------------------------------------------------------
def test_prompt_by_the_rule(tmp_path, image_tasks, capsys):
    argv = ["prompt", "t0", "--tasks", str(image_tasks), "--out"]
    fifo = _fifo(tmp_path / "fifo")
    assert "named pipe" in _refused([*argv, str(fifo)], capsys) and _is_fifo(fifo)
    out = tmp_path / "p"
    out.mkdir()
    _fifo(out / "prompt.txt")
    assert "named pipe" in _refused([*argv, str(out)], capsys)
    assert sorted(p.name for p in out.iterdir()) == ["prompt.txt"]  # nothing written before the refusal
    (out / "prompt.txt").unlink()
    _fifo(out / "image_1_start.png")
    assert "named pipe" in _refused([*argv, str(out)], capsys)
    assert sorted(p.name for p in out.iterdir()) == ["image_1_start.png"]
    (out / "image_1_start.png").unlink()
    (tmp_path / "m.json").write_text("old")
    (out / "messages.json").symlink_to(tmp_path / "m.json")
    assert main([*argv, str(out)]) == 0
    capsys.readouterr()
    assert (out / "messages.json").is_symlink() and json.loads((tmp_path / "m.json").read_text())[0]["role"]


@needs_sim
def test_replay_checks_its_files_before_the_replay(tmp_path, traj, capsys):
    out = tmp_path / "r"
    out.mkdir()
    _fifo(out / "replay.mp4")
    assert "named pipe" in _refused(["replay", str(traj), "--out", str(out), "--height", "16"], capsys)
    assert sorted(p.name for p in out.iterdir()) == ["replay.mp4"] and _is_fifo(out / "replay.mp4")
    fifo = _fifo(tmp_path / "fifo")
    assert "named pipe" in _refused(["replay", str(traj), "--out", str(fifo), "--height", "16"], capsys)


# ----- game record ------------------------------------------------------------------------------------------------
def test_game_record_follows_a_link_to_an_empty_folder(tmp_path, capsys):
    pytest.importorskip("vizdoom")
    fifo = _fifo(tmp_path / "fifo")
    assert "named pipe" in _refused(["game", "record", "--out", str(fifo), "--seconds", "0.1"], capsys)
    (tmp_path / "real").mkdir()
    (tmp_path / "walk").symlink_to(tmp_path / "real")
    assert main(["game", "record", "--out", str(tmp_path / "walk"), "--seconds", "0.1", "--resolution", "160x120",
                 "--no-progress", "--json"]) == 0
    capsys.readouterr()
    assert (tmp_path / "walk").is_symlink() and (tmp_path / "real" / "meta.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "real", "walk"]  # no partial folder left
