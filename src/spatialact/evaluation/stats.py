"""Small statistics for reports: means with percentile-bootstrap 95% intervals (SPEC §4.2: 1000 resamples, seed 0)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

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
    """Mean of the finite values and the percentile bootstrap interval of the mean.

    Resamples are drawn with ``numpy.random.default_rng(seed)``, so the interval is reproducible; with one value
    the interval is that value, with none everything is NaN and ``n = 0``. Booleans count as 0 / 1.
    """
    x = _finite(values)
    n = len(x)
    if n == 0:
        return Summary(math.nan, math.nan, math.nan, 0)
    mean = float(x.mean())
    if n == 1 or n_boot <= 0:
        return Summary(mean, mean, mean, n)
    rng = np.random.default_rng(seed)
    # in chunks, so 1000 resamples of a large run stay within a few MB
    means = np.empty(n_boot)
    chunk = max(1, int(2_000_000 // n))
    for i in range(0, n_boot, chunk):
        m = min(chunk, n_boot - i)
        means[i:i + m] = x[rng.integers(0, n, size=(m, n))].mean(axis=1)
    a = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [a, 1.0 - a])
    return Summary(mean, float(lo), float(hi), n)


def summarise(records: list[dict], key: str = "score", **kw) -> Summary:
    return bootstrap_ci((r.get(key) for r in records), **kw)


def group_summaries(records: list[dict], group: Callable[[dict], Iterable[str]], key: str = "score",
                    **kw) -> dict[str, Summary]:
    """Summaries per group value; ``group(record)`` returns the group values a record belongs to."""
    groups: dict[str, list[dict]] = {}
    for r in records:
        for g in group(r):
            groups.setdefault(g, []).append(r)
    return {g: summarise(rs, key, **kw) for g, rs in sorted(groups.items())}
