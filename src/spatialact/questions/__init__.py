"""Generated questions with exact answers (docs/questions.md): camera geometry after SpatialScore's VGBench and task
flow after SpaCE-10's spatial planning, scored as docs/scoring.md says, with CircularEval.

* generating: :func:`build_questions` (``spatialact questions build``) — relative pose, the primitive linking two
  frames, field of view, depth at a marked point, relative depth, the distance between two marked objects, point
  tracking, and task flow (a replayed ground truth in primitives against single-step corruptions), from procedural
  rooms or a replayed camera path, or on a recording's own frames, poses, intrinsics and depth (a game trajectory,
  a DROID or EgoDex episode: :mod:`spatialact.questions.recorded`); needs the simulator (the ``sim`` extra);
* question files: :func:`load_questions`, :func:`save_questions`, :func:`validate_question` — JSONL validated on
  load against the shipped schema (``schemas/questions.schema.json``), one-line errors;
* asking: :func:`question_prompt` (rotation ``r`` of the options), :func:`make_answerer` (``openai`` through the
  agent's endpoint, cache and records; ``oracle``, ``constant``, ``random``), :func:`run_questions` (a run
  directory of answer records, ``spatialact questions score``);
* scoring: :func:`score_response`, :func:`summarise_answers` (or :func:`summarise`: accuracy, CircularEval with
  :func:`spatialact.diagnostics.circular_eval`, MRA, δ=2), :func:`score_answers_file`.

Loading, prompting and scoring need only the light core; decisions are written down in docs/questions.md.
"""

from __future__ import annotations

from .prompt import (QUESTION_PROMPT_VERSION, QUESTION_SYSTEM_PROMPT, n_rotations, question_prompt, rotate_options,
                     rotated_answer)
from .io import (QUESTION_FORMATS, QUESTION_TYPES, SCHEMA_VERSION, TYPE_FORMATS, QuestionFile, QuestionFileError,
                     load_question_file, load_questions, option_letters, question_schema, save_questions,
                     validate_question)
from .scoring import score_answers_file, score_response, summarise, summarise_answers

__all__ = ["QUESTION_TYPES", "QUESTION_FORMATS", "TYPE_FORMATS", "SCHEMA_VERSION", "QuestionFile", "QuestionFileError",
           "load_question_file", "load_questions", "save_questions", "validate_question", "question_schema",
           "option_letters", "QUESTION_PROMPT_VERSION", "QUESTION_SYSTEM_PROMPT", "question_prompt", "rotate_options",
           "rotated_answer", "n_rotations", "score_response", "summarise_answers", "summarise",
           "score_answers_file", "build_questions", "make_answerer", "run_questions", "QUESTION_AGENTS"]


def __getattr__(name: str):  # generation needs the simulator; the run loop the results store: imported when used
    if name == "build_questions":
        from .generate import build_questions

        return build_questions
    if name in ("make_answerer", "run_questions", "QUESTION_AGENTS"):
        from . import run

        return getattr(run, name)
    raise AttributeError(f"module 'spatialact.questions' has no attribute {name!r}")
