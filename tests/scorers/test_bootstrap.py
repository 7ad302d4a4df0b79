"""One bootstrap and one mean-with-interval summary: ``scorers.bootstrap_ci`` (a tuple) and ``scorers.summarise`` (a
dict) are the implementation; ``evaluation.stats.summary_of`` / ``summary_of_records`` (a Summary of loose report
values, of records) and the diagnostics' paired interval adapt them and give the same numbers, under names of their
own. The questions' ``summarise`` is another idea (answer accuracy, CircularEval) under its own name,
``summarise_answers``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from spatialact.evaluation import stats
from spatialact.scorers import bootstrap_ci, percentile_interval, summarise


def test_the_report_summary_is_the_scorers_numbers_for_the_same_values():
    rng = np.random.default_rng(5)
    x = rng.random(37)
    lo, hi = bootstrap_ci(x)
    s = stats.summary_of(list(x))
    assert (s.mean, s.ci_low, s.ci_high, s.n) == (float(x.mean()), lo, hi, 37)
    assert s.to_dict() == summarise(x)
    assert stats.summary_of_records([{"score": v} for v in x]) == s
    # loose values: None, text, NaN and inf are left out, booleans count 0 / 1 (what a report holds)
    loose = [None, "n/a", float("nan"), math.inf, True, False, *x[:5]]
    want = summarise(np.r_[1.0, 0.0, x[:5]], n_boot=300, seed=2)
    assert stats.summary_of(loose, n_boot=300, seed=2).to_dict() == want


def test_one_name_one_meaning():
    """No name is both a scorers statistic and a report adapter with another return type."""
    import spatialact.scorers as scorers

    assert not set(stats.__all__) & set(scorers.__all__)
    assert not hasattr(stats, "bootstrap_ci") and "summarise" not in vars(stats)


def test_summary_from_dict_and_the_empty_group():
    empty = stats.Summary.from_dict(summarise([]))
    assert empty.n == 0 and all(math.isnan(v) for v in (empty.mean, empty.ci_low, empty.ci_high))
    nothing = stats.summary_of([None, "x"])
    assert nothing.n == 0 and math.isnan(nothing.mean) and nothing.fmt() == "–"
    one = stats.Summary.from_dict({"mean": 0.25, "ci_low": 0.25, "ci_high": 0.25, "n": 1})
    assert one == stats.Summary(0.25, 0.25, 0.25, 1) == stats.summary_of([0.25])
    assert one.fmt() == "0.250"


def test_percentile_interval_known_answer():
    # the 2.5 % and 97.5 % quantiles of 0..100 (linear interpolation): 2.5 and 97.5
    assert percentile_interval(np.arange(101.0)) == pytest.approx((2.5, 97.5), abs=1e-12)
    assert percentile_interval(np.arange(101.0), level=0.5) == (25.0, 75.0)
    # bootstrap_ci is the percentile interval of its resampled means
    x = np.random.default_rng(1).random(20)
    rng = np.random.default_rng(0)
    means = x[rng.integers(0, 20, size=(1000, 20))].mean(axis=1)
    assert bootstrap_ci(x) == pytest.approx(percentile_interval(means), abs=1e-12)


def test_the_questions_summary_has_its_own_name():
    import spatialact.questions as q
    from spatialact.questions import scoring

    assert q.summarise is scoring.summarise is scoring.summarise_answers is q.summarise_answers
    recs = [{"record": "question", "question_id": "a", "type": "fov", "format": "multiple_choice", "rotation": r,
             "n_rotations": 2, "correct": r == 0, "score": float(r == 0), "reason": None} for r in (0, 1)]
    s = q.summarise_answers(recs)["all"]
    assert s["accuracy"] == 0.5 and s["accuracy_r0"] == 1.0 and s["circular"] == 0.0 and s["chance"] == 0.5
