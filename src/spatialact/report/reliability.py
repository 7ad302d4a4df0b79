"""The report's "Parse errors" and "Blocked steps" sections: why answers did not parse, and how often walls stopped
a step.

Parse errors: an answer with no usable step scores 0 (``reason: "parse_error"``) and its record carries the
parser's reason (``parse_error``); per run, the share of answered episodes that did not parse and the most common
reasons with their counts (a reason longer than :data:`MAX_REASON_CHARS` is cut; a record written before records
carried the reason counts as "(reason not recorded)"). Blocked steps: in every world with walls — Doom levels and
the rooms of CameraNav — an episode's record carries ``blocked``, one flag per executed step; per run and world
(game levels, else the track), blocked steps over executed steps. Every string is escaped by the document writer.
"""

from __future__ import annotations

from collections import Counter

from ..records import is_failure
from .document import Document
from .load import RunData
from .skill import blocked_steps, track_of

__all__ = ["parse_error_counts", "parse_errors_section", "blocked_rows", "blocked_section", "world_of",
           "MAX_REASON_CHARS", "N_REASONS"]

#: Characters of a parse error's reason shown (the rest cut, marked "…").
MAX_REASON_CHARS = 160
#: Reasons shown per run (the most common).
N_REASONS = 5
_UNRECORDED = "(reason not recorded)"


def parse_error_counts(records) -> Counter:
    """Reason → count over the records whose answer did not parse."""
    c: Counter = Counter()
    for r in records:
        if is_failure(r) or r.get("reason") != "parse_error":
            continue
        why = r.get("parse_error")
        why = " ".join(str(why).split()) if why else _UNRECORDED
        c[why if len(why) <= MAX_REASON_CHARS else why[:MAX_REASON_CHARS] + "…"] += 1
    return c


def parse_errors_section(doc: Document, runs: list[RunData]) -> None:
    """"Parse errors": per run with any, how many answers did not parse and the most common reasons."""
    rows = []
    for run in runs:
        counts = parse_error_counts(run.records)
        if not counts:
            continue
        answered = sum(1 for r in run.records if not is_failure(r))
        total = sum(counts.values())
        for i, (why, n) in enumerate(counts.most_common(N_REASONS)):
            rows.append([run.label if i == 0 else "", f"{total}/{answered}" if i == 0 else "", why, n])
        rest = total - sum(n for _, n in counts.most_common(N_REASONS))
        if rest:
            rows.append(["", "", f"({len(counts) - N_REASONS} other reasons)", rest])
    if not rows:
        return
    doc.heading(2, "Parse errors")
    doc.paragraph("Answers with no usable step (score 0, reason parse_error), and the parser's reasons, most common "
                  "first (docs/parsing.md).")
    doc.table(["run", "not parsed / answered", "reason", "episodes"], rows, wrap=True)


def world_of(r: dict) -> str:
    """The world a record's blocked steps are counted under: ``game levels`` for game tasks, else its track."""
    return "game levels" if r.get("source") == "game" else track_of(r)


def blocked_rows(runs: list[RunData]) -> tuple[list[str], list[list]]:
    """Per run and world with walls: episodes, blocked and executed steps, the blocked-step rate."""
    rows = []
    for run in runs:
        walled = [r for r in run.records if isinstance(r.get("blocked"), list)]
        for world in sorted({world_of(r) for r in walled}):
            rs = [r for r in walled if world_of(r) == world]
            nb, ns = blocked_steps(rs)
            rows.append([run.label, world, len(rs), f"{nb}/{ns}", f"{100 * nb / ns:.1f}%" if ns else "–"])
    return ["run", "world", "episodes", "blocked / executed steps", "blocked-step rate"], rows


def blocked_section(doc: Document, runs: list[RunData]) -> None:
    """"Blocked steps" for runs in worlds with walls (nothing otherwise)."""
    headers, rows = blocked_rows(runs)
    if not rows:
        return
    doc.heading(2, "Blocked steps")
    doc.paragraph("Executed steps that a wall stopped short of their commanded motion (the records' blocked flags), "
                  "over every executed step, per world with walls: Doom levels and the rooms of CameraNav.")
    doc.table(headers, rows)
