"""Leaderboard rows (report folder's leaderboard.json, report --json) and `spatialact leaderboard`, on runs this test
makes with `spatialact eval` (small images, the tiny renderer): rows sorted by overall skill with intervals, rank =
1 + the rows whose interval lies wholly above (ties share a rank), Markdown, HTML and CSV; rows of another suite,
profile, mode or image size refused in one line naming the two rows and the field (exit 2); no secret in a row."""

from __future__ import annotations

import csv
import json
import os

import numpy as np
import pytest

from _chat_server import SECRET
from _fabricate import image_tasks
from spatialact.cli.main import main
from spatialact.evaluation.results import read_records
from spatialact.report import rank_rows, scrub_options
from spatialact.scorers import skill_summary
from spatialact.tasks import save_tasks

pytest.importorskip("pybullet")

SMALL = ["--renderer", "tiny", "--no-progress"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("board")
    one = ["--suite", "default:1"]
    jobs = {"oracle": [*one, "--agent", "oracle"], "stay": [*one, "--agent", "stay"],
            "n1": [*one, "--agent", "noisy-oracle", "--agent-arg", "noise=1"],
            "n4": [*one, "--agent", "noisy-oracle", "--agent-arg", "noise=4"],
            "closed": [*one, "--agent", "oracle", "--mode", "closed-loop", "--max-steps", "4"],
            "big": [*one, "--agent", "oracle", "--size", "48"],
            "rot": [*one, "--agent", "oracle", "--profile", "paper+rot"],
            "nav": ["--suite", "nav:1", "--agent", "oracle"]}
    for name, args in jobs.items():
        size = [] if "--size" in args else ["--size", "32"]
        assert main(["eval", *args, *size, *SMALL, "--out", str(d / name)]) == 0, name
    return d


def _report(capsys, out, *run_dirs) -> dict:
    capsys.readouterr()
    assert main(["report", *map(str, run_dirs), "--json", "--out", str(out)]) == 0
    return json.loads(capsys.readouterr().out)


def _board(capsys, out, *files) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["leaderboard", *map(str, files), "--out", str(out)])
    got = capsys.readouterr()
    return code, got.out, got.err


def test_rows_are_written_beside_the_report_and_hold_the_run(runs, tmp_path, capsys):
    js = _report(capsys, tmp_path / "rep", runs / "oracle", runs / "n1")
    rows = json.loads((tmp_path / "rep" / "leaderboard.json").read_text())
    assert rows["format"] == "spatialact-leaderboard" and rows["version"] == 1
    assert rows["rows"] == js["leaderboard"] == [e["leaderboard"] for e in js["runs"]]
    row = rows["rows"][1]
    recs = read_records(runs / "n1")
    sk = skill_summary([r["score"] for r in recs], [r["s0"] for r in recs])
    assert row["overall"]["skill"] == {"skill": pytest.approx(sk["skill"]), "lo": pytest.approx(sk["lo"]),
                                       "hi": pytest.approx(sk["hi"]), "n": 3}
    assert row["overall"]["score"] == pytest.approx(np.mean([r["score"] for r in recs]))
    assert row["overall"]["success"] == pytest.approx(np.mean([r["success"] for r in recs]))
    assert (row["suite"], row["suite_sha256"], row["mode"], row["profile"]) == \
        ("suite:default:1:seed=0", None, "one-shot", "paper")
    assert (row["image_size"], row["renderer"], row["render_quality"]) == ([32, 32], "tiny", "default")
    assert (row["agent"], row["agent_options"], row["run"]) == ("noisy-oracle", {"noise": 1}, "noisy-oracle")
    assert sorted(row["tracks"]) == ["hand", "manip", "nav"]  # no suite tracks: the kinds stand in
    nav = [r for r in recs if r["kind"] == "nav"]
    assert row["tracks"]["nav"]["episodes"] == 1 and row["tracks"]["nav"]["skill"]["skill"] == \
        pytest.approx(skill_summary([nav[0]["score"]], [nav[0]["s0"]])["skill"])
    for t in row["tracks"].values():
        assert set(t) >= {"episodes", "skill", "score", "success", "spl", "parse_ok", "blocked_rate", "api_errors",
                          "prompt_tokens", "completion_tokens", "cost_usd"}


def test_the_leaderboard_sorts_by_skill_and_ranks_by_intervals(runs, tmp_path, capsys):
    _report(capsys, tmp_path / "all", runs / "n4", runs / "stay", runs / "oracle", runs / "n1")
    _report(capsys, tmp_path / "again", runs / "n1")  # the same run once more: a tie
    code, out, err = _board(capsys, tmp_path / "board", tmp_path / "all" / "leaderboard.json",
                            tmp_path / "again" / "leaderboard.json")
    assert code == 0, err
    rows = list(csv.DictReader((tmp_path / "board" / "leaderboard.csv").open()))
    skills = [float(r["skill"]) for r in rows]
    assert skills == sorted(skills, reverse=True) and [r["run"] for r in rows][0] == "oracle"
    assert [float(r["skill"]) for r in rows if r["run"] == "stay"] == [0.0]  # doing nothing: exactly 0
    lo = [float(r["skill_lo"]) for r in rows]
    hi = [float(r["skill_hi"]) for r in rows]
    want = [1 + sum(1 for j in range(len(rows)) if j != i and lo[j] > hi[i]) for i in range(len(rows))]
    assert [int(r["rank"]) for r in rows] == want
    twins = [r for r in rows if r["agent_options"] == '{"noise": 1}']
    assert len(twins) == 2 and twins[0]["rank"] == twins[1]["rank"]  # ties share a rank
    md = (tmp_path / "board" / "leaderboard.md").read_text()
    page = (tmp_path / "board" / "leaderboard.html").read_text()
    assert "| rank | run | model | skill [95% CI] |" in md and "<table>" in page
    assert "| 1 | oracle | – | 1.000 [1.000, 1.000] |" in md
    assert "suite:default:1:seed=0" in md and "wrote" in out


def test_rank_by_hand():
    def row(name, skill, lo, hi):
        return {"run": name, "overall": {"skill": {"skill": skill, "lo": lo, "hi": hi, "n": 9}}}

    a, b, c, d = row("a", 0.85, 0.8, 0.9), row("b", 0.7, 0.5, 0.85), row("c", 0.2, 0.1, 0.4), row("d", None, None,
                                                                                                  None)
    e = row("e", 0.2, 0.1, 0.4)
    assert [(rank, r["run"]) for rank, r in rank_rows([d, c, e, b, a])] == \
        [(1, "a"), (1, "b"), (3, "c"), (3, "e"), (None, "d")]


@pytest.mark.parametrize("other,field", [("closed", "mode"), ("big", "image_size"), ("rot", "profile"),
                                         ("nav", "suite")])
def test_rows_that_do_not_compare_are_refused_in_one_line(runs, tmp_path, capsys, other, field):
    _report(capsys, tmp_path / "a", runs / "oracle")
    _report(capsys, tmp_path / "b", runs / other)
    code, out, err = _board(capsys, tmp_path / "board", tmp_path / "a" / "leaderboard.json",
                            tmp_path / "b" / "leaderboard.json")
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"spatialact leaderboard: error: rows differ in {field}: ")
    assert f"{tmp_path / 'a' / 'leaderboard.json'} (oracle)" in lines[0]
    assert f"{tmp_path / 'b' / 'leaderboard.json'} (oracle)" in lines[0]
    assert not (tmp_path / "board" / "leaderboard.md").exists()


def test_a_suite_hash_decides_and_bad_files_are_named(runs, tmp_path, capsys):
    _report(capsys, tmp_path / "a", runs / "oracle")
    doc = json.loads((tmp_path / "a" / "leaderboard.json").read_text())
    for name, sha in (("x.json", "ab" * 32), ("y.json", "cd" * 32)):
        doc["rows"][0].update(suite="l4-v1", suite_sha256=sha)
        (tmp_path / name).write_text(json.dumps(doc))
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "x.json", tmp_path / "y.json")
    assert code == 2 and f"rows differ in suite_sha256: {tmp_path / 'x.json'} (oracle) has \"{'ab' * 32}\"" in err
    # a split or a track of a frozen suite shares the file's SHA-256, not its tasks: refused by its id
    for name, suite in (("lite.json", "l4-v1-lite/nav"), ("full.json", "l4-v1")):
        doc["rows"][0].update(suite=suite, suite_sha256="ab" * 32)
        (tmp_path / name).write_text(json.dumps(doc))
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "lite.json", tmp_path / "full.json")
    assert code == 2 and 'rows differ in suite: ' in err and '"l4-v1-lite/nav"' in err, err
    (tmp_path / "bad.json").write_text("{not json")
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "bad.json")
    assert code == 2 and err.strip() == f"spatialact leaderboard: error: {tmp_path / 'bad.json'}: not valid JSON " \
                                        f"(Expecting property name enclosed in double quotes at line 1)"
    (tmp_path / "norow.json").write_text(json.dumps({"rows": [{"run": "x"}]}))
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "norow.json")
    assert code == 2 and "norow.json: field 'overall.skill'" in err
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "missing.json")
    assert code == 2 and "missing.json: no such file" in err
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)  # no traceback from a recursing decoder
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "deep.json")
    assert code == 2 and "deep.json: nested deeper than 256 levels" in err and len(err.strip().splitlines()) == 1
    os.mkfifo(tmp_path / "pipe.json")  # never waited on
    code, _, err = _board(capsys, tmp_path / "board", tmp_path / "pipe.json")
    assert code == 2 and "pipe.json: is a FIFO" in err


def test_no_secret_reaches_a_row(server, tmp_path, capsys, api_key):
    pytest.importorskip("openai")
    save_tasks(image_tasks(tmp_path / "tasks", 2), tmp_path / "tasks.jsonl")
    params = json.dumps({"extra_headers": {"X-Trace": "trace-value-8d2f"}, "top_p": 1})
    out = tmp_path / "api"
    assert main(["eval", "--tasks", str(tmp_path / "tasks.jsonl"), "--env", "none", "--no-progress", "--out", str(out),
                 "--agent", "openai", "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={server.url}",
                 "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", f"params={params}",
                 "--agent-arg", "price_in=2.5"]) == 0
    js = _report(capsys, tmp_path / "rep", out)
    row = js["leaderboard"][0]
    assert row["agent_options"] == {"model": "test-vlm", "base_url": server.url, "params": {"top_p": 1},
                                    "price_in": 2.5}
    assert row["model"] == "test-vlm" and row["overall"]["prompt_tokens"] == 2 * 321
    assert row["overall"]["cost_usd"] == pytest.approx(2 * 321 * 2.5e-6)
    assert _board(capsys, tmp_path / "board", tmp_path / "rep" / "leaderboard.json")[0] == 0
    for f in ("rep/leaderboard.json", "board/leaderboard.md", "board/leaderboard.html", "board/leaderboard.csv"):
        text = (tmp_path / f).read_text()
        for secret in (SECRET, "SPATIALACT_TEST_KEY", "api_key", "X-Trace", "trace-value", "extra_headers"):
            assert secret not in text, (f, secret)


def test_scrub_options_by_hand():
    got = scrub_options({"model": "m", "api_key_env": "K", "api_key_file": "/k", "token": "t", "cache_dir": "/c",
                         "params": {"top_p": 1, "headers": {"A": "b"}, "Authorization": "x", "nested": [{"secret": 1,
                                                                                                         "ok": 2}]},
                         "base_url": "https://user:pw@host.example:8000/v1?key=abc#frag"})
    assert got == {"model": "m", "params": {"top_p": 1, "nested": [{"ok": 2}]},
                   "base_url": "https://host.example:8000/v1"}


def test_outputs_follow_the_output_rule_and_text_cells_stay_text(runs, tmp_path, capsys):
    _report(capsys, tmp_path / "a", runs / "oracle")
    doc = json.loads((tmp_path / "a" / "leaderboard.json").read_text())
    doc["rows"][0].update(run="=HYPERLINK(\"http://x\")", model="+<b>m</b>")
    (tmp_path / "evil.json").write_text(json.dumps(doc))
    board = tmp_path / "board"
    board.mkdir()
    os.mkfifo(board / "leaderboard.csv")
    code, _, err = _board(capsys, board, tmp_path / "evil.json")
    assert code == 2 and "named pipe" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in board.iterdir()) == ["leaderboard.csv"]  # refused before any work
    (board / "leaderboard.csv").unlink()
    assert _board(capsys, board, tmp_path / "evil.json")[0] == 0
    row = next(csv.DictReader((board / "leaderboard.csv").open()))
    assert row["run"] == "'=HYPERLINK(\"http://x\")" and row["model"] == "'+<b>m</b>"
    assert "<b>m</b>" not in (board / "leaderboard.html").read_text()
    (tmp_path / "a" / "leaderboard.json").unlink()
    os.mkfifo(tmp_path / "a" / "leaderboard.json")
    capsys.readouterr()
    assert main(["report", str(runs / "oracle"), "--out", str(tmp_path / "a")]) == 2
    assert "named pipe" in capsys.readouterr().err
