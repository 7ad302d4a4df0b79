"""The generated-questions part of the report's Diagnostics section (docs/questions.md): per run and
question group, accuracy over every rotation and at rotation 0 beside the chance rate, CircularEval beside its
chance rate, and for numeric questions MRA, δ=2 accuracy and the median relative error."""

from __future__ import annotations

from ..questions.scoring import summarise_answers, summary_rows
from .document import Document
from .load import RunData

__all__ = ["question_summaries", "questions_section"]


def question_summaries(runs: list[RunData]) -> list:
    """(run, :func:`spatialact.questions.summarise` of its question records) for the runs that answered generated
    questions (``spatialact questions score``)."""
    out = []
    for run in runs:
        s = summarise_answers(run.all_records)
        if s:
            out.append((run, s))
    return out


def questions_section(doc: Document, questions: list) -> None:
    """"Generated questions" for the (run, summary) pairs of :func:`question_summaries`; nothing when empty."""
    if not questions:
        return
    doc.heading(3, "Generated questions")
    doc.paragraph("Camera-geometry questions (VGBench: relative pose, primitive, field of view, depth, distance, "
                  "tracking) and task-flow questions (SpaCE-10) with exact answers from the simulator (spatialact "
                  "questions). Option questions are asked under every rotation of their options: accuracy counts "
                  "every answer, 'acc r0' the options in their stored order, CircularEval a question right under "
                  "every rotation (chance: (1/n)^n for n options). Numeric answers: MRA (mean relative accuracy over "
                  "thresholds 0.50…0.95) and δ=2 (within 0.5x–2x of the truth). Failed answers (API errors) are "
                  "counted, never scored.")
    rows = []
    headers = None
    for run, summary in questions:
        headers, rs = summary_rows(summary)
        rows += [[run.label] + r for r in rs]
    doc.table(["run"] + headers, rows)
