"""Means with percentile-bootstrap 95% intervals for reports (docs/scoring.md: 1000 resamples, seed 0).

The statistics themselves live in :mod:`spatialact.scorers.aggregate` — one bootstrap
(:func:`spatialact.scorers.bootstrap_ci`, an interval as a tuple) and one summary
(:func:`spatialact.scorers.summarise`, mean, interval and n as a dict) for the whole project, so a report and
``spatialact score`` give the same interval for the same scores. This module only adapts them: to report values,
which are loose (None, NaN, strings, booleans counted as 0 / 1), and to the :class:`Summary` value reports print.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from ..scorers.aggregate import summarise as _summarise

__all__ = ["Summary", "bootstrap_ci", "summarise", "group_summaries"]


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


def bootstrap_ci(values: Iterable, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> Summary:
    """Mean of the finite values and the percentile bootstrap interval of the mean, as a :class:`Summary`.

    Values that are not numbers (None, strings, NaN, ±inf) are left out; booleans count as 0 / 1. An adapter: the
    numbers are :func:`spatialact.scorers.summarise`'s (whose interval is :func:`spatialact.scorers.bootstrap_ci`).
    One value: the interval is that value; none: everything NaN and ``n = 0``.
    """
    return Summary.from_dict(_summarise(_finite(values), n_boot, seed, level))


def summarise(records: list[dict], key: str = "score", **kw) -> Summary:
    """:func:`bootstrap_ci` of ``record[key]`` over the records (an adapter: records → values)."""
    return bootstrap_ci((r.get(key) for r in records), **kw)


def group_summaries(records: list[dict], group: Callable[[dict], Iterable[str]], key: str = "score",
                    **kw) -> dict[str, Summary]:
    """Summaries per group value; ``group(record)`` returns the group values a record belongs to."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        for g in group(r):
            groups.setdefault(g, []).append(r)
    return {g: summarise(rs, key, **kw) for g, rs in sorted(groups.items())}
