"""Task files: JSON Lines, one task a line, validated on load against the shipped schema.

Every problem is reported as one line naming the file, the line, the field and what is wrong, e.g.
``tasks.jsonl:3: field 'goal_pose': rotation is not orthonormal (error 0.2)``.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable

import numpy as np

from .. import geometry
from .task import SCHEMA_VERSION, Task

__all__ = ["TaskFileError", "load_tasks", "save_tasks", "validate_record", "task_schema", "file_sha256"]

ORTHO_TOL = 1e-5


class TaskFileError(ValueError):
    """A task file that does not validate; the message names the file, the line and the field."""


@lru_cache(maxsize=1)
def task_schema() -> dict:
    """The task JSON Schema shipped in the package (``spatialact/schemas/task.schema.json``)."""
    text = resources.files("spatialact").joinpath("schemas/task.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    return jsonschema.Draft202012Validator(task_schema())


def _field(path) -> str:
    return ".".join(str(p) for p in path) or "(record)"


def validate_record(rec: dict) -> list[str]:
    """Every problem with one task record, as ``field 'x': what`` strings (empty when valid)."""
    if not isinstance(rec, dict):
        return [f"record: expected a JSON object, got {type(rec).__name__}"]
    problems = []
    for err in sorted(_validator().iter_errors(rec), key=lambda e: list(map(str, e.absolute_path))):
        problems.append(f"field '{_field(err.absolute_path)}': {err.message}")
    if problems:
        return problems
    for name in ("start_pose", "goal_pose"):
        T = np.asarray(rec[name], dtype=np.float64)
        if not np.all(np.isfinite(T)):
            problems.append(f"field '{name}': not finite")
            continue
        if not np.allclose(T[3], [0, 0, 0, 1]):
            problems.append(f"field '{name}': last row must be [0, 0, 0, 1]")
        err = float(geometry.orthonormality_error(T[:3, :3]))
        if err > ORTHO_TOL:
            problems.append(f"field '{name}': rotation is not orthonormal (error {err:.3g})")
    if rec["n_steps"] != len(rec["gt"]["steps"]):
        problems.append(f"field 'n_steps': {rec['n_steps']} but gt has {len(rec['gt']['steps'])} steps")
    return problems


def load_tasks(path: str | os.PathLike, *, ids: Iterable[str] | None = None) -> list[Task]:
    """Read and validate a task file (JSONL). Raises :class:`TaskFileError` naming the file, line and field.

    Image paths in the file are relative to the file's folder and are returned as absolute paths. Duplicate
    ids are an error.
    """
    path = Path(path)
    if not path.is_file():
        raise TaskFileError(f"{path}: no such task file")
    want = set(ids) if ids is not None else None
    tasks, seen = [], {}
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise TaskFileError(f"{path}:{lineno}: not valid JSON ({e.msg} at column {e.colno})") from None
            problems = validate_record(rec)
            if problems:
                raise TaskFileError(f"{path}:{lineno}: {problems[0]}"
                                    + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""))
            if rec["id"] in seen:
                raise TaskFileError(f"{path}:{lineno}: field 'id': {rec['id']!r} already used on line "
                                    f"{seen[rec['id']]}")
            seen[rec["id"]] = lineno
            if want is not None and rec["id"] not in want:
                continue
            for key in ("start_image", "goal_image"):
                if rec.get(key):
                    rec[key] = _resolve(path, rec[key], lineno, key)
            if rec.get("example") and rec["example"].get("start_image"):
                rec["example"]["start_image"] = _resolve(path, rec["example"]["start_image"], lineno,
                                                         "example.start_image")
            try:
                tasks.append(Task.from_record(rec))
            except (ValueError, KeyError) as e:
                raise TaskFileError(f"{path}:{lineno}: {e}") from None
    return tasks


def _resolve(task_file: Path, p: str, lineno: int, key: str) -> str:
    q = Path(p)
    if not q.is_absolute():
        q = task_file.parent / q
    return str(q)


def save_tasks(tasks: Iterable[Task], path: str | os.PathLike, *, relative_to: str | os.PathLike | None = None) -> Path:
    """Write tasks as JSONL (atomically: a temporary file, then rename). Each record is validated first.

    Image paths under the file's folder are written relative to it, so a task folder can be moved whole.
    """
    path = Path(path)
    base = Path(relative_to) if relative_to is not None else path.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for t in tasks:
            rec = t.to_record()
            for key in ("start_image", "goal_image"):
                rec[key] = _relative(rec[key], base)
            if rec.get("example") and rec["example"].get("start_image"):
                rec["example"] = dict(rec["example"], start_image=_relative(rec["example"]["start_image"], base))
            problems = validate_record(rec)
            if problems:
                raise TaskFileError(f"task {t.id!r}: {problems[0]}")
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
    return path


def _relative(p: str | None, base: Path) -> str | None:
    if not p:
        return p
    try:
        return os.path.relpath(p, base) if Path(p).is_absolute() and Path(p).resolve().is_relative_to(
            base.resolve()) else p
    except ValueError:
        return p


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes (the task-file hash recorded with every result)."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
