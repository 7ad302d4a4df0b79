"""The report's "Tool use" section, for runs of tool-using agents (records with ``tools``): which tool set each run
offered — runs with ``privileged`` tools are flagged, they read simulator truth — how many calls per episode, how
many were malformed or failed, calls per tool, and every call of one example episode per run (arguments and results
cut to :data:`MAX_TOOL_TEXT` characters)."""

from __future__ import annotations

import json

from ..records import is_failure
from .document import Document
from .load import RunData, as_float, record_value

__all__ = ["tool_use_section", "MAX_TOOL_TEXT"]

MAX_TOOL_TEXT = 300  # characters of a tool call's arguments or result shown in the report


def tool_use_section(doc: Document, runs: list[RunData]) -> None:
    """"Tool use" for the runs whose records used tools; nothing when none did."""
    tool_runs = [run for run in runs if any("tools" in r for r in run.records)]
    if not tool_runs:
        return
    doc.heading(2, "Tool use")
    for run in tool_runs:
        if any(r.get("privileged") for r in run.records):
            doc.paragraph(f"PRIVILEGED: run {run.label} offered tools that read the simulator's truth (exact poses, "
                          f"segmentation); its scores are not comparable with agents that see only the images.")
    doc.table(["run", "tool set", "episodes", "tool calls", "calls / episode (not failed)", "malformed",
               "failed calls", "calls per tool"], [_tool_row(run) for run in tool_runs], wrap=True)
    for run in tool_runs:
        ex = next((r for r in run.records if r.get("tool_calls")), None)
        if ex is None:
            continue
        doc.paragraph(f"{run.label}: the tool calls of task {ex.get('task_id')} "
                      f"(score {as_float(record_value(ex, 'score')):.3f}).")
        doc.table(["turn", "call", "tool", "arguments", "result", "error"],
                  [[c.get("turn", "–"), c.get("call", "–"), c.get("name"), _cut(c.get("arguments")),
                    _cut(c.get("result")), c.get("error") or ""] for c in ex["tool_calls"] if isinstance(c, dict)],
                  wrap=True)


def _tool_row(run: RunData) -> list:
    rs = [r for r in run.records if "tools" in r]
    failed = sum(1 for r in rs if is_failure(r))
    calls = [c for r in rs for c in (r.get("tool_calls") or []) if isinstance(c, dict)]
    by_name: dict[str, int] = {}
    for c in calls:
        by_name[str(c.get("name"))] = by_name.get(str(c.get("name")), 0) + 1
    sets = sorted({str(r.get("tools")) for r in rs})
    ran = len(rs) - failed  # a failed episode's conversation broke off: left out of the rate
    ran_calls = sum(len(r.get("tool_calls") or []) for r in rs if not is_failure(r))
    return [run.label, ", ".join(sets), f"{len(rs)} ({failed} failed)" if failed else len(rs), len(calls),
            f"{ran_calls / ran:.2f}" if ran else "–", sum(1 for c in calls if c.get("malformed")),
            sum(1 for c in calls if c.get("error") and not c.get("malformed")),
            ", ".join(f"{k} {v}" for k, v in sorted(by_name.items())) or "–"]


def _cut(v) -> str:
    t = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    return t if len(t) <= MAX_TOOL_TEXT else t[:MAX_TOOL_TEXT] + "…"
