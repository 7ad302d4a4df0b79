"""The result record — one JSON line of a run directory's ``results.jsonl`` — and its one owner.

Three record types (:data:`RECORD_TYPES`), told apart by :func:`record_type`:

* ``episode``: an episode with an answer (``reason`` null, or ``parse_error`` for an answer with no usable step:
  score 0), written by :func:`spatialact.evaluation.episode.run_episode` — fields :data:`EPISODE_FIELDS` in that
  order, then ``tools``, ``privileged``, ``tool_calls`` for a tool-using agent (:data:`TOOL_FIELDS`),
  ``gl_renderer``, ``frames`` (the runner) and ``provenance`` (the results store);
* ``failure``: an episode without an answer (``reason`` in :data:`FAILURE_REASONS`: the agent's call failed, or an
  exception ended it): the same fields, every score and closed-loop figure null (:func:`failure_scores`),
  ``error`` and ``error_kind`` set; ``gl_renderer`` is absent when the episode ended in an exception;
* ``question``: one answer to a generated question under one rotation of its options (``record: "question"``),
  written by :func:`spatialact.questions.run.run_questions` — fields :data:`QUESTION_FIELDS`, plus
  :data:`NUMERIC_FIELDS` for numeric questions, then ``provenance``; ``reason: "api_error"`` marks an answer that
  could not be obtained (no score).

The shipped JSON Schema ``schemas/results.schema.json`` (version :data:`RESULTS_SCHEMA_VERSION`) has one variant per
type; :func:`validate_result` checks a record against the variant of its type. Records carry no schema version
field (the files are unchanged); the schema describes what this version writes. It also admits what the API agents
report and the writers are to carry (``spatialact.agents.wire``): an optional ``response_truncated`` (episode and
question records: a reply longer than the caps, whose beginning is the response) and ``null`` tokens and cost in
``usage`` (token counts that were not believable: unknown, not zero). Episodes in a world with walls (the game, a
room with collisions on) carry an optional ``blocked``: one flag per executed step, true where a wall stopped the step
short; episodes of a task whose ``meta.image_sha256`` pins its images (a frozen suite) carry an optional
``images_match``: whether the start and goal images rendered now have those hashes. Every record the results store
appends (episode, failure and question alike) carries ``run_id`` right after ``key``: the identity of the run
directory it was written in (``spatialact.evaluation.results``: a record whose ``run_id`` is not its run's is
refused when the run is opened or read); records of runs made before runs had one have none, and the schema admits
both.

Version 2 added ``repeat`` (after ``variant``), ``s0`` (after ``score``) and ``parse_error`` (after ``reason``) to
every episode and failure record, and ``suite`` / ``suite_sha256`` to the provenance.

Keys: :func:`episode_key` (``task|agent|env|mode|seed[|variant][|r<k>]``, the resume key), :func:`record_key` (a record's
key), :func:`question_key`. Poses in records are 4×4 C2W matrices in metres (world +Z up, camera OpenCV axes), as
nested lists. Light core: the standard library only (the schema checker is imported when first used).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

__all__ = ["RESULTS_SCHEMA_VERSION", "RECORD_TYPES", "FAILURE_REASONS", "RETRIED_ON_RESUME", "KEY_FIELDS",
           "STEP_SCORE_FIELDS", "SCORE_FIELDS", "CLOSED_LOOP_FIELDS", "EPISODE_FIELDS", "TOOL_FIELDS",
           "USAGE_FIELDS", "QUESTION_FIELDS", "NUMERIC_FIELDS", "QUESTION_RECORD", "QUESTION_ENV", "QUESTION_MODE",
           "episode_key", "record_key", "question_key", "question_variant", "is_failure", "is_question",
           "record_type", "failure_scores", "results_schema", "validate_result"]

#: The version of ``schemas/results.schema.json`` (its ``$id`` ends ``results-<version>.json``).
RESULTS_SCHEMA_VERSION = 2
#: The record types, one schema variant each.
RECORD_TYPES = ("episode", "failure", "question")
#: Record reasons that mark a failure (no score; the eval command exits non-zero) rather than a result.
FAILURE_REASONS = ("api_error", "error")
#: Failures that rerunning the same command retries (``--retry-errors`` retries every failure).
RETRIED_ON_RESUME = ("api_error",)
#: The fields :func:`episode_key` joins (then ``variant`` when not empty, and ``r<repeat>`` for a repeat after the
#: first).
KEY_FIELDS = ("task_id", "agent", "env", "mode", "seed")
#: An episode's mean step scores (docs/scoring.md): distance, direction (raw cosine), translation, rotation, gripper.
STEP_SCORE_FIELDS = ("s_d", "s_theta", "s_step", "s_rot", "s_grip")
#: The scoring fields of an episode record, in the order written (all null but ``reason`` and ``n_repairs`` in a
#: failure): ``score`` the raw episode score, ``s0`` what doing nothing scores on the task under the run's profile,
#: weights and mode (``spatialact.scorers.null_score``: the zero of skill), ``parse_error`` the parser's reason when
#: the answer had no usable step (``reason: "parse_error"``), else null.
SCORE_FIELDS = ("score", "s0", *STEP_SCORE_FIELDS, "per_step", "net_translation_error", "net_rotation_error",
                "weights", "ok", "reason", "parse_error", "n_repairs")
#: The closed-loop figures of an episode (docs/scoring.md), in the order written.
CLOSED_LOOP_FIELDS = ("final_position_error", "final_rotation_error", "success", "path_length", "d0", "spl",
                      "n_steps")
#: Every episode or failure record's fields as :func:`~spatialact.evaluation.episode.run_episode` writes them, in
#: order (``gl_renderer``, ``frames`` and ``provenance`` follow, and the tool fields for a tool-using agent; the
#: results store puts ``run_id`` right after ``key``).
EPISODE_FIELDS = ("key", "task_id", "kind", "source", "tags", "agent", "model", "env", "mode", "seed", "variant",
                  "repeat", *SCORE_FIELDS, "repairs", "response", "pred", "gt", "gt_poses", "pred_poses", "start_pose",
                  "goal_pose", *CLOSED_LOOP_FIELDS, "n_executed", "truncated", "simulated", "latency_s", "usage",
                  "wall_s", "error", "error_kind")
#: A tool-using agent's fields (``react``, ``plan-execute``): its tool set, whether it read simulator truth, every call.
TOOL_FIELDS = ("tools", "privileged", "tool_calls")
#: The fields of a record's ``usage``, summed over its turns.
USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cost_usd", "cached", "turns")
#: A question record's ``record`` field, ``env`` and ``mode``.
QUESTION_RECORD, QUESTION_ENV, QUESTION_MODE = "question", "questions", "question"
#: The extra fields of an answer to a numeric question (after ``reason``).
NUMERIC_FIELDS = ("rel_error", "delta2", "mra")
#: A question record's fields in the order written (numeric questions add :data:`NUMERIC_FIELDS` after ``reason``;
#: ``provenance`` follows; the results store puts ``run_id`` right after ``key``).
QUESTION_FIELDS = ("key", "record", "task_id", "question_id", "type", "format", "source", "agent", "model", "env",
                   "mode", "seed", "variant", "rotation", "n_rotations", "score", "correct", "pred", "answer",
                   "reason", "response", "error", "error_kind", "usage", "latency_s", "request_key", "cached",
                   "prompt_version")


# ----- keys ------------------------------------------------------------------------------------------------------
def episode_key(task_id: str, agent: str, env: str, mode: str, seed: int, variant: str = "",
                repeat: int = 0) -> str:
    """The resume key (docs/results.md): ``task|agent|env|mode|seed``, with ``|variant`` appended when the variant is
    not empty and ``|r<repeat>`` when ``repeat`` is above 0 (``eval --repeats K``: the first repeat keeps the key
    of a run without repeats). ``agent`` is the canonical agent name (``spatialact.agents.canonical_agent_name``).
    The runner, the records and the results store all use this function."""
    parts = [str(task_id), str(agent), str(env), str(mode), str(seed)]
    if variant:
        parts.append(str(variant))
    if int(repeat) < 0:
        raise ValueError(f"repeat must be 0 or more, got {repeat!r}")
    if int(repeat) > 0:
        parts.append(f"r{int(repeat)}")
    return "|".join(parts)


def record_key(rec: dict) -> str:
    """The key of a result record: its ``key`` field, else :func:`episode_key` of its fields."""
    if rec.get("key"):
        return str(rec["key"])
    missing = [k for k in KEY_FIELDS if k not in rec]
    if missing:
        raise ValueError(f"result record has no 'key' and lacks {', '.join(missing)}")
    return episode_key(rec["task_id"], rec["agent"], rec["env"], rec["mode"], rec["seed"], rec.get("variant") or "",
                       int(rec.get("repeat") or 0))


def question_variant(rotation: int) -> str:
    """A question record's variant: ``question-r<rotation>`` (it keeps question answers out of episode tables)."""
    return f"question-r{int(rotation)}"


def question_key(qid: str, agent: str, seed: int, rotation: int) -> str:
    """The resume key of one (question, rotation): the :func:`episode_key` with env ``questions``, mode
    ``question`` and variant ``question-r<rotation>``."""
    return episode_key(qid, agent, QUESTION_ENV, QUESTION_MODE, seed, question_variant(rotation))


# ----- types -----------------------------------------------------------------------------------------------------
def is_failure(record: dict) -> bool:
    """Whether a result record is a failure (agent call or episode error: no score), not a result."""
    return record.get("reason") in FAILURE_REASONS or bool(record.get("error"))


def is_question(record: dict) -> bool:
    """Whether a result record is a question answer (``record: "question"``), not an episode."""
    return record.get("record") == QUESTION_RECORD


def record_type(record: dict) -> str:
    """``"question"``, ``"failure"`` or ``"episode"`` (:data:`RECORD_TYPES`): the schema variant of a record."""
    if is_question(record):
        return "question"
    return "failure" if is_failure(record) else "episode"


def failure_scores(reason: str) -> dict:
    """The :data:`SCORE_FIELDS` of a failed episode: every score null, ``reason`` and ``n_repairs: 0``."""
    if reason not in FAILURE_REASONS:
        raise ValueError(f"a failure's reason is one of {FAILURE_REASONS}, got {reason!r}")
    out = dict.fromkeys(SCORE_FIELDS)
    out.update(reason=reason, n_repairs=0)
    return out


# ----- schema ----------------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def results_schema() -> dict:
    """The result-record JSON Schema shipped in the package (``spatialact/schemas/results.schema.json``)."""
    text = resources.files("spatialact").joinpath("schemas/results.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=None)
def _variant_checker(rtype: str):
    from .schema_compiler import compile_schema  # the project's JSON-Schema checker

    schema = results_schema()
    return compile_schema({"$defs": schema["$defs"], "$ref": f"#/$defs/{rtype}"})


def validate_result(record) -> list[str]:
    """Every problem of one result record against the schema variant of its type (:func:`record_type`), as
    ``<type> record: field 'x': what`` strings; empty when it conforms. A record the schema accepts is accepted by
    the variant named here and by no other (the variants exclude each other)."""
    from .schema_compiler import format_path

    if not isinstance(record, dict):
        return [f"result record: expected a JSON object, got {type(record).__name__}"]
    rtype = record_type(record)
    return [f"{rtype} record: field '{format_path(path)}': {msg}"
            for path, msg in _variant_checker(rtype).problems(record)]
