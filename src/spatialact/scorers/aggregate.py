"""Dataset scores (docs/scoring.md, "Dataset aggregation"): means with bootstrap 95% intervals, breakdowns, and
hierarchical aggregation.

Bootstrap: percentile interval of the mean over ``n_boot`` resamples (default 1000) drawn with
``numpy.random.default_rng(seed)`` (default seed 0); every group gets its own generator with the same seed, so a
group's interval does not depend on which other groups exist. Up to 50 000 values a resample is
``n`` index draws; larger groups draw multinomial counts over their distinct values (the same resampling
distribution at O(distinct values) per resample: a million scores take about a second, not a minute). Resamples
are drawn in blocks of bounded size, so a million episodes need a few tens of MB, not n_boot × n. This is the
project's one bootstrap: reports (``spatialact.evaluation.stats``) call it too.

Skill (:func:`skill_summary`): (mean s − mean s0) / (1 − mean s0), 0 for doing nothing and 1 for the ground truth,
with its paired bootstrap interval (s and s0 resampled together); :func:`paired_difference` compares two runs on
the same episodes (paired bootstrap, Wilcoxon signed-rank p-value), :func:`holm` adjusts a family of p-values.
Every paired interval draws its indices through the same resampling as the one bootstrap (:func:`bootstrap_means`).

Breakdowns: by kind, source and each tag key; a column with more than ``MAX_GROUPS`` (100) distinct values is a
measurement, not a category, and is listed under ``skipped`` instead of being broken down.

Hierarchy: a tree in lmms-eval's layout (``{"name", "weight", "children": [...]}``; a missing weight counts 1).
Episodes are assigned to leaves; a leaf's score is the mean of its episodes; a parent's score is the weighted
sum of its children's with the weights renormalised over the children that have data; a node's ``coverage`` is
the weighted share of its leaves that have data (1 = every leaf scored). lmms-eval's own aggregation counts a
leaf without data as 0 instead; that number is reported too (``score_missing_as_zero``).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["bootstrap_ci", "bootstrap_means", "percentile_interval", "summarise",
           "aggregate_episodes", "aggregate_arrays", "hierarchical_scores",
           "DEFAULT_TREE", "SPATREE_L4", "load_tree", "leaf_of", "tag_label", "MAX_GROUPS", "KIND_LEAVES",
           "aggregate_coded", "skill_summary", "paired_difference", "holm"]

#: SpatialTree's L4 subtree, lmms-eval's names and weights (``spatree_hierarchy.json`` of its spatialtreebench
#: task). Our nav tasks are "Agentic Navigation", manip and hand tasks "Robotic Arm"; the Open-world
#: Exploration leaves have no tasks here yet (so coverage is 0.5).
SPATREE_L4 = {
    "name": "L4",
    "children": [
        {"name": "Goal-Driven Execution", "weight": 0.5, "children": [
            {"name": "Agentic Navigation", "weight": 0.5},
            {"name": "Robotic Arm", "weight": 0.5},
        ]},
        {"name": "Open-world Exploration", "weight": 0.5, "children": [
            {"name": "Knowledge Acquisition", "weight": 0.7},
            {"name": "Self-Goaling", "weight": 0.3},
        ]},
    ],
}
DEFAULT_TREE = SPATREE_L4
#: Default leaf of a task kind.
KIND_LEAVES = {"nav": "Agentic Navigation", "manip": "Robotic Arm", "hand": "Robotic Arm"}
_MAX_DRAWS = 262_144    # indices drawn per bootstrap block (cache-sized: 25% faster than 4M)
_EXACT_MAX = 50_000    # larger groups resample by multinomial counts (see bootstrap_ci)
_MAX_BINS = 4_096      # distinct values kept in the counts resampling; more are pooled into bins
_MAX_CELLS = 1_024     # distinct rows of paired columns kept in the counts resampling; more: a grid of cells
#: Default most groups in one breakdown column (more: a measurement, not a category; see aggregate_arrays).
MAX_GROUPS = 100


# ------------------------------------------------------------------------------------------------------------
# Means and intervals
# ------------------------------------------------------------------------------------------------------------
def _index_means(x: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Resampled means by index draws: resample r is ``x[rng.integers(0, n, size=n)]``; blocks of bounded size
    (the same draws as one big call). ``x`` (n,) gives (n_boot,) means; (n, k) paired columns, whose rows are drawn
    together, give (n_boot, k)."""
    n = len(x)
    rng = np.random.default_rng(seed)
    means = np.empty((n_boot,) + x.shape[1:])
    cols = [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])] if x.ndim == 2 else None
    rows = max(1, _MAX_DRAWS // n)
    for a in range(0, n_boot, rows):
        b = min(n_boot, a + rows)
        if n > _MAX_DRAWS:
            # one resample at a time, in slices (the same draws as one big call would give)
            for r in range(a, b):
                tot = 0.0
                for c in range(0, n, _MAX_DRAWS):
                    idx = rng.integers(0, n, size=min(_MAX_DRAWS, n - c))
                    tot += x[idx].sum(axis=0)
                means[r] = tot / n
        else:
            # int32 indices: the same draws as the default int64 (numpy draws 32-bit values below 2**32), half
            # the memory traffic
            idx = rng.integers(0, n, size=(b - a, n), dtype=np.int32 if n < 2**31 else np.int64)
            if x.ndim == 1:
                means[a:b] = x[idx].mean(axis=1)
            else:  # column by column: contiguous gathers (6× faster than rows of k), each column's sums as 1-D's
                for j in range(x.shape[1]):
                    means[a:b, j] = cols[j][idx].mean(axis=1)
    return means


def _cells(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Paired rows ``x`` (n, k), k ≥ 2, pooled for the counts resampling: (multiplicities (c,), cell means (c, k)).
    The distinct rows when there are at most ``_MAX_CELLS`` (1 024) of them (exact); else an equal-width grid of
    g = ⌊1024^(1/k)⌋ bins per column (32 for two columns, 10 for three, 5 for four), each cell represented by the
    means of its rows (the spread within a cell, at most (width / g)² / 12 of a column's variance, is left out)."""
    n, k = x.shape
    codes, radix = np.zeros(n, dtype=np.int64), 1
    for j in range(k):
        u, inv = np.unique(x[:, j], return_inverse=True)
        if len(u) > _MAX_CELLS:
            radix = 0
            break
        codes = codes * len(u) + inv.reshape(-1)
        radix *= len(u)
    if not 0 < radix <= _MAX_CELLS**2:  # too many distinct values for an exact pooling: the grid
        radix = 0
    if radix:
        mult = np.bincount(codes, minlength=radix)
    if not radix or np.count_nonzero(mult) > _MAX_CELLS:
        g = max(2, int(_MAX_CELLS ** (1.0 / k) + 1e-9))
        codes = np.zeros(n, dtype=np.int64)
        for j in range(k):
            lo, hi = float(x[:, j].min()), float(x[:, j].max())
            b = np.zeros(n, dtype=np.int64) if hi <= lo else \
                np.minimum(((x[:, j] - lo) * (g / (hi - lo))).astype(np.int64), g - 1)
            codes = codes * g + b
        mult = np.bincount(codes, minlength=g**k)
    used = mult > 0
    inv = (np.cumsum(used) - 1)[codes]  # cell index of each row, cells in increasing code order
    mult = mult[used]
    vals = np.stack([np.bincount(inv, weights=x[:, j], minlength=len(mult)) for j in range(k)], axis=1)
    return mult, vals / mult[:, None]


def _count_means(x: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Resampled means from multinomial counts over the distinct values: drawing n values with replacement
    picks value j ``C_j`` times with ``C ~ Multinomial(n, m_j / n)`` (``m_j`` its multiplicity), the same
    distribution as index draws at O(distinct values) per resample. More than ``_MAX_BINS`` distinct values are
    pooled into that many equal-width bins, each represented by the mean of its members (a resampled mean then
    moves by less than one bin width, (max − min) / 4096). Paired columns ``x`` (n, k) are pooled by rows
    (:func:`_cells`; beyond 1024 distinct rows a grid, whose cells leave out only the spread within a cell) and
    give (n_boot, k) means, one count draw per resample for all columns."""
    n = len(x)
    if x.ndim == 2:
        mult, vals = _cells(x)
    else:
        vals, mult = np.unique(x, return_counts=True)
        if len(vals) > _MAX_BINS:
            lo, hi = float(vals[0]), float(vals[-1])
            b = np.minimum(((x - lo) * (_MAX_BINS / (hi - lo))).astype(np.int64), _MAX_BINS - 1)
            mult = np.bincount(b, minlength=_MAX_BINS)
            sums = np.bincount(b, weights=x, minlength=_MAX_BINS)
            keep = mult > 0
            mult = mult[keep]
            vals = sums[keep] / mult
        vals = vals[:, None]
    p = mult / n
    rng = np.random.default_rng(seed)
    means = np.empty((n_boot, vals.shape[1]))
    rows = max(1, _MAX_DRAWS // (4 * len(vals)))
    for a in range(0, n_boot, rows):
        b = min(n_boot, a + rows)
        counts = rng.multinomial(n, p, size=b - a)
        for j in range(vals.shape[1]):
            # an elementwise product and a row sum (not BLAS): each resample's sum is independent of the block size
            means[a:b, j] = (counts * vals[:, j]).sum(axis=1) / n
    return means if x.ndim == 2 else means[:, 0]


def bootstrap_ci(values, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (1-D). One value → (v, v); none → (nan, nan).

    Up to 50 000 values, resample r is ``x[rng.integers(0, n, size=n)]`` with ``rng = default_rng(seed)``;
    beyond that the resamples are drawn as multinomial counts over the distinct values (same distribution,
    O(distinct values) per resample; more than 4 096 distinct values are pooled into equal-width bins).
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    n = len(x)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1 or n_boot <= 0:
        m = float(x.mean())
        return (m, m)
    if n <= _EXACT_MAX:
        means = _index_means(x, n_boot, seed)
    elif not np.isfinite(x).all():
        return (math.nan, math.nan)
    else:
        means = _count_means(x, n_boot, seed)
    return percentile_interval(means, level)


def percentile_interval(samples, level: float = 0.95) -> tuple[float, float]:
    """The central ``level`` percentile interval of bootstrap ``samples`` (1-D): the ``(1 − level) / 2`` and
    ``(1 + level) / 2`` quantiles (numpy's linear interpolation). What :func:`bootstrap_ci` returns of its resampled
    means, and what a statistic of :func:`bootstrap_means` (a paired ratio) is reported with."""
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(samples, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def bootstrap_means(columns, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """The resampled means behind :func:`bootstrap_ci`, for paired columns: ``columns`` (n, k) — k values measured
    on the same n items (a task's score from a common and from an uncommon viewpoint) — are resampled by whole
    rows, and the (n_boot, k) column means of each resample are returned, so that any statistic of the k means
    (a ratio, a difference) gets its paired percentile interval. Resample r draws the same row indices as
    :func:`bootstrap_ci`'s resample r of n ≤ 50 000 values (one column gives the same means); beyond that, as
    bootstrap_ci, each resample is a multinomial count draw over the distinct rows (pooled, beyond 1 024 of them,
    into an equal-width grid of ⌊1024^(1/k)⌋ bins per column, each cell represented by its rows' means: only the
    spread within a cell is left out of the resampled means). A (n,) input is one column.
    No rows give an empty (0, k) array; rows must be finite."""
    x = np.asarray(columns, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValueError(f"bootstrap_means takes (n, k) paired columns, got shape {x.shape}")
    if len(x) == 0 or n_boot <= 0:
        return np.empty((0, x.shape[1]))
    if not np.isfinite(x).all():
        raise ValueError("bootstrap_means: the paired columns hold NaN or infinite values (drop those rows)")
    if len(x) > _EXACT_MAX:
        return _count_means(x, n_boot, seed)
    return _index_means(x, n_boot, seed)


def summarise(values, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """``{"mean", "ci_low", "ci_high", "n"}`` of the finite values (None for an empty group)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    lo, hi = bootstrap_ci(x, n_boot, seed, level)
    return {"mean": float(x.mean()), "ci_low": lo, "ci_high": hi, "n": int(len(x))}


def _label(v) -> str:
    """A group label for a tag value: strings as they are, JSON spelling for the rest (``true``, ``null``, 3)."""
    if isinstance(v, str):
        return v
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return format(v, "g") if isinstance(v, float) else str(v)
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def tag_label(key: str, value) -> str:
    """The breakdown label of one tag: ``"key=value"`` (value spelled by :func:`_label`)."""
    return f"{key}={_label(value)}"


# ------------------------------------------------------------------------------------------------------------
# Skill and paired comparisons
# ------------------------------------------------------------------------------------------------------------
def _per_room(gain, mean_s0):
    """``gain / (1 − mean s0)``, elementwise; NaN where mean s0 ≥ 1 (no room above doing nothing)."""
    g, m0 = np.asarray(gain, dtype=np.float64), np.asarray(mean_s0, dtype=np.float64)
    room = 1.0 - m0
    out = np.where(room > 0, g / np.where(room > 0, room, 1.0), np.nan)
    return out if out.ndim else float(out)


def _skill(mean_s, mean_s0):
    """(mean s − mean s0) / (1 − mean s0), elementwise; NaN where mean s0 ≥ 1."""
    return _per_room(np.asarray(mean_s, dtype=np.float64) - mean_s0, mean_s0)


def _paired_rows(columns: list, names: list) -> np.ndarray:
    """(n, k) float64 of k aligned per-episode columns; rows with a non-finite value in any column are dropped.
    Raises ValueError (naming the argument) when the lengths differ."""
    cols = [np.asarray(c, dtype=np.float64).reshape(-1) for c in columns]
    for c, name in zip(cols[1:], names[1:]):
        if len(c) != len(cols[0]):
            raise ValueError(f"{name}: {len(c)} values for {len(cols[0])} in {names[0]} (they must be aligned "
                             f"episode by episode)")
    x = np.stack(cols, axis=1) if cols else np.zeros((0, 0))
    return x[np.isfinite(x).all(axis=1)]


def _interval(point: float, samples: np.ndarray, level: float) -> tuple[float, float]:
    """The percentile interval of the resampled statistic (resamples where it is undefined, NaN, left out);
    (point, point) without resamples, NaN when the point itself is undefined."""
    if not math.isfinite(point):
        return (math.nan, math.nan)
    samples = samples[np.isfinite(samples)]
    if not len(samples):
        return (point, point)
    return percentile_interval(samples, level)


def skill_summary(scores, s0, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """Skill of a set of episodes (docs/scoring.md, "Skill"): 0 for doing nothing, 1 for the ground truth.

    ``scores``: per-episode scores s; ``s0``: per-episode null scores (:func:`.null.null_score` of each episode's
    task, same mode and profile), aligned with ``scores``. skill = (mean s − mean s0) / (1 − mean s0), a ratio of
    means (per-episode ratios blow up where s0 is close to 1); NaN when mean s0 ≥ 1 or there is no episode. The
    interval: the percentile bootstrap over episodes, s and s0 resampled together (row r draws the same indices as
    :func:`bootstrap_ci`'s resample r; resamples whose mean s0 reaches 1 are left out). Episodes with a non-finite
    s or s0 (an unscored episode, a failure record) are left out. Returns ``{"skill", "lo", "hi", "n", "score"
    (mean s), "s0" (mean s0)}``."""
    x = _paired_rows([scores, s0], ["scores", "s0"])
    n = len(x)
    if n == 0:
        return {"skill": math.nan, "lo": math.nan, "hi": math.nan, "n": 0, "score": math.nan, "s0": math.nan}
    ms, m0 = float(x[:, 0].mean()), float(x[:, 1].mean())
    point = _skill(ms, m0)
    means = bootstrap_means(x, n_boot, seed) if n > 1 else np.empty((0, 2))
    lo, hi = _interval(point, _skill(means[:, 0], means[:, 1]) if len(means) else np.empty(0), level)
    return {"skill": point, "lo": lo, "hi": hi, "n": int(n), "score": ms, "s0": m0}


def _wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the paired differences ``d`` (scipy.stats.wilcoxon with its
    defaults: zero differences dropped); 1.0 when every difference is 0, NaN without differences."""
    if len(d) == 0:
        return math.nan
    if not np.any(d != 0):
        return 1.0
    import warnings

    from scipy.stats import wilcoxon

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(wilcoxon(d, alternative="two-sided").pvalue)


def paired_difference(a, b, a_s0=None, b_s0=None, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> dict:
    """A − B on the same episodes (docs/scoring.md, "Paired differences").

    ``a``, ``b``: per-episode values of two runs, aligned by pair (episode i of ``a`` and of ``b`` answer the same
    task in the same variant, mode and profile). With ``a_s0`` (and ``b_s0``; omitted, it is ``a_s0``: the same
    tasks have the same s0) the difference is of skills, skill(a) − skill(b) (:func:`skill_summary`); without,
    of means (a success rate, a raw score). The interval: the paired percentile bootstrap — each resample draws
    episodes (the same indices as :func:`bootstrap_ci`'s resample r) and takes the difference on them. ``p``: the
    two-sided Wilcoxon signed-rank test (``scipy.stats.wilcoxon``) on the per-episode a − b; 1.0 when every
    difference is 0, NaN without episodes. Pairs with a non-finite value are left out. Returns ``{"diff", "lo",
    "hi", "n", "p"}``."""
    if a_s0 is None and b_s0 is not None:
        raise ValueError("paired_difference: b_s0 given without a_s0")
    if a_s0 is None:
        x = _paired_rows([a, b], ["a", "b"])
    else:
        x = _paired_rows([a, b, a_s0, a_s0 if b_s0 is None else b_s0], ["a", "b", "a_s0", "b_s0"])
    n = len(x)
    if n == 0:
        return {"diff": math.nan, "lo": math.nan, "hi": math.nan, "n": 0, "p": math.nan}
    d = x[:, 0] - x[:, 1]
    # the columns resampled: the differences alone (means); the differences and the shared s0 (skills on the same
    # tasks: skill(a) − skill(b) = mean(a − b) / (1 − mean s0)); or all four columns (s0 that differ)
    if x.shape[1] == 2:
        cols, stat = d[:, None], (lambda m: m[..., 0])
    elif np.array_equal(x[:, 2], x[:, 3]):
        cols, stat = np.stack([d, x[:, 2]], axis=1), (lambda m: _per_room(m[..., 0], m[..., 1]))
    else:
        cols, stat = x, (lambda m: _skill(m[..., 0], m[..., 2]) - _skill(m[..., 1], m[..., 3]))
    point = float(stat(cols.mean(axis=0)))
    means = bootstrap_means(cols, n_boot, seed) if n > 1 else np.empty((0, cols.shape[1]))
    lo, hi = _interval(point, stat(means) if len(means) else np.empty(0), level)
    return {"diff": point, "lo": lo, "hi": hi, "n": int(n), "p": _wilcoxon_p(d)}


def holm(pvalues) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order: with the m finite p-values sorted ascending,
    p_(i) becomes max over j ≤ i of min(1, (m − j + 1) · p_(j)). A NaN (or None) passes through as NaN and does
    not count in m."""
    p = np.array([math.nan if v is None else v for v in pvalues], dtype=np.float64).reshape(-1)
    out = np.full(len(p), math.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        adj = np.minimum(1.0, (m - np.arange(m)) * p[order])
        out[order] = np.maximum.accumulate(adj)
    return [float(v) for v in out]


def _summary_job(args) -> dict:
    """One group's :func:`summarise` (module level: a worker process can run it)."""
    x, n_boot, seed = args
    return summarise(x, n_boot, seed)


class _Summaries:
    """The groups of a breakdown, summarised together: groups holding the same values in the same order (kind =
    source = overall when a file has one kind and one source) share one bootstrap, whose result they would repeat
    draw for draw; large groups can be summarised in worker processes (``mapper``, e.g. a pool's ``map``) — each
    group has its own generator, so the results do not depend on where they are computed."""

    PARALLEL_MIN = 5_000  # smaller groups are summarised here: shipping them would cost more than they do

    def __init__(self, n_boot: int, seed: int):
        self.n_boot, self.seed = n_boot, seed
        self.jobs: list = []
        self.memo: dict = {}

    def add(self, x: np.ndarray) -> int:
        """Register a group's values; returns the index of its (possibly shared) summary."""
        x = x[np.isfinite(x)]
        key = (len(x), hashlib.blake2b(x.tobytes(), digest_size=16).digest())
        for j in self.memo.get(key, ()):
            if np.array_equal(self.jobs[j], x):
                return j
        self.memo.setdefault(key, []).append(len(self.jobs))
        self.jobs.append(x)
        return len(self.jobs) - 1

    def run(self, mapper=None) -> list:
        out: list = [None] * len(self.jobs)
        big = [j for j, x in enumerate(self.jobs) if len(x) >= self.PARALLEL_MIN] if mapper is not None else []
        if big:
            big.sort(key=lambda j: -len(self.jobs[j]))  # the longest first: the workers finish together
            for j, r in zip(big, mapper(_summary_job, [(self.jobs[j], self.n_boot, self.seed) for j in big])):
                out[j] = r
        for j, x in enumerate(self.jobs):
            if out[j] is None:
                out[j] = summarise(x, self.n_boot, self.seed)
        return out


def aggregate_coded(x: np.ndarray, columns, n_boot: int, seed: int, max_groups: int | None, mapper=None) -> dict:
    """:func:`aggregate_arrays` on integer-coded labels (what ``score_file`` uses: labels per task, codes per
    answer). ``columns``: ``(name, key, codes, labels)`` with ``codes`` (n,)
    ints indexing ``labels`` (−1: in no group of this column) and ``key`` the tag key of a tags column (else None).
    ``mapper``: a ``map`` to summarise large groups with (e.g. a process pool's), None: here, one by one.
    Returns ``{"overall", name: {label: summary}, "skipped": {...}}``; a group's values keep the episode order."""
    summ = _Summaries(n_boot, seed)
    overall = summ.add(x)
    groups: dict = {}
    skipped: dict = {}
    for name, key, codes, labels in columns:
        res = groups.setdefault(name, {})
        codes = np.asarray(codes, dtype=np.int64)
        if len(codes) != len(x):
            raise ValueError(f"group {name!r}: {len(codes)} labels for {len(x)} scores")
        inside = codes >= 0
        sizes = np.bincount(codes[inside], minlength=len(labels))
        present = np.flatnonzero(sizes)
        if max_groups is not None and len(present) > max_groups:
            skipped[name if key is None else f"{name}:{key}"] = int(len(present))
            continue
        order = np.argsort(np.where(inside, codes, -1), kind="stable")[int((~inside).sum()):]
        ends = np.cumsum(sizes)
        for c in present:
            res[str(labels[c])] = summ.add(x[order[ends[c] - sizes[c]:ends[c]]])
    results = summ.run(mapper)
    out: dict = {"overall": dict(results[overall]), "n_boot": n_boot, "seed": seed,
                 "n_excluded": int((~np.isfinite(x)).sum())}
    for name, res in groups.items():
        out[name] = {label: dict(results[j]) for label, j in sorted(res.items())}
    out["skipped"] = skipped
    return out


def _codes_of(col) -> tuple[np.ndarray, list]:
    """Labels per episode (None: no group) → (codes, distinct labels)."""
    index: dict = {}
    codes = np.fromiter((-1 if v is None else index.setdefault(v, len(index)) for v in col), dtype=np.int64,
                        count=len(col))
    return codes, list(index)


def aggregate_arrays(scores, groups: Mapping[str, Sequence], n_boot: int = 1000, seed: int = 0,
                     max_groups: int | None = MAX_GROUPS) -> dict:
    """Array form of :func:`aggregate_episodes`. ``scores``: (n,) floats. ``groups``: name → a label per episode
    (None = not in any group of that name), or name → a list of such label sequences (tags: one per tag key,
    labels ``"key=value"``). Returns ``{"overall": summary, name: {label: summary}, "n_boot", "seed",
    "n_excluded", "skipped"}``.

    A column with more than ``max_groups`` distinct labels (a measurement such as a distance, not a category)
    is left out of the breakdown and named in ``skipped`` (``"name"``, or ``"tags:key"`` for a tag key) with its
    number of labels; ``max_groups=None`` keeps every column.
    """
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    columns = []
    for name, labels in groups.items():
        if len(labels) and isinstance(labels[0], (list, tuple, np.ndarray)):
            for col in labels:  # one column per tag key: the key is the labels' text before "="
                codes, distinct = _codes_of(list(col))
                key = str(distinct[0]).split("=", 1)[0] if distinct else None
                columns.append((name, key, codes, distinct))
        elif len(labels) == 0 and len(x):
            columns.append((name, None, np.full(len(x), -1), []))  # no columns (e.g. no tags at all)
        else:
            codes, distinct = _codes_of(list(labels))
            columns.append((name, None, codes, distinct))
    return aggregate_coded(x, columns, n_boot, seed, max_groups)


def aggregate_episodes(records: Iterable[Mapping], score_key: str = "score", by: Sequence[str] = ("kind", "source", "tags"),
                       n_boot: int = 1000, seed: int = 0, max_groups: int | None = MAX_GROUPS) -> dict:
    """Dataset score of episode records (dicts with ``score_key`` and the fields in ``by``).

    Returns ``{"overall": {"mean", "ci_low", "ci_high", "n"}, "<by>": {value: {...}}, "n_boot", "seed",
    "n_excluded", "skipped", "score_key"}``. For ``tags`` (a dict per record) the groups are ``"key=value"``, one
    per tag key and value. A missing or non-finite score is excluded and counted in ``n_excluded``; a record
    without a field is left out of that field's groups. A field or tag key with more than ``max_groups``
    distinct values is not broken down (see :func:`aggregate_arrays`).
    """
    recs = list(records)
    x = np.array([_num(r.get(score_key)) for r in recs], dtype=np.float64)
    columns = []
    for name in by:
        if name == "tags":
            tags = [r.get("tags") or {} for r in recs]
            for k in sorted({k for t in tags for k in t}, key=str):
                codes, distinct = _codes_of([tag_label(k, t[k]) if k in t else None for t in tags])
                columns.append(("tags", str(k), codes, distinct))
            if not any(c[0] == "tags" for c in columns):
                columns.append(("tags", None, np.full(len(x), -1), []))
        else:
            codes, distinct = _codes_of([None if r.get(name) is None else _label(r.get(name)) for r in recs])
            columns.append((name, None, codes, distinct))
    out = aggregate_coded(x, columns, n_boot, seed, max_groups)
    out["score_key"] = score_key
    return out


def _num(v) -> float:
    try:
        return float(v) if v is not None and not isinstance(v, bool) else math.nan
    except (TypeError, ValueError):
        return math.nan


# ------------------------------------------------------------------------------------------------------------
# Hierarchy
# ------------------------------------------------------------------------------------------------------------
def _norm_name(s: str) -> str:
    # lmms-eval matches leaves by name with spaces removed; we also ignore case.
    return "".join(str(s).split()).lower()


def _check_tree(node, where: str = "$") -> dict:
    if not isinstance(node, Mapping):
        raise ValueError(f"tree {where}: expected an object with 'name', got {type(node).__name__}")
    name = node.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"tree {where}: field 'name' must be a non-empty string")
    w = node.get("weight", 1)
    if w is None:
        w = 1
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0:
        raise ValueError(f"tree {where} ({name}): field 'weight' must be a non-negative number, got {w!r}")
    kids = node.get("children") or []
    if not isinstance(kids, list):
        raise ValueError(f"tree {where} ({name}): field 'children' must be a list")
    return {"name": name, "weight": float(w),
            "children": [_check_tree(c, f"{where}.children[{i}]") for i, c in enumerate(kids)]}


def load_tree(tree=None) -> dict:
    """A tree from None (the default L4 tree), a dict, JSON text, or a path to a JSON file (lmms-eval's
    ``spatree_hierarchy.json`` layout); validated. Raises ValueError naming the node and field."""
    if tree is None:
        tree = DEFAULT_TREE
    elif isinstance(tree, (str, os.PathLike)) and not (isinstance(tree, str) and tree.lstrip().startswith("{")):
        from ..jsonline import TooDeep, check_depth, check_input

        path = os.fspath(tree)
        check_input(path, "tree file")  # a FIFO or a device is refused unread (FileNotFoundError, one line)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            check_depth(text)
            tree = json.loads(text)
        except TooDeep as e:
            raise ValueError(f"{path}: {e}") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    elif isinstance(tree, str):
        tree = json.loads(tree)
    return _check_tree(tree)


def leaf_of(record: Mapping) -> str | None:
    """The tree leaf a record belongs to: its ``leaf`` field; else its tags' ``spatree<N>`` with the highest N
    (lmms-eval's layout); else its ``spatree`` tag; else the default leaf of its kind."""
    if record.get("leaf"):
        return str(record["leaf"])
    tags = record.get("tags") or {}
    numbered = [(int(k[7:]), v) for k, v in tags.items() if k.startswith("spatree") and k[7:].isdigit() and v]
    if numbered:
        return str(max(numbered)[1])
    if tags.get("spatree"):
        return str(tags["spatree"])
    return KIND_LEAVES.get(record.get("kind"))


def hierarchical_scores(records: Iterable[Mapping] | None = None, tree=None, score_key: str = "score",
                        leaf_values: Mapping[str, Sequence[float]] | None = None) -> dict:
    """Hierarchical score of episode records over ``tree`` (default: the SpatialTree L4 tree).

    Each record goes to the leaf :func:`leaf_of` names. Instead of records, ``leaf_values`` may give the scores
    per leaf name directly (what the CLI does for large files). Returns ``{"tree", "score" (root; None without
    data), "coverage" (root), "score_missing_as_zero" (lmms-eval's rule), "n", "nodes": {"A/B/C": {"score",
    "coverage", "weight", "n", "leaf"}}, "unmatched": {leaf name: count}}``.
    """
    root = load_tree(tree)
    leaves: set = set()

    def collect(node):
        if not node["children"]:
            leaves.add(_norm_name(node["name"]))
        for c in node["children"]:
            collect(c)

    collect(root)
    sums: dict[str, list] = {}
    unmatched: dict[str, int] = {}

    def add(leaf, vals: np.ndarray):
        vals = vals[np.isfinite(vals)]
        if not len(vals):
            return
        key = _norm_name(leaf) if leaf else None
        if key in leaves:
            sums.setdefault(key, []).append(vals)
        else:
            unmatched[str(leaf)] = unmatched.get(str(leaf), 0) + len(vals)

    if records is not None:
        per_leaf: dict = {}
        for r in records:
            per_leaf.setdefault(leaf_of(r), []).append(_num(r.get(score_key)))
        for leaf, vals in per_leaf.items():
            add(leaf, np.asarray(vals, dtype=np.float64))
    for leaf, vals in (leaf_values or {}).items():
        add(leaf, np.asarray(vals, dtype=np.float64).reshape(-1))
    sums = {k: np.concatenate(v) for k, v in sums.items()}

    nodes: dict = {}

    def visit(node, path):
        p = f"{path}/{node['name']}" if path else node["name"]
        if not node["children"]:
            vals = sums.get(_norm_name(node["name"]), ())
            s = float(np.mean(vals)) if len(vals) else None
            nodes[p] = {"score": s, "coverage": 1.0 if len(vals) else 0.0, "weight": node["weight"],
                        "n": len(vals), "leaf": True}
            return s, (1.0 if len(vals) else 0.0), len(vals), (s if s is not None else 0.0)
        num = den = cov_num = z_num = w_sum = 0.0
        n = 0
        for c in node["children"]:
            s, cov, cn, z = visit(c, p)
            w = c["weight"]
            w_sum += w
            cov_num += w * cov
            z_num += w * z
            n += cn
            if s is not None:
                num += w * s
                den += w
        score = num / den if den > 0 else None
        cov = cov_num / w_sum if w_sum > 0 else 0.0
        z = z_num / w_sum if w_sum > 0 else 0.0
        nodes[p] = {"score": score, "coverage": cov, "weight": node["weight"], "n": n, "leaf": False}
        return score, cov, n, z

    score, cov, n, z = visit(root, "")
    return {"tree": root["name"], "score": score, "coverage": cov, "score_missing_as_zero": z, "n": n,
            "nodes": nodes, "unmatched": unmatched}
