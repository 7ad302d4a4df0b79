"""Dataset aggregation, bootstrap intervals, hierarchical scores, skill and paired differences, and question scores
(docs/scoring.md)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from spatialact.scorers import (DEFAULT_TREE, aggregate_episodes, bootstrap_ci, hierarchical_scores, holm, leaf_of,
                                load_tree, paired_difference, score_multiple_choice, score_numeric, skill_summary)


def recs():
    return [
        {"score": 1.0, "kind": "nav", "source": "proc", "tags": {"difficulty": "easy"}},
        {"score": 0.6, "kind": "nav", "source": "proc", "tags": {"difficulty": "hard"}},
        {"score": 0.2, "kind": "manip", "source": "droid", "tags": {"difficulty": "hard", "view": "low"}},
        {"score": 0.6, "kind": "hand", "source": "egodex", "tags": {}},
    ]


# ---------------------------------------------------------------- aggregation ----------------------------------
def test_means_and_groups():
    a = aggregate_episodes(recs())
    assert a["overall"]["mean"] == pytest.approx(0.6) and a["overall"]["n"] == 4
    assert a["kind"]["nav"]["mean"] == pytest.approx(0.8) and a["kind"]["manip"]["n"] == 1
    assert a["source"]["proc"]["mean"] == pytest.approx(0.8)
    assert a["tags"]["difficulty=hard"]["mean"] == pytest.approx(0.4) and a["tags"]["difficulty=hard"]["n"] == 2
    assert a["tags"]["view=low"]["mean"] == pytest.approx(0.2)
    assert "difficulty=null" not in a["tags"]  # a record without the tag is in none of its groups
    o = a["overall"]
    assert 0.2 <= o["ci_low"] <= o["mean"] <= o["ci_high"] <= 1.0
    # one value: the interval is that value
    assert a["kind"]["manip"]["ci_low"] == a["kind"]["manip"]["ci_high"] == 0.2
    assert json.loads(json.dumps(a)) == a


def test_bootstrap_is_the_percentile_bootstrap_with_seed_0():
    x = np.array([0.0, 0.25, 0.5, 1.0, 1.0, 0.75, 0.1])
    rng = np.random.default_rng(0)
    means = x[rng.integers(0, len(x), size=(1000, len(x)))].mean(axis=1)
    want = tuple(np.quantile(means, [0.025, 0.975]))
    assert bootstrap_ci(x) == pytest.approx(want, abs=1e-12)
    assert bootstrap_ci(x, seed=0) == bootstrap_ci(x, seed=0)  # deterministic
    assert bootstrap_ci(x, seed=1) != bootstrap_ci(x, seed=0)
    lo, hi = bootstrap_ci(np.full(50, 0.3))
    assert lo == pytest.approx(0.3) and hi == pytest.approx(0.3)
    assert all(math.isnan(v) for v in bootstrap_ci([]))


def test_bootstrap_blocks_do_not_change_the_draws(monkeypatch):
    import spatialact.scorers.aggregate as agg

    x = np.random.default_rng(5).random(1000)
    full = agg.bootstrap_ci(x)
    monkeypatch.setattr(agg, "_MAX_DRAWS", 3000)  # 3 resamples per block
    assert agg.bootstrap_ci(x) == full


def test_bootstrap_interval_covers_the_truth_usually():
    # 95% interval of the mean of 200 uniform draws should contain 0.5 in most of 40 data sets.
    rng = np.random.default_rng(3)
    hits = sum(lo <= 0.5 <= hi for lo, hi in (bootstrap_ci(rng.random(200), n_boot=300) for _ in range(40)))
    assert hits >= 33


# ---------------------------------------------------------------- skill and paired differences -----------------
def _brute_resamples(n, n_boot, seed):
    """The one bootstrap's index draws, one resample at a time."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n, size=n) for _ in range(n_boot)]


def test_skill_hand_computed_three_episodes():
    s, s0 = [0.5, 0.8, 0.2], [0.4, 0.6, 0.2]
    r = skill_summary(s, s0)  # mean s 0.5, mean s0 0.4: (0.5 - 0.4) / (1 - 0.4) = 1/6
    assert r["skill"] == pytest.approx(1 / 6) and r["score"] == pytest.approx(0.5) and r["s0"] == pytest.approx(0.4)
    assert r["n"] == 3 and set(r) == {"skill", "lo", "hi", "n", "score", "s0"}
    # the per-episode mean would be ((0.1/0.6) + (0.2/0.4) + 0/0.8) / 3 = 0.2222: not what skill is
    assert r["skill"] != pytest.approx((0.1 / 0.6 + 0.2 / 0.4 + 0.0) / 3)
    # the interval: percentiles of the skill of each resample (s and s0 on the same indices)
    x, x0 = np.array(s), np.array(s0)
    boots = []
    for idx in _brute_resamples(3, 1000, 0):
        m0 = x0[idx].mean()
        boots.append((x[idx].mean() - m0) / (1 - m0))
    assert (r["lo"], r["hi"]) == pytest.approx(tuple(np.quantile(boots, [0.025, 0.975])), abs=1e-12)
    assert r["lo"] <= r["skill"] <= r["hi"]


def test_skill_edges():
    assert skill_summary([1.0, 1.0], [0.3, 0.5])["skill"] == 1.0  # the ground truth
    assert skill_summary([0.3, 0.5], [0.3, 0.5])["skill"] == 0.0  # doing nothing
    assert skill_summary([0.1, 0.2], [0.3, 0.5])["skill"] == pytest.approx((0.15 - 0.4) / 0.6)  # worse: negative
    one = skill_summary([0.7], [0.4])
    assert one["skill"] == pytest.approx(0.5) and one["lo"] == one["hi"] == one["skill"]
    for r in (skill_summary([], []), skill_summary([0.9], [1.0])):  # no episode; no room above doing nothing
        assert math.isnan(r["skill"]) and math.isnan(r["lo"]) and math.isnan(r["hi"])
    # a non-finite s or s0 (an unscored episode, a failure record's null s0) leaves the episode out
    assert skill_summary([0.5, math.nan, 0.8], [0.4, 0.2, math.nan]) == skill_summary([0.5], [0.4])
    with pytest.raises(ValueError, match="s0"):
        skill_summary([0.5, 0.6], [0.4])


def test_skill_interval_deterministic_by_seed_and_contains_the_point():
    rng = np.random.default_rng(2)
    s0 = rng.uniform(0.2, 0.7, 300)
    s = np.clip(s0 + rng.normal(0.1, 0.2, 300), 0, 1)
    a, b, c = skill_summary(s, s0, seed=4), skill_summary(s, s0, seed=4), skill_summary(s, s0, seed=5)
    assert a == b and a != c
    assert a["lo"] < a["skill"] < a["hi"]
    assert skill_summary(s, s0, level=0.5)["hi"] - skill_summary(s, s0, level=0.5)["lo"] < a["hi"] - a["lo"]


def test_paired_difference_is_a_brute_force_loop():
    rng = np.random.default_rng(7)
    a, b = rng.random(12), rng.random(12)
    s0 = rng.uniform(0.1, 0.5, 12)
    boots_mean, boots_skill = [], []
    for idx in _brute_resamples(12, 500, 3):
        boots_mean.append(a[idx].mean() - b[idx].mean())
        m0 = s0[idx].mean()
        boots_skill.append((a[idx].mean() - m0) / (1 - m0) - (b[idx].mean() - m0) / (1 - m0))
    r = paired_difference(a, b, n_boot=500, seed=3)
    assert r["diff"] == pytest.approx(a.mean() - b.mean()) and r["n"] == 12
    assert (r["lo"], r["hi"]) == pytest.approx(tuple(np.quantile(boots_mean, [0.025, 0.975])), abs=1e-12)
    r = paired_difference(a, b, s0, s0, n_boot=500, seed=3)
    m0 = s0.mean()
    assert r["diff"] == pytest.approx((a.mean() - b.mean()) / (1 - m0))
    assert (r["lo"], r["hi"]) == pytest.approx(tuple(np.quantile(boots_skill, [0.025, 0.975])), abs=1e-12)
    assert paired_difference(a, b, s0, n_boot=500, seed=3) == r  # b_s0 defaults to a_s0 (same tasks)
    # s0 that differ (another weighting of the same tasks): each side's skill on the same indices
    s0b = s0 * 0.8
    boots = []
    for idx in _brute_resamples(12, 500, 3):
        m0, m0b = s0[idx].mean(), s0b[idx].mean()
        boots.append((a[idx].mean() - m0) / (1 - m0) - (b[idx].mean() - m0b) / (1 - m0b))
    r = paired_difference(a, b, s0, s0b, n_boot=500, seed=3)
    assert r["diff"] == pytest.approx((a.mean() - s0.mean()) / (1 - s0.mean())
                                      - (b.mean() - s0b.mean()) / (1 - s0b.mean()))
    assert (r["lo"], r["hi"]) == pytest.approx(tuple(np.quantile(boots, [0.025, 0.975])), abs=1e-12)
    assert set(r) == {"diff", "lo", "hi", "n", "p"}


def test_paired_difference_wilcoxon_is_scipys():
    from scipy.stats import wilcoxon

    rng = np.random.default_rng(8)
    a = rng.random(30)
    b = np.clip(a - rng.normal(0.05, 0.1, 30), 0, 1)
    r = paired_difference(a, b)
    assert r["p"] == pytest.approx(wilcoxon(a - b, alternative="two-sided").pvalue, rel=1e-12)
    big = rng.random(200)  # the normal approximation beyond scipy's exact range
    r = paired_difference(big, big * 0.9)
    assert r["p"] == pytest.approx(wilcoxon(big - big * 0.9).pvalue, rel=1e-12) and r["p"] < 1e-6
    same = paired_difference([0.2, 0.5, 0.7], [0.2, 0.5, 0.7])
    assert same["p"] == 1.0 and same["diff"] == 0.0 and same["lo"] == same["hi"] == 0.0
    none = paired_difference([], [])
    assert none["n"] == 0 and math.isnan(none["p"]) and math.isnan(none["diff"])
    with pytest.raises(ValueError, match="b"):
        paired_difference([0.1, 0.2], [0.1])


def test_paired_counts_beyond_the_exact_size(monkeypatch):
    import spatialact.scorers.aggregate as agg

    # few distinct rows: the counts resampling is exact (the same distribution as index draws)
    rng = np.random.default_rng(4)
    n = 3000
    s0 = rng.integers(0, 3, n) / 5
    s = np.clip(s0 + rng.integers(-1, 3, n) / 4, 0, 1)
    by_index = skill_summary(s, s0, n_boot=2000)
    monkeypatch.setattr(agg, "_EXACT_MAX", 100)
    by_counts = skill_summary(s, s0, n_boot=2000)
    assert by_counts["skill"] == by_index["skill"]
    assert by_counts["lo"] == pytest.approx(by_index["lo"], abs=0.01) and by_counts["hi"] == pytest.approx(
        by_index["hi"], abs=0.01)
    mult, vals = agg._cells(np.stack([s, s0], axis=1))
    assert len(mult) <= 15 and mult.sum() == n
    # many distinct rows: a grid of cells, each the mean of its rows (the interval's width barely changes)
    s = rng.random(n)
    mult, vals = agg._cells(np.stack([s, s0], axis=1))
    assert mult.sum() == n and len(mult) <= agg._MAX_CELLS
    assert vals.T @ mult / n == pytest.approx([s.mean(), s0.mean()])
    w = skill_summary(s, s0, n_boot=2000)
    monkeypatch.setattr(agg, "_EXACT_MAX", 10**9)
    w_index = skill_summary(s, s0, n_boot=2000)
    assert (w["hi"] - w["lo"]) == pytest.approx(w_index["hi"] - w_index["lo"], rel=0.1)
    # one column through the paired path is bootstrap_ci's counts, value for value (few distinct values)
    monkeypatch.setattr(agg, "_EXACT_MAX", 100)
    x = rng.integers(0, 7, n) / 6.0
    two = agg.bootstrap_means(np.stack([x, x], axis=1), 500, 1)
    assert np.allclose(two[:, 0], agg._count_means(x, 500, 1), rtol=0, atol=1e-12)


def test_paired_resampling_is_fast():
    import time

    rng = np.random.default_rng(0)
    a, b, s0 = rng.random(5000), rng.random(5000), rng.uniform(0.2, 0.6, 5000)
    paired_difference(a[:20], b[:20])  # scipy imported
    t = time.perf_counter()
    skill_summary(a, s0)
    paired_difference(a, b, s0, s0)
    assert time.perf_counter() - t < 1.0


def test_holm_hand_computed():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    got = holm([0.01, math.nan, 0.04, None])  # NaN passes through and does not count: m = 2
    assert got[0] == pytest.approx(0.02) and got[2] == pytest.approx(0.04)
    assert math.isnan(got[1]) and math.isnan(got[3])
    assert holm([0.5, 0.6]) == [1.0, 1.0]  # capped at 1
    assert holm([]) == [] and holm([0.2]) == [0.2]


def test_bad_scores_are_excluded_and_counted():
    r = recs() + [{"score": None, "kind": "nav"}, {"score": float("nan"), "kind": "nav"}, {"kind": "nav"}]
    a = aggregate_episodes(r)
    assert a["overall"]["n"] == 4 and a["n_excluded"] == 3 and a["kind"]["nav"]["n"] == 2
    assert aggregate_episodes([])["overall"] == {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    b = aggregate_episodes([{"s": 0.5, "kind": "nav"}], score_key="s", by=("kind",))
    assert b["overall"]["mean"] == 0.5 and set(b) >= {"overall", "kind"} and "tags" not in b


# ---------------------------------------------------------------- hierarchy ------------------------------------
def test_default_tree_renormalises_and_reports_coverage():
    h = hierarchical_scores(recs())
    # Agentic Navigation 0.8, Robotic Arm mean(0.2, 0.6) = 0.4 → Goal-Driven 0.6; Open-world has no data,
    # so L4 = 0.6 (renormalised), coverage 0.5, lmms-eval's missing-as-zero rule gives 0.5·0.6.
    assert h["nodes"]["L4/Goal-Driven Execution/Agentic Navigation"]["score"] == pytest.approx(0.8)
    assert h["nodes"]["L4/Goal-Driven Execution/Robotic Arm"]["n"] == 2
    assert h["nodes"]["L4/Goal-Driven Execution"]["score"] == pytest.approx(0.6)
    assert h["score"] == pytest.approx(0.6) and h["coverage"] == pytest.approx(0.5)
    assert h["score_missing_as_zero"] == pytest.approx(0.3)
    assert h["nodes"]["L4/Open-world Exploration"]["score"] is None
    only_nav = hierarchical_scores([r for r in recs() if r["kind"] == "nav"])
    assert only_nav["score"] == pytest.approx(0.8) and only_nav["coverage"] == pytest.approx(0.25)
    assert hierarchical_scores([])["score"] is None


def test_user_tree_in_lmms_eval_layout(tmp_path):
    tree = {"name": "Root", "children": [
        {"name": "A", "weight": 3, "children": [{"name": "Leaf One", "weight": 1}, {"name": "Leaf Two"}]},
        {"name": "B", "children": [{"name": "Leaf Three", "weight": 2}]},
    ]}
    p = tmp_path / "tree.json"
    p.write_text(json.dumps(tree))
    r = [{"score": 1.0, "tags": {"spatree0": "Root", "spatree1": "A", "spatree2": "LeafOne"}},  # lmms-eval tags
         {"score": 0.0, "leaf": "leaf two"},  # name matched without spaces or case
         {"score": 0.5, "tags": {"spatree": "Leaf Three"}},
         {"score": 0.9, "kind": "nav"}]  # its default leaf is not in this tree
    h = hierarchical_scores(r, tree=p)
    # A = (1·1 + 1·0)/2 = 0.5 (missing weight = 1); B = 0.5; Root = (3·0.5 + 1·0.5)/4 = 0.5
    assert h["nodes"]["Root/A"]["score"] == pytest.approx(0.5) and h["score"] == pytest.approx(0.5)
    assert h["coverage"] == 1.0 and h["unmatched"] == {"Agentic Navigation": 1}
    assert hierarchical_scores(r[:1], tree=p)["coverage"] == pytest.approx(3 * 0.5 / 4)


def test_tree_validation(tmp_path):
    assert load_tree()["name"] == DEFAULT_TREE["name"]
    for bad, msg in [({"children": []}, "name"), ({"name": "x", "weight": -1}, "weight"),
                     ({"name": "x", "children": [{"name": "y", "weight": "heavy"}]}, r"children\[0\].*weight"),
                     ({"name": "x", "children": {"a": 1}}, "children")]:
        with pytest.raises(ValueError, match=msg):
            load_tree(bad)
    p = tmp_path / "t.json"
    p.write_text("{nope")
    with pytest.raises(ValueError, match="t.json"):
        load_tree(p)
    with pytest.raises(FileNotFoundError):
        load_tree(tmp_path / "missing.json")


def test_leaf_of():
    assert leaf_of({"kind": "hand"}) == "Robotic Arm"
    assert leaf_of({"kind": "nav", "tags": {"spatree0": "L4", "spatree2": "Route", "spatree10": "X"}}) == "X"
    assert leaf_of({"kind": "zzz"}) is None


def test_full_spatree_tree_from_lmms_eval():
    """lmms-eval's own hierarchy file, read from lmms-eval's environment (.lmms-venv, made by set-up; lmms-eval is
    not in .venv); skipped only where .lmms-venv is missing outside CI."""
    import os
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2] / ".lmms-venv"
    found = sorted(root.glob("lib/python3*/site-packages/lmms_eval/tasks/spatialtreebench/spatree_hierarchy.json"))
    if not found:
        if os.environ.get("CI"):
            pytest.fail("lmms-eval's spatree_hierarchy.json is not in .lmms-venv: set-up makes it")
        pytest.skip(".lmms-venv is missing here (bash scripts/setup.sh makes it)")
    path = found[-1]
    h = hierarchical_scores(recs(), tree=path)
    # Only L4's Goal-Driven Execution has data: root = L4 = 0.6 renormalised; coverage 0.25 · 0.5.
    assert h["score"] == pytest.approx(0.6) and h["coverage"] == pytest.approx(0.125)
    assert h["nodes"]["SpaTree/L4/Goal-Driven Execution"]["score"] == pytest.approx(0.6)


# ---------------------------------------------------------------- questions ------------------------------------
@pytest.mark.parametrize("text,want", [
    ("B", "B"), ("(c)", "C"), ("**D**.", "D"), ("The answer is (B).", "B"), ("Answer: c", "C"),
    ("<think>maybe A</think>\nAnswer: D", "D"), ("Options (A) and (B) differ; final answer: A", "A"),
    ("A. the chair\n", "A"), ("I think A or B", None), ("", None), ("Answer: Z", None), ("(A) or (B)?", None),
])
def test_multiple_choice_extraction(text, want):
    r = score_multiple_choice(text, "B", options=["left", "right", "up", "down"])
    assert r["pred"] == want
    assert r["score"] == (1.0 if want == "B" else 0.0)
    assert r["reason"] == (None if want else "parse_error")


def test_multiple_choice_option_text_and_no_random_fallback():
    opts = ["pan left", "pan right", "tilt up"]
    assert score_multiple_choice("You should pan right here.", "B", opts)["score"] == 1.0
    assert score_multiple_choice("pan left or pan right", "B", opts)["pred"] is None
    # the same unparseable text always scores 0
    assert {score_multiple_choice("hmm", "A")["score"] for _ in range(20)} == {0.0}


def test_numeric_scores():
    r = score_numeric(3.0, 2.0)
    assert r["rel_error"] == 0.5 and r["delta2"] and r["mra"] == 0.0
    r = score_numeric(2.05, 2.0)  # rel 0.025 < 0.05: every threshold
    assert r["mra"] == 1.0 and r["delta2"]
    r = score_numeric("about 2.36 m", 2.0)  # rel 0.18: thresholds 0.50 … 0.80 → 7 of 10
    assert r["rel_error"] == pytest.approx(0.18) and r["mra"] == pytest.approx(0.7) and r["pred"] == 2.36
    assert not score_numeric(5.0, 2.0)["delta2"] and score_numeric(1.0, 2.0)["delta2"]
    assert not score_numeric(-2.0, 2.0)["delta2"] and not score_numeric(0.0, 2.0)["delta2"]
    assert score_numeric(-3.0, -2.0)["delta2"]
    assert score_numeric(0.0, 0.0) == {"rel_error": 0.0, "delta2": True, "mra": 1.0, "pred": 0.0, "reason": None}
    assert score_numeric(0.1, 0.0)["rel_error"] == math.inf
    for bad in ["no idea", None, float("nan"), float("inf"), True]:
        r = score_numeric(bad, 2.0)
        assert r["reason"] == "parse_error" and r["mra"] == 0.0 and not r["delta2"]
    with pytest.raises(ValueError):
        score_numeric(1.0, float("nan"))


def test_leaf_values_equal_records():
    r = recs()
    by_leaf: dict = {}
    for x in r:
        by_leaf.setdefault(leaf_of(x), []).append(x["score"])
    assert hierarchical_scores(leaf_values=by_leaf) == hierarchical_scores(r)


# ---------------------------------------------------------------- large groups, many groups ---------------------
def test_large_groups_resample_multinomial_counts_over_distinct_values():
    import spatialact.scorers.aggregate as agg

    rng = np.random.default_rng(7)
    n = agg._EXACT_MAX + 50_001
    x = rng.choice([0.0, 0.25, 1.0], size=n, p=[0.3, 0.3, 0.4])
    vals, mult = np.unique(x, return_counts=True)
    counts = np.random.default_rng(0).multinomial(n, mult / n, size=1000)
    want = tuple(np.quantile((counts * vals).sum(axis=1) / n, [0.025, 0.975]))
    got = bootstrap_ci(x)
    assert got == pytest.approx(want, abs=1e-15)
    # the same distribution as index resampling: the width is 2·1.96·sd/√n within Monte Carlo error
    se = x.std() / math.sqrt(n)
    assert got[1] - got[0] == pytest.approx(2 * 1.959964 * se, rel=0.1)
    assert got[0] < x.mean() < got[1]


def test_large_groups_with_many_distinct_values_are_binned_within_a_bin_width(monkeypatch):
    import spatialact.scorers.aggregate as agg

    exact_max = agg._EXACT_MAX
    x = np.random.default_rng(8).random(exact_max + 1)
    lo, hi = bootstrap_ci(x)
    # the index bootstrap of the same data (forced): same interval up to Monte Carlo error (~3% of the width)
    monkeypatch.setattr(agg, "_EXACT_MAX", 10**9)
    lo_i, hi_i = agg.bootstrap_ci(x)
    width = hi_i - lo_i
    assert abs(lo - lo_i) < 0.1 * width and abs(hi - hi_i) < 0.1 * width
    # blocks do not change the draws of the counts resampling either
    monkeypatch.setattr(agg, "_EXACT_MAX", exact_max)
    monkeypatch.setattr(agg, "_MAX_DRAWS", 50_000)  # 3 resamples per block of 4 096 bins
    assert agg.bootstrap_ci(x) == (lo, hi)


def test_a_measurement_tag_is_not_broken_down():
    r = [{"score": i / 300, "kind": "nav", "source": "s", "tags": {"distance_m": round(0.5 + i / 1000, 4),
                                                                    "level": f"L{i % 3}"}} for i in range(300)]
    a = aggregate_episodes(r)
    assert a["skipped"] == {"tags:distance_m": 300}
    assert set(a["tags"]) == {"level=L0", "level=L1", "level=L2"} and a["tags"]["level=L1"]["n"] == 100
    b = aggregate_episodes(r, max_groups=None)
    assert b["skipped"] == {} and len(b["tags"]) == 303
    # groups equal to the whole set (one kind, one source) repeat the overall summary exactly
    assert a["kind"]["nav"] == a["source"]["s"] == a["overall"]
    assert b["tags"]["level=L2"] == aggregate_episodes([x for x in r if x["tags"]["level"] == "L2"])["overall"]


def test_records_without_tags_give_an_empty_breakdown():
    a = aggregate_episodes([{"score": 0.5, "kind": "nav"}, {"score": 1.0, "kind": "nav"}])
    assert a["tags"] == {} and a["overall"]["n"] == 2
