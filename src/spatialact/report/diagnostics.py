"""The report's "Diagnostics" section (docs/diagnostics.md): FlipEval (plain, mirrored, paired,
inconsistency, left/right bias), the viewpoint robustness δ with paired intervals, the difficulty ladder with RPDR
(and chance-normalised scores when random and oracle runs are in the report), prediction bias with the sign
confusion matrices, and the generated questions (:mod:`.questions`). Each part is shown for the runs it applies
to; nothing when none applies. The figures come from :func:`spatialact.diagnostics.run_diagnostics` over every
record of a run (the mirrored episodes of ``eval --flip`` included).
"""

from __future__ import annotations

from pathlib import Path

from ..diagnostics.summaries import run_diagnostics
from ..vocab import LEVELS
from .document import Document
from .load import RunData
from .overall import calibration
from .plots import plot_bias, plot_flip, plot_ladder, plot_viewpoints
from .questions import question_summaries, questions_section
from .tables import fmt_summary, fmt_value

__all__ = ["diagnostics_section"]


def diagnostics_section(doc: Document, runs: list[RunData], figdir: Path) -> None:
    """The "Diagnostics" section: each part for the runs it applies to, figures saved under ``figdir``."""
    calib = calibration(runs)
    diags = [(run, run_diagnostics(run.all_records, calib)) for run in runs]
    questions = question_summaries(runs)
    if not any(v for _, d in diags for v in d.values()) and not questions:
        return
    doc.heading(2, "Diagnostics")
    doc.paragraph("Why an agent fails, not only how often (definitions in docs/diagnostics.md). Intervals "
                  "are percentile-bootstrap 95% intervals (1000 resamples, seed 0); '–' marks a figure that is "
                  "undefined (a zero denominator) or has no data.")
    _flip(doc, [(run, d["flip"]) for run, d in diags if d["flip"]], figdir)
    _viewpoint(doc, [(run, d["viewpoint"]) for run, d in diags if d["viewpoint"]], figdir)
    _ladder(doc, [(run, d["ladder"]) for run, d in diags if d["ladder"]], calib, figdir)
    _bias(doc, [(run, d["bias"]) for run, d in diags if d["bias"]], figdir)
    questions_section(doc, questions)


def _flip(doc: Document, flips: list, figdir: Path) -> None:
    if not flips:
        return
    doc.heading(3, "FlipEval: mirrored views")
    doc.paragraph("Each task is also run mirrored left-right (eval --flip): images flipped, poses M T M, ground truth "
                  "and instruction mirrored; the answer is mirrored back and scored against the true ground truth. "
                  "Paired: the worse of the two scores per task. Inconsistency: 1 − the mean of the two answers "
                  "scored against each other (0 = mirror-consistent; pairs with an unparsed answer are counted "
                  "apart). L/R bias: (left − right) / (left + right) over the Truck, Pan and Roll units of the "
                  "answers as given, beside the same figure of the ground truths asked (0 by construction under the "
                  "flip).")
    doc.table(["run", "pairs", "plain", "mirrored", "paired", "inconsistency", "unparsed pairs", "L/R bias",
               "L/R bias truth"],
              [[run.label, f["n_pairs"], fmt_summary(f["plain"]), fmt_summary(f["mirrored"]),
                fmt_summary(f["paired"]), fmt_summary(f["inconsistency"]), f["inconsistency_nan"],
                fmt_value(f["bias_pred"], signed=True), fmt_value(f["bias_gt"], signed=True)] for run, f in flips])
    doc.image(plot_flip(flips, figdir / "diag_flip.png"), "FlipEval per run")


def _viewpoint(doc: Document, vps: list, figdir: Path) -> None:
    if not vps:
        return
    doc.heading(3, "Viewpoint robustness")
    doc.paragraph("Pairs of tasks that share scene and goal, one from a common viewpoint (level, |pitch| ≤ 15°, eye "
                  "height) and one from an uncommon one (|roll| ≥ 20°, |pitch| ≥ 40°, or very low or high). "
                  "δ = (S_uncommon − S_common) / S_common, with a paired bootstrap interval.")
    doc.table(["run", "kind", "pairs", "S_common", "S_uncommon", "δ", "δ 95% CI"],
              [[run.label, kind, v["n_pairs"], fmt_summary(v["common"]), fmt_summary(v["uncommon"]),
                fmt_value(v["delta"], signed=True),
                # one pair has no interval (its resamples are all the pair itself): shown as no interval, as n=1 is
                f"[{fmt_value(v['delta_ci'][0], signed=True)}, {fmt_value(v['delta_ci'][1], signed=True)}]"
                if v["n_pairs"] > 1 else "–"]
               for run, vp in vps for kind, v in vp.items()])
    doc.image(plot_viewpoints(vps, figdir / "diag_viewpoint.png"), "viewpoint robustness per run")


def _ladder(doc: Document, lads: list, calib: dict | None, figdir: Path) -> None:
    if not lads:
        return
    doc.heading(3, "Difficulty ladder")
    doc.paragraph("Levels add one factor at a time: L1 one translation axis, L2 several, L3 with rotation, L4 "
                  "distractor objects and low view overlap, L5 an uncommon viewpoint. RPDR = min(1, S_next / S_prev) "
                  "between consecutive levels (Spatial457; 1 = no drop)."
                  + (" Normalised: (S − S_random) / (S_oracle − S_random), from the random and oracle runs of this "
                     "report." if calib else " A chance-normalised score needs random and oracle runs in the report."))
    rp_names = [f"{LEVELS[i]}→{LEVELS[i + 1]}" for i in range(len(LEVELS) - 1)]
    rows = []
    for run, lad in lads:
        for kind, v in lad.items():
            sc, rp = v["scores"], v["rpdr"]
            rows.append([run.label, kind] + [fmt_summary(sc.get(lv), ci=False) for lv in LEVELS]
                        + [fmt_value(rp.get(n)) for n in rp_names])
    doc.table(["run", "kind"] + list(LEVELS) + [f"RPDR {n}" for n in rp_names], rows)
    if calib:
        doc.table(["run", "kind"] + [f"normalised {lv}" for lv in LEVELS],
                  [[run.label, kind] + [fmt_value((v.get("normalised") or {}).get(lv)) for lv in LEVELS]
                   for run, lad in lads for kind, v in lad.items()])
    doc.image(plot_ladder(lads, figdir / "diag_ladder.png"), "score per difficulty level")


def _bias(doc: Document, biases: list, figdir: Path) -> None:
    if not biases:
        return
    doc.heading(3, "Prediction bias")
    doc.paragraph("A label is a motion primitive present in a step. Label CV: the coefficient of variation "
                  "(population std / mean) of the predicted label counts over the 12 primitives, zeros included "
                  "(0 = every primitive equally often); normalised: the CV of predicted / true count over the labels "
                  "in the ground truth (0 = the ground truth's own mix). The matrices compare the sign (−, 0, +) of "
                  "each axis per step, predicted against true.")
    doc.table(["run", "episodes", "label CV", "label CV truth", "label CV normalised", "L/R bias", "L/R bias truth"],
              [[run.label, b["n"], fmt_value(b["label_cv"]), fmt_value(b["label_cv_gt"]),
                fmt_value(b["label_cv_normalised"]), fmt_value(b["bias_pred"], signed=True),
                fmt_value(b["bias_gt"], signed=True)] for run, b in biases])
    for i, (run, b) in enumerate(biases):
        doc.image(plot_bias(run.label, b, figdir / f"diag_bias_{i}.png"),
                  f"{run.label}: label counts and sign confusion per axis")
