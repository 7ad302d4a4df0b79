"""The rows of the report's tables: overall figures per run, the figures per group (track, kind, source, tag), and
the formatting of skill, means, intervals and values that every section shares ("–" for a figure with no data).
Every table leads with skill (:mod:`.skill`), then the paper's raw step score under its name.

A table is ``(headers, rows)``: a list of column names and a list of rows, each a list of cells (any value; the
document writer turns each into escaped text).
"""

from __future__ import annotations

import math

import numpy as np

from ..evaluation.stats import summary_of
from .load import RunData, as_float, record_value
from .skill import group_figures, track_of

__all__ = ["overall_rows", "group_rows", "figure_rows", "by_kind", "by_track", "by_source", "by_tag",
           "is_diagnostic_task", "fmt_summary", "fmt_value", "fmt_skill", "fmt_rate", "DIAGNOSTIC_TAGS",
           "PAIRING_TAGS", "KIND_BINNED_TAGS", "SCORE_COLUMN", "SKILL_COLUMN"]

# Tags that mark a task of a diagnostic suite (the ladder's level, the viewpoint pairs): see is_diagnostic_task.
DIAGNOSTIC_TAGS = ("level", "viewpoint")

# Tags that name a group of tasks rather than a category (one value per viewpoint pair): not broken down by.
PAIRING_TAGS = ("pair",)

# Tags binned per kind (spatialact.tasks.tags.DISTANCE_EDGES_M: navigation in metres, manipulation in centimetres):
# their rows name the kind, or "distance=0-0.1 m" (manip) and "distance=0-0.5 m" (nav) would read as overlapping.
KIND_BINNED_TAGS = ("distance",)


#: The column of the paper's raw score, under its name (docs/scoring.md): shown beside skill, unchanged.
SCORE_COLUMN = "step score (paper) [95% CI]"
#: The column of skill, which every table leads with.
SKILL_COLUMN = "skill [95% CI]"


def fmt_skill(sk: dict | None, digits: int = 3) -> str:
    """A :func:`spatialact.scorers.skill_summary` dict as ``skill [lo, hi]`` ("–" when unknown; the bare value
    when the interval is a point)."""
    v = as_float((sk or {}).get("skill"))
    if not math.isfinite(v):
        return "–"
    lo, hi = as_float(sk.get("lo")), as_float(sk.get("hi"))
    if not (math.isfinite(lo) and math.isfinite(hi)) or sk.get("n", 0) < 2:
        return f"{v:.{digits}f}"
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_rate(d: dict | None, percent: bool = False) -> str:
    """A ``{"mean", "n"}`` rate as text: a fraction with 3 decimals or a whole percentage ("–" without data)."""
    if not d or d.get("mean") is None:
        return "–"
    return f"{100 * d['mean']:.0f}%" if percent else f"{d['mean']:.3f}"


def overall_rows(runs: list[RunData]) -> tuple[list[str], list[list]]:
    """The Overall table: one row per run (its plain episodes), skill first, then the paper's step score (tokens
    and cost are in the API usage section)."""
    headers = ["run", "episodes", SKILL_COLUMN, SCORE_COLUMN, "success [95% CI]", "SPL", "parse ok",
               "final pos. err. (m, median)", "repairs / ep.", "errors"]
    rows = []
    for run in runs:
        rs = run.records
        fig = group_figures(rs)
        succ = summary_of(record_value(r, "success") for r in rs if record_value(r, "success") is not None)
        fpe = [as_float(record_value(r, "final_position_error")) for r in rs]
        fpe = [v for v in fpe if math.isfinite(v)]
        reps = summary_of((record_value(r, "n_repairs") for r in rs), n_boot=0)
        errors = sum(1 for r in rs if r.get("error"))
        rows.append([run.label, len(rs), fmt_skill(fig["skill"]), fmt_summary(fig["score"]), succ.fmt(),
                     fmt_rate(fig["spl"]), fmt_rate(fig["parse_ok"], percent=True),
                     f"{np.median(fpe):.3f}" if fpe else "–", reps.fmt(2, ci=False), errors])
    return headers, rows


def figure_rows(runs: list[RunData], group, name: str) -> tuple[list[str], list[list]]:
    """Per group (``group(record)`` lists a record's groups; ``name`` heads the column) and run: episodes, skill,
    the paper's step score, success, SPL and parse-ok rate — one row per (group, run) that has episodes."""
    headers = [name, "run", "episodes", SKILL_COLUMN, SCORE_COLUMN, "success", "SPL", "parse ok"]
    groups: list[str] = sorted({g for run in runs for r in run.records for g in group(r)})
    rows = []
    for g in groups:
        for run in runs:
            rs = [r for r in run.records if g in group(r)]
            if not rs:
                continue
            fig = group_figures(rs)
            rows.append([g, run.label, len(rs), fmt_skill(fig["skill"]), fmt_summary(fig["score"]),
                         fmt_rate(fig["success"]), fmt_rate(fig["spl"]), fmt_rate(fig["parse_ok"], percent=True)])
    return headers, rows


def group_rows(runs: list[RunData], group) -> tuple[list[str], list[list]]:
    """Skill with its interval, then the paper's step score and n, per group (rows) and run (columns);
    ``group(record)`` lists the groups a record belongs to (:func:`by_kind`, :func:`by_source`, :func:`by_tag`)."""
    groups: list[str] = sorted({g for run in runs for r in run.records for g in group(r)})
    headers = ["group"] + [run.label for run in runs]
    rows = []
    for g in groups:
        row = [g]
        for run in runs:
            rs = [r for r in run.records if g in group(r)]
            fig = group_figures(rs) if rs else None
            row.append(f"skill {fmt_skill(fig['skill'])} · score {fmt_summary(fig['score'], ci=False)} "
                       f"(n={len(rs)})" if rs else "–")
        rows.append(row)
    return headers, rows


def is_diagnostic_task(r: dict) -> bool:
    """Whether the record's task belongs to a diagnostic suite (tagged with one of :data:`DIAGNOSTIC_TAGS`)."""
    tags = r.get("tags") or {}
    return isinstance(tags, dict) and any(k in tags for k in DIAGNOSTIC_TAGS)


def by_kind(r: dict) -> list[str]:
    return [str(r.get("kind"))]


def by_track(r: dict) -> list[str]:
    return [track_of(r)]


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
