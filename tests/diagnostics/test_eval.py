"""The diagnostics on records the real runner writes: `eval --flip`, the ladder and viewpoint suites, the report.

Shown here: the oracle under --flip has mirror inconsistency exactly 0 and RPDR exactly 1 at every level of
both ladders; the constant agent has the largest |left/right bias| and the largest mirror inconsistency of the
baselines; the figures of the report are those of the records.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("pybullet")

from spatialact.action_space import mirror, parse_response  # noqa: E402
from spatialact.diagnostics import (bias_summary, flip_summary, ladder_summary, lr_bias,  # noqa: E402
                                    run_diagnostics, viewpoint_delta, viewpoint_summary)
from spatialact.diagnostics.summaries import calibration_levels, record_sequence  # noqa: E402
from spatialact.vocab import LEVELS  # noqa: E402
from spatialact.evaluation.episode import EpisodeConfig, run_episode  # noqa: E402
from spatialact.evaluation.results import read_records  # noqa: E402
from spatialact.evaluation.runner import AgentSpec, run_eval  # noqa: E402
from spatialact.taskgen.suites import builtin_suite  # noqa: E402

AGENTS = ("oracle", "constant", "random", "stay", "noisy-oracle")


@pytest.fixture(scope="module")
def tasks():
    return builtin_suite("diagnostics", seed=0)


@pytest.fixture(scope="module")
def runs(tasks, tmp_path_factory):
    """Each baseline run on the diagnostics suite plain and mirrored, by the real runner: {agent: records}."""
    root = tmp_path_factory.mktemp("flip")
    out = {}
    cfg = EpisodeConfig(renderer="tiny", width=64, height=64)
    for name in AGENTS:
        d = root / name
        s = run_eval(tasks, AgentSpec(name), cfg, d, task_source="suite:diagnostics:seed=0", progress=False,
                     echo=False, variants=("", "mirror"))
        assert s.n_new == 2 * len(tasks) and s.n_failed == 0
        out[name] = (d, read_records(d))
    return out


def test_the_suite_has_every_level_and_a_viewpoint_pair_per_kind(tasks):
    for kind in ("nav", "manip"):
        levels = sorted(t.tags["level"] for t in tasks if t.kind == kind and "level" in t.tags)
        assert levels == list(LEVELS)
        pair = [t for t in tasks if t.kind == kind and "pair" in t.tags]
        assert sorted(t.tags["viewpoint"] for t in pair) == ["common", "uncommon"]
        assert len({t.tags["pair"] for t in pair}) == 1
        assert np.array_equal(pair[0].goal_pose, pair[1].goal_pose)  # paired tasks share the goal ...
        assert pair[0].scene["seed"] == pair[1].scene["seed"]  # ... and the scene (manip: up to its camera)


def test_flip_writes_two_records_per_task_told_apart_by_the_variant(runs, tasks):
    _, recs = runs["oracle"]
    assert len(recs) == 2 * len(tasks)
    assert sorted({r["variant"] for r in recs}) == ["", "mirror"]
    assert len({r["key"] for r in recs}) == len(recs)
    for r in recs:
        assert r["key"].endswith("|mirror") == (r["variant"] == "mirror")
        gt = record_sequence(r, "gt")
        # the mirrored agent answered mirror(gt) in the mirrored world; its answer, mirrored back, is the gt
        assert record_sequence(r) == gt and r["score"] == 1.0
        if r["variant"] == "mirror":
            assert parse_response(r["response"], sizes=gt.sizes).sequence == mirror(gt)


def test_oracle_under_flip_is_mirror_consistent_and_drops_nothing_along_the_ladder(runs):
    _, recs = runs["oracle"]
    f = flip_summary(recs)
    assert f["n_pairs"] == 14 and f["inconsistency_nan"] == 0
    assert f["inconsistency"]["mean"] == 0.0 and f["inconsistency"]["ci_high"] == 0.0  # exactly 0
    assert f["plain"]["mean"] == f["mirrored"]["mean"] == f["paired"]["mean"] == 1.0
    assert f["bias_pred"] == f["bias_gt"] == 0.0  # the answers as given: gt and mirror(gt)
    lad = ladder_summary(recs)
    for kind in ("nav", "manip"):
        assert lad[kind]["levels"] == list(LEVELS)
        assert list(lad[kind]["rpdr"].values()) == [1.0, 1.0, 1.0, 1.0]  # exactly 1 at every level
        assert all(s["mean"] == 1.0 for s in lad[kind]["scores"].values())


def test_constant_agent_has_the_largest_bias_and_inconsistency(runs):
    flips = {a: flip_summary(recs) for a, (_, recs) in runs.items()}
    biases = {a: bias_summary(recs) for a, (_, recs) in runs.items()}
    const = flips["constant"]
    assert const["bias_pred"] == 1.0 and const["bias_gt"] == 0.0  # only Truck Left, in both worlds
    assert const["inconsistency"]["mean"] == pytest.approx(0.5)  # every pair: opposite translations, no rotation
    others = [a for a in AGENTS if a != "constant"]
    for a in others:
        b = flips[a]["bias_pred"]
        assert b is None or abs(b) < const["bias_pred"], a
        assert flips[a]["inconsistency"]["mean"] < const["inconsistency"]["mean"], a
        pb = biases[a]["bias_pred"]
        assert pb is None or abs(pb) < abs(biases["constant"]["bias_pred"]), a
    assert flips["stay"]["bias_pred"] is None  # no left or right unit at all: undefined, not 0
    assert flips["stay"]["inconsistency"]["mean"] == 0.0  # Stay is trivially consistent
    # the constant agent's labels: one primitive of 12 → CV sqrt(11)
    assert biases["constant"]["label_cv"] == pytest.approx(math.sqrt(11))
    assert biases["oracle"]["label_cv"] == pytest.approx(biases["oracle"]["label_cv_gt"])
    assert biases["oracle"]["label_cv_normalised"] == 0.0
    conf = np.asarray(biases["oracle"]["confusion"])
    assert (conf.sum(axis=(1, 2)) == conf[0].sum()).all() and np.trace(conf, axis1=1, axis2=2).tolist() == \
        conf.sum(axis=(1, 2)).tolist()  # the oracle's matrices are diagonal


def test_flip_figures_are_those_of_the_records(runs):
    _, recs = runs["noisy-oracle"]
    plain = {r["task_id"]: r for r in recs if r["variant"] == ""}
    mirr = {r["task_id"]: r for r in recs if r["variant"] == "mirror"}
    f = flip_summary(recs)
    assert f["plain"]["mean"] == pytest.approx(np.mean([r["score"] for r in plain.values()]))
    assert f["paired"]["mean"] == pytest.approx(np.mean([min(plain[t]["score"], mirr[t]["score"]) for t in plain]))
    from spatialact.diagnostics import mirror_inconsistency

    inc = [mirror_inconsistency(record_sequence(plain[t]), mirror(record_sequence(mirr[t])), kind=plain[t]["kind"])
           for t in plain]
    assert f["inconsistency"]["mean"] == pytest.approx(np.mean(inc)) and f["inconsistency"]["mean"] > 0
    given = [record_sequence(r) for r in plain.values()] + [mirror(record_sequence(r)) for r in mirr.values()]
    assert f["bias_pred"] == pytest.approx(lr_bias(given))


def test_viewpoint_delta_from_the_pairs(runs):
    for agent in ("oracle", "noisy-oracle"):
        _, recs = runs[agent]
        vp = viewpoint_summary(recs)
        for kind in ("nav", "manip"):
            by = {r["tags"]["viewpoint"]: r["score"] for r in recs
                  if r["variant"] == "" and r["kind"] == kind and "pair" in r["tags"]}
            d = viewpoint_delta(by["common"], by["uncommon"])
            got = vp[kind]["delta"]
            assert (got is None and math.isnan(d)) or got == pytest.approx(d)
            assert vp[kind]["n_pairs"] == 1
        assert vp["all"]["n_pairs"] == 2
    assert viewpoint_summary(runs["oracle"][1])["all"]["delta"] == 0.0


@pytest.mark.parametrize("scores,delta,ci", [
    # two pairs: the four equally likely resamples (pair 0 twice, pair 1 twice, one of each) give δ = −0.5, 0, −1/3;
    # with 1000 resamples the 2.5 % and 97.5 % quantiles are the extremes
    ({"nav": (0.8, 0.4), "manip": (0.4, 0.4)}, -1 / 3, (-0.5, 0.0)),
    # every pair's uncommon score is half its common score: δ = −0.5 under any resample of whole pairs (resampling
    # the two sides independently would not give a point)
    ({"nav": (0.9, 0.45), "manip": (0.2, 0.1)}, -0.5, (-0.5, -0.5)),
    # a resample of pair 0 twice has common mean 0 (δ undefined) and is left out: −0.5 and −0.1 remain
    ({"nav": (0.0, 0.2), "manip": (0.5, 0.25)}, -0.1, (-0.5, -0.1)),
])
def test_viewpoint_delta_interval_resamples_whole_pairs(runs, scores, delta, ci):
    """The paired bootstrap interval of δ on the records a run writes, with their scores set to hand-picked values."""
    recs = []
    for r in runs["oracle"][1]:
        r = dict(r)
        vp = (r.get("tags") or {}).get("viewpoint")
        if r["variant"] == "" and "pair" in (r.get("tags") or {}) and vp in ("common", "uncommon"):
            r["score"] = scores[r["kind"]][0 if vp == "common" else 1]
        recs.append(r)
    vp = viewpoint_summary(recs, n_boot=1000, seed=3)
    assert vp["all"]["n_pairs"] == 2 and vp["all"]["delta"] == pytest.approx(delta)
    assert vp["all"]["delta_ci"] == pytest.approx(list(ci))
    for kind, (c, u) in scores.items():  # one pair: the interval is the point (or undefined with it)
        d = viewpoint_delta(c, u)
        assert vp[kind]["delta_ci"] == ([None, None] if math.isnan(d) else pytest.approx([d, d]))


def test_ladder_chance_normalised_with_the_calibration_rows(runs):
    calib = {"random": calibration_levels(runs["random"][1]), "oracle": calibration_levels(runs["oracle"][1])}
    lad_rand = ladder_summary(runs["random"][1], calib)
    lad_noisy = ladder_summary(runs["noisy-oracle"][1], calib)
    for kind in ("nav", "manip"):
        for lv in LEVELS:
            r, o = calib["random"][kind][lv], calib["oracle"][kind][lv]
            s = lad_noisy[kind]["scores"][lv]["mean"]
            if o != r:
                assert lad_rand[kind]["normalised"][lv] == 0.0
                assert lad_noisy[kind]["normalised"][lv] == pytest.approx((s - r) / (o - r))


def test_report_has_the_diagnostics_section(runs, tmp_path):
    from spatialact.report import make_report, overall_json

    dirs = [runs[a][0] for a in AGENTS]
    md, html_path = make_report(dirs, tmp_path / "rep")
    html = html_path.read_text(encoding="utf-8")
    text = md.read_text(encoding="utf-8")
    for needle in ("Diagnostics", "FlipEval", "Viewpoint robustness", "Difficulty ladder", "RPDR L1→L2",
                   "Prediction bias", "normalised L1"):
        assert needle in text and needle in html
    for fig in ("diag_flip.png", "diag_viewpoint.png", "diag_ladder.png", "diag_bias_0.png"):
        assert (tmp_path / "rep" / "figures" / fig).is_file()
    assert "pair=" not in text  # a pairing key, not a category
    # the constant agent's row of the FlipEval table: inconsistency 0.5 and bias +1
    flip_part = text[text.index("### FlipEval"):]
    row = next(line for line in flip_part.splitlines() if line.startswith("| constant | 14 |"))
    assert "| 0.500 [0.500, 0.500] | 0 | +1.000 | +0.000 |" in row
    js = overall_json(dirs)
    by = {j["run"]: j for j in js}
    assert by["oracle"]["episodes"] == 14  # the general figures count the plain episodes
    assert by["oracle"]["diagnostics"]["flip"]["inconsistency"]["mean"] == 0.0
    assert by["constant"]["diagnostics"]["ladder"]["nav"]["normalised"]["L1"] is not None
    json.dumps(js)  # JSON-able (NaN written as null)


def test_unparsed_answers_are_counted_apart(tasks):
    """An answer that does not parse is a result (score 0) but has no mirror inconsistency: NaN, counted apart."""
    from spatialact.agents.base import AgentTurn

    class Mumbler:
        name = "mumbler"

        def reset(self, task, **kw):
            self.task = task

        def act(self, observation):
            return AgentTurn(text="I am not sure.", parse=parse_response("I am not sure.", sizes=self.task.sizes))

        def describe(self):
            return {"agent": "mumbler", "model": None}

    task = next(t for t in tasks if t.kind == "nav" and t.tags.get("level") == "L1")
    recs = [run_episode(task, Mumbler(), EpisodeConfig(renderer="tiny", width=48, height=48, variant=v))[0]
            for v in ("", "mirror")]
    assert [r["reason"] for r in recs] == ["parse_error", "parse_error"] and recs[1]["variant"] == "mirror"
    f = flip_summary(recs)
    assert f["n_pairs"] == 1 and f["inconsistency_nan"] == 1 and f["inconsistency"]["n"] == 0
    assert f["paired"]["mean"] == 0.0


def test_closed_loop_oracle_under_flip_reaches_the_goal(tasks, tmp_path):
    """Closed loop, the mirrored oracle steers by the mirrored pose it observes; mirrored back, its steps reach the
    real goal and equal the plain run's."""
    nav = [t for t in tasks if t.kind == "nav" and t.tags.get("level") in ("L1", "L3", "L5")]
    cfg = EpisodeConfig(mode="closed-loop", renderer="tiny", width=48, height=48)
    run_eval(nav, AgentSpec("oracle"), cfg, tmp_path / "cl", task_source="t", progress=False, echo=False,
             variants=("", "mirror"))
    recs = read_records(tmp_path / "cl")
    f = flip_summary(recs)
    assert f["inconsistency"]["mean"] == 0.0 and f["n_pairs"] == 3
    assert all(r["success"] and r["final_position_error"] < 1e-6 for r in recs)


def test_eval_flip_cli_prints_the_table_and_refuses_a_changed_variant_set(tasks, tmp_path, capsys):
    from spatialact.cli.main import main
    from spatialact.tasks import save_tasks

    small = [t for t in tasks if t.kind == "nav" and t.tags.get("level") in ("L1", "L2")]
    tf = tmp_path / "tasks.jsonl"
    save_tasks(small, tf)
    base = ["eval", "--tasks", str(tf), "--agent", "constant", "--agent-arg", "action=Truck Left", "--renderer",
            "tiny", "--out", str(tmp_path / "run"), "--no-progress"]
    assert main(base + ["--flip", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["new"] == 4 and out["summary"][0]["episodes"] == 2  # the table: plain episodes
    f = out["flip"]["all"]
    assert f["n_pairs"] == 2 and f["inconsistency"]["mean"] == pytest.approx(0.5) and f["bias_pred"] == 1.0
    assert main(base + ["--flip"]) == 0
    text = capsys.readouterr().out
    assert "FlipEval" in text and "0 episodes run, 4 already done" in text
    assert main(base) == 2  # without --flip: a different configuration
    err = capsys.readouterr().err
    assert "variants" in err and len(err.strip().splitlines()) == 1


def test_demo_row_summarises_the_run(runs):
    from spatialact.cli.demo import DIAG_HEADERS, _diagnostic_row

    row = _diagnostic_row("constant", runs["constant"][1])
    assert set(row) == set(DIAG_HEADERS)
    assert row["L/R bias"] == 1.0 and row["inconsist."] == pytest.approx(0.5)
    assert row["label CV"] == pytest.approx(math.sqrt(11))
    oracle = _diagnostic_row("oracle", runs["oracle"][1])
    assert oracle["ladder nav"] == oracle["ladder manip"] == "1.00/1.00/1.00/1.00/1.00"
    assert run_diagnostics(runs["oracle"][1])["flip"]["inconsistency"]["mean"] == 0.0
    stay = _diagnostic_row("stay", runs["stay"][1])
    assert stay["L/R bias"] is None and stay["label CV"] is None  # undefined: null in the demo's JSON, not NaN
    json.dumps([row, oracle, stay], allow_nan=False)
    json.dumps(run_diagnostics(runs["stay"][1]), allow_nan=False)


@pytest.mark.parametrize("src", ["cam.txt", "droid_v3.0"])
def test_replayed_trajectory_tasks_can_be_flipped(src, tmp_path, capsys):
    """Tasks built from a TUM camera path and a DROID episode (replay scenes) run under --flip closed-loop:
    the mirrored oracle, steering by the mirrored poses it observes, ends where the plain one does."""
    from spatialact.cli.main import main
    from traj_helpers import droid_down_episode as _droid_down_episode
    from traj_helpers import smooth_poses, write_droid, write_tum

    if src == "cam.txt":
        P, t = smooth_poses(120, 30.0, 2, scale=0.8)
        write_tum(tmp_path / src, t, P)
    else:
        write_droid(tmp_path / src, [_droid_down_episode()], version="v3.0")
    tf = tmp_path / "tasks.jsonl"
    assert main(["tasks", "from-trajectory", str(tmp_path / src), "--out", str(tf), "--n", "2", "--no-images"]) == 0
    assert main(["eval", "--tasks", str(tf), "--mode", "closed-loop", "--agent", "oracle", "--renderer", "tiny",
                 "--size", "48", "--flip", "--out", str(tmp_path / "run"), "--no-progress", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    f = out["flip"]["all"]
    assert f["n_pairs"] == 2 and f["inconsistency"]["mean"] == 0.0 and f["inconsistency_nan"] == 0
    recs = read_records(tmp_path / "run")
    plain = {r["task_id"]: r for r in recs if r["variant"] == ""}
    for r in recs:
        assert r["success"], (r["task_id"], r["variant"], r["final_position_error"])
        if r["variant"] == "mirror":
            assert r["final_position_error"] == pytest.approx(plain[r["task_id"]]["final_position_error"], abs=1e-4)
