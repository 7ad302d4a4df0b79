"""The command line behaves the same way for the same situation: the demo's two forms keep their own reports, a
dangling link given as an output folder is created as that folder by every command, a questions file is refused
a character device up front (its images have nowhere to go), and the demo's tables carry a legend."""

import importlib.util
import os
import subprocess
import sys

import pytest


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "spatialact.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd)


def test_plain_demo_keeps_the_full_demos_report(tmp_path):
    out = tmp_path / "demo"
    full = _cli("demo", "--agents", "stay", "--out", str(out), "--no-progress")
    assert full.returncode == 0, full.stderr
    # a legend under each printed table: one line per term, right below the table's last row
    screen = full.stdout.split("\n\n")
    first = next(b for b in screen if "spatialact demo ·" in b).splitlines()
    terms = [line.split()[0] for line in first if line.startswith("  ")]
    assert terms == ["skill", "score", "skill", "parse"] and first[-5].startswith("stay ")  # one-shot: no SPL
    assert "(s - s0) / (1 - s0)" in first[-4]
    second = next(b for b in screen if b.startswith("diagnostics ·")).splitlines()
    terms = [line.split()[0] for line in second if line.startswith("  ")]
    assert terms == ["paired", "inconsist.", "L/R", "label", "δ", "ladder", "nan"] and "FlipEval" in second[-7]
    assert "RPDR" in second[-2]
    report = out / "report" / "report.md"
    before = report.read_text(encoding="utf-8")
    assert "## Diagnostics" in before
    plain = _cli("demo", "--agents", "stay", "--no-diagnostics", "--out", str(out), "--no-progress")
    assert plain.returncode == 0, plain.stderr
    assert report.read_text(encoding="utf-8") == before  # the full demo's report, Diagnostics and all, stays
    plain_md = (out / "report-plain" / "report.md").read_text(encoding="utf-8")
    assert plain_md != before and "stay" in plain_md
    assert str(out / "report-plain" / "report.html") in plain.stdout
    h = _cli("demo", "--help")
    assert "report-plain" in h.stdout


# ----- a dangling link as an output folder: followed, its target created, by every command ------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A task file of two image tasks (no scene), a camera path, a question file, and a run of the oracle."""
    import json

    import numpy as np
    from PIL import Image

    from _fabricate import make_task
    from spatialact.cli.main import main
    from spatialact.tasks import save_tasks

    d = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(0)
    for name in ("s", "g"):
        Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(d / f"{name}.png")
    tasks = save_tasks([make_task(f"t{k}", start_image=str(d / "s.png"), goal_image=str(d / "g.png"))
                        for k in range(2)], d / "tasks.jsonl")
    poses = []
    for k in range(40):
        T = np.eye(4)
        T[0, 3] = 0.05 * k
        poses.append(T.tolist())
    traj = d / "traj.json"
    traj.write_text(json.dumps({"c2w": poses, "fps": 10}))
    assert main(["questions", "build", "--n", "1", "--types", "depth", "--size", "32", "--out",
                 str(d / "q.jsonl")]) == 0
    run = d / "run"
    assert main(["eval", "--tasks", str(tasks), "--agent", "oracle", "--env", "none", "--no-progress", "--json",
                 "--out", str(run)]) == 0
    return {"tasks": tasks, "traj": traj, "questions": d / "q.jsonl", "run": run}


def _folder_argv(cmd: str, inputs: dict, out) -> list[str]:
    out = str(out)
    return {
        "eval": ["eval", "--tasks", str(inputs["tasks"]), "--agent", "oracle", "--env", "none", "--no-progress",
                 "--json", "--out", out],
        "report": ["report", str(inputs["run"]), "--json", "--out", out],
        "questions-score": ["questions", "score", str(inputs["questions"]), "--agent", "oracle", "--no-progress",
                            "--json", "--out", out],
        "prompt": ["prompt", "t0", "--tasks", str(inputs["tasks"]), "--out", out],
        "replay": ["replay", str(inputs["traj"]), "--height", "16", "--out", out],
    }[cmd]


@pytest.mark.parametrize("cmd", ["eval", "report", "questions-score", "prompt", "replay"])
def test_a_dangling_link_out_is_created_as_the_folder_it_names(cmd, inputs, tmp_path, capsys):
    from spatialact.cli.main import main

    if cmd == "replay" and importlib.util.find_spec("pybullet") is None:
        pytest.skip("needs the sim extra (PyBullet)")
    link, target = tmp_path / "out", tmp_path / "made" / "here"
    link.symlink_to(target)
    rc = main(_folder_argv(cmd, inputs, link))
    err = capsys.readouterr().err
    assert rc == 0, err
    assert link.is_symlink() and target.is_dir() and any(target.iterdir())  # written through the link


def test_a_dangling_link_above_a_file_with_images_is_followed(inputs, tmp_path, capsys):
    """questions build and tasks from-trajectory write a file and its images beside it: a dangling link as the
    folder above is followed, both land in the folder it names."""
    from spatialact.cli.main import main

    (tmp_path / "q").symlink_to(tmp_path / "made" / "q")
    assert main(["questions", "build", "--n", "1", "--types", "depth", "--size", "32", "--out",
                 str(tmp_path / "q" / "q.jsonl")]) == 0, capsys.readouterr().err
    assert (tmp_path / "made" / "q" / "q.jsonl").is_file() and any((tmp_path / "made" / "q" / "q_images").iterdir())
    (tmp_path / "t").symlink_to(tmp_path / "made" / "t")
    assert main(["tasks", "from-trajectory", str(inputs["traj"]), "--no-scene", "--n", "2", "--json", "--out",
                 str(tmp_path / "t" / "t.jsonl")]) == 0, capsys.readouterr().err
    assert (tmp_path / "made" / "t" / "t.jsonl").is_file() and (tmp_path / "t").is_symlink()


# ----- a character device as --out: written through for one file, refused up front where images go beside it ------
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.mark.skipif(not ROOT, reason="making a device node (os.mknod) needs root")
@pytest.mark.parametrize("cmd", ["questions-build", "tasks-from-trajectory"])
def test_a_device_is_refused_before_any_work_where_images_go_beside_the_file(cmd, inputs, tmp_path, capsys):
    import stat

    from spatialact.cli.main import main

    dev = tmp_path / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a null device
    argv = {"questions-build": ["questions", "build", "--n", "1", "--types", "depth", "--size", "32"],
            "tasks-from-trajectory": ["tasks", "from-trajectory", str(inputs["traj"]), "--no-scene", "--n", "2"]}[cmd]
    assert main([*argv, "--out", str(dev)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"--out {dev}: is a character device" in err and "null_images/" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]  # nothing left behind: no image folder
    assert stat.S_ISCHR(os.lstat(dev).st_mode)
    # one file and no images: the device is written through, as every single-file output is
    assert main(["tasks", "from-trajectory", str(inputs["traj"]), "--no-scene", "--no-images", "--n", "2", "--json",
                 "--out", str(dev)]) == 0, capsys.readouterr().err
    assert main(["tasks", "procedural", "--n", "1", "--json", "--out", str(dev)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"] and stat.S_ISCHR(os.lstat(dev).st_mode)


def test_make_demo_ends_by_saying_how_to_run_the_commands():
    """make demo's recipe prints, after the demo, how to reach the spatialact command (the venv activated, or its
    path); the README's first section says the same."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    r = subprocess.run(["make", "-s", "-n", "-o", "setup", "demo"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[0] == ".venv/bin/spatialact demo"
    assert "source .venv/bin/activate" in lines[-1] and ".venv/bin/spatialact" in lines[-1] and len(lines) == 2
    readme = (root / "README.md").read_text(encoding="utf-8")
    first = readme.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    assert "source .venv/bin/activate" in first
    assert "`.venv/bin/spatialact`" in first


def test_questions_build_suite_takes_only_the_frozen_suite(tmp_path, capsys):
    from spatialact.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["questions", "build", "--suite", "l4-v0", "--out", str(tmp_path / "q")])
    assert e.value.code == 2 and "invalid choice: 'l4-v0'" in capsys.readouterr().err
    assert not (tmp_path / "q").exists()
