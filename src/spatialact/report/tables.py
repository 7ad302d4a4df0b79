"""The rows of the report's tables: overall figures per run, the mean score per group (kind, source, tag), and the
formatting of means, intervals and values that every section shares ("–" for a figure with no data).

A table is ``(headers, rows)``: a list of column names and a list of rows, each a list of cells (any value; the
document writer turns each into escaped text).
"""

from __future__ import annotations

import math

import numpy as np

from ..evaluation.stats import bootstrap_ci
from .load import RunData, as_float, record_value, usage

__all__ = ["overall_rows", "group_rows", "by_kind", "by_source", "by_tag", "is_diagnostic_task", "fmt_summary",
           "fmt_value", "DIAGNOSTIC_TAGS", "PAIRING_TAGS", "KIND_BINNED_TAGS"]

# Tags that mark a task of a diagnostic suite (the ladder's level, the viewpoint pairs): see is_diagnostic_task.
DIAGNOSTIC_TAGS = ("level", "viewpoint")

# Tags that name a group of tasks rather than a category (one value per viewpoint pair): not broken down by.
PAIRING_TAGS = ("pair",)

# Tags binned per kind (spatialact.tasks.tags.DISTANCE_EDGES_M: navigation in metres, manipulation in centimetres):
# their rows name the kind, or "distance=0-0.1 m" (manip) and "distance=0-0.5 m" (nav) would read as overlapping.
KIND_BINNED_TAGS = ("distance",)


def overall_rows(runs: list[RunData]) -> tuple[list[str], list[list]]:
    """The Overall table: one row per run (its plain episodes)."""
    headers = ["run", "episodes", "score [95% CI]", "success [95% CI]", "final pos. err. (m, median)", "SPL",
               "parse ok", "repairs / ep.", "errors", "prompt tokens", "completion tokens", "cost (USD)"]
    rows = []
    for run in runs:
        rs = run.records
        score = bootstrap_ci(as_float(record_value(r, "score")) for r in rs)
        succ = bootstrap_ci(record_value(r, "success") for r in rs if record_value(r, "success") is not None)
        fpe = [as_float(record_value(r, "final_position_error")) for r in rs]
        fpe = [v for v in fpe if math.isfinite(v)]
        spl = bootstrap_ci((record_value(r, "spl") for r in rs), n_boot=0)
        # failed episodes (api_error / error) carry ok = None: they have no answer to parse, so they are left out
        oks = (r.get("ok", (r.get("parse") or {}).get("ok")) for r in rs)
        ok = [bool(v) for v in oks if v is not None]
        reps = bootstrap_ci((record_value(r, "n_repairs") for r in rs), n_boot=0)
        errors = sum(1 for r in rs if r.get("error"))
        rows.append([run.label, len(rs), score.fmt(), succ.fmt(), f"{np.median(fpe):.3f}" if fpe else "–",
                     spl.fmt(ci=False), f"{100 * np.mean(ok):.0f}%" if ok else "–", reps.fmt(2, ci=False), errors,
                     f"{sum(usage(r, 'prompt_tokens') for r in rs):,.0f}",
                     f"{sum(usage(r, 'completion_tokens') for r in rs):,.0f}",
                     f"{sum(usage(r, 'cost_usd') for r in rs):.4f}"])
    return headers, rows


def group_rows(runs: list[RunData], group) -> tuple[list[str], list[list]]:
    """Mean score with its interval and n per group (rows) and run (columns); ``group(record)`` lists the groups a
    record belongs to (:func:`by_kind`, :func:`by_source`, :func:`by_tag`)."""
    groups: list[str] = sorted({g for run in runs for r in run.records for g in group(r)})
    headers = ["group"] + [run.label for run in runs]
    rows = []
    for g in groups:
        row = [g]
        for run in runs:
            s = bootstrap_ci(as_float(record_value(r, "score")) for r in run.records if g in group(r))
            row.append(f"{s.fmt()} (n={s.n})" if s.n else "–")
        rows.append(row)
    return headers, rows


def is_diagnostic_task(r: dict) -> bool:
    """Whether the record's task belongs to a diagnostic suite (tagged with one of :data:`DIAGNOSTIC_TAGS`)."""
    tags = r.get("tags") or {}
    return isinstance(tags, dict) and any(k in tags for k in DIAGNOSTIC_TAGS)


def by_kind(r: dict) -> list[str]:
    return [str(r.get("kind"))]


def by_tag(r: dict) -> list[str]:
    """``key=value`` per tag (the kind added to tags binned per kind), pairing tags left out."""
    tags = r.get("tags") or {}
    if not isinstance(tags, dict):
        return []
    return [f"{k}={v}" + (f" ({r.get('kind')})" if k in KIND_BINNED_TAGS else "")
            for k, v in sorted(tags.items()) if k not in PAIRING_TAGS]


def by_source(r: dict) -> list[str]:
    return [str(r.get("source"))]


def fmt_summary(s: dict | None, digits: int = 3, ci: bool = True) -> str:
    """A ``{"mean", "ci_low", "ci_high", "n"}`` summary as text ("–" when empty)."""
    if not s or not s.get("n") or s.get("mean") is None:
        return "–"
    out = f"{s['mean']:.{digits}f}"
    if ci and s["n"] > 1 and s.get("ci_low") is not None:
        out += f" [{s['ci_low']:.{digits}f}, {s['ci_high']:.{digits}f}]"
    return out


def fmt_value(v, digits: int = 3, signed: bool = False) -> str:
    """A number as text with ``digits`` decimals (a sign when ``signed``); "–" when it is not a finite number."""
    f = as_float(v)
    if not math.isfinite(f):
        return "–"
    return f"{f:+.{digits}f}" if signed else f"{f:.{digits}f}"
