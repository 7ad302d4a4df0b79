"""The runs of a report: :class:`RunData` (a run directory's config and records) and :func:`load_runs`, plus the
tolerant readers of record fields that every table, plot and section uses.

Records come from files a user hands over: a field may be missing, null, a string where a number belongs or nested
under ``closed_loop`` / ``scores``; these readers turn such a field into NaN or None instead of failing. Poses read
here are C2W (4, 4) float64 arrays in metres (world +Z up, OpenCV camera axes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..evaluation.results import read_config, read_records
from .s0 import fill_s0

__all__ = ["RunData", "load_runs", "as_float", "record_value", "response_text", "record_poses", "start_goal_distance",
           "usage"]


@dataclass
class RunData:
    """One run of a report. ``records``: its plain episodes (variant ""), what the general tables and plots show;
    ``all_records``: every record, the mirrored episodes of ``eval --flip`` too (the diagnostics section).
    ``s0_rebuilt`` / ``s0_unknown``: answered records whose ``s0`` the report rebuilt from their ``gt`` (a run
    written before records carried it) / could not (:mod:`.s0`)."""

    path: Path
    label: str
    config: dict
    records: list[dict] = field(default_factory=list)
    all_records: list[dict] = field(default_factory=list)
    s0_rebuilt: int = 0
    s0_unknown: int = 0

    @property
    def agent(self) -> str:
        recs = self.records or self.all_records  # a run of generated questions has no plain episode
        return str(recs[0].get("agent")) if recs else "?"

    @property
    def model(self):
        recs = self.records or self.all_records
        return recs[0].get("model") if recs else None


def load_runs(run_dirs) -> list[RunData]:
    """The runs of ``run_dirs`` in order, each labelled by its agent (and model); labels that would be equal get
    the directory name, and numbers when that is equal too. Every answered record has its ``s0`` (its own, or
    rebuilt from its ``gt``: :func:`.s0.fill_s0`)."""
    runs = []
    for d in run_dirs:
        p = Path(d)
        recs = read_records(p)
        cfg = read_config(p)
        rebuilt, unknown = fill_s0(recs, cfg)
        runs.append(RunData(p, "", cfg, [r for r in recs if not r.get("variant")], recs, rebuilt, unknown))
    labels = [run.agent + (f" ({run.model})" if run.model else "") for run in runs]
    for i, run in enumerate(runs):
        run.label = labels[i] if labels.count(labels[i]) == 1 else f"{labels[i]} [{run.path.name}]"
    seen: dict[str, int] = {}
    for run in runs:  # still equal (same directory name twice): number them
        if run.label in seen:
            seen[run.label] += 1
            run.label = f"{run.label} #{seen[run.label]}"
        else:
            seen[run.label] = 1
    return runs


def as_float(v) -> float:
    """``v`` as a finite float, NaN for anything else (None, a string, ±inf)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f if math.isfinite(f) else math.nan


def record_value(r: dict, key: str):
    """A record field; tolerant of a nested ``closed_loop`` / ``scores`` layout (None when absent)."""
    if key in r and r[key] is not None:
        return r[key]
    for nest in ("closed_loop", "scores"):
        d = r.get(nest)
        if isinstance(d, dict) and d.get(key) is not None:
            return d[key]
    return None


def response_text(r: dict) -> str:
    """The model's answer as text; a closed-loop episode's answers one per step, marked ``[step k]``."""
    v = r.get("response")
    if v is None:
        v = r.get("responses")
    if isinstance(v, list):  # closed loop: one answer per step
        return "\n".join(f"[step {k + 1}] {x}" for k, x in enumerate(v))
    return "" if v is None else str(v)


def record_poses(r: dict, key: str) -> np.ndarray | None:
    """The record's ``key`` poses (``gt_poses`` or ``pred_poses``, the latter also read from ``poses``) as C2W
    (N, 4, 4) float64, metres; None when absent or not finite (4, 4) matrices."""
    v = r.get(key)
    if v is None and key == "pred_poses":
        v = r.get("poses")
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if a.ndim != 3 or a.shape[1:] != (4, 4) or not np.all(np.isfinite(a)):
        return None
    return a


def start_goal_distance(r: dict) -> float:
    """The start–goal distance d0 in metres: the record's ``d0``, else the ground-truth path's end-to-end distance,
    else NaN."""
    v = as_float(record_value(r, "d0"))
    if math.isfinite(v):
        return v
    g = record_poses(r, "gt_poses")
    if g is not None and len(g) > 1:
        return float(np.linalg.norm(g[-1, :3, 3] - g[0, :3, 3]))
    return math.nan


def usage(r: dict, key: str) -> float:
    """A count of the record's ``usage`` (``prompt_tokens``, ``completion_tokens``, ``cost_usd``); 0 when unknown."""
    u = r.get("usage") or {}
    v = as_float(u.get(key)) if isinstance(u, dict) else math.nan
    return 0.0 if math.isnan(v) else v
