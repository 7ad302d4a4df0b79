"""``make_report(run_dirs, out_dir)``: the report of one or more run directories, section by section into one
:class:`~.document.Document`; ``overall_json(run_dirs)``: the overall figures per run as JSON (``report --json``)."""

from __future__ import annotations

import datetime as _dt
import shutil
import warnings
from pathlib import Path

from .. import __version__
from ..diagnostics.summaries import run_diagnostics
from ..evaluation.stats import bootstrap_ci
from ..outputs import OutputError
from ..questions.scoring import summarise_answers
from ..records import is_failure
from .compare import RunsDifferWarning, compare_runs
from .diagnostics import diagnostics_section
from .document import Document
from .examples import examples_section, path_plots
from .game import game_json, game_section
from .load import as_float, load_runs, record_value, usage
from .overall import api_usage_section, calibration, overall_section, runs_section, score_plots_section
from .tool_use import tool_use_section

__all__ = ["make_report", "overall_json"]


def make_report(run_dirs, out_dir) -> tuple[Path, Path]:
    """Write ``out_dir/report.md`` and ``out_dir/report.html`` for the given run directories; returns their paths.

    ``report.md`` refers to PNG files under ``out_dir/figures`` and ``out_dir/frames``; ``report.html`` inlines
    them and needs nothing else. When the runs with episodes differ in their tasks or their mode, a
    :class:`~.compare.RunsDifferWarning` names the runs and what differs, the report opens with the same note, and
    the Overall section adds a table on the tasks all runs share (:func:`~.compare.compare_runs`).
    """
    run_dirs = [Path(d) for d in (run_dirs if isinstance(run_dirs, (list, tuple)) else [run_dirs])]
    if not run_dirs:
        raise ValueError("make_report: no run directories given")
    runs = load_runs(run_dirs)
    out = Path(out_dir)
    figdir, framedir = _empty_dir(out / "figures"), _empty_dir(out / "frames")
    ep_runs = [run for run in runs if run.records]  # question-only runs have no episode tables or plots

    doc = Document(out)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    doc.heading(1, "spatialact report")
    doc.paragraph(f"Generated {now} by spatialact {__version__}. Scores are episode step scores (docs/scoring.md); "
                  f"intervals are percentile-bootstrap 95% intervals of the mean (1000 resamples, seed 0).")
    comparison = compare_runs(ep_runs)
    if not comparison.like_for_like:
        warnings.warn(comparison.note(), RunsDifferWarning, stacklevel=2)
        doc.note(comparison.note())
    runs_section(doc, runs)
    tool_use_section(doc, ep_runs)
    overall_section(doc, ep_runs, comparison.shared if "tasks" in comparison.differs else None)
    game_section(doc, ep_runs)
    api_usage_section(doc, runs)
    diagnostics_section(doc, runs, figdir)
    score_plots_section(doc, ep_runs, figdir)
    path_plots(doc, runs, figdir)
    examples_section(doc, runs, framedir)
    return doc.write("spatialact report")


def _empty_dir(d: Path) -> Path:
    """The report's own sub-folder ``d`` (figures, frames), emptied: only a plain folder is emptied — a link or any
    other node there is refused in one line (:class:`~spatialact.outputs.OutputError`), never followed or removed."""
    if d.is_symlink() or (d.exists() and not d.is_dir()):
        raise OutputError(f"{d}: is not a plain folder; the report empties its {d.name}/ folder and will not "
                          f"replace or follow this (move it away)")
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def overall_json(run_dirs) -> list[dict]:
    """The overall figures per run as JSON-able dicts (for ``spatialact report --json``); a run with game episodes
    adds ``game``, its results per map and blocked-step rate (:func:`~.game.game_json`)."""
    runs = load_runs([Path(d) for d in run_dirs])
    calib = calibration(runs)
    out = []
    for run in runs:
        rs = run.records
        succ = [record_value(r, "success") for r in rs if record_value(r, "success") is not None]
        every = run.all_records
        out.append({"run": run.label, "dir": str(run.path), "episodes": len(rs),
                    "question_answers": sum(1 for r in every if r.get("record") == "question"),
                    "score": bootstrap_ci(as_float(record_value(r, "score")) for r in rs).to_dict(),
                    "success": bootstrap_ci(succ).to_dict(),
                    # failed episodes and failed question answers (api_error, error): never scored
                    "errors": sum(1 for r in every if is_failure(r)),
                    "prompt_tokens": sum(usage(r, "prompt_tokens") for r in every),
                    "completion_tokens": sum(usage(r, "completion_tokens") for r in every),
                    "cost_usd": sum(usage(r, "cost_usd") for r in every),
                    "diagnostics": run_diagnostics(every, calib), "questions": summarise_answers(every) or None})
        per_map = game_json(run)
        if per_map is not None:  # game episodes: results per map and the blocked-step rate
            out[-1]["game"] = per_map
    return out
