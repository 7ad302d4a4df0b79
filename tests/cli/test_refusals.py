"""Refusals found by using the commands as a researcher does: usage errors in one line, bounded seeds and counts,
options that do not go together, the agent's seed, runs resumed from another working directory or through another
spelling of the same path, strict JSON from --json, a resumed run's notice in one line."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from spatialact.cli.main import main
from spatialact.evaluation.results import config_diff
from spatialact.evaluation.runner import AgentSpec

SIM = importlib.util.find_spec("pybullet") is not None
needs_sim = pytest.mark.skipif(not SIM, reason="needs the sim extra (PyBullet)")


def _strict(text: str):
    def refuse(c):
        raise ValueError(f"not strict JSON: {c}")

    return json.loads(text, parse_constant=refuse)


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err, err
    return err


@pytest.mark.parametrize("argv,msg", [
    (["eval", "--suite", "nav:1"], "spatialact eval: error: the following arguments are required: --out"),
    (["score", "a", "b", "--profile", "bogus"], "argument --profile: invalid choice: 'bogus'"),
    (["eval", "--suite", "nav:1", "--size", "abc", "--out", "{tmp}/r"], "argument --size: 'abc' is not an image size"),
    (["questions", "build"], "spatialact questions build: error: the following arguments are required: --out"),
    (["bogus"], "spatialact: error: argument COMMAND: invalid choice: 'bogus'"),
    (["eval", "--suite", "nav:1", "--seed", "-5", "--agent", "stay", "--out", "{tmp}/r"],
     "argument --seed: -5 is not between 0 and 4294967295"),
    (["tasks", "procedural", "--n", "-3", "--out", "{tmp}/t.jsonl"], "argument --n: -3 is not between 1 and"),
    (["tasks", "procedural", "--n", "0", "--out", "{tmp}/t.jsonl"], "argument --n: 0 is not between 1 and"),
    (["questions", "build", "--seed", "99999999999999999999999", "--out", "{tmp}/q.jsonl"],
     "argument --seed: 99999999999999999999999 is not between 0 and 4294967295"),
    (["questions", "build", "--n", "99999999999999999999", "--out", "{tmp}/q.jsonl"], "argument --n:"),
    (["eval", "--suite", "nav:99999999999999999999", "--agent", "stay", "--out", "{tmp}/r"],
     "a number of tasks per kind from 1 to 100,000"),
    (["eval", "--suite", "nav:1", "--agent", "random", "--agent-arg", "seed=1", "--out", "{tmp}/r"],
     "agent argument 'seed': an agent's seed is derived per episode from the run's seed (give --seed N instead)"),
])
def test_refused_in_one_line_before_anything_is_written(argv, msg, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises(SystemExit) as e:
        code = main(argv)
        raise SystemExit(code)
    assert e.value.code == 2
    err = _one_line(capsys)
    assert msg in err, err
    assert list(tmp_path.iterdir()) == []


@needs_sim
@pytest.mark.parametrize("opt", [["--limit", "2"], ["--no-circular"], ["--seed", "0"]])
def test_run_options_do_not_go_with_an_answers_file(opt, tmp_path, capsys):
    q = tmp_path / "q.jsonl"
    assert main(["questions", "build", "--out", str(q), "--n", "1", "--types", "fov", "--size", "32",
                 "--no-progress", "--json"]) == 0
    capsys.readouterr()
    answers = tmp_path / "a.jsonl"
    answers.write_text('{"question_id": "x", "response": "(A)"}\n')
    assert main(["questions", "score", str(q), "--answers", str(answers), *opt]) == 2
    assert f"{opt[0]} goes with --agent, not --answers" in _one_line(capsys)
    assert not (tmp_path / "a.jsonl.scores.jsonl").exists()


@needs_sim
def test_a_run_resumes_from_another_directory_and_through_another_path(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "procedural", "--n", "2", "--out", "t.jsonl", "--json"]) == 0
    argv = ["eval", "--tasks", "t.jsonl", "--agent", "stay", "--size", "32", "--out", "r", "--no-progress", "--json"]
    assert main(argv) == 0
    capsys.readouterr()
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    for tasks, out in (("../t.jsonl", "../r"), (str(tmp_path / "t.jsonl"), str(tmp_path / "r")),
                       ("./../t.jsonl", "../r/")):
        assert main(["eval", "--tasks", tasks, "--agent", "stay", "--size", "32", "--out", out, "--no-progress",
                     "--json"]) == 0
        res = _strict(capsys.readouterr().out)
        assert res["new"] == 0 and res["skipped"] == 2  # resumed: nothing run again
    # another file under the same name is another configuration
    monkeypatch.chdir(tmp_path)
    assert main(["tasks", "procedural", "--n", "2", "--seed", "1", "--out", "t.jsonl", "--json"]) == 0
    capsys.readouterr()
    assert main(argv) == 2
    assert "tasks_sha256" in _one_line(capsys)


def test_where_a_run_keeps_its_cache_is_not_its_configuration(tmp_path, monkeypatch):
    old = {"tasks": "file:t.jsonl", "tasks_sha256": "ab" * 32,
           "agent": {"name": "openai", "kwargs": {"model": "m", "cache_dir": "r/cache"}}}
    new = {"tasks": "file:../t.jsonl", "tasks_sha256": "ab" * 32,
           "agent": {"name": "openai", "kwargs": {"model": "m", "cache_dir": str(tmp_path / "r" / "cache")}}}
    assert config_diff(old, new) == []
    diff = config_diff(old, dict(new, tasks_sha256="cd" * 32))  # another file: both keys named
    assert [d.split(" ")[0] for d in diff] == ["tasks", "tasks_sha256"] and '"file:t.jsonl" → "file:../t' in diff[0]
    assert config_diff(old, {**new, "agent": {"name": "openai", "kwargs": {"model": "m2"}}}) == [
        'agent.kwargs.model ("m" → "m2")']
    # a local model folder is stored resolved, so ../llava from sub/ and llava from here are one model
    (tmp_path / "llava").mkdir()
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    a = AgentSpec("hf", {"model": "llava"}).to_dict()
    monkeypatch.chdir(tmp_path / "sub")
    b = AgentSpec("hf", {"model": "../llava"}).to_dict()
    assert a == b == {"name": "hf", "kwargs": {"model": str(tmp_path / "llava")}}
    assert AgentSpec("hf", {"model": "Org/Name"}).kwargs["model"] == "Org/Name"  # a Hub id stays as it is


@needs_sim
def test_json_outputs_are_strict_and_a_resume_notice_is_one_line(tmp_path, capsys):
    assert main(["eval", "--suite", "nav:1", "--agent", "stay", "--size", "32", "--limit", "0", "--out",
                 str(tmp_path / "l0"), "--json", "--no-progress"]) == 0
    res = _strict(capsys.readouterr().out)
    assert res["summary"][0]["episodes"] == 0 and res["summary"][0]["score"] is None
    run = tmp_path / "r"
    argv = ["eval", "--suite", "nav:2", "--agent", "stay", "--size", "32", "--out", str(run), "--json",
            "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    lines = (run / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        import sys

        buf = []
        old = warnings.showwarning
        warnings.showwarning = lambda m, c, f, n, file=None, line=None: buf.append(
            warnings.formatwarning(m, c, f, n, line))
        try:
            assert main(argv) == 0
        finally:
            warnings.showwarning = old
    res = _strict(capsys.readouterr().out)
    assert res["new"] == 1 and res["skipped"] == 1  # the cut-off episode ran again
    assert len(buf) == 1 and buf[0].startswith("spatialact: warning: ") and buf[0].count("\n") == 1, buf
    assert sys.modules["warnings"].formatwarning.__name__ == "_one_line_warning"
    report = tmp_path / "rep"
    assert main(["report", str(run), str(tmp_path / "l0"), "--out", str(report), "--json"]) == 0
    assert _strict(capsys.readouterr().out)["runs"][1]["score"]["mean"] is None


@needs_sim
def test_a_trajectory_that_gives_nothing_leaves_nothing_behind(tmp_path, capsys):
    from traj_helpers import smooth_poses, write_tum

    P, t = smooth_poses(30, 30.0, 0)
    write_tum(tmp_path / "one.txt", t[:1], P[:1])
    P[:] = P[0]
    write_tum(tmp_path / "static.txt", t, P)
    out = tmp_path / "tasks" / "t.jsonl"
    assert main(["tasks", "from-trajectory", str(tmp_path / "static.txt"), "--out", str(out), "--n", "3"]) == 2
    err = _one_line(capsys)
    assert "static.txt: no task: no pair of its 30 frames is 0.25–2 m apart" in err and "spans 0 m" in err
    assert main(["tasks", "from-trajectory", str(tmp_path / "static.txt"), "--out", str(out),
                 "--min-motion", "-1"]) == 2
    assert "--min-motion must be a finite number ≥ 0, got -1.0" in _one_line(capsys)
    assert main(["replay", str(tmp_path / "one.txt"), "--out", str(tmp_path / "rp")]) == 2
    assert "keyframes" in _one_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.txt", "static.txt"]


def test_task_files_with_a_byte_order_mark_load_and_deep_nesting_is_one_line(tmp_path, capsys):
    from spatialact.tasks import load_tasks

    src = (Path(__file__).resolve().parents[2] / "examples" / "tasks.jsonl").read_bytes()
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + src)
    assert [t.id for t in load_tasks(bom, cache=False)] == [t.id for t in load_tasks(
        Path(__file__).resolve().parents[2] / "examples" / "tasks.jsonl", cache=False)]
    deep = tmp_path / "deep.jsonl"  # deeper than Python's recursion limit lets json decode
    deep.write_text("[" * 5000 + "]" * 5000 + "\n")
    assert main(["score", str(Path(__file__).resolve().parents[2] / "examples" / "answers.jsonl"), str(deep),
                 "--out", str(tmp_path / "s.jsonl")]) == 2
    assert "deep.jsonl:1: nested deeper than 256 levels" in _one_line(capsys)  # the one nesting limit
    assert not (tmp_path / "s.jsonl").exists()


def test_a_ground_truth_that_does_not_lead_to_the_goal_is_refused_before_the_run(tmp_path, capsys):
    """A hand-written task with the sign of its motion flipped (Dolly Out for a goal 0.5 m ahead): its oracle would
    'score 1' while ending 1 m away. Refused in one line, naming the task and the field, nothing written."""
    from dataclasses import replace

    import numpy as np

    from _fabricate import checker_image, make_task
    from PIL import Image
    from spatialact.action_space import ActionSequence, StepSizes
    from spatialact.evaluation.episode import gt_problem
    from spatialact.tasks import save_tasks

    ok = make_task("ahead", signed=((0, 0, 8, 0, 0, 0),))  # Dolly In × 8 (8 × 0.0625 m)
    assert gt_problem(ok) is None
    flipped = replace(ok, gt=ActionSequence.from_signed_counts(np.array([[0, 0, -8, 0, 0, 0]]), StepSizes.for_kind("nav")))
    assert gt_problem(flipped) == ("field 'gt': replayed from start_pose it ends 1 m / 0° from goal_pose, beyond the "
                                   "success thresholds (0.2 m / 10°): the ground truth does not lead to the goal")
    for name in ("s.png", "g.png"):
        Image.fromarray(checker_image()).save(tmp_path / name)
    tf = tmp_path / "t.jsonl"
    save_tasks([replace(flipped, start_image=str(tmp_path / "s.png"), goal_image=str(tmp_path / "g.png"))], tf)
    assert main(["eval", "--tasks", str(tf), "--env", "none", "--agent", "oracle", "--out", str(tmp_path / "r")]) == 2
    assert "task 'ahead': field 'gt': replayed from start_pose it ends 1 m" in _one_line(capsys)
    assert not (tmp_path / "r").exists()
