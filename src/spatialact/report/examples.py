"""The report's example episodes: for each run the best, median and worst episode (closed loop: by success, then
final position error; one-shot: by step score) — their predicted and true paths in top view (world x–y, metres;
under Plots), and an "Example episodes" card each with the start / goal / final frames and the model's answer (cut
to :data:`MAX_RESPONSE_CHARS` characters).

Frame paths come from records, so they are untrusted: a frame is shown only when its path resolves to a file inside
its run directory; it is copied under the report's ``frames/`` folder with a sanitised name.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

from ..evaluation.results import safe_name
from .document import Document
from .load import RunData, as_float, record_value, response_text
from .plots import plot_paths

__all__ = ["pick_examples", "frame_file", "path_plots", "examples_section", "MAX_RESPONSE_CHARS",
           "N_PATH_EXAMPLES"]

MAX_RESPONSE_CHARS = 2000  # characters of a model answer shown
N_PATH_EXAMPLES = 4  # episodes per run in the path plot: the examples, then the run's first others


def _closed_loop_rank(r: dict) -> tuple:
    """How good a closed-loop episode went, ascending: failed before succeeded, then the larger final position error
    before the smaller (an unknown error counts as the largest), then the lower step score."""
    err = as_float(record_value(r, "final_position_error"))
    score = as_float(record_value(r, "score"))
    return (bool(record_value(r, "success")), -(err if math.isfinite(err) else math.inf),
            score if math.isfinite(score) else -math.inf)


def pick_examples(run: RunData, k: int = 3) -> list[tuple[str, dict]]:
    """Up to ``k`` of ("best" | "median" | "worst", record), each record once (ties broken by task id). Closed-loop
    episodes are ranked by success, then final position error (a successful episode is never the worst while one
    failed); one-shot episodes by the paper's step score. Only scored episodes (no failures) are picked."""
    scored = [r for r in run.records if math.isfinite(as_float(record_value(r, "score")))]
    if not scored:
        return []
    if all(r.get("mode") == "closed-loop" for r in scored):
        scored.sort(key=lambda r: (_closed_loop_rank(r), str(r.get("task_id"))))
    else:
        scored.sort(key=lambda r: (as_float(record_value(r, "score")), str(r.get("task_id"))))
    picks = [("best", scored[-1]), ("median", scored[len(scored) // 2]), ("worst", scored[0])]
    out, seen = [], set()
    for name, r in picks[:k]:
        if id(r) not in seen:
            seen.add(id(r))
            out.append((name, r))
    return out


def frame_file(run: RunData, r: dict, name: str) -> Path | None:
    """The record's ``name`` frame (start, goal, final) as a file inside the run directory; None when the record
    has none or its path leads elsewhere or to nothing."""
    frames = r.get("frames") or {}
    rel = frames.get(name) if isinstance(frames, dict) else None
    if not isinstance(rel, str) or not rel:
        return None
    root = run.path.resolve()
    p = (run.path / rel).resolve()
    if root not in p.parents or not p.is_file():  # a path from the record must stay inside its run
        return None
    return p


def path_plots(doc: Document, runs: list[RunData], figdir: Path) -> None:
    """Per run with episodes: the paths of its example episodes and of its first others, up to
    :data:`N_PATH_EXAMPLES`."""
    for i, run in enumerate(runs):
        if not run.records:
            continue
        eps = [r for _, r in pick_examples(run, 3)]
        extra = [r for r in run.records if r not in eps][: max(0, N_PATH_EXAMPLES - len(eps))]
        doc.image(plot_paths(run, eps + extra, figdir / f"paths_{i}.png"), f"{run.label}: predicted and true paths")


def _summary(which: str, r: dict) -> str:
    score = as_float(record_value(r, "score"))
    reason = r.get("parse_error") or r.get("reason") or (r.get("parse") or {}).get("error") or ""
    err = r.get("error") or ""
    succ = record_value(r, "success")
    closed = r.get("mode") == "closed-loop"
    return (f"{which}: task {r.get('task_id')} ({r.get('kind')})"
            + (f", {'success' if succ else 'no success'}" if closed and succ is not None else "")
            + (f", final position error {as_float(record_value(r, 'final_position_error')):.3f} m"
               if record_value(r, "final_position_error") is not None else "")
            + f", step score {score:.3f}"
            + (f", reason {reason}" if reason else "") + (f", error {err}" if err else ""))


def _copy_frames(run: RunData, r: dict, dst_dir: Path) -> list[tuple[str, Path]]:
    out = []
    for name in ("start", "goal", "final"):
        src = frame_file(run, r, name)
        if src is None:
            continue
        dst = dst_dir / safe_name(str(r.get("key") or r.get("task_id"))) / f"{name}.png"
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        out.append((name, dst))
    return out


def examples_section(doc: Document, runs: list[RunData], framedir: Path) -> None:
    """"Example episodes": per run with episodes, a card per example (summary, frames, the model's answer)."""
    if any(run.records for run in runs):
        doc.heading(2, "Example episodes")
    for i, run in enumerate(runs):
        if not run.records:
            continue
        doc.heading(3, run.label)
        for which, r in pick_examples(run):
            with doc.card(_summary(which, r)):
                doc.frames(_copy_frames(run, r, framedir / str(i)))
                text = response_text(r)
                if len(text) > MAX_RESPONSE_CHARS:
                    text = text[:MAX_RESPONSE_CHARS] + f"\n… ({len(text) - MAX_RESPONSE_CHARS} more characters)"
                doc.code(text, "Model answer:")
