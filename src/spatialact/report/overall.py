"""The report's run-level sections: the runs compared (Runs), the overall table and the figures per track, kind,
source and tag, skill first (Overall, Per track, Per kind, Per source, Per tag), tokens and cost (API usage), the
score plots (Plots), and the difficulty ladder's calibration (the random and oracle runs' per-level means) that the
diagnostics use.

Tables and plots here show each run's plain episodes (variant ""); token and cost totals count every record.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..diagnostics.summaries import calibration_levels
from .compare import on_tasks, task_source
from .document import Document
from .load import RunData, as_float, usage
from .plots import plot_error_distance, plot_scores
from .skill import has_track
from .tables import by_kind, by_source, by_tag, by_track, figure_rows, group_rows, is_diagnostic_task, overall_rows

__all__ = ["runs_section", "overall_section", "api_usage_section", "score_plots_section", "calibration"]


def runs_section(doc: Document, runs: list[RunData]) -> None:
    """The "Runs" table: directory, mode, episodes (and question answers), version, commit, the tasks (suite or task
    source, with the suite's or task file's hash) or the question file's hash."""
    doc.heading(2, "Runs")
    if any(r.get("variant") == "mirror" for run in runs for r in run.all_records):
        doc.paragraph("Runs with mirrored episodes (eval --flip): the tables and plots below show the plain episodes; "
                      "the mirrored ones are compared with them in the Diagnostics section.")
    n_answers = {id(run): sum(1 for r in run.all_records if r.get("record") == "question") for run in runs}
    rows = []
    for run in runs:
        recs = run.records or run.all_records
        prov = (recs[0].get("provenance") if recs else None) or {}
        cfg = run.config.get("config", run.config) if isinstance(run.config, dict) else {}
        modes = sorted({str(r.get("mode")) for r in run.all_records if r.get("mode")})
        row = [run.label, str(run.path), ", ".join(modes) or str(cfg.get("mode", "–")), len(run.records)]
        if any(n_answers.values()):
            row.append(n_answers[id(run)])
        tasks = task_source(run) if run.records else (prov.get("question_file_sha256") or "–")[:12]
        rows.append(row + [prov.get("spatialact_version", "–"), (prov.get("git_commit") or "–")[:12], tasks])
    doc.table(["run", "directory", "mode", "episodes"] + (["question answers"] if any(n_answers.values()) else [])
              + ["version", "commit", "tasks (sha256) / question file sha256"], rows)
    # question-only runs have no episodes: they appear in the Runs table and under Diagnostics › Generated questions
    if not any(run.records for run in runs):
        doc.paragraph("No episodes: these runs hold answers to generated questions only (see Generated questions "
                      "under Diagnostics).")


def overall_section(doc: Document, runs: list[RunData], shared_tasks=None) -> None:
    """Overall (and, for runs that mix diagnostic-suite tasks with others, the others alone; with ``shared_tasks``,
    the task ids all runs share when their task sets differ, the runs on those only), Per track (when records
    belong to tracks of a suite), Per kind, Per source (when records name one) and Per tag (when records carry
    tags), one row (or column) per run."""
    if runs:
        doc.heading(2, "Overall")
        doc.table(*overall_rows(runs))
        core = [replace(run, records=[r for r in run.records if not is_diagnostic_task(r)]) for run in runs]
        if any(0 < len(c.records) < len(run.records) for c, run in zip(core, runs)):
            doc.paragraph("These runs also hold the tasks of the diagnostic suites (tagged level or viewpoint; see "
                          "Diagnostics): the table above covers every plain episode, the one below the other tasks "
                          "only (the table `spatialact demo` prints).")
            doc.table(*overall_rows([c for c in core if c.records]))
        if shared_tasks:
            n = len(shared_tasks)
            doc.heading(3, f"Overall on the {n} task{'s' * (n != 1)} all runs share")
            doc.paragraph("The runs were not run on the same tasks (see the note at the top): this table compares "
                          "them like for like, on the tasks every run has, and leaves the others out.")
            doc.table(*overall_rows(on_tasks(runs, shared_tasks)))
        if any(has_track(r) for run in runs for r in run.records):
            doc.heading(2, "Per track")
            doc.paragraph("Tracks of the benchmark suite (the task's track; tasks without one count under their "
                          "kind). Skill: 0 is what doing nothing (the stay baseline) scores, 1 the ground truth.")
            doc.table(*figure_rows(runs, by_track, "track"))
        doc.heading(2, "Per kind")
        doc.table(*figure_rows(runs, by_kind, "kind"))
    if any(by_source(r) != ["None"] for run in runs for r in run.records):
        doc.heading(2, "Per source")
        doc.table(*group_rows(runs, by_source))
    if any(by_tag(r) for run in runs for r in run.records):
        doc.heading(2, "Per tag")
        doc.table(*group_rows(runs, by_tag))


def api_usage_section(doc: Document, runs: list[RunData]) -> None:
    """"API usage" for the runs that used tokens: tokens, cost, cost per record, cache hits, mean latency."""
    api = [run for run in runs if any(usage(r, "prompt_tokens") or usage(r, "completion_tokens")
                                      for r in run.all_records)]
    if not api:
        return
    doc.heading(2, "API usage")
    rows = []
    for run in api:
        rs = run.all_records  # the mirrored episodes of --flip cost tokens too
        pt = sum(usage(r, "prompt_tokens") for r in rs)
        ct = sum(usage(r, "completion_tokens") for r in rs)
        cost = sum(usage(r, "cost_usd") for r in rs)
        cached = sum(1 for r in rs if isinstance(r.get("usage"), dict) and r["usage"].get("cached"))
        lat = [as_float(r.get("latency_s")) for r in rs]
        lat = [v for v in lat if math.isfinite(v)]
        rows.append([run.label, run.model or "–", f"{pt:,.0f}", f"{ct:,.0f}", f"{cost:.4f}",
                     f"{cost / max(1, len(rs)):.5f}", cached, f"{np.mean(lat):.2f}" if lat else "–"])
    doc.table(["run", "model", "prompt tokens", "completion tokens", "cost (USD)",
               "cost / record (episode or answer)", "cache hits", "mean latency (s)"], rows)


def score_plots_section(doc: Document, runs: list[RunData], figdir: Path) -> None:
    """"Plots": score distributions per run and final position error against distance (with its axes note)."""
    if not runs:
        return
    doc.heading(2, "Plots")
    doc.image(plot_scores(runs, figdir / "scores.png"), "score distribution per run")
    ed_path, ed_note = plot_error_distance(runs, figdir / "error_vs_distance.png")
    doc.image(ed_path, "final position error against distance")
    if ed_note:
        doc.paragraph(f"Error against distance: {ed_note}.")


def calibration(runs: list[RunData]) -> dict | None:
    """The ladder's calibration rows: the per-level means of the first ``random`` and ``oracle`` runs of the
    report that have ladder episodes (None unless both exist)."""
    rows = {}
    for want in ("random", "oracle"):
        for run in runs:
            if run.agent == want:
                lv = calibration_levels(run.records)
                if lv:
                    rows[want] = lv
                    break
    return rows if len(rows) == 2 else None
