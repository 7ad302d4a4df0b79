"""``make_report(run_dirs, out_dir)``: the report of one or more run directories, section by section into one
:class:`~.document.Document`; ``overall_json(run_dirs)``: the overall figures per run as JSON (``report --json``)."""

from __future__ import annotations

import datetime as _dt
import shutil
import warnings
from pathlib import Path

from .. import __version__
from ..diagnostics.summaries import run_diagnostics
from ..evaluation.stats import summary_of
from ..outputs import OutputError
from ..questions.scoring import summarise_answers
from ..records import is_failure
from ..outputs import write_text
from .compare import RunsDifferWarning, compare_runs
from .diagnostics import diagnostics_section
from .document import Document
from .examples import examples_section, path_plots
from .game import game_json, game_section
from .leaderboard import LEADERBOARD_FILE, leaderboard_row, leaderboard_rows, rows_document
from .load import RunData, as_float, load_runs, record_value, usage
from .overall import api_usage_section, calibration, overall_section, runs_section, score_plots_section
from .paired import paired_json, paired_section
from .reliability import blocked_section, parse_error_counts, parse_errors_section
from .skill import group_figures, has_track, track_of
from .tool_use import tool_use_section

__all__ = ["make_report", "overall_json", "report_json"]


def make_report(run_dirs, out_dir) -> tuple[Path, Path]:
    """Write ``out_dir/report.md``, ``out_dir/report.html`` and ``out_dir/leaderboard.json`` (the runs'
    leaderboard rows, :mod:`.leaderboard`) for the given run directories; returns the report's two paths.

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
    doc.paragraph(f"Generated {now} by spatialact {__version__}. Scores are episode step scores (docs/scoring.md): "
                  f"the paper's raw score, shown under its name beside skill, which leads every table — (mean score "
                  f"− mean s0) / (1 − mean s0), where s0 is what doing nothing (the stay baseline) scores on the same "
                  f"tasks, so doing nothing is 0 and the ground truth 1. Intervals are percentile-bootstrap 95% "
                  f"intervals over episodes (1000 resamples, seed 0).")
    _s0_note(doc, ep_runs)
    comparison = compare_runs(ep_runs)
    if not comparison.like_for_like:
        warnings.warn(comparison.note(), RunsDifferWarning, stacklevel=2)
        doc.note(comparison.note())
    runs_section(doc, runs)
    tool_use_section(doc, ep_runs)
    overall_section(doc, ep_runs, comparison.shared if "tasks" in comparison.differs else None)
    paired_section(doc, ep_runs)
    game_section(doc, ep_runs)
    blocked_section(doc, ep_runs)
    parse_errors_section(doc, ep_runs)
    api_usage_section(doc, runs)
    diagnostics_section(doc, runs, figdir)
    score_plots_section(doc, ep_runs, figdir)
    path_plots(doc, runs, figdir)
    examples_section(doc, runs, framedir)
    paths = doc.write("spatialact report")
    write_text(out / LEADERBOARD_FILE, rows_document(leaderboard_rows(ep_runs)))
    return paths


def _s0_note(doc: Document, runs: list[RunData]) -> None:
    """Say which runs' s0 was rebuilt from their ground truth (records written before they carried it) and how many
    episodes have none (no readable ground truth: left out of skill)."""
    parts = []
    for run in runs:
        if run.s0_rebuilt or run.s0_unknown:
            parts.append(f"{run.label}: {run.s0_rebuilt} rebuilt" + (f", {run.s0_unknown} unknown (no readable "
                                                                      f"ground truth: left out of skill)"
                                                                      if run.s0_unknown else ""))
    if parts:
        doc.paragraph("Some records were written before episodes carried s0: it was rebuilt from each record's "
                      "ground truth, as eval computes it (docs/results.md). " + "; ".join(parts) + ".")


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


def _kind_figures(records: list[dict]) -> dict:
    """A group's figures for ``report --json``: episodes, skill, the paper's score, success, SPL, parse-ok rate."""
    f = group_figures(records)
    return {"episodes": f["episodes"], "skill": f["skill"], "score": f["score"], "success": f["success"]["mean"],
            "spl": f["spl"]["mean"], "parse_ok": f["parse_ok"]["mean"]}


def _run_json(run: RunData, calib) -> dict:
    """One run's entry of ``report --json``."""
    rs, every = run.records, run.all_records
    succ = [record_value(r, "success") for r in rs if record_value(r, "success") is not None]
    fig = group_figures(rs)
    kinds = sorted({str(r.get("kind")) for r in rs})
    tracks = sorted({track_of(r) for r in rs})
    out = {"run": run.label, "dir": str(run.path), "episodes": len(rs),
           "question_answers": sum(1 for r in every if r.get("record") == "question"),
           "skill": fig["skill"],
           "score": summary_of(as_float(record_value(r, "score")) for r in rs).to_dict(),
           "success": summary_of(succ).to_dict(), "spl": fig["spl"]["mean"], "parse_ok": fig["parse_ok"]["mean"],
           "blocked": fig["blocked"] if fig["blocked"]["executed"] else None,
           "kinds": {k: _kind_figures([r for r in rs if str(r.get("kind")) == k]) for k in kinds},
           "tracks": ({t: _kind_figures([r for r in rs if track_of(r) == t]) for t in tracks}
                      if any(has_track(r) for r in rs) else None),
           "parse_errors": [{"reason": why, "count": n} for why, n in parse_error_counts(rs).most_common(10)],
           "s0_rebuilt": run.s0_rebuilt, "s0_unknown": run.s0_unknown,
           # failed episodes and failed question answers (api_error, error): never scored
           "errors": sum(1 for r in every if is_failure(r)),
           "prompt_tokens": sum(usage(r, "prompt_tokens") for r in every),
           "completion_tokens": sum(usage(r, "completion_tokens") for r in every),
           "cost_usd": sum(usage(r, "cost_usd") for r in every),
           "diagnostics": run_diagnostics(every, calib), "questions": summarise_answers(every) or None,
           "leaderboard": leaderboard_row(run) if rs else None}
    per_map = game_json(run)
    if per_map is not None:  # game episodes: results per map and the blocked-step rate
        out["game"] = per_map
    return out


def overall_json(run_dirs) -> list[dict]:
    """The figures per run as JSON-able dicts (``spatialact report --json``'s ``runs``): episodes, question
    answers, ``skill`` ({skill, lo, hi, n, score, s0}), ``score`` and ``success`` (mean, interval, n), ``spl``,
    ``parse_ok``, ``blocked`` (blocked and executed steps and their rate, worlds with walls; else None), per kind
    (``kinds``) and per track (``tracks``, None without suite tracks) episodes, skill, score, success, SPL and
    parse-ok rate, ``parse_errors`` (the most common reasons with counts), ``s0_rebuilt`` / ``s0_unknown``,
    failures, tokens and cost, ``diagnostics``, ``questions``, the run's ``leaderboard`` row (None without
    episodes) and, with game episodes, ``game`` (results per map, :func:`~.game.game_json`)."""
    runs = load_runs([Path(d) for d in run_dirs])
    calib = calibration(runs)
    return [_run_json(run, calib) for run in runs]


def report_json(run_dirs) -> dict:
    """``{"runs": overall_json(...), "paired": paired comparison rows (:func:`~.paired.paired_json`),
    "leaderboard": the rows of the runs with episodes}`` — what ``spatialact report --json`` prints beside the
    report's paths."""
    runs = load_runs([Path(d) for d in run_dirs])
    calib = calibration(runs)
    ep_runs = [run for run in runs if run.records]
    entries = [_run_json(run, calib) for run in runs]
    return {"runs": entries, "paired": paired_json(ep_runs) if len(ep_runs) > 1 else [],
            "leaderboard": [e["leaderboard"] for e in entries if e["leaderboard"] is not None]}
