"""Means with percentile-bootstrap 95% intervals for reports (docs/scoring.md: 1000 resamples, seed 0), and the
summary of a run that leads with skill (:func:`summary_row`, :func:`summary_table`: ``eval``'s and ``demo``'s tables).

The statistics themselves live in :mod:`spatialact.scorers.aggregate` — one bootstrap
(:func:`spatialact.scorers.bootstrap_ci`, an interval as a tuple) and one summary
(:func:`spatialact.scorers.summarise`, mean, interval and n as a dict) for the whole project, so a report and
``spatialact score`` give the same interval for the same scores. This module only adapts them, under names of its
own: :func:`summary_of` takes report values, which are loose (None, NaN, strings, booleans counted as 0 / 1), and
gives the :class:`Summary` value reports print; :func:`summary_of_records` takes records and a key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from ..records import is_failure
from ..scorers.aggregate import skill_summary
from ..scorers.aggregate import summarise as _summarise  # not re-exported: stats.summary_of is this module's name
from ..vocab import KINDS

__all__ = ["Summary", "summary_of", "summary_of_records", "group_summaries", "episode_skill", "repeat_spread",
           "summary_row", "summary_table", "format_skill"]


@dataclass(frozen=True)
class Summary:
    """``mean`` of ``n`` finite values and its bootstrap interval ``[ci_low, ci_high]`` (NaN when n = 0)."""

    mean: float
    ci_low: float
    ci_high: float
    n: int

    def to_dict(self) -> dict:
        return {"mean": self.mean, "ci_low": self.ci_low, "ci_high": self.ci_high, "n": self.n}

    @classmethod
    def from_dict(cls, d: dict) -> "Summary":
        """From :func:`spatialact.scorers.summarise`'s dict (or :meth:`to_dict`'s): a missing figure is NaN."""
        if not d.get("n"):
            return cls(math.nan, math.nan, math.nan, 0)
        return cls(*(math.nan if d[k] is None else float(d[k]) for k in ("mean", "ci_low", "ci_high")), int(d["n"]))

    def fmt(self, digits: int = 3, ci: bool = True) -> str:
        if self.n == 0:
            return "–"
        s = f"{self.mean:.{digits}f}"
        if ci and self.n > 1:
            s += f" [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}]"
        return s


def _finite(values: Iterable) -> np.ndarray:
    out = []
    for v in values:
        if v is None or isinstance(v, (str, dict, list)):
            continue
        try:
            f = float(v)
        except (TypeError, ValueError):
            continue
        if math.isfinite(f):
            out.append(f)
    return np.asarray(out, dtype=np.float64)


def summary_of(values: Iterable, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> Summary:
    """Mean of the finite values and the percentile bootstrap interval of the mean, as a :class:`Summary`.

    Values that are not numbers (None, strings, NaN, ±inf) are left out; booleans count as 0 / 1. An adapter: the
    numbers are :func:`spatialact.scorers.summarise`'s (whose interval is :func:`spatialact.scorers.bootstrap_ci`).
    One value: the interval is that value; none: everything NaN and ``n = 0``.
    """
    return Summary.from_dict(_summarise(_finite(values), n_boot, seed, level))


def summary_of_records(records: list[dict], key: str = "score", **kw) -> Summary:
    """:func:`summary_of` ``record[key]`` over the records (an adapter: records → values)."""
    return summary_of((r.get(key) for r in records), **kw)


def group_summaries(records: list[dict], group: Callable[[dict], Iterable[str]], key: str = "score",
                    **kw) -> dict[str, Summary]:
    """:func:`summary_of_records` per group value; ``group(record)`` returns the group values a record belongs to."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        for g in group(r):
            groups.setdefault(g, []).append(r)
    return {g: summary_of_records(rs, key, **kw) for g, rs in sorted(groups.items())}


# ----- a run's summary, led by skill ----------------------------------------------------------------------------
def _answered(records: Iterable[dict]) -> list[dict]:
    """The records with a score and an s0 (failures and records written before s0 existed have none)."""
    return [r for r in records if not is_failure(r) and r.get("score") is not None and r.get("s0") is not None]


def _episodes(records: Iterable[dict]) -> dict[tuple, list[dict]]:
    """Answered records grouped by episode — (task, variant, mode, agent) — over their repeats."""
    groups: dict[tuple, list[dict]] = {}
    for r in _answered(records):
        groups.setdefault((r.get("task_id"), r.get("variant") or "", r.get("mode"), r.get("agent")), []).append(r)
    return groups


def episode_skill(records: Iterable[dict], n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """:func:`spatialact.scorers.skill_summary` over a run's episodes: 0 for doing nothing, 1 for the ground truth.
    An episode run several times (``eval --repeats K``) counts once, with its score and s0 averaged over its
    repeats (repeats are not independent episodes: pooled, they would narrow the interval). Failures are left out.
    Returns ``skill``, ``lo``, ``hi``, ``n`` (episodes), ``score`` (mean s) and ``s0`` (mean s0)."""
    groups = list(_episodes(records).values())
    s = [float(np.mean([r["score"] for r in g])) for g in groups]
    s0 = [float(np.mean([r["s0"] for r in g])) for g in groups]
    return skill_summary(s, s0, n_boot=n_boot, seed=seed, level=level)


def repeat_spread(records: Iterable[dict]) -> dict:
    """The run-to-run spread of a run made with ``eval --repeats K``: ``repeats`` (how many repeats have answered
    records), ``skill_sd`` (the sample standard deviation, ddof 1, of the K per-repeat skills, each the point
    skill of that repeat's answered episodes; NaN under two repeats) and ``differ`` (the fraction of episodes
    answered in at least two repeats whose score is not the same in all of them; NaN when there is none)."""
    records = list(records)
    by_repeat: dict[int, list[dict]] = {}
    for r in _answered(records):
        by_repeat.setdefault(int(r.get("repeat") or 0), []).append(r)
    skills = [skill_summary([r["score"] for r in rs], [r["s0"] for r in rs], n_boot=0)["skill"]
              for _, rs in sorted(by_repeat.items())]
    finite = [x for x in skills if math.isfinite(x)]
    sd = float(np.std(finite, ddof=1)) if len(finite) >= 2 else math.nan
    multi = [g for g in _episodes(records).values() if len(g) >= 2]
    differ = (float(np.mean([max(r["score"] for r in g) - min(r["score"] for r in g) > 1e-12 for g in multi]))
              if multi else math.nan)
    return {"repeats": len(by_repeat), "skill_sd": sd, "differ": differ}


def _mean(values) -> float:
    v = [float(x) for x in values if x is not None]
    return float(np.mean(v)) if v else math.nan


def summary_row(records: list[dict], n_boot: int = 1000, seed: int = 0) -> dict:
    """One line of a run's summary, skill first: ``episodes`` (records), ``skill`` with its interval
    (``skill_lo``, ``skill_hi``: :func:`episode_skill`), ``score`` (mean raw score) and ``s0`` (mean s0) over
    answered episodes, ``success`` and ``SPL`` (means over episodes that have them), ``parse_ok`` (the fraction of
    answered episodes whose answer parsed), ``median pos err m``, ``parse errors`` and ``failed`` (counts), and, for
    a run with repeats, ``skill_sd`` and ``differ`` (:func:`repeat_spread`). Undefined figures are NaN."""
    sk = episode_skill(records, n_boot=n_boot, seed=seed)
    answered = [r for r in records if not is_failure(r)]
    perr = [r["final_position_error"] for r in answered if r.get("final_position_error") is not None]
    row = {"episodes": len(records), "skill": sk["skill"], "skill_lo": sk["lo"], "skill_hi": sk["hi"],
           "score": _mean(r.get("score") for r in answered), "s0": _mean(r.get("s0") for r in answered),
           "success": _mean(float(bool(r["success"])) for r in answered if r.get("success") is not None),
           "SPL": _mean(r.get("spl") for r in answered),
           "parse_ok": _mean(float(r.get("reason") != "parse_error") for r in answered),
           "median pos err m": float(np.median(perr)) if perr else math.nan,
           "parse errors": sum(1 for r in answered if r.get("reason") == "parse_error"),
           "failed": sum(1 for r in records if is_failure(r))}
    if any(int(r.get("repeat") or 0) > 0 for r in records):
        spread = repeat_spread(records)
        row.update(skill_sd=spread["skill_sd"], differ=spread["differ"])
    return row


def summary_table(records: list[dict], n_boot: int = 1000, seed: int = 0) -> list[dict]:
    """:func:`summary_row` of all the records (``kind: "all"``), then of each task kind present."""
    rows = [{"kind": "all", **summary_row(records, n_boot, seed)}]
    for kind in KINDS:
        rs = [r for r in records if r.get("kind") == kind]
        if rs:
            rows.append({"kind": kind, **summary_row(rs, n_boot, seed)})
    return rows


def format_skill(row: dict, digits: int = 3) -> str:
    """``skill [lo, hi]`` of a summary row as text (``–`` when undefined, the bare value without an interval)."""
    sk, lo, hi = (row.get(k) for k in ("skill", "skill_lo", "skill_hi"))
    if sk is None or not math.isfinite(sk):
        return "–"
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo == hi:
        return f"{sk:.{digits}f}"
    return f"{sk:.{digits}f} [{lo:.{digits - 1}f}, {hi:.{digits - 1}f}]"
