"""Task files: JSON Lines, one task a line, validated on load (docs/tasks.md).

Every problem is reported as one line naming the file, the line, the task (when its id is valid), the field and
what is wrong, e.g. ``tasks.jsonl:3: task 'nav-0-0002': field 'goal_pose': rotation is not orthonormal (error
0.2)``. Lines are strict JSON: ``NaN`` and ``Infinity`` are refused, as is a file without a single task.

:func:`load_task_file` is the one reader of task files: every command (``eval``, ``score``, ``prompt``,
``export``) reads a task file through it. Loading is memoised in-process by the file's SHA-256 (and folder, which
relative paths resolve against): scoring several models against one task file parses and validates it once. The one
on-disk task cache (:func:`task_cache_dir`) keeps, by the SHA-256 of a file's bytes, a verdict ("these bytes passed
these rules": a later load skips validation) and the views readers asked for (:class:`TaskView`: ``score``'s table
of the fields it reads, decoded by the compiled decoder of :mod:`.fields`; a later score reads it back whole).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import stat
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from ..cache import cache_dir, read_entry, trusted, write_entry
from ..jsonline import LineTooLong, TooDeep, fast_loads, open_input, read_bounded, stored_path
from ..outputs import OutputFile
from .task import Task
from .validation import (VALIDATOR_VERSION, pose_problems, task_label, task_poses, schema_problems,
                         schema_validator, semantic_problems, task_schema, validate_task_dict)

__all__ = ["TaskFileError", "TaskFile", "TaskView", "load_tasks", "load_task_file", "save_tasks", "file_sha256",
           "clear_task_cache", "task_cache_dir", "write_jsonl_atomic"]

MEMO_FILES = 4  # task files kept parsed in memory (least recently used dropped first)


class TaskFileError(ValueError):
    """A task file that does not validate; the message names the file, the line and the field."""


@dataclass(frozen=True)
class TaskFile:
    """A loaded task file: its path, the SHA-256 of the bytes that were parsed, and the tasks in file order.

    The tasks are shared between loads of the same file (they are immutable values: change one with
    ``task.with_(...)``, never in place; their pose arrays are read-only). Loaded with a :class:`TaskView`,
    ``view`` is that view's object and ``tasks`` is empty unless the file went through the full validator (the
    decoder of the view's fields did not accept it): a view is read without building a Task.
    """

    path: Path
    sha256: str
    tasks: tuple[Task, ...]
    view: Any = None

    def __len__(self) -> int:
        return len(self.tasks)


# ----- JSON ------------------------------------------------------------------------------------------------------
def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON (numbers must be finite)")


# one decoder: json.loads(..., parse_constant=...) would build a new one (and its scanner) on every call
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)


def _loads_std(raw: bytes):
    # utf-8-sig: a file saved with a byte-order mark (Windows editors) loads, as answer files do
    return _DECODER.decode(raw.decode("utf-8-sig"))


_loads = fast_loads(_loads_std)  # orjson where it gives the same answer (spatialact.jsonline)


def _json_error(e: Exception) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"not valid UTF-8 (byte {e.start})"
    if isinstance(e, json.JSONDecodeError):
        return f"not valid JSON ({e.msg} at column {e.colno})"
    if isinstance(e, TooDeep):
        return str(e)
    return f"not valid JSON ({e})"


# ----- loading -----------------------------------------------------------------------------------------------------
_MEMO: OrderedDict[tuple[str, str], tuple[Task, ...]] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def clear_task_cache() -> None:
    """Forget every memoised task file (the next load parses and validates again)."""
    with _MEMO_LOCK:
        _MEMO.clear()


@dataclass(frozen=True)
class TaskView:
    """A compact form of a task file that a reader needs instead of the Task objects (``spatialact score``'s table
    of the fields it reads), built once per file's bytes and kept in the task cache.

    ``build(tasks)`` is given the tasks as the compiled decoder of :mod:`.fields` gives them
    (:class:`~spatialact.tasks.fields.TaskFields`, the fields scoring reads, checked against the schema), or, when
    that decoder does not accept the file, the validated :class:`Task` objects (the same attributes); it returns a
    picklable object. ``name`` and ``version`` (bump it when the object's form changes) say which view a cache entry
    holds."""

    name: str
    version: int
    build: Callable[[Any], Any]


def _read_bytes(path: Path) -> bytes:
    """A task file's bytes, each line within MAX_LINE_BYTES (16 MiB; a longer line is never held), or one-line
    TaskFileError: missing, unreadable, not a regular file, a line too long."""
    with open_input(path, "task file", TaskFileError) as f:
        try:
            return read_bounded(f)
        except LineTooLong as e:
            raise TaskFileError(f"{path}:{e.lineno}: line {e.what}") from None


def load_task_file(path: str | os.PathLike, *, cache: bool = True, view: TaskView | None = None) -> TaskFile:
    """Read and validate a task file; raises :class:`TaskFileError` naming the file, line, task and field.

    Relative paths in the file (images, meshes, trajectories) are relative to the file's folder and come back
    absolute. Duplicate ids and an empty file are errors. With ``cache`` (the default) the result is memoised by
    (SHA-256 of the bytes, absolute folder), so a second load of an unchanged file costs one read and one hash
    (:func:`clear_task_cache` empties the memo), and a verdict is kept on disk (:func:`task_cache_dir`) so that
    another process skips validation of the same bytes. ``cache=False`` bypasses both.

    With ``view`` (a :class:`TaskView`), the file is read for that view only (``TaskFile.view``): from the task
    cache when it holds the view for these bytes (the file hashed as it streams, never held), else decoded by the
    compiled decoder of the fields the view reads (:mod:`.fields`) and, when that decoder does not accept the file,
    loaded by the full validator as without a view (which refuses in one line, or accepts what the decoder was
    stricter about); the view is then kept in the task cache. A problem only in a field the decoder skips is not
    looked for on that path.
    """
    path = Path(path)
    if view is not None:
        return _load_view(path, view, cache)
    data = _read_bytes(path)
    return _load_tasks(path, data, hashlib.sha256(data).hexdigest(), cache)


def _load_tasks(path: Path, data: bytes, sha: str, cache: bool) -> TaskFile:
    """The tasks of ``data`` (the bytes of ``path``, hashing to ``sha``): memo, verdict, or full validation."""
    folder = os.path.abspath(path.parent)
    key = (sha, folder)
    if cache:
        with _MEMO_LOCK:
            tasks = _MEMO.get(key)
            if tasks is not None:
                _MEMO.move_to_end(key)
                return TaskFile(path, sha, tasks)
    verdict = _verdict_path(sha) if cache else None
    n_valid = _read_verdict(verdict, sha)
    tasks = None
    if n_valid is not None:
        try:
            tasks = _parse(path, data, folder, validate=False)
        except TaskFileError:
            tasks = None
        if tasks is not None and len(tasks) != n_valid:
            tasks = None  # the verdict does not describe this file: validate in full
    if tasks is None:
        tasks = _parse(path, data, folder)
        if verdict is not None:
            _write_verdict(verdict, sha, len(tasks))
    if cache:
        with _MEMO_LOCK:
            _MEMO[key] = tasks
            while len(_MEMO) > MEMO_FILES:
                _MEMO.popitem(last=False)
    return TaskFile(path, sha, tasks)


def _load_view(path: Path, view: TaskView, cache: bool) -> TaskFile:
    """:func:`load_task_file` with a view: the task cache, else the fields' decoder, else the full validator."""
    from . import fields

    if cache:
        try:
            regular = stat.S_ISREG(os.stat(path).st_mode)
        except OSError:  # missing or unreadable: the read below says so in one line
            regular = False
        if regular:  # a pipe or a device is read once, below
            try:
                sha = file_sha256(path)  # warm: the file is hashed as it streams, not held
            except OSError:
                sha = None
            got = _read_view(sha, view) if sha is not None else None
            if got is not None:
                return TaskFile(path, sha, (), got)
    data = _read_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    decoded = fields.decode_task_fields(data)
    if decoded is not None:
        del data
        tf = TaskFile(path, sha, (), view.build(decoded))
    else:  # the full validator judges: one line naming the file, line, task and field, or the tasks
        tf = _load_tasks(path, data, sha, cache)
        tf = TaskFile(path, sha, tf.tasks, view.build(tf.tasks))
    if cache:
        _write_view(sha, view, tf.view)
    return tf


# ----- the one on-disk task cache: verdicts and views ----------------------------------------------------------
#: The largest view entry read back (a task file's view holds a few hundred bytes a task).
MAX_VIEW_BYTES = 1 << 30


def task_cache_dir() -> Path:
    """The one on-disk cache of task files: ``<cache root>/tasks`` (:func:`spatialact.cache.cache_root`, the root
    the texture cache of ``spatialact.envs`` uses too), by the SHA-256 of a file's bytes: ``<sha>.json`` (the
    verdict) and ``<sha>.<view name>.pickle`` (each :class:`TaskView`); not created here."""
    return cache_dir("tasks", create=False)


def _view_path(sha: str, view: TaskView) -> Path:
    return task_cache_dir() / f"{sha}.{view.name}.pickle"


def _view_stamp(view: TaskView) -> tuple:
    """What a cached view is only valid for: the view's name and version, the fields' decoder and the validator."""
    from .fields import FIELDS_VERSION

    return (view.name, view.version, FIELDS_VERSION, tuple(sorted(validator_stamp().items())))


def _read_view(sha: str, view: TaskView):
    """The view cached for the bytes hashing to ``sha``, or None: missing, corrupt, stale, or not trusted (a pickle
    is read only from a regular file and folder this user owns and others cannot write: ``cache.read_entry``,
    ``cache.trusted``)."""
    path = _view_path(sha, view)
    try:
        raw = read_entry(path, MAX_VIEW_BYTES)
        if raw is None or not trusted(path):
            return None
        stamp, key, obj = pickle.loads(raw)
        if stamp == _view_stamp(view) and key == sha:
            return obj
    except Exception:  # a damaged or foreign entry is ignored and rebuilt
        pass
    return None


def _write_view(sha: str, view: TaskView, obj) -> None:
    """Keep a view of a task file (best effort: a cache that cannot be written is no error)."""
    try:
        data = pickle.dumps((_view_stamp(view), sha, obj), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    write_entry(_view_path(sha, view), data, MAX_VIEW_BYTES)


def _verdict_path(sha: str) -> Path:
    return task_cache_dir() / f"{sha}.json"


@lru_cache(maxsize=1)
def validator_stamp() -> dict:
    """What a verdict is only valid for: the package version and a digest of the rules themselves (the shipped
    schema and the modules that check it), so that any change of a rule invalidates every cached verdict."""
    from .. import __version__, schema_compiler
    from . import task, validation

    h = hashlib.sha256(json.dumps(task_schema(), sort_keys=True).encode())
    for module in (schema_compiler, validation, task):
        try:
            h.update(Path(module.__file__).read_bytes())
        except (OSError, TypeError):  # no source on disk (a zipped install): the version numbers must do
            h.update(VALIDATOR_VERSION.encode())
    return {"validator": f"{VALIDATOR_VERSION}:{h.hexdigest()[:16]}", "spatialact": __version__}


def _read_verdict(verdict: Path | None, sha: str) -> int | None:
    """The task count a valid verdict records for these bytes, or None (missing, corrupt or from other rules; not a
    regular file of at most ``cache.MAX_ENTRY_BYTES``, such as a FIFO, never opened: ``cache.read_entry``)."""
    if verdict is None:
        return None
    try:
        raw = read_entry(verdict)
        if raw is None or not trusted(verdict):
            return None
        v = json.loads(raw.decode("utf-8"))
        if (isinstance(v, dict) and v.get("sha256") == sha and v.get("valid") is True
                and {k: v.get(k) for k in ("validator", "spatialact")} == validator_stamp()
                and isinstance(v.get("n_tasks"), int) and not isinstance(v["n_tasks"], bool) and v["n_tasks"] > 0):
            return v["n_tasks"]
    except (OSError, ValueError):
        pass
    return None  # a corrupt entry is ignored; the full validation rewrites it


def _write_verdict(verdict: Path, sha: str, n_tasks: int) -> None:
    """Record "these bytes passed validation" (best effort: a cache that cannot be written is no error)."""
    write_entry(verdict, json.dumps({"sha256": sha, "valid": True, "n_tasks": n_tasks,
                                     **validator_stamp()}).encode("utf-8"))


def load_tasks(path: str | os.PathLike, *, ids: Iterable[str] | None = None, cache: bool = True) -> list[Task]:
    """Read and validate a task file (JSONL): :func:`load_task_file`'s tasks, optionally only those in ``ids``.

    Raises :class:`TaskFileError` naming the file, line and field. Every line is validated (and ids must be
    unique) whatever ``ids`` selects.
    """
    tasks = load_task_file(path, cache=cache).tasks
    if ids is None:
        return list(tasks)
    want = set(ids)
    return [t for t in tasks if t.id in want]


class _Poses:
    """The poses of the lines read so far, checked in one vectorised call (the costliest semantic check)."""

    def __init__(self, path: Path):
        self.path = path
        self.mats: list = []
        self.owner: list[tuple[int, str, str]] = []  # (line, task id, field) per pose

    def add(self, lineno: int, tid: str, rec: dict) -> None:
        names, mats = task_poses(rec)
        self.mats += mats
        self.owner += [(lineno, tid, n) for n in names]

    def check(self) -> None:
        """Raise for the first bad pose, if any (called before reporting a later line's error, and at the end)."""
        problems = pose_problems(np.array(self.mats, dtype=np.float64).reshape(-1, 4, 4))
        if problems:
            i, msg = problems[0]
            lineno, tid, name = self.owner[i]
            raise TaskFileError(f"{self.path}:{lineno}: task {tid!r}: field '{name}': {msg}")


def _parse(path: Path, data: bytes, folder: str, *, validate: bool = True) -> tuple[Task, ...]:
    """Parse (and, unless a verdict says these bytes passed already, validate) every line into a Task.

    The cyclic garbage collector is paused meanwhile: the records are acyclic, and its passes over the ever larger
    heap of fresh objects cost more than the parsing itself (about 2x on a 5000-task file)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_lines(path, data, folder, validate)
    finally:
        if enabled:
            gc.enable()


def _parse_lines(path: Path, data: bytes, folder: str, validate: bool) -> tuple[Task, ...]:
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    poses = _Poses(path)
    is_valid = schema_validator().is_valid if validate else (lambda rec: True)

    def fail(lineno: int, what: str):
        poses.check()  # an earlier line's bad pose is the first problem of the file
        raise TaskFileError(f"{path}:{lineno}: {what}") from None

    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            rec = _loads(raw)
        except ValueError as e:  # json.JSONDecodeError, UnicodeDecodeError, NaN/Infinity and TooDeep are ValueErrors
            fail(lineno, _json_error(e))
        except RecursionError:  # pragma: no cover - TooDeep comes first (jsonline.MAX_JSON_DEPTH)
            fail(lineno, "not valid JSON (nested too deeply)")
        if not isinstance(rec, dict):
            fail(lineno, f"line: expected a JSON object, got {type(rec).__name__}")
        problems = (([] if is_valid(rec) else schema_problems(rec)) or semantic_problems(rec, poses=False)
                    if validate else [])
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            fail(lineno, f"{task_label(rec)}field '{problems[0][0]}': {problems[0][1]}{more}")
        tid = rec["id"]
        if tid in seen:
            fail(lineno, f"field 'id': {tid!r} already used on line {seen[tid]}")
        seen[tid] = lineno
        if validate:
            poses.add(lineno, tid, rec)
        _resolve_paths(rec, folder)
        try:
            task = Task.from_dict(rec)
        except (ValueError, KeyError, TypeError) as e:  # validation should have caught it; still one line
            raise TaskFileError(f"{path}:{lineno}: task {tid!r}: {e}") from None
        task.start_pose.flags.writeable = False  # shared between loads (see TaskFile)
        task.goal_pose.flags.writeable = False
        tasks.append(task)
    if not tasks:
        raise TaskFileError(f"{path}: no tasks (the file is empty)")
    poses.check()
    return tuple(tasks)


def _abs(folder: str, p: str) -> str:
    return p if os.path.isabs(p) else os.path.join(folder, p)


def _resolve_paths(rec: dict, folder: str) -> None:
    """Make the record's relative paths absolute (they are relative to the task file's folder); in place."""
    for key in ("start_image", "goal_image"):
        if rec.get(key):
            rec[key] = _abs(folder, rec[key])
    ex = rec.get("example")
    if ex and ex.get("start_image"):
        ex["start_image"] = _abs(folder, ex["start_image"])
    scene = rec.get("scene")
    if scene:
        for key in ("mesh", "trajectory"):
            if scene.get(key):
                scene[key] = _abs(folder, scene[key])


# ----- saving ------------------------------------------------------------------------------------------------------
def save_tasks(tasks: Iterable[Task], path: str | os.PathLike, *, relative_to: str | os.PathLike | None = None,
               option: str | None = None, stdout: bool = False) -> Path:
    """Write tasks as JSONL, schema version 2, by the output rule (:func:`write_jsonl_atomic`: a regular file
    replaced atomically, a link followed, a device written through, a FIFO or read-only file refused naming
    ``option``; ``-`` is standard output where ``stdout``). Each record is validated first; writing no task at all
    is refused (an empty task file does not load).

    Paths under the file's folder (images, meshes, trajectories) are written relative to it, so a task folder can
    be moved whole.
    """
    path = Path(path)
    base = Path(relative_to) if relative_to is not None else path.parent
    path.parent.mkdir(parents=True, exist_ok=True)

    stored: dict = {}  # one resolution per distinct path (every task of a trajectory names the same recording)

    def store(p):
        if p not in stored:
            stored[p] = stored_path(p, base)
        return stored[p]

    def records():
        seen: set[str] = set()
        for t in tasks:
            try:
                rec = t.to_dict()
            except (ValueError, KeyError, TypeError) as e:  # e.g. an example whose sequence is malformed
                raise TaskFileError(f"task {getattr(t, 'id', t)!r}: {e}") from None
            for key in ("start_image", "goal_image"):
                rec[key] = store(rec[key])
            if rec.get("example") and rec["example"].get("start_image"):
                rec["example"] = dict(rec["example"], start_image=store(rec["example"]["start_image"]))
            if rec.get("scene"):
                rec["scene"] = {k: (store(v) if k in ("mesh", "trajectory") else v)
                                for k, v in rec["scene"].items()}
            problems = validate_task_dict(rec)
            if problems:
                raise TaskFileError(f"task {t.id!r}: {problems[0]}")
            if t.id in seen:
                raise TaskFileError(f"task {t.id!r}: field 'id': used twice (ids must be unique in a file)")
            seen.add(t.id)
            yield rec

    return write_jsonl_atomic(path, records(), TaskFileError(f"{path}: no tasks to write (an empty task file does "
                                                             "not load)"), option=option, stdout=stdout)


def write_jsonl_atomic(path: Path, records: Iterable[dict], empty: Exception, *, option: str | None = None,
                       stdout: bool = False) -> Path:
    """Write JSON records one a line (strict JSON: NaN refused; UTF-8, non-ASCII kept) to ``path`` by the output
    rule of :mod:`spatialact.outputs`: a regular file is replaced atomically (a temporary beside it, fsynced,
    renamed over ``path`` only when every record was written, removed on any error — an error ``records`` raises
    while it is iterated included — ``path`` left as it was); a link is followed; a character device is written
    through; ``-`` is standard output where ``stdout``; anything else is refused in one line naming ``option``
    (:class:`~spatialact.outputs.OutputError`). No record at all raises ``empty``."""
    out = OutputFile(path, option, stdout=stdout)
    f = None  # opened at the first record: no record, nothing made
    try:
        for rec in records:
            line = json.dumps(rec, ensure_ascii=False, allow_nan=False) + "\n"
            if f is None:
                f = out.open()
            f.write(line)
        if f is None:
            raise empty
    except BaseException:
        out.discard()
        raise
    out.commit()
    return path


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes (the task-file hash recorded with every result)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
