"""Question files: JSON Lines, one question a line, validated on load against the shipped schema
(``schemas/questions.schema.json``, version 1) and the checks a JSON Schema cannot state (docs/questions.md).

Every problem is reported as one line naming the file, the line, the question (when its id is valid), the field and
what is wrong, e.g. ``q.jsonl:3: question 'q-0-depth-num-001': field 'answer': 'E' is not one of the 4 options``.
Lines are strict JSON (``NaN`` and ``Infinity`` are refused) nested at most ``jsonline.MAX_JSON_DEPTH`` levels. A
numeric question's answer written as text holding one number (``"79"``, as a model or a converter writes it) is read
as that number, and the file says so (:attr:`QuestionFile.notes`; ``questions score`` prints them in one line); text
that is no number is refused saying the answer must be a number. Relative paths (images, depth maps) are relative to the
file's folder and come back absolute; :func:`save_questions` writes them relative again, so a question folder can be
moved whole. Only the light core is needed (numpy): loading and scoring a question file imports no simulator.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable

import numpy as np

from ..jsonline import LineTooLong, TooDeep, check_depth, open_input, read_bounded, stored_path
from ..schema_compiler import compile_schema, format_path
from ..tasks.io import write_jsonl_atomic

__all__ = ["QuestionFileError", "QuestionFile", "QUESTION_TYPES", "QUESTION_FORMATS", "TYPE_FORMATS",
           "SCHEMA_VERSION", "question_schema", "validate_question", "load_questions", "load_question_file",
           "save_questions", "option_letters"]

SCHEMA_VERSION = 1
#: The question types and the formats each is generated in (docs/questions.md: VGBench's camera geometry, SpaCE-10's
#: planning).
TYPE_FORMATS: dict[str, tuple[str, ...]] = {
    "relative_pose": ("multiple_choice", "judgment"),
    "primitive": ("multiple_choice",),
    "fov": ("numeric", "multiple_choice"),
    "depth": ("numeric",),
    "relative_depth": ("multiple_choice",),
    "distance": ("numeric", "multiple_choice"),
    "tracking": ("multiple_choice",),
    "task_flow": ("multiple_choice",),
}
QUESTION_TYPES = tuple(TYPE_FORMATS)
QUESTION_FORMATS = ("multiple_choice", "judgment", "numeric")
# What each type needs beyond the schema: at least this many views and points, and a sequence.
_NEEDS = {"relative_pose": (2, 0, False), "primitive": (2, 0, True), "fov": (1, 0, False), "depth": (1, 1, False),
          "relative_depth": (1, 2, False), "distance": (1, 2, False), "tracking": (2, 1, False),
          "task_flow": (2, 0, True)}
ORTHO_TOL = 1e-5


class QuestionFileError(ValueError):
    """A question file that does not validate; the message names the file, the line, the question and the field."""


@dataclass(frozen=True)
class QuestionFile:
    """A loaded question file: its path, the SHA-256 of its bytes and the questions (decoded lines) in file order;
    ``notes``: what was read other than as written, one line each (a numeric answer given as text, read as the
    number: ``q.jsonl:3: question 'q-1': field 'answer': the text '79' read as the number 79``)."""

    path: Path
    sha256: str
    questions: tuple[dict, ...]
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.questions)


def option_letters(n: int) -> str:
    """The letters of ``n`` options: ``A``, ``B``, …"""
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]


@lru_cache(maxsize=1)
def question_schema() -> dict:
    """The question JSON Schema shipped in the package (``spatialact/schemas/questions.schema.json``)."""
    text = resources.files("spatialact").joinpath("schemas/questions.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _validator():
    return compile_schema(question_schema())


@lru_cache(maxsize=1)
def _id_validator():
    return compile_schema({"$defs": question_schema()["$defs"], "$ref": "#/$defs/id"})


def _schema_problems(rec) -> list[tuple[str, str]]:
    return [(format_path(p), m) for p, m in _validator().problems(rec)]


def _finite_json(x) -> bool:
    try:
        json.dumps(x, allow_nan=False)
        return True
    except (ValueError, TypeError):
        return False


def _pose_problem(m) -> str | None:
    from .. import geometry

    T = np.asarray(m, dtype=np.float64)
    if np.abs(T[3] - [0.0, 0.0, 0.0, 1.0]).max() > 1e-8:
        return f"last row must be [0, 0, 0, 1], got {T[3].tolist()}"
    err = float(geometry.orthonormality_error(T[:3, :3]))
    if err > ORTHO_TOL:
        return f"rotation is not orthonormal (error {err:.3g})"
    return None


def _semantic_problems(rec: dict) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    typ, fmt = rec["type"], rec["format"]
    if fmt not in TYPE_FORMATS[typ]:
        out.append(("format", f"{typ!r} questions come as {' or '.join(TYPE_FORMATS[typ])}, not {fmt!r}"))
    views = rec["views"]
    for i, v in enumerate(views):
        msg = _pose_problem(v["pose"])
        if msg:
            out.append((f"views.{i}.pose", msg))
    for i, im in enumerate(rec["images"]):
        if im["view"] >= len(views):
            out.append((f"images.{i}.view", f"{im['view']} but there are {len(views)} views"))
    points = rec.get("points") or []
    for i, p in enumerate(points):
        if p["view"] >= len(views):
            out.append((f"points.{i}.view", f"{p['view']} but there are {len(views)} views"))
            continue
        v = views[p["view"]]
        x, y = p["pixel"]
        if not (-0.5 <= x < v["width"] - 0.5 and -0.5 <= y < v["height"] - 0.5):
            out.append((f"points.{i}.pixel", f"{[x, y]} is outside the {v['width']}x{v['height']} image"))
    n_views, n_points, needs_seq = _NEEDS[typ]
    if len(views) < n_views:
        out.append(("views", f"{typ!r} questions need at least {n_views} views, got {len(views)}"))
    if len(points) < n_points:
        out.append(("points", f"{typ!r} questions need at least {n_points} marked points, got {len(points)}"))
    if needs_seq and "sequence" not in rec:
        out.append(("sequence", f"{typ!r} questions carry the action sequence they were computed from"))
    if "sequence" in rec:
        try:
            from ..action_space import ActionSequence

            ActionSequence.from_dict(rec["sequence"])
        except (ValueError, KeyError, TypeError) as e:
            out.append(("sequence", str(e)))
    ans, opts = rec["answer"], rec.get("options")
    if fmt == "numeric":
        if not isinstance(ans, (int, float)) or isinstance(ans, bool):
            out.append(("answer", f"a numeric question's answer is a number, got {ans!r}"))
        elif not ans > 0:  # relative error, δ=2 and MRA divide by it; a depth, distance or angle asked is > 0
            out.append(("answer", f"a numeric question's answer is a positive number, got {ans!r}"))
        if opts is not None:
            out.append(("options", "a numeric question has no options"))
        if "unit" not in rec:
            out.append(("unit", "a numeric question states its unit (m, deg or px)"))
    else:
        if opts is None:
            out.append(("options", f"a {fmt.replace('_', '-')} question has options"))
        elif fmt == "judgment" and len(opts) != 2:
            out.append(("options", f"a judgment has 2 options (yes, no), got {len(opts)}"))
        if not isinstance(ans, str):
            out.append(("answer", f"a {fmt.replace('_', '-')} question's answer is an option letter, got {ans!r}"))
        elif opts is not None and ans not in option_letters(len(opts)):
            out.append(("answer", f"{ans!r} is not one of the {len(opts)} options"))
        if opts is not None and len(set(opts)) != len(opts):
            out.append(("options", "two options have the same text"))
    ov = rec.get("option_values")
    if ov is not None and (opts is None or len(ov) != len(opts)):
        out.append(("option_values", f"{len(ov)} values for {0 if opts is None else len(opts)} options"))
    for key in ("option_values", "meta", "scene"):
        if rec.get(key) is not None and not _finite_json(rec[key]):
            out.append((key, "holds a number that is not finite (or a value that is not JSON)"))
    return out


def _label(rec) -> str:
    if isinstance(rec, dict):
        qid = rec.get("id")
        if isinstance(qid, str) and not _id_validator()(qid):
            return f"question {qid!r}: "
    return ""


def validate_question(rec) -> list[str]:
    """Every problem with one question line, as ``field 'x': what`` strings (empty when valid)."""
    if not isinstance(rec, dict):
        return [f"line: expected a JSON object, got {type(rec).__name__}"]
    problems = _schema_problems(rec) or _semantic_problems(rec)
    ans = rec.get("answer")
    if rec.get("format") == "numeric" and isinstance(ans, str):  # the schema's words are a letter's ("at most 1
        said = f"a numeric question's answer is a number, got the text {ans[:40]!r}"  # characters"): say what
        problems = list(dict.fromkeys((f, said if f == "answer" else m) for f, m in problems))  # it must be, once
    return [f"field '{f}': {m}" for f, m in problems]


# A number as text: digits with an optional sign, decimal point and exponent (matched whole, at most 64 characters;
# no nested repetition that could backtrack).
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number_in_text(text: str) -> int | float | None:
    """The number ``text`` holds alone (``"79"``, ``" 1.5 "``, ``"2e-3"``), or None (anything else, or not finite)."""
    t = text.strip()
    if len(t) > 64 or not _NUMBER_TEXT.fullmatch(t):
        return None
    v = float(t)
    if not math.isfinite(v):
        return None
    return int(t) if t.lstrip("+-").isdigit() else v


def _read_numeric_text(rec, where: str, notes: list[str]) -> None:
    """A numeric question's ``answer`` given as text holding one number becomes that number, noted (in place)."""
    if not isinstance(rec, dict) or rec.get("format") != "numeric" or not isinstance(rec.get("answer"), str):
        return
    v = _number_in_text(rec["answer"])
    if v is not None:
        notes.append(f"{where}: {_label(rec)}field 'answer': the text {rec['answer']!r} read as the number {v!r}")
        rec["answer"] = v


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _abs(folder: str, p):
    return p if not p or os.path.isabs(p) else os.path.join(folder, p)


def _resolve(rec: dict, folder: str) -> dict:
    rec["images"] = [dict(im, path=_abs(folder, im["path"])) for im in rec["images"]]
    rec["views"] = [dict(v, depth=_abs(folder, v.get("depth"))) if v.get("depth") else v for v in rec["views"]]
    return rec


def load_question_file(path: str | os.PathLike) -> QuestionFile:
    """Read and validate a question file; raises :class:`QuestionFileError` naming the file, line, question and
    field. Duplicate ids and an empty file are errors. Relative paths come back absolute."""
    import hashlib

    path = Path(path)
    with open_input(path, "question file", QuestionFileError) as f:
        try:
            data = read_bounded(f)  # no line over MAX_LINE_BYTES (16 MiB) is ever held, /dev/zero included
        except LineTooLong as e:
            raise QuestionFileError(f"{path}:{e.lineno}: line {e.what}") from None
    folder = os.path.abspath(path.parent)
    out: list[dict] = []
    notes: list[str] = []
    seen: dict[str, int] = {}
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            check_depth(raw)  # jsonline.MAX_JSON_DEPTH, before the decoder recurses
            rec = _DECODER.decode(raw.decode("utf-8-sig"))  # a byte-order mark is accepted, as in task files
        except UnicodeDecodeError as e:
            raise QuestionFileError(f"{path}:{lineno}: not valid UTF-8 (byte {e.start})") from None
        except json.JSONDecodeError as e:
            raise QuestionFileError(f"{path}:{lineno}: not valid JSON ({e.msg} at column {e.colno})") from None
        except TooDeep as e:
            raise QuestionFileError(f"{path}:{lineno}: {e}") from None
        except ValueError as e:
            raise QuestionFileError(f"{path}:{lineno}: not valid JSON ({e})") from None
        except RecursionError:  # pragma: no cover - TooDeep comes first
            raise QuestionFileError(f"{path}:{lineno}: not valid JSON (nested too deeply)") from None
        _read_numeric_text(rec, f"{path}:{lineno}", notes)
        problems = validate_question(rec)
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise QuestionFileError(f"{path}:{lineno}: {_label(rec)}{problems[0]}{more}")
        qid = rec["id"]
        if qid in seen:
            raise QuestionFileError(f"{path}:{lineno}: field 'id': {qid!r} already used on line {seen[qid]}")
        seen[qid] = lineno
        out.append(_resolve(rec, folder))
    if not out:
        raise QuestionFileError(f"{path}: no questions (the file is empty)")
    return QuestionFile(path, hashlib.sha256(data).hexdigest(), tuple(out), tuple(notes))


def load_questions(path: str | os.PathLike, *, ids: Iterable[str] | None = None) -> list[dict]:
    """The validated questions of a file (optionally only those in ``ids``); see
    :func:`load_question_file`."""
    qs = load_question_file(path).questions
    if ids is None:
        return list(qs)
    want = set(ids)
    return [q for q in qs if q["id"] in want]


def save_questions(questions: Iterable[dict], path: str | os.PathLike) -> Path:
    """Write questions as JSONL (atomically: a temporary file, then rename), each validated first; paths
    under the file's folder are written relative to it. Writing no question is refused."""
    path = Path(path)
    base = path.parent
    base.mkdir(parents=True, exist_ok=True)

    def checked():
        seen: set[str] = set()
        for rec in questions:
            rec = dict(rec)
            rec["images"] = [dict(im, path=stored_path(im["path"], base)) for im in rec.get("images", [])]
            rec["views"] = [dict(v, depth=stored_path(v.get("depth"), base)) if v.get("depth") else v
                            for v in rec.get("views", [])]
            problems = validate_question(rec)
            if problems:
                raise QuestionFileError(f"{_label(rec) or 'line: '}{problems[0]}")
            if rec["id"] in seen:
                raise QuestionFileError(f"question {rec['id']!r}: field 'id': used twice")
            seen.add(rec["id"])
            yield rec

    return write_jsonl_atomic(path, checked(), QuestionFileError(f"{path}: no questions to write (an empty "
                                                                 "question file does not load)"))


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
