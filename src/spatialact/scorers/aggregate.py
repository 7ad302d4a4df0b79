"""Dataset scores (SPEC §4.2): means with bootstrap 95% intervals, breakdowns, and hierarchical aggregation.

Bootstrap: percentile interval of the mean over ``n_boot`` resamples (default 1000) drawn with
``numpy.random.default_rng(seed)`` (default seed 0); every group gets its own generator with the same seed, so a
group's interval does not depend on which other groups exist. Resamples are drawn in blocks of bounded size, so
a million episodes need a few tens of MB, not n_boot × n.

Hierarchy: a tree in lmms-eval's layout (``{"name", "weight", "children": [...]}``; a missing weight counts 1).
Episodes are assigned to leaves; a leaf's score is the mean of its episodes; a parent's score is the weighted
sum of its children's with the weights renormalised over the children that have data; a node's ``coverage`` is
the weighted share of its leaves that have data (1 = every leaf scored). lmms-eval's own aggregation counts a
leaf without data as 0 instead; that number is reported too (``score_missing_as_zero``).
"""

from __future__ import annotations

import json
import math
import os
from typing import Iterable, Mapping, Sequence

import numpy as np

__all__ = ["bootstrap_ci", "summarise", "aggregate_episodes", "aggregate_arrays", "hierarchical_scores",
           "DEFAULT_TREE", "SPATREE_L4", "load_tree", "leaf_of"]

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
_MAX_DRAWS = 4_000_000  # indices drawn per bootstrap block


# ------------------------------------------------------------------------------------------------------------
# Means and intervals
# ------------------------------------------------------------------------------------------------------------
def bootstrap_ci(values, n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values`` (1-D). One value → (v, v); none → (nan, nan)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    n = len(x)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1 or n_boot <= 0:
        m = float(x.mean())
        return (m, m)
    rng = np.random.default_rng(seed)
    means = np.empty(n_boot)
    rows = max(1, _MAX_DRAWS // n)
    for a in range(0, n_boot, rows):
        b = min(n_boot, a + rows)
        if n > _MAX_DRAWS:
            # one resample at a time, in slices (the same draws as one big call would give)
            for r in range(a, b):
                tot = 0.0
                for c in range(0, n, _MAX_DRAWS):
                    idx = rng.integers(0, n, size=min(_MAX_DRAWS, n - c))
                    tot += x[idx].sum()
                means[r] = tot / n
        else:
            idx = rng.integers(0, n, size=(b - a, n))
            means[a:b] = x[idx].mean(axis=1)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, [alpha, 1.0 - alpha])
    return (float(lo), float(hi))


def summarise(values, n_boot: int = 1000, seed: int = 0) -> dict:
    """``{"mean", "ci_low", "ci_high", "n"}`` of the finite values (None for an empty group)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n": 0}
    lo, hi = bootstrap_ci(x, n_boot, seed)
    return {"mean": float(x.mean()), "ci_low": lo, "ci_high": hi, "n": int(len(x))}


def _label(v) -> str:
    if isinstance(v, str):
        return v
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return format(v, "g") if isinstance(v, float) else str(v)
    return json.dumps(v, sort_keys=True, ensure_ascii=False)


def aggregate_arrays(scores, groups: Mapping[str, Sequence], n_boot: int = 1000, seed: int = 0) -> dict:
    """Array form of :func:`aggregate_episodes`. ``scores``: (n,) floats. ``groups``: name → a label per episode
    (None = not in any group of that name), or name → a list of such label sequences (tags: one per tag key,
    labels ``"key=value"``). Returns ``{"overall": summary, name: {label: summary}}``."""
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    out: dict = {"overall": summarise(x, n_boot, seed), "n_boot": n_boot, "seed": seed,
                 "n_excluded": int((~np.isfinite(x)).sum())}
    for name, labels in groups.items():
        cols = labels if (len(labels) and isinstance(labels[0], (list, tuple, np.ndarray))) else [labels]
        res: dict = {}
        for col in cols:
            col = np.asarray(col, dtype=object)
            if len(col) != len(x):
                raise ValueError(f"group {name!r}: {len(col)} labels for {len(x)} scores")
            uniq = sorted({v for v in col if v is not None}, key=str)
            for u in uniq:
                res[str(u)] = summarise(x[col == u], n_boot, seed)
        out[name] = dict(sorted(res.items()))
    return out


def aggregate_episodes(records: Iterable[Mapping], score_key: str = "score", by: Sequence[str] = ("kind", "source", "tags"),
                       n_boot: int = 1000, seed: int = 0) -> dict:
    """Dataset score of episode records (dicts with ``score_key`` and the fields in ``by``).

    Returns ``{"overall": {"mean", "ci_low", "ci_high", "n"}, "<by>": {value: {...}}, "n_boot", "seed",
    "n_excluded"}``. For ``tags`` (a dict per record) the groups are ``"key=value"``, one per tag key and value.
    A missing or non-finite score is excluded and counted in ``n_excluded``; a record without a field is left out
    of that field's groups.
    """
    recs = list(records)
    x = np.array([_num(r.get(score_key)) for r in recs], dtype=np.float64)
    groups: dict = {}
    for name in by:
        if name == "tags":
            keys = sorted({k for r in recs for k in (r.get("tags") or {})}, key=str)
            groups["tags"] = [[f"{k}={_label((r.get('tags') or {})[k])}" if k in (r.get("tags") or {}) else None
                               for r in recs] for k in keys]
        else:
            groups[name] = [None if r.get(name) is None else _label(r.get(name)) for r in recs]
    out = aggregate_arrays(x, groups, n_boot, seed)
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
        path = os.fspath(tree)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{path}: no such tree file")
        with open(path, encoding="utf-8") as f:
            try:
                tree = json.load(f)
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

    def add(leaf, vals):
        vals = [v for v in (_num(x) for x in vals) if math.isfinite(v)]
        if not vals:
            return
        key = _norm_name(leaf) if leaf else None
        if key in leaves:
            sums.setdefault(key, []).extend(vals)
        else:
            unmatched[str(leaf)] = unmatched.get(str(leaf), 0) + len(vals)

    for r in records or ():
        add(leaf_of(r), [r.get(score_key)])
    for leaf, vals in (leaf_values or {}).items():
        add(leaf, np.asarray(vals, dtype=np.float64).reshape(-1).tolist())

    nodes: dict = {}

    def visit(node, path):
        p = f"{path}/{node['name']}" if path else node["name"]
        if not node["children"]:
            vals = sums.get(_norm_name(node["name"]), [])
            s = float(np.mean(vals)) if vals else None
            nodes[p] = {"score": s, "coverage": 1.0 if vals else 0.0, "weight": node["weight"], "n": len(vals),
                        "leaf": True}
            return s, (1.0 if vals else 0.0), len(vals), (s if s is not None else 0.0)
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
