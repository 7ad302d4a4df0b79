"""The report's paired comparison on runs this test makes with `spatialact eval` (small images, the tiny renderer):
the numbers of the table and of `report --json` are the scorers' own paired_difference and holm on the episodes the
runs share, recomputed here from the records; repeats count once; closed-loop groups add the difference of
success; cells under 10 shared episodes are marked; runs that share nothing get no section."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from _markdown import table_after
from spatialact.cli.main import main
from spatialact.evaluation.results import read_records
from spatialact.report import MIN_PAIRED, RunsDifferWarning, make_report, pair_key, report_json
from spatialact.scorers import holm, paired_difference, skill_summary

pytest.importorskip("pybullet")

SMALL = ["--renderer", "tiny", "--size", "32", "--no-progress"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    d = tmp_path_factory.mktemp("paired")
    jobs = {"n1": ["--suite", "default", "--agent", "noisy-oracle", "--agent-arg", "noise=1"],
            "n4": ["--suite", "default", "--agent", "noisy-oracle", "--agent-arg", "noise=4"],
            "n4x2": ["--suite", "default", "--agent", "noisy-oracle", "--agent-arg", "noise=4", "--repeats", "2"],
            "cl_oracle": ["--suite", "nav:4", "--mode", "closed-loop", "--max-steps", "8", "--agent", "oracle"],
            "cl_noisy": ["--suite", "nav:4", "--mode", "closed-loop", "--max-steps", "8", "--agent", "noisy-oracle",
                         "--agent-arg", "noise=1.5"],
            "other": ["--suite", "nav:2", "--seed", "7", "--agent", "oracle"]}
    for name, args in jobs.items():
        assert main(["eval", *args, *SMALL, "--out", str(d / name)]) == 0, name
    return d


def _by_task(run_dir) -> dict:
    """task id → (mean score, mean s0, mean success) over the plain records of the task (repeats averaged)."""
    groups: dict = {}
    for r in read_records(run_dir):
        if not r.get("variant"):
            groups.setdefault(r["task_id"], []).append(r)
    return {t: (np.mean([r["score"] for r in rs]), np.mean([r["s0"] for r in rs]),
                np.mean([float(r["success"]) for r in rs])) for t, rs in groups.items()}


def _expected(a_dir, b_dir, kinds=None) -> dict:
    a, b = _by_task(a_dir), _by_task(b_dir)
    ids = sorted(t for t in a if t in b and (kinds is None or t.split("-")[0] in kinds))
    skill = paired_difference([a[t][0] for t in ids], [b[t][0] for t in ids], [a[t][1] for t in ids],
                              [b[t][1] for t in ids])
    success = paired_difference([a[t][2] for t in ids], [b[t][2] for t in ids])
    return {"ids": ids, "skill": skill, "success": success}


def _fmt(d) -> str:
    return f"{d['diff']:+.3f} [{d['lo']:+.3f}, {d['hi']:+.3f}]"


def _p(v) -> str:
    return "<0.001" if v < 0.001 else f"{v:.3f}"


def test_one_shot_pairs_are_the_scorers_numbers_holm_corrected_over_the_table(runs, tmp_path):
    md, _ = make_report([runs / "n1", runs / "n4"], tmp_path / "rep")
    text = md.read_text()
    rows = table_after(text, "## Paired comparison")
    groups = ["all", "kind hand", "kind manip", "kind nav"]
    assert [r["group"] for r in rows] == groups
    assert all(r["A − B"] == "noisy-oracle [n1] − noisy-oracle [n4]" for r in rows)
    want = {"all": _expected(runs / "n1", runs / "n4"), "kind hand": _expected(runs / "n1", runs / "n4", {"hand"}),
            "kind manip": _expected(runs / "n1", runs / "n4", {"manip"}),
            "kind nav": _expected(runs / "n1", runs / "n4", {"nav"})}
    assert len(want["all"]["ids"]) == 10 and want["all"]["skill"]["diff"] > 0  # less noise, more skill
    adjusted = holm([want[g]["skill"]["p"] for g in groups])
    for r, g, p_holm in zip(rows, groups, adjusted):
        s = want[g]["skill"]
        n = len(want[g]["ids"])
        assert r["shared episodes"] == (f"{n} †" if n < MIN_PAIRED else str(n))  # the kinds have 3-4 episodes
        assert r["Δ skill [95% CI]"] == _fmt(s) and r["p"] == _p(s["p"]) and r["p (Holm)"] == _p(p_holm)
    assert "Δ success [95% CI]" not in rows[0]  # one-shot: no success column
    assert "† fewer than 10 shared episodes" in text
    # the JSON carries the same numbers, unrounded
    js = report_json([runs / "n1", runs / "n4"])
    assert [p["group"] for p in js["paired"]] == groups
    for p, g, p_holm in zip(js["paired"], groups, adjusted):
        s = want[g]["skill"]
        assert p["skill"]["diff"] == pytest.approx(s["diff"], abs=1e-12)
        assert (p["skill"]["lo"], p["skill"]["hi"], p["skill"]["p"]) == pytest.approx((s["lo"], s["hi"], s["p"]))
        assert p["skill"]["p_holm"] == pytest.approx(p_holm) and p["few"] == (p["n"] < MIN_PAIRED)
    # the per-run skill of the Overall table is the scorers' skill_summary of the records
    a = _by_task(runs / "n1")
    sk = skill_summary([v[0] for v in a.values()], [v[1] for v in a.values()])
    overall = {r["run"]: r for r in table_after(text, "## Overall")}
    assert overall["noisy-oracle [n1]"]["skill [95% CI]"] == f"{sk['skill']:.3f} [{sk['lo']:.3f}, {sk['hi']:.3f}]"


def test_closed_loop_pairs_add_the_difference_of_success(runs, tmp_path):
    md, _ = make_report([runs / "cl_oracle", runs / "cl_noisy"], tmp_path / "rep")
    rows = table_after(md.read_text(), "## Paired comparison")
    assert [r["group"] for r in rows] == ["all", "kind nav"]
    want = _expected(runs / "cl_oracle", runs / "cl_noisy")
    assert len(want["ids"]) == 4 and want["success"]["diff"] > 0  # the oracle succeeds more often
    adjusted = holm([want["skill"]["p"], want["success"]["p"], want["skill"]["p"], want["success"]["p"]])
    r = rows[0]
    assert r["shared episodes"] == "4 †"
    assert r["Δ skill [95% CI]"] == _fmt(want["skill"]) and r["p (Holm)"] == _p(adjusted[0])
    assert r["Δ success [95% CI]"] == _fmt(want["success"]) and r["p (success)"] == _p(want["success"]["p"])
    assert r["p (success, Holm)"] == _p(adjusted[1])


def test_repeats_count_once_and_runs_sharing_nothing_are_not_paired(runs, tmp_path):
    recs = read_records(runs / "n4x2")
    assert len(recs) == 20 and {r["repeat"] for r in recs} == {0, 1}
    assert any(a["score"] != b["score"] for a, b in zip(recs[:10], recs[10:]))  # the repeats answered differently
    js = report_json([runs / "n1", runs / "n4x2", runs / "other"])
    pairs = [p for p in js["paired"] if p["group"] == "all"]
    assert [(p["a"], p["b"]) for p in pairs] == [("noisy-oracle [n1]", "noisy-oracle [n4x2]")]  # "other": no task
    want = _expected(runs / "n1", runs / "n4x2")
    assert pairs[0]["n"] == 10 and pairs[0]["skill"]["diff"] == pytest.approx(want["skill"]["diff"], abs=1e-12)
    assert pairs[0]["skill"]["lo"] == pytest.approx(want["skill"]["lo"])
    with pytest.warns(RunsDifferWarning, match="They share no task"):  # true here: other seed, other tasks
        md, _ = make_report([runs / "n1", runs / "other"], tmp_path / "rep")
    assert "## Paired comparison" not in md.read_text()


def test_the_pairing_key(runs):
    r = read_records(runs / "n1")[0]
    cfg = json.loads((runs / "n1" / "config.json").read_text())["config"]
    assert pair_key(r, r["provenance"], cfg) == ("suite:default:seed=0", r["task_id"], "", "one-shot", "paper")
    prov = dict(r["provenance"], suite="l4-v1", suite_sha256="ab" * 32, task_file_sha256="cd" * 32)
    assert pair_key(r, prov, cfg)[0] == "ab" * 32  # a frozen suite's hash first, then a task file's
    assert pair_key(r, dict(prov, suite_sha256=None), cfg)[0] == "cd" * 32
    assert pair_key(dict(r, mode="closed-loop", variant="mirror"), prov, dict(cfg, profile="paper+rot"))[2:] == \
        ("mirror", "closed-loop", "paper+rot")
    assert math.isfinite(r["s0"])
