"""A report of runs on different task sets or in different modes says so (a line on stderr, a note at the top) and
compares them on the tasks they share; runs on the same tasks in the same mode get neither. Real runs of
`spatialact eval` on small procedural suites."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from spatialact.cli.main import main
from spatialact.evaluation.results import read_records
from spatialact.report import RunsDifferWarning, compare_runs, make_report
from spatialact.report.load import load_runs

SRC = str(Path(__file__).parents[2] / "src")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs")
    for name, args in {"a": ["--suite", "nav:3", "--agent", "oracle"],
                       "b": ["--suite", "nav:5", "--agent", "geometric", "--mode", "closed-loop"],
                       "c": ["--suite", "nav:3", "--agent", "stay"],
                       "d": ["--suite", "nav:3", "--agent", "geometric", "--mode", "closed-loop"]}.items():
        assert main(["eval", *args, "--out", str(d / name), "--no-progress"]) == 0
    return d


def _rewrite(src, dst, change):
    shutil.copytree(src, dst)
    recs = [json.loads(line) for line in (dst / "results.jsonl").read_text().splitlines()]
    change(recs)
    (dst / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return dst


def _table_after(md: str, heading: str) -> list[list[str]]:
    """The body rows (cells) of the first Markdown table after ``heading``."""
    lines = md.split(heading + "\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:  # past the header and the separator
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def test_runs_on_different_tasks_and_modes_warn_and_compare_on_shared_tasks(runs, tmp_path):
    # as a user runs it: the warning is one line on stderr
    out = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "report", str(runs / "a"), str(runs / "b"),
                          "--out", str(tmp_path / "rep")], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=SRC))
    assert out.returncode == 0, out.stderr
    err = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("spatialact: warning: The runs differ in their tasks and their mode")
    for part in ("oracle: suite:nav:3:seed=0, one-shot, 3 tasks", "geometric: suite:nav:5:seed=0, closed-loop, 5 tasks",
                 "They share 3 tasks"):
        assert part in err[0]
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    # the note opens the report, before the Runs table
    assert md.index("> **Note:** The runs differ in their tasks and their mode") < md.index("## Runs")
    assert "<b>Note:</b> The runs differ in their tasks and their mode" in page
    # the Overall table keeps every episode; the table on the shared tasks has the three tasks of both runs
    overall = _table_after(md, "## Overall")
    assert [r[:2] for r in overall] == [["oracle", "3"], ["geometric", "5"]]
    shared = _table_after(md, "### Overall on the 3 tasks all runs share")
    assert [r[:2] for r in shared] == [["oracle", "3"], ["geometric", "3"]]
    ids_a = {r["task_id"] for r in read_records(runs / "a")}
    b_on_a = [r["score"] for r in read_records(runs / "b") if r["task_id"] in ids_a]
    assert len(b_on_a) == 3 and shared[1][2].startswith(f"{np.mean(b_on_a):.3f} [")
    assert shared[0][2] == "1.000 [1.000, 1.000]"  # the oracle, on its own tasks


def test_runs_on_the_same_tasks_in_the_same_mode_get_no_note(runs, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        md, _ = make_report([runs / "a", runs / "c"], tmp_path / "rep")
    assert not [w for w in caught if issubclass(w.category, RunsDifferWarning)]
    text = md.read_text()
    assert "**Note:**" not in text and "all runs share" not in text
    assert compare_runs(load_runs([runs / "a", runs / "c"])).like_for_like


def test_a_different_mode_on_the_same_tasks_is_named_without_a_shared_table(runs, tmp_path):
    c = compare_runs(load_runs([runs / "a", runs / "d"]))
    assert c.differs == ("mode",) and len(c.shared) == 3
    assert c.note() == ("The runs differ in their mode: oracle: suite:nav:3:seed=0, one-shot, 3 tasks; geometric: "
                        "suite:nav:3:seed=0, closed-loop, 3 tasks.")
    with pytest.warns(RunsDifferWarning, match="differ in their mode"):
        md, _ = make_report([runs / "a", runs / "d"], tmp_path / "rep")
    assert "all runs share" not in md.read_text()


def test_a_task_id_is_shared_only_when_the_runs_agree_on_the_task(runs, tmp_path):
    def move_goal(recs):
        recs[0]["goal_pose"][0][3] += 0.25  # the same id, another task

    def fail_one(recs):  # a failure record says nothing of its task: it does not make the task differ
        recs[1].update(start_pose=None, goal_pose=None, gt=None, score=None, error="api_error")

    moved = _rewrite(runs / "a", tmp_path / "moved", move_goal)
    failed = _rewrite(runs / "a", tmp_path / "failed", fail_one)
    c = compare_runs(load_runs([runs / "a", moved]))
    assert c.differs == ("tasks",) and len(c.shared) == 2 and c.setups[0].task_ids == c.setups[1].task_ids
    assert compare_runs(load_runs([runs / "a", failed])).like_for_like


def test_runs_that_share_no_task_say_so(runs, tmp_path):
    def rename(recs):
        for r in recs:
            r["task_id"] = "other-" + r["task_id"]

    other = _rewrite(runs / "c", tmp_path / "other", rename)
    with pytest.warns(RunsDifferWarning, match="They share no task"):
        md, _ = make_report([runs / "a", other], tmp_path / "rep")
    text = md.read_text()
    assert "They share no task: no table compares them like for like." in text and "all runs share" not in text


def test_runs_of_the_same_tasks_share_them_across_versions_and_machines(runs, tmp_path):
    """Four runs of the same three tasks: two as eval wrote them, one as a version whose records did not carry
    ``gt`` wrote it, one made on a machine whose arithmetic gave -0.0 where this one gave 0.0 and differs in the last
    bits. They share every task (the report said they shared none: it compared the records' rounded numbers as
    text, and a missing field as a different one)."""
    def older(recs):
        for r in recs:
            del r["gt"]

    def elsewhere(recs):
        for r in recs:
            for k in ("start_pose", "goal_pose"):
                r[k] = [[-0.0 if v == 0 else v * (1 + 3e-16) for v in row] for row in r[k]]

    old = _rewrite(runs / "c", tmp_path / "old", older)
    other = _rewrite(runs / "a", tmp_path / "other", elsewhere)
    assert "-0.0" in (other / "results.jsonl").read_text()
    four = [runs / "a", runs / "c", old, other]
    c = compare_runs(load_runs(four))
    assert c.like_for_like and len(c.shared) == 3, c.note()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        md, _ = make_report(four, tmp_path / "rep")
    assert not [w for w in caught if issubclass(w.category, RunsDifferWarning)]
    assert "**Note:**" not in md.read_text()
    # a real difference is still one: a goal 10 µm away is another task (the tolerance is 1 µm)
    def move(recs):
        recs[0]["goal_pose"][0][3] += 1e-5

    moved = _rewrite(runs / "a", tmp_path / "moved", move)
    c = compare_runs(load_runs([runs / "a", old, moved]))
    assert c.differs == ("tasks",) and len(c.shared) == 2
