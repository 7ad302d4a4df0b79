"""Validation of one task line (a decoded JSON object): the schema's checks (compiled), then the checks a JSON
Schema cannot state.

:func:`schema_problems` is the shipped JSON Schema (``schemas/task.schema.json``) compiled by
:mod:`spatialact.schema_compiler`: it accepts and rejects exactly what ``jsonschema`` does on JSON lines, about
100× faster.
:func:`semantic_problems` adds, for a task line that passed the schema (docs/tasks.md):

* poses (``start_pose``, ``goal_pose``, ``example.start_pose``): last row ``[0, 0, 0, 1]`` and an orthonormal
  rotation (``geometry.orthonormality_error`` ≤ 1e-5);
* ``n_steps`` equals the number of ground-truth steps;
* every sequence (``gt``, ``example.sequence``): its sizes are the task's, no count exceeds the sequence's cap
  (default 10), a vector step moves at most cap × unit per axis, and named actions agree with the counts;
* a replay scene's keyframes increase strictly;
* the free-form parts (``meta``, ``scene.params``) hold only finite numbers.

Problems are ``(field, message)`` pairs; :func:`validate_task_dict` formats them as ``field 'x': what`` strings.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from importlib import resources

import numpy as np

from .. import geometry
from ..action_space import DEFAULT_CAP
from ..schema_compiler import CompiledSchema, compile_schema, format_path
from .task import counts_from_names, names_agree

__all__ = ["task_schema", "schema_validator", "schema_problems", "semantic_problems", "validate_task_dict",
           "task_label", "task_poses", "pose_problems", "ORTHO_TOL", "VALIDATOR_VERSION"]

ORTHO_TOL = 1e-5
# Bumped whenever a rule changes, so that a cached "this file validated" verdict from older rules is not reused.
VALIDATOR_VERSION = "2.1"


@lru_cache(maxsize=1)
def task_schema() -> dict:
    """The task JSON Schema shipped in the package (``spatialact/schemas/task.schema.json``)."""
    text = resources.files("spatialact").joinpath("schemas/task.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def schema_validator() -> CompiledSchema:
    """The task schema compiled once: ``.is_valid(rec)`` (fast) and ``.problems(rec)`` (paths and messages)."""
    return compile_schema(task_schema())


def schema_problems(rec) -> list[tuple[str, str]]:
    """What the JSON Schema finds wrong with ``rec``, as ``(field, message)``; empty when it conforms."""
    return [(format_path(path), msg) for path, msg in schema_validator().problems(rec)]


def _finite(part, path: str, out: list) -> None:
    """Append a problem for every non-finite number in a free-form part (``meta``, ``scene.params``)."""
    try:
        json.dumps(part, allow_nan=False)  # C speed on the valid path
        return
    except ValueError:
        pass
    except TypeError:  # not JSON at all (a caller's Python object); the JSON writer will say so
        return
    _finite_tree(part, path, out)


def _finite_tree(x, path: str, out: list) -> None:
    if isinstance(x, float):
        if not math.isfinite(x):
            out.append((path, f"not a finite number ({x!r})"))
    elif isinstance(x, dict):
        for k, v in x.items():
            _finite_tree(v, f"{path}.{format_path((k,))}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _finite_tree(v, f"{path}.{i}", out)


def _sequence_problems(name: str, seq: dict, sizes: dict, out: list) -> None:
    if seq["sizes"]["translation"] != sizes["translation"] or seq["sizes"]["rotation"] != sizes["rotation"]:
        out.append((f"{name}.sizes", f"{seq['sizes']} differ from the task's sizes {sizes}"))
        return
    cap = seq.get("cap", DEFAULT_CAP)
    t_max = cap * sizes["translation"] * (1 + 1e-9)
    r_max = cap * sizes["rotation"] * (1 + 1e-9)
    for k, st in enumerate(seq["steps"]):
        counts = st.get("counts")
        if counts is not None:
            top = max(counts)
            if top > cap:
                out.append((f"{name}.steps.{k}.counts", f"count {top:g} exceeds the sequence's cap {cap:g}"))
            if "actions" in st and not names_agree(st["actions"], st["step_nums"], counts):
                try:
                    named = counts_from_names(st["actions"], st["step_nums"])
                except ValueError as e:
                    out.append((f"{name}.steps.{k}.actions", str(e)))
                    continue
                if named != counts:
                    out.append((f"{name}.steps.{k}.actions",
                                f"{st['actions']} × {st['step_nums']} disagree with counts {list(counts)} "
                                f"(they say {named})"))
        else:
            m = st["motion"]
            if any(abs(v) > t_max for v in m[:3]) or any(abs(v) > r_max for v in m[3:]):
                out.append((f"{name}.steps.{k}.motion",
                            f"{m} moves more than cap × unit ({cap:g} × {sizes['translation']:g} m, "
                            f"{cap:g} × {sizes['rotation']:g} rad) on an axis"))


def task_poses(rec: dict) -> tuple[list[str], list]:
    """The fields holding poses in a (schema-valid) task line and their values (nested lists)."""
    example = rec.get("example")
    if example:
        return (["start_pose", "goal_pose", "example.start_pose"],
                [rec["start_pose"], rec["goal_pose"], example["start_pose"]])
    return ["start_pose", "goal_pose"], [rec["start_pose"], rec["goal_pose"]]


def pose_problems(T: np.ndarray) -> list[tuple[int, str]]:
    """``(index, message)`` for each pose of ``T`` (K, 4, 4) whose last row is not [0, 0, 0, 1] or whose rotation
    is not orthonormal (``geometry.orthonormality_error`` > :data:`ORTHO_TOL`). Vectorised: the loader checks a
    whole file's poses in one call."""
    if len(T) == 0:
        return []
    bad_row = np.abs(T[:, 3] - [0.0, 0.0, 0.0, 1.0]).max(axis=1) > 1e-8
    err = geometry.orthonormality_error(T[:, :3, :3])
    out = []
    for i in np.flatnonzero(bad_row | (err > ORTHO_TOL)):
        if bad_row[i]:
            out.append((int(i), f"last row must be [0, 0, 0, 1], got {T[i, 3].tolist()}"))
        else:
            out.append((int(i), f"rotation is not orthonormal (error {err[i]:.3g})"))
    return out


def semantic_problems(rec: dict, *, poses: bool = True) -> list[tuple[str, str]]:
    """The checks beyond the JSON Schema, for a task line that passed :func:`schema_problems` (``poses=False``
    leaves the pose checks to the caller, who batches them with :func:`pose_problems`)."""
    out: list[tuple[str, str]] = []
    example = rec.get("example")
    if poses:
        names, mats = task_poses(rec)
        out += [(names[i], msg) for i, msg in pose_problems(np.array(mats, dtype=np.float64))]
    if rec["n_steps"] != len(rec["gt"]["steps"]):
        out.append(("n_steps", f"{rec['n_steps']} but gt has {len(rec['gt']['steps'])} steps"))
    _sequence_problems("gt", rec["gt"], rec["sizes"], out)
    if example:
        _sequence_problems("example.sequence", example["sequence"], rec["sizes"], out)
    scene = rec.get("scene")
    if scene:
        kf = scene.get("keyframes")
        if kf is not None and any(b <= a for a, b in zip(kf, kf[1:])):
            out.append(("scene.keyframes", "frame indices must increase strictly"))
        if "params" in scene:
            _finite(scene["params"], "scene.params", out)
    if rec.get("meta"):
        _finite(rec["meta"], "meta", out)
    return out


@lru_cache(maxsize=1)
def _id_check():
    return compile_schema({"$defs": task_schema()["$defs"], "$ref": "#/$defs/id"})


def task_label(rec) -> str:
    """``task 'id': `` when the task line has a valid id (so a message names the task), else ``''``."""
    if isinstance(rec, dict):
        tid = rec.get("id")
        if isinstance(tid, str) and not _id_check()(tid):
            return f"task {tid!r}: "
    return ""


def validate_task_dict(rec) -> list[str]:
    """Every problem with one task line (version 1 or 2), as ``field 'x': what`` strings (empty when valid)."""
    if not isinstance(rec, dict):
        return [f"line: expected a JSON object, got {type(rec).__name__}"]
    problems = schema_problems(rec)
    if not problems:
        problems = semantic_problems(rec)
    return [f"field '{f}': {m}" for f, m in problems]
