"""The report's game section: results per map (level) of the game's tasks and the rate of blocked steps.

Game tasks (``source: "game"``, docs/game.md) are tagged with the ``map`` they run in; their episode records carry
``blocked``, one flag per executed step, true where the level (a wall, the floor) stopped the step short of its
commanded motion (docs/results.md). Per run and map: episodes, success rate, mean score, and the blocked-step rate —
blocked steps over executed steps, summed over the map's episodes (an episode that executed nothing adds nothing).
Records of other worlds are left out. The same figures go into ``report --json`` (:func:`game_json`).
"""

from __future__ import annotations

import numpy as np

from .document import Document
from .load import RunData, as_float, record_value
from .skill import blocked_steps

__all__ = ["game_map", "blocked_steps", "game_rows", "game_section", "game_json", "ALL_MAPS"]

#: The row of a run's game episodes on every map together.
ALL_MAPS = "all maps"


def game_map(r: dict) -> str | None:
    """The map a game episode ran in (its ``map`` tag), or None for a record of another world (the rooms of
    CameraNav record ``blocked`` too: they are not game levels)."""
    tags = r.get("tags") if isinstance(r.get("tags"), dict) else {}
    if r.get("source") != "game":
        return None
    m = tags.get("map")
    return str(m) if m is not None else "?"


def _summary(records: list[dict]) -> dict:
    succ = [bool(record_value(r, "success")) for r in records if record_value(r, "success") is not None]
    scores = [as_float(record_value(r, "score")) for r in records]
    scores = [s for s in scores if np.isfinite(s)]
    nb, ns = blocked_steps(records)
    return {"episodes": len(records), "success": float(np.mean(succ)) if succ else None,
            "n_success": int(sum(succ)), "score": float(np.mean(scores)) if scores else None,
            "blocked_steps": nb, "executed_steps": ns, "blocked_rate": nb / ns if ns else None}


def game_json(run: RunData) -> dict | None:
    """``{map: summary, ..., "all maps": summary}`` of a run's plain game episodes (None without any): each summary
    has ``episodes``, ``success`` (rate), ``n_success``, ``score`` (mean), ``blocked_steps``, ``executed_steps``
    and ``blocked_rate`` (blocked over executed steps; None when nothing was executed)."""
    by_map: dict[str, list[dict]] = {}
    for r in run.records:
        m = game_map(r)
        if m is not None:
            by_map.setdefault(m, []).append(r)
    if not by_map:
        return None
    out = {m: _summary(by_map[m]) for m in sorted(by_map)}
    out[ALL_MAPS] = _summary([r for m in sorted(by_map) for r in by_map[m]])
    return out


def _pct(v) -> str:
    return "–" if v is None else f"{100 * v:.0f}%"


def game_rows(runs: list[RunData]) -> tuple[list[str], list[list]]:
    """The "Per map" table: one row per run and map (then the run's maps together when it has several)."""
    headers = ["run", "map", "episodes", "success", "score (mean)", "blocked steps", "blocked-step rate"]
    rows = []
    for run in runs:
        per = game_json(run)
        if per is None:
            continue
        names = [m for m in per if m != ALL_MAPS] + ([ALL_MAPS] if len(per) > 2 else [])
        for m in names:
            s = per[m]
            score = "–" if s["score"] is None else f"{s['score']:.3f}"
            rows.append([run.label, m, s["episodes"], f"{s['n_success']}/{s['episodes']} ({_pct(s['success'])})",
                         score, f"{s['blocked_steps']}/{s['executed_steps']}", _pct(s["blocked_rate"])])
    return headers, rows


def game_section(doc: Document, runs: list[RunData]) -> None:
    """"Per map": the game episodes' results per level and their blocked-step rate (nothing without game episodes)."""
    headers, rows = game_rows(runs)
    if not rows:
        return
    doc.heading(2, "Per map (game levels)")
    doc.paragraph("Game tasks run in the level they were recorded in (docs/game.md). Blocked steps: executed steps the "
                  "level stopped short of their commanded motion (a wall, a ledge, a closed door, the floor under a "
                  "Pedestal Down), over every executed step of the map's episodes (the records' `blocked` flags).")
    doc.table(headers, rows)
