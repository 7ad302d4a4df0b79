"""The report on runs this test makes with `spatialact eval` (small images, the tiny renderer): skill leads the
tables and equals the scorers' skill_summary of the records; s0 rebuilt for records written before they carried it
equals what eval stored (both profiles); closed-loop examples are ranked by success, then final position error;
report --json gives per kind success, SPL, parse-ok rate and skill, the parser's reasons, the blocked-step rate of
the rooms; the Parse errors and Blocked steps sections count what the records say, model text escaped."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from _chat_server import SECRET
from _fabricate import image_tasks
from _markdown import table_after
from spatialact.cli.main import main
from spatialact.evaluation.results import read_records
from spatialact.report import load_runs, make_report
from spatialact.report.examples import pick_examples
from spatialact.scorers import skill_summary
from spatialact.tasks import save_tasks

pytest.importorskip("pybullet")

SMALL = ["--renderer", "tiny", "--size", "32", "--no-progress"]
EVIL = "<b>not a step</b> & <script>alert(1)</script>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("skill")
    closed = ["--suite", "nav:6", "--mode", "closed-loop", "--max-steps", "8"]
    jobs = {"cl": [*closed, "--agent", "noisy-oracle", "--agent-arg", "noise=1"],
            # a dolly of 10 units every step: the room's walls stop it
            "wall": [*closed, "--agent", "constant", "--agent-arg", "action=Dolly In", "--agent-arg", "count=10"],
            "rot": ["--suite", "default:1", "--profile", "paper+rot", "--agent", "noisy-oracle"]}
    for name, args in jobs.items():
        assert main(["eval", *args, *SMALL, "--out", str(d / name)]) == 0, name
    return d


def _skill_text(recs) -> str:
    sk = skill_summary([r["score"] for r in recs], [r["s0"] for r in recs])
    return f"{sk['skill']:.3f} [{sk['lo']:.3f}, {sk['hi']:.3f}]"


def test_closed_loop_examples_are_ranked_by_success_then_final_error(runs, tmp_path):
    recs = read_records(runs / "cl")
    won = [r for r in recs if r["success"]]
    lost = [r for r in recs if not r["success"]]
    assert won and lost
    # what made the old ranking wrong is there: a successful episode has the lowest step score
    assert min(recs, key=lambda r: r["score"])["success"]
    picks = dict(pick_examples(load_runs([runs / "cl"])[0]))
    assert picks["worst"]["task_id"] == max(lost, key=lambda r: r["final_position_error"])["task_id"]
    assert picks["best"]["task_id"] == min(won, key=lambda r: r["final_position_error"])["task_id"]
    md, _ = make_report([runs / "cl"], tmp_path / "rep")
    text = md.read_text()
    worst = text.split("**worst: ", 1)[1].split("\n", 1)[0]
    assert worst.startswith(f"task {picks['worst']['task_id']} (nav), no success, final position error")


def test_skill_leads_the_tables_and_is_the_scorers(runs, tmp_path):
    md, _ = make_report([runs / "cl", runs / "wall"], tmp_path / "rep")
    text = md.read_text()
    overall = table_after(text, "## Overall")
    assert list(overall[0])[:4] == ["run", "episodes", "skill [95% CI]", "step score (paper) [95% CI]"]
    cl = read_records(runs / "cl")
    assert overall[0]["skill [95% CI]"] == _skill_text(cl)
    assert overall[0]["step score (paper) [95% CI]"].startswith(f"{np.mean([r['score'] for r in cl]):.3f} [")
    kinds = table_after(text, "## Per kind")
    assert list(kinds[0])[:8] == ["kind", "run", "episodes", "skill [95% CI]", "step score (paper) [95% CI]",
                                  "success", "SPL", "parse ok"]
    row = kinds[0]
    assert row["skill [95% CI]"] == _skill_text(cl)
    assert row["success"] == f"{np.mean([r['success'] for r in cl]):.3f}"
    assert row["SPL"] == f"{np.mean([r['spl'] for r in cl]):.3f}" and row["parse ok"] == "100%"
    assert "Per track" not in text  # procedural tasks have no track: their kind stands in, shown once


def test_s0_of_older_records_is_rebuilt_as_eval_stored_it(runs, tmp_path):
    for name in ("cl", "rot"):
        old = tmp_path / name
        shutil.copytree(runs / name, old)
        recs = read_records(old)
        assert all(isinstance(r["s0"], float) for r in recs)
        (old / "results.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "s0"}) + "\n"
                                                   for r in recs))
        run = load_runs([old])[0]
        assert run.s0_rebuilt == len(recs) and run.s0_unknown == 0
        assert [r["s0"] for r in run.records] == [r["s0"] for r in recs]  # exactly eval's
    rot = read_records(runs / "rot")
    nav = next(r for r in rot if r["kind"] == "nav")
    assert nav["s0"] != read_records(runs / "cl")[0]["s0"]  # paper+rot scores a nav task's stay differently
    md, _ = make_report([tmp_path / "rot"], tmp_path / "rep")
    assert f"noisy-oracle: {len(rot)} rebuilt." in md.read_text()


def test_report_json_per_kind_blocked_and_parse_errors(runs, tmp_path, capsys):
    assert main(["report", str(runs / "cl"), str(runs / "wall"), "--json", "--out", str(tmp_path / "rep")]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["leaderboard_file"] == str(tmp_path / "rep" / "leaderboard.json")
    assert [row["run"] for row in js["leaderboard"]] == ["noisy-oracle", "constant"]
    assert {p["group"] for p in js["paired"]} == {"all", "kind nav"}
    for entry, name in zip(js["runs"], ("cl", "wall")):
        recs = read_records(runs / name)
        nav = entry["kinds"]["nav"]
        assert nav["success"] == pytest.approx(np.mean([r["success"] for r in recs]))
        assert nav["spl"] == pytest.approx(np.mean([r["spl"] for r in recs]))
        assert nav["parse_ok"] == 1.0 and nav["episodes"] == 6
        sk = skill_summary([r["score"] for r in recs], [r["s0"] for r in recs])
        assert (nav["skill"]["skill"], nav["skill"]["lo"], nav["skill"]["hi"]) == \
            pytest.approx((sk["skill"], sk["lo"], sk["hi"]))
        flags = [b for r in recs for b in r["blocked"]]
        assert entry["blocked"] == {"steps": sum(flags), "executed": len(flags),
                                    "rate": pytest.approx(sum(flags) / len(flags))}
        assert entry["parse_errors"] == [] and entry["leaderboard"]["overall"]["episodes"] == 6
    wall = js["runs"][1]["blocked"]
    assert wall["steps"] > 0 and js["runs"][0]["blocked"]["steps"] < wall["steps"]
    md = (tmp_path / "rep" / "report.md").read_text()
    rows = table_after(md, "## Blocked steps")
    assert [(r["run"], r["world"]) for r in rows] == [("noisy-oracle", "nav"), ("constant", "nav")]
    assert rows[1]["blocked / executed steps"] == f"{wall['steps']}/{wall['executed']}"


def test_parse_errors_are_shown_with_their_reasons_escaped(server, tmp_path, capsys, api_key):
    pytest.importorskip("openai")
    tasks = image_tasks(tmp_path / "tasks", 4)
    save_tasks(tasks, tmp_path / "tasks.jsonl")
    server.script = [("ok", EVIL), ("ok", "I would rather not say."), ("ok", EVIL),
                     ("ok", '{"step_1": {"actions": ["D"], "step_nums": [3]}}')]
    out = tmp_path / "api"
    assert main(["eval", "--tasks", str(tmp_path / "tasks.jsonl"), "--env", "none", "--no-progress", "--out", str(out),
                 "--agent", "openai", "--agent-arg", "model=<i>vlm</i>", "--agent-arg", f"base_url={server.url}",
                 "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "backoff=0"]) == 0
    recs = read_records(out)
    reasons = [r["parse_error"] for r in recs if r["reason"] == "parse_error"]
    assert len(reasons) == 3 and all(reasons)
    capsys.readouterr()
    assert main(["report", str(out), "--json", "--out", str(tmp_path / "rep")]) == 0
    js = json.loads(capsys.readouterr().out)["runs"][0]
    want = sorted(((why, reasons.count(why)) for why in set(reasons)), key=lambda x: -x[1])
    assert sorted((p["reason"], p["count"]) for p in js["parse_errors"]) == sorted(want)
    assert js["parse_ok"] == pytest.approx(0.25)
    md = (tmp_path / "rep" / "report.md").read_text()
    rows = table_after(md, "## Parse errors")
    assert rows[0]["run"] == "openai (&lt;i&gt;vlm&lt;/i&gt;)" and rows[0]["not parsed / answered"] == "3/4"
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "<i>vlm</i>" not in page and "&lt;i&gt;vlm&lt;/i&gt;" in page and "<script>alert" not in page
    assert "<table class='wrap'><thead><tr><th>run</th><th>not parsed / answered</th>" in page  # reasons wrap
    assert SECRET not in page and SECRET not in md


def test_tracks_of_suite_tasks_get_their_own_table_rows_and_pairs(runs, tmp_path):
    """Tasks of a benchmark suite carry their track: the report adds Per track, --json ``tracks``, the leaderboard
    row's tracks and paired groups per track (the kind still stands in for a task without one)."""
    from spatialact.report import report_json

    src = read_records(runs / "cl")
    tracks = {r["task_id"]: ("camera" if i % 2 else "nav") for i, r in enumerate(src)}
    for name in ("cl", "wall"):
        d = tmp_path / name
        shutil.copytree(runs / name, d)
        recs = read_records(d)
        for r in recs:
            r["tags"] = dict(r["tags"], track=tracks[r["task_id"]])
        (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    md, _ = make_report([tmp_path / "cl", tmp_path / "wall"], tmp_path / "rep")
    rows = table_after(md.read_text(), "## Per track")
    assert [(r["track"], r["run"], r["episodes"]) for r in rows] == [
        ("camera", "noisy-oracle", "3"), ("camera", "constant", "3"), ("nav", "noisy-oracle", "3"),
        ("nav", "constant", "3")]
    cam = [r for r in src if tracks[r["task_id"]] == "camera"]
    assert rows[0]["skill [95% CI]"] == _skill_text(cam)
    js = report_json([tmp_path / "cl", tmp_path / "wall"])
    assert sorted(js["runs"][0]["tracks"]) == ["camera", "nav"] and sorted(js["runs"][0]["kinds"]) == ["nav"]
    assert sorted(js["leaderboard"][0]["tracks"]) == ["camera", "nav"]
    assert [p["group"] for p in js["paired"]] == ["all", "track camera", "track nav", "kind nav"]
