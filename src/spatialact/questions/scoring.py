"""Scoring generated questions (docs/scoring.md) and CircularEval over the rotations of their options
(docs/diagnostics.md).

* :func:`score_response`: one answer to one question under one rotation. Multiple choice and judgment: the exact
  letter after robust extraction (:func:`spatialact.scorers.score_multiple_choice`; no random fallback, an
  unparseable answer is wrong with reason ``parse_error``). Numeric: relative error, the δ=2 rule and mean relative
  accuracy (:func:`spatialact.scorers.score_numeric`); ``score`` is the MRA, ``correct`` the δ=2 verdict.
* :func:`summarise_answers` (also named :func:`summarise`): scored answers (records) → per group (all, each type,
  each type/format): option questions' accuracy over every answered rotation, accuracy at rotation 0, CircularEval
  (right under every rotation, over the questions answered under all of them) and its chance rate; numeric
  questions' mean MRA, δ=2 accuracy and median relative error; parse errors and failures. Failures (no answer: an
  API error) are counted, never scored.
* :func:`score_answers_file`: a JSONL of answers ``{"question_id", "rotation", "response"}`` → scores.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..jsonline import LineTooLong, LongLine, check_depth, iter_lines, open_input
from ..records import is_failure as _failed, is_question
from .prompt import n_rotations, rotate_options, rotated_answer

__all__ = ["score_response", "summarise_answers", "summarise", "summary_rows", "score_answers_file"]


def _bounded_lines(f, label) -> Iterator[bytes]:
    """The lines of the answers file ``f``, each at most MAX_LINE_BYTES long (a longer one comes as a LongLine,
    scored ``invalid_line``); one with no line end in sight (``/dev/zero``) is refused in one line naming the file."""
    try:
        yield from iter_lines(f)
    except LineTooLong as e:
        raise ValueError(f"answers file {label}: {e}") from None

def score_response(q: dict, response, rotation: int = 0, *, repairs: bool = False) -> dict:
    """``{"score", "correct", "pred", "answer", "reason", ...}`` of one response to question ``q`` under option
    ``rotation``. Multiple choice: score 1 or 0 (``pred`` the letter read, None when none). Numeric: ``score`` is the
    mean relative accuracy, ``correct`` the δ=2 verdict, plus ``rel_error``, ``delta2``, ``mra``; with ``repairs``,
    also ``repairs`` when the number was read other than as written (a typographic minus,
    :func:`spatialact.scorers.questions.read_minus_signs`; the scored answers file records it — a run's question
    record has no such field, its ``pred`` is the number read)."""
    from ..scorers import score_multiple_choice, score_numeric

    ans = rotated_answer(q, rotation)
    if q["format"] == "numeric":
        s = score_numeric(response, ans)
        out = {"score": s["mra"], "correct": bool(s["delta2"]), "pred": s["pred"], "answer": float(ans),
               "reason": s["reason"], "rel_error": s["rel_error"], "delta2": bool(s["delta2"]), "mra": s["mra"]}
        if repairs and s.get("repairs"):
            out["repairs"] = list(s["repairs"])
        return out
    s = score_multiple_choice(response if isinstance(response, str) else "", ans,
                              rotate_options(q["options"], rotation))
    return {"score": s["score"], "correct": bool(s["correct"]), "pred": s["pred"], "answer": ans,
            "reason": s["reason"]}


def _mean(x) -> float | None:
    x = [float(v) for v in x]
    return float(np.mean(x)) if x else None


def _group(rs: list[dict]) -> dict:
    ok = [r for r in rs if not _failed(r)]
    out = {"answers": len(rs), "failed": len(rs) - len(ok),
           "parse_errors": sum(1 for r in ok if r.get("reason") == "parse_error")}
    opt = [r for r in ok if r.get("format") != "numeric"]
    num = [r for r in ok if r.get("format") == "numeric"]
    qids_all = {r.get("question_id") for r in rs}
    out["questions"] = len(qids_all)
    if opt:
        from ..diagnostics.circular import circular_correct

        by_q: dict = {}
        for r in opt:
            by_q.setdefault(r.get("question_id"), {})[int(r.get("rotation") or 0)] = bool(r.get("correct"))
        n_rot = {r.get("question_id"): int(r.get("n_rotations") or 1) for r in opt}
        full = [q for q, d in by_q.items() if len(d) == n_rot[q] and set(d) == set(range(n_rot[q]))]
        circ = circular_correct([[by_q[q][k] for k in range(n_rot[q])] for q in full]) if full else np.zeros(0, bool)
        first = [d[0] for d in by_q.values() if 0 in d]
        out["option_questions"] = len(by_q)
        out["accuracy"] = _mean(r.get("correct") for r in opt)
        out["accuracy_r0"] = _mean(first)
        out["circular"] = float(circ.mean()) if len(full) else None
        out["circular_n"] = len(full)
        # per answer, as accuracy: a question of n options asked under n rotations weighs n answers of chance 1/n
        out["chance"] = _mean(1.0 / n_rot[r.get("question_id")] for r in opt)
        out["circular_chance"] = _mean((1.0 / n_rot[q]) ** n_rot[q] for q in full) if full else None
    if num:
        rel = [r.get("rel_error") for r in num]
        rel = [math.inf if v is None else float(v) for v in rel]
        out["numeric_questions"] = len({r.get("question_id") for r in num})
        out["mra"] = _mean(r.get("mra") or 0.0 for r in num)
        out["delta2"] = _mean(bool(r.get("delta2")) for r in num)
        out["median_rel_error"] = float(np.median(rel)) if rel else None
    return out


def summarise_answers(records) -> dict:
    """Per group — ``all``, each ``type``, each ``type/format`` — the figures of :func:`_group` over scored answer
    records (each with ``question_id``, ``type``, ``format``, ``rotation``, ``n_rotations``, ``correct``, ``score``,
    ``reason``, and for numeric answers ``mra``, ``delta2``, ``rel_error``). Records of other kinds (episode records
    in a run directory) are ignored: a question record has ``record: "question"`` or a ``question_id``."""
    rs = [r for r in records if isinstance(r, dict) and (is_question(r) or "question_id" in r)]
    if not rs:
        return {}
    out = {"all": _group(rs)}
    for key in sorted({str(r.get("type")) for r in rs}):
        out[key] = _group([r for r in rs if str(r.get("type")) == key])
    for key in sorted({f"{r.get('type')}/{r.get('format')}" for r in rs}):
        out[key] = _group([r for r in rs if f"{r.get('type')}/{r.get('format')}" == key])
    return out


#: The name :func:`summarise_answers` had first (``spatialact.questions.summarise``): not the project's
#: mean-with-interval summary (:func:`spatialact.scorers.summarise`) but the answers' accuracy, CircularEval and MRA
#: per group.
summarise = summarise_answers


def _fmt(v, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def summary_rows(summary: dict) -> tuple[list[str], list[list]]:
    """A table of :func:`summarise_answers`'s figures: headers and one row per group (a type generated in one format
    only is shown by its ``type/format`` row alone). '–' marks a figure the group has no data for."""
    headers = ["group", "questions", "answers", "accuracy", "acc r0", "chance", "CircularEval", "circ. chance", "MRA",
               "δ=2", "median rel err", "parse errors", "failed"]
    rows = []
    for name, g in summary.items():
        if name != "all" and "/" not in name and sum(1 for k in summary if k.startswith(name + "/")) == 1:
            continue
        rows.append([name, g["questions"], g["answers"], _fmt(g.get("accuracy")), _fmt(g.get("accuracy_r0")),
                     _fmt(g.get("chance")), _fmt(g.get("circular")), _fmt(g.get("circular_chance")),
                     _fmt(g.get("mra")), _fmt(g.get("delta2")), _fmt(g.get("median_rel_error")),
                     g["parse_errors"], g["failed"]])
    return headers, rows


def score_answers_file(questions, answers, out=None) -> dict:
    """Score a JSONL of answers against question records: each line ``{"question_id", "rotation" (default 0),
    "response"}``. Writes one scored line per answer line to ``out`` (default ``<answers>.scores.jsonl``) and
    returns ``{"summary": summarise_answers(...), "out", "counts"}``. A line that is not JSON, names an unknown
    question or a rotation the question does not have is scored 0 with its reason (invalid_json — a line nested
    deeper than ``jsonline.MAX_JSON_DEPTH`` too —, invalid_line, unknown_question), never a crash. ``answers`` is a
    regular file: a FIFO, a device or a folder is refused in one line before it is opened; a question × rotation answered twice keeps the last answer. A file where no
    line answers a question (empty, blank, or every line one of those) raises a one-line ValueError and writes
    nothing."""
    by_id = {q["id"]: q for q in questions}
    answers = Path(answers)
    out = Path(out) if out is not None else answers.with_name(answers.name + ".scores.jsonl")
    counts = {"lines": 0, "scored": 0, "invalid_json": 0, "invalid_line": 0, "unknown_question": 0}
    scored: dict = {}
    rows: list[dict] = []
    with open_input(answers, "answers file", ValueError) as fh:
        for lineno, raw in enumerate(_bounded_lines(fh, answers), 1):
            if type(raw) is not LongLine and not raw.strip():
                continue
            counts["lines"] += 1
            row = {"line": lineno}
            if type(raw) is LongLine:  # longer than MAX_LINE_BYTES: its bytes were skipped, never held
                counts["invalid_line"] += 1
                rows.append({**row, "score": 0.0, "correct": False, "reason": "invalid_line"})
                continue
            try:
                check_depth(raw)  # nested deeper than jsonline.MAX_JSON_DEPTH: invalid_json, never decoded
                rec = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                counts["invalid_json"] += 1
                rows.append({**row, "score": 0.0, "correct": False, "reason": "invalid_json"})
                continue
            qid = rec.get("question_id") if isinstance(rec, dict) else None
            rot = rec.get("rotation", 0) if isinstance(rec, dict) else None
            if not isinstance(qid, str) or isinstance(rot, bool) or not isinstance(rot, int):
                counts["invalid_line"] += 1
                rows.append({**row, "score": 0.0, "correct": False, "reason": "invalid_line"})
                continue
            q = by_id.get(qid)
            if q is None:
                counts["unknown_question"] += 1
                rows.append({**row, "question_id": qid, "score": 0.0, "correct": False,
                             "reason": "unknown_question"})
                continue
            if not 0 <= rot < n_rotations(q):
                counts["invalid_line"] += 1
                rows.append({**row, "question_id": qid, "rotation": rot, "score": 0.0, "correct": False,
                             "reason": "invalid_line"})
                continue
            s = score_response(q, rec.get("response"), rot, repairs=True)
            r = {**row, "record": "question", "question_id": qid, "type": q["type"], "format": q["format"],
                 "rotation": rot, "n_rotations": n_rotations(q), **s}
            counts["scored"] += 1
            rows.append(r)
            scored[(qid, rot)] = r
    if not counts["scored"]:
        # an empty file or one where no line answers a question is a failed export, not a score of nothing
        what = (", ".join(f"{k} {counts[k]}" for k in ("invalid_json", "invalid_line", "unknown_question")
                          if counts[k]) if counts["lines"] else "no non-blank line")
        raise ValueError(f"answers file {answers}: no line answers a question of the question file ({what})")
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                for k, v in r.items()}, ensure_ascii=False) + "\n")
    os.replace(tmp, out)
    counts["duplicates"] = counts["scored"] - len(scored)
    answered = {q for q, _ in scored}
    counts["questions"] = len(by_id)
    counts["unanswered"] = len(set(by_id) - answered)
    return {"summary": summarise_answers(scored.values()), "out": str(out), "counts": counts}
