"""The results store (docs/results.md): one run directory per run, append-only, resumable.

Layout::

    RUN/
      config.json        the run's identity (run_id), its configuration and the provenance of its first start
      results.jsonl      one JSON record per finished episode, appended, flushed and fsynced
      frames/<key>/      start.png, goal.png, final.png … of each episode (names sanitised)
      results.parquet    written by export_parquet()
      .lock              held (fcntl.flock) by the one writer process

Resume is keyed by ``(task, agent, env, mode, seed[, variant])`` (:func:`~spatialact.records.episode_key`):
``RunStore.done_keys()`` lists the finished episodes. A changed configuration is refused, naming the keys that
differ, except the keys that only say how the run is carried out (:data:`MUTABLE_KEYS`); a run directory that
holds no record yet takes the new configuration. A last line cut short by a killed process is detected, reported and cut off
on resume (the episode runs again); any other unreadable line is an error naming the file and line.

Run identity: a run directory made by this store has a ``run_id`` (:func:`new_run_id`, 32 random hexadecimal
digits), kept in ``config.json`` for as long as the run is resumed, and every record the store appends carries it
(``run_id``, right after ``key``). Opening a run and reading its records (:func:`read_records`, so ``report``,
``load_run`` and the export) refuse, naming the file and the line, a record whose ``run_id`` is not the run's, or
that has none in a run that has one: a record pasted in from another run directory is never counted. A run whose
``config.json`` has no ``run_id`` (written before runs had one) is read and resumed as before; only a record that
carries a ``run_id`` is foreign there.

Poses in records are 4×4 C2W matrices (metres; world +Z up; camera OpenCV axes) as nested lists.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
import os
import platform
import re
import stat
import subprocess
import uuid
import warnings
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ..jsonline import node_kind
from ..records import is_failure, record_key

__all__ = ["RunStore", "RunConfigError", "RunStoreError", "MUTABLE_KEYS", "RESULTS_FILE", "CONFIG_FILE", "load_run",
           "read_records", "export_parquet", "read_parquet", "provenance", "safe_name", "config_diff", "find_runs",
           "is_run_dir", "new_run_id", "read_run_id"]

RESULTS_FILE = "results.jsonl"
CONFIG_FILE = "config.json"
FRAMES_DIR = "frames"
# Keys that say how a run is carried out, not what it computes: they may change between resumes. ``repeats``
# (eval --repeats K) too: each repeat's episodes have their own keys, so more repeats add episodes to the run.
MUTABLE_KEYS = frozenset({"limit", "workers", "backend", "progress", "out", "json", "verbose", "repeats"})
# Keys that say where a run keeps things, not what it computes: not compared at any depth (the agent's response
# cache: the run directory's own by default, so `--out runs/x` and `--out /abs/runs/x` are the same run).
_WHERE_KEYS = frozenset({"cache_dir"})
#: What a run id may be (the store writes 32 lower-case hexadecimal digits; a hand-made id of these characters is
#: taken as it is). Matched whole, in linear time.
_RUN_ID = re.compile(r"[0-9A-Za-z_.-]{1,128}")
# _scan's run_id when no record is checked (the run's identity is not known yet), and when the run's identity is
# its first record's (a run directory without config.json).
_UNCHECKED, _FIRST = object(), object()


class RunStoreError(RuntimeError, ValueError):
    """A run directory that cannot be used as it is (unreadable line, a record of another run, second writer).

    Also a ValueError: what is wrong is in the directory's contents, and every command turns a ValueError into one
    line and exit 2 (``spatialact.cli.main``), so a path that reads a run without naming this class (``eval
    --dry-run``'s look at what is left to run) refuses it in one line too, never with a traceback."""


class RunConfigError(ValueError):
    """Resuming a run with a different configuration."""


# One key function for the project (the runner, the records and this store): spatialact.records.record_key.
_key_of = record_key


# ----- JSON ---------------------------------------------------------------------------------------------------
def _jsonable(x: Any) -> Any:
    """numpy → Python; NaN and ±inf → None (strict JSON has no NaN, and a NaN score is a missing one)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, np.generic):
        return _jsonable(x.item())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Path):
        return str(x)
    return x


def _dumps(x: Any) -> str:
    return json.dumps(_jsonable(x), ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _normal(x: Any) -> Any:
    """The JSON round trip of x (tuples → lists, numpy → Python), to compare configurations."""
    return json.loads(_dumps(x))


def config_diff(old: dict, new: dict, prefix: str = "", ignore: Iterable[str] = MUTABLE_KEYS) -> list[str]:
    """The dotted keys whose values differ between two configurations (top-level ``ignore`` keys skipped).

    An input file is identified by its hash: a key ``K`` whose ``K_sha256`` is present and equal in both (the task or
    question file) is not compared, so the same file named by another relative path, from another working
    directory or after a move, resumes the run."""
    ignore = set(ignore) if not prefix else set()
    out = []
    for k in sorted(set(old) | set(new)):
        if k in ignore or k in _WHERE_KEYS:
            continue
        h = f"{k}_sha256"
        if old.get(h) and old.get(h) == new.get(h) and isinstance(old.get(k), str) and isinstance(new.get(k), str):
            continue
        name = f"{prefix}{k}"
        if k not in old:
            out.append(f"{name} (new: {json.dumps(new[k])[:80]})")
        elif k not in new:
            out.append(f"{name} (removed; was {json.dumps(old[k])[:80]})")
        elif isinstance(old[k], dict) and isinstance(new[k], dict):
            out += config_diff(old[k], new[k], name + ".", ())
        elif old[k] != new[k]:
            out.append(f"{name} ({json.dumps(old[k])[:60]} → {json.dumps(new[k])[:60]})")
    return out


def config_refusal(run_dir, diff: list[str], old: dict, new: dict, stored_provenance: dict | None = None) -> str:
    """The one line a resume with a different configuration is refused with. A changed render quality names both
    qualities (absent from a configuration: ``"default"``); a changed ``collisions`` says which way the run was made
    and how to resume it (absent from an episode run's configuration: made before walls, so ``false``). A changed
    prompt version is named
    plainly (the prompt templates changed — CHANGELOG.md says how —, so stored answers were given to another prompt;
    a run stored before the version was part of the configuration has it in its provenance)."""
    prompt = [d for d in diff if d.split(" ", 1)[0] == "prompt_version"]
    plugin = _plugin_change(old, new)
    if plugin is not None:  # an agent file edited since the run was made (eval's agent, questions' agent_plugin)
        name, was, now = plugin
        rest = [d for d in diff if not d.split(" ", 1)[0].endswith(("name_sha256", "plugin_sha256"))]
        return (f"{run_dir}: the agent plug-in {name} changed since this run was made (its SHA-256 {was[:12]}… → "
                f"{now[:12]}…): the stored answers came from the old code and cannot be resumed with the new; use a "
                f"new output directory, or restore the file to resume"
                + (f" (the configuration also differs in {', '.join(rest)})" if rest else ""))
    quality = [d for d in diff if d.split(" ", 1)[0] == "render_quality"]
    walls = [d for d in diff if d.split(" ", 1)[0] == "collisions"]
    if walls and not prompt and not quality:
        rest = [d for d in diff if d not in walls]
        was = bool(old.get("collisions", False))
        how = ("with walls stopping the camera" if was else
               "without walls (with --no-collisions, or before walls stopped the camera)")
        hint = "without --no-collisions" if was else "with --no-collisions"
        return (f"{run_dir}: this run was made {how} and cannot be resumed {'without' if was else 'with'} them "
                f"(paths through walls would differ); use a new output directory, or resume {hint}"
                + (f" (the configuration also differs in {', '.join(rest)})" if rest else ""))
    if quality and not prompt:
        rest = [d for d in diff if d not in quality]
        was, now = old.get("render_quality") or "default", new.get("render_quality") or "default"
        return (f"{run_dir}: this run was rendered at render quality {was} and cannot be resumed at {now} (its "
                f"images would differ); use a new output directory, or --render-quality {was} to resume"
                + (f" (the configuration also differs in {', '.join(rest)})" if rest else ""))
    if not prompt:
        return (f"{run_dir}: the configuration differs from the stored one in {', '.join(diff)}; "
                f"use a new output directory (or the stored settings) to resume")
    agent = (stored_provenance or {}).get("agent") or {}
    was = old.get("prompt_version") or (agent.get("params") or {}).get("prompt_version")
    rest = [d for d in diff if d not in prompt]
    return (f"{run_dir}: the prompt changed since this run was made (prompt version {was or 'unrecorded'} → "
            f"{new.get('prompt_version')}; CHANGELOG.md says what changed): its answers were given to the old "
            f"prompt and cannot be resumed with the new one; use a new output directory"
            + (f" (the configuration also differs in {', '.join(rest)})" if rest else ""))


def _plugin_change(old: dict, new: dict) -> tuple[str, str, str] | None:
    """(the plug-in's name, its stored SHA-256, its SHA-256 now) when a file plug-in agent recorded in both
    configurations changed (``agent.name_sha256`` of an episode run, ``agent_plugin_sha256`` of a question run);
    else None."""
    pairs = [((old.get("agent") or {}) if isinstance(old.get("agent"), dict) else {},
              (new.get("agent") or {}) if isinstance(new.get("agent"), dict) else {}, "name"),
             (old, new, "agent_plugin")]
    for a, b, k in pairs:
        was, now = a.get(f"{k}_sha256"), b.get(f"{k}_sha256")
        if isinstance(was, str) and isinstance(now, str) and was != now:
            return str(b.get(k)), was, now
    return None


# ----- provenance ---------------------------------------------------------------------------------------------
_GIT: dict[str, str | None] = {}


def _git_commit() -> str | None:
    """The commit of the source tree the package runs from, when it is a git checkout (cached)."""
    if "commit" not in _GIT:
        here = Path(__file__).resolve().parent
        try:
            out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                                 timeout=5)
            c = out.stdout.strip()
            _GIT["commit"] = c if out.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", c) else None
        except (OSError, subprocess.SubprocessError):
            _GIT["commit"] = None
    return _GIT["commit"]


def provenance(task_file: str | os.PathLike | None = None, agent: Any = None, seed: int = 0,
               suite: str | None = None, suite_sha256: str | None = None) -> dict:
    """What every record carries: package version, git commit (None when unknown), Python and platform, the task
    file and its SHA-256, the agent's ``describe()`` (or a name / dict) and model, the seed, the time, and the
    frozen suite the tasks came from (``suite``, e.g. ``"l4-v1/nav"``, and ``suite_sha256``, the SHA-256 of its
    file: ``spatialact.taskgen.suite_info``; both None for a task file or a procedural suite)."""
    from .. import __version__

    if agent is None:
        desc = None
    elif isinstance(agent, str):
        desc = {"agent": agent}
    elif isinstance(agent, dict):
        desc = dict(agent)
    else:
        desc = agent.describe()
    task_sha = None
    if task_file is not None:
        from ..tasks import file_sha256

        task_sha = file_sha256(task_file)
    return _jsonable({
        "spatialact_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "task_file": None if task_file is None else str(task_file),
        "task_file_sha256": task_sha,
        "agent": desc,
        "model": (desc or {}).get("model"),
        "seed": int(seed),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "suite": suite,
        "suite_sha256": suite_sha256,
    })


# ----- file names ---------------------------------------------------------------------------------------------
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def safe_name(s: str, max_len: int = 80) -> str:
    """A single path component for any string: only ``[A-Za-z0-9_.-]``, no leading dot, bounded length, and a
    short hash of the original whenever anything was changed (so distinct ids stay distinct)."""
    s = str(s)
    clean = _SAFE.sub("_", s).lstrip(".") or "_"
    if clean != s or len(clean) > max_len:
        h = hashlib.sha256(s.encode("utf-8")).hexdigest()[:10]
        clean = f"{clean[:max_len]}-{h}"
    return clean


# ----- reading ------------------------------------------------------------------------------------------------
def _check_regular(path: Path) -> None:
    """RunStoreError when a run directory's file is there but is no regular file (a link to one is): a device
    such as /dev/zero, a FIFO or a folder would be read without end or block; it is never opened."""
    if path.exists() and not path.is_file():
        raise RunStoreError(f"{path}: not a regular file (a device, a pipe or a folder); a run directory's files "
                            "are regular files")


def new_run_id() -> str:
    """A new run's identity: 32 random hexadecimal digits (``uuid4().hex``; random, not derived from the
    configuration, so two runs made with the same command in two directories are told apart)."""
    return uuid.uuid4().hex


def _show_id(v: Any) -> str:
    """A run id as a refusal names it: a well-formed one by its first 12 characters, anything else as (at most 24
    characters of) its JSON, control characters escaped."""
    if isinstance(v, str) and _RUN_ID.fullmatch(v):
        return v if len(v) <= 12 else v[:12] + "…"
    return json.dumps(v, ensure_ascii=True)[:24]


def _foreign(rec: dict, run_id: str | None) -> str | None:
    """Why ``rec`` is not a record of the run whose id is ``run_id`` (None: a run made before runs had one), or
    None when it is."""
    if "run_id" not in rec:
        if run_id is None:
            return None
        return (f"has no run_id, and this run's records carry one ({_show_id(run_id)}): a record of another run "
                "or of a run made before runs had one")
    got = rec["run_id"]
    if run_id is None:
        return (f"is a record of another run (run_id {_show_id(got)}; this run was made before runs had one and "
                "its records carry none)")
    if got != run_id:
        return f"is a record of another run (run_id {_show_id(got)} ≠ this run's {_show_id(run_id)})"
    return None


def _check_record(path: Path, lineno: int, rec: dict, run_id: Any) -> None:
    if run_id is _UNCHECKED:
        return
    why = _foreign(rec, run_id)
    if why is not None:
        raise RunStoreError(f"{path}: line {lineno} {why}; remove that line, or start a new run (another output "
                            "directory)")


def _scan(path: Path, run_id: Any = _UNCHECKED) -> tuple[list[dict], int, str | None]:
    """Records of a results file, the byte length of its intact part, and a note on a cut-off last line.

    A line that does not parse is tolerated only as the very last one and only when the file does not end with a
    newline there (the signature of a write cut short); anything else raises RunStoreError. With ``run_id`` (the
    run's id, None for a run made before runs had one; ``_FIRST``: the first record's), a record of another run
    raises RunStoreError naming the file and the line (:func:`_foreign`).
    """
    if not path.exists():
        return [], 0, None
    _check_regular(path)
    data = path.read_bytes()
    records, good, note = [], 0, None
    pos = 0
    lineno = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        last = end < 0
        line = data[pos:] if last else data[pos:end]
        lineno += 1
        if line.strip():
            try:
                rec = json.loads(line.decode("utf-8"))
                if not isinstance(rec, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, UnicodeDecodeError) as e:
                if last:
                    note = (f"{path}: line {lineno} is incomplete ({len(line)} bytes, no newline; the process was "
                            f"probably killed while writing it): dropped, that episode runs again")
                    break
                raise RunStoreError(f"{path}: line {lineno} is not a JSON record ({e}); fix or remove it") from None
            if run_id is _FIRST:
                run_id = _first_run_id([rec])
            _check_record(path, lineno, rec, run_id)
            if last:
                # A complete JSON object whose newline never made it: keep it, and let the writer add the newline.
                records.append(rec)
                good = len(data)
                break
            records.append(rec)
        good = len(data) if last else end + 1
        pos = len(data) if last else end + 1
    return records, good, note


def _dedupe(records: list[dict]) -> list[dict]:
    # An episode run again (e.g. with --retry-errors) is appended again; the last record of a key wins.
    seen: dict[str, int] = {}
    out: list[dict] = []
    for r in records:
        try:
            k = _key_of(r)
        except ValueError:
            out.append(r)
            continue
        if k in seen:
            out[seen[k]] = r
        else:
            seen[k] = len(out)
            out.append(r)
    return out


def read_records(run_dir: str | os.PathLike, dedupe: bool = True) -> list[dict]:
    """The records of a run (read-only: a cut-off last line is skipped with a warning, not removed). A record of
    another run (its ``run_id`` not the run's, :func:`read_run_id`) raises :class:`RunStoreError` naming the file
    and the line."""
    run_dir = Path(run_dir)
    path = run_dir / RESULTS_FILE
    if not run_dir.is_dir():
        raise FileNotFoundError(f"{run_dir}: no such run directory")
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: not a run directory (no {RESULTS_FILE})")
    records, _, note = _scan(path, read_run_id(run_dir) if (run_dir / CONFIG_FILE).exists() else _FIRST)
    if note:
        warnings.warn(note, RuntimeWarning, stacklevel=2)
    return _dedupe(records) if dedupe else records


def _stored_run_id(path: Path, stored: Any) -> str | None:
    """The ``run_id`` of a parsed ``config.json`` (None when it has none); RunStoreError when it is malformed."""
    if not isinstance(stored, dict) or stored.get("run_id") is None:
        return None
    rid = stored["run_id"]
    if not (isinstance(rid, str) and _RUN_ID.fullmatch(rid)):
        raise RunStoreError(f"{path}: run_id must be 1 to 128 letters, digits, '_', '.' or '-' (spatialact writes "
                            f"32 hexadecimal digits), got {_show_id(rid)}")
    return rid


def _first_run_id(records: list[dict]) -> str | None:
    """The identity of a run directory without ``config.json``: its first record's ``run_id`` (None when it has
    none or a malformed one)."""
    rid = records[0].get("run_id") if records else None
    return rid if isinstance(rid, str) and _RUN_ID.fullmatch(rid) else None


def read_run_id(run_dir: str | os.PathLike) -> str | None:
    """The identity of a run: the ``run_id`` of its ``config.json``; None for a run made before runs had one. A run
    directory without ``config.json`` takes its first record's. RunStoreError (one line naming the file) for a
    ``config.json`` that is unreadable, no regular file, or whose ``run_id`` is malformed."""
    run_dir = Path(run_dir)
    p = run_dir / CONFIG_FILE
    if not p.exists():
        return _first_run_id(_scan(run_dir / RESULTS_FILE)[0])
    _check_regular(p)
    try:
        stored = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise RunStoreError(f"{p}: unreadable ({e})") from None
    return _stored_run_id(p, stored)


def read_config(run_dir: str | os.PathLike) -> dict:
    p = Path(run_dir) / CONFIG_FILE
    if not p.exists():
        return {}
    _check_regular(p)
    with open(p, encoding="utf-8") as f:
        return json.load(f)


def is_run_dir(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a run directory (a folder holding ``results.jsonl``)."""
    p = Path(path)
    return p.is_dir() and (p / RESULTS_FILE).is_file()


def find_runs(path: str | os.PathLike, max_depth: int = 3) -> list[Path]:
    """The run directories ``path`` stands for: itself when it is one, else the run directories found below it
    (at most ``max_depth`` levels down, not inside another run, symbolic links not followed), sorted by path —
    e.g. ``runs/demo`` (``spatialact demo``'s folder: ``runs/<agent>-<mode>/`` and ``report/``) gives one run
    per agent. Raises FileNotFoundError (one line) when there is no folder or no run in it."""
    root = Path(path)
    if not root.is_dir():
        raise FileNotFoundError(f"{path}: no such run directory")
    if is_run_dir(root):
        return [root]
    found: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        try:
            subs = sorted(e for e in d.iterdir() if e.is_dir() and not e.is_symlink())
        except OSError:
            return
        for e in subs:
            if is_run_dir(e):
                found.append(e)
            elif depth < max_depth:
                walk(e, depth + 1)

    walk(root, 1)
    if not found:
        raise FileNotFoundError(f"{path}: not a run directory (no {RESULTS_FILE}) and no run directory inside it")
    return found


def load_run(run_dir: str | os.PathLike) -> "pandas.DataFrame":  # noqa: F821
    """A run as a pandas DataFrame, one row per episode (for notebooks).

    Columns: every record field (nested values such as poses stay Python lists / dicts), plus ``run`` (the run
    directory's name), ``tag.<name>`` for each tag, ``prompt_tokens``, ``completion_tokens``, ``cost_usd`` and
    ``cached`` from ``usage``. A folder of runs (e.g. ``runs/demo``, see :func:`find_runs`) gives all their rows,
    concatenated in path order, ``run`` naming each (its path relative to the folder).
    """
    import pandas as pd

    runs = find_runs(run_dir)
    recs, names = [], []
    for r in runs:
        rr = read_records(r)
        recs += rr
        name = r.name if r == Path(run_dir) else r.relative_to(run_dir).as_posix()
        names += [name] * len(rr)
    df = pd.DataFrame.from_records(recs)
    df.insert(0, "run", names)
    tags = [r.get("tags") or {} for r in recs]
    for name in sorted({k for t in tags for k in t}):
        df[f"tag.{name}"] = [t.get(name) for t in tags]
    usage = [r.get("usage") or {} for r in recs]
    for k in ("prompt_tokens", "completion_tokens", "cost_usd", "cached"):
        df[k] = [u.get(k) for u in usage]
    return df


# Columns whose values are dicts or lists are stored in Parquet as JSON text (a run's records are heterogeneous:
# a tags dict with different keys per task, poses with different numbers of steps); the names are kept in the
# file's metadata and read_parquet decodes them back.
_JSON_COLUMNS_META = b"spatialact.json_columns"


def export_parquet(run_dir: str | os.PathLike, path: str | os.PathLike | None = None) -> Path:
    """Write the run's records to ``RUN/results.parquet`` (or ``path``) and return its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = load_run(run_dir)
    json_cols = []
    for c in df.columns:
        if any(isinstance(v, (dict, list, tuple)) for v in df[c]):
            json_cols.append(c)
            df[c] = [None if v is None else _dumps(v) for v in df[c]]
        elif df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
            if len(kinds) > 1:  # mixed scalars (e.g. a reason that is sometimes a number): JSON keeps them
                json_cols.append(c)
                df[c] = [None if v is None else _dumps(v) for v in df[c]]
    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_JSON_COLUMNS_META] = json.dumps(json_cols).encode()
    table = table.replace_schema_metadata(meta)
    out = Path(path) if path is not None else Path(run_dir) / "results.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out)
    return out


def read_parquet(path: str | os.PathLike) -> "pandas.DataFrame":  # noqa: F821
    """Inverse of :func:`export_parquet`: the same columns and values as :func:`load_run`."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    meta = table.schema.metadata or {}
    json_cols = json.loads(meta.get(_JSON_COLUMNS_META, b"[]"))
    df = table.to_pandas()
    for c in json_cols:
        df[c] = [None if v is None else json.loads(v) for v in df[c]]
    return df


# ----- writing ------------------------------------------------------------------------------------------------
class RunStore:
    """The one writer of a run directory.

    ``RunStore(run_dir, config, provenance)`` creates the directory (or opens it to resume): a stored
    configuration that differs from ``config`` outside :data:`MUTABLE_KEYS` raises :class:`RunConfigError`
    naming the keys. A second RunStore on the same directory (in any process) raises :class:`RunStoreError`.
    ``append(record)`` writes one line, flushes and fsyncs (``fsync=False`` only for benchmarks).
    ``dropped`` holds the note about a cut-off last line removed on opening, else None.

    ``run_id``: the run's identity (:func:`new_run_id` when the directory is made; the stored one on resume; None
    for a run made before runs had one, which stays so). ``append`` writes it into every record, after ``key``;
    opening refuses a run whose ``results.jsonl`` holds a record of another run (:class:`RunStoreError` naming the
    file and the line).
    """

    def __init__(self, run_dir: str | os.PathLike, config: dict, provenance: dict | None = None,
                 fsync: bool = True):
        self.run_dir = Path(run_dir)
        self.fsync = bool(fsync)
        self.config = _normal(dict(config))
        self.provenance = _normal(dict(provenance or {}))
        if self.run_dir.exists() and not self.run_dir.is_dir():
            raise RunStoreError(f"{self.run_dir}: is a file, not a run directory (name a folder)")
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise RunStoreError(f"{self.run_dir}: cannot be a run directory: a part of the path is a file") from None
        self.run_id: str | None = None
        self._lock = self._acquire_lock()
        try:
            self._check_config()
            self.path = self.run_dir / RESULTS_FILE
            records, good, note = _scan(self.path, self.run_id)
            self.dropped = note
            if self.path.exists() and good < self.path.stat().st_size:
                with open(self.path, "r+b") as f:
                    f.truncate(good)
                    f.flush()
                    os.fsync(f.fileno())
                warnings.warn(note, RuntimeWarning, stacklevel=2)
            needs_newline = self.path.exists() and good > 0 and self.path.read_bytes()[-1:] != b"\n"
            # key → latest record, in first-seen order (as _dedupe); appends are O(1)
            self._by_key = {_key_of(r): r for r in _dedupe(records)}
            self._done = set(self._by_key)
            self._fh = open(self.path, "a", encoding="utf-8")
            if needs_newline:
                self._fh.write("\n")
                self._sync()
        except BaseException:
            self._release_lock()
            raise

    # -- locking: one writer per run directory
    def _acquire_lock(self):
        path = self.run_dir / ".lock"
        # A regular file (made if missing); a FIFO, a device, a socket or a folder there is refused in one line
        # saying what it is, looked at before it is opened and again after (opened without waiting: a FIFO put
        # there in between does not block).
        try:
            mode = os.stat(path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            mode = None
        except OSError as e:
            raise RunStoreError(f"{path}: cannot be opened ({e.strerror or e})") from None
        if mode is None or stat.S_ISREG(mode):
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0),
                             0o644)
            except OSError as e:
                raise RunStoreError(f"{path}: cannot be opened ({e.strerror or e})") from None
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                os.close(fd)
        if not stat.S_ISREG(mode):
            raise RunStoreError(f"{path}: is {node_kind(mode)}, not a regular file; a run directory's .lock is a "
                                "regular file (remove it)")
        os.set_blocking(fd, True)
        fh = os.fdopen(fd, "a+")
        try:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # pragma: no cover - not POSIX: no lock, the docs say one writer
            pass
        except OSError:
            fh.close()
            raise RunStoreError(f"{self.run_dir}: another process is writing this run (lock {path} is held)") \
                from None
        return fh

    def _release_lock(self) -> None:
        if getattr(self, "_lock", None) is not None:
            try:
                import fcntl

                fcntl.flock(self._lock.fileno(), fcntl.LOCK_UN)
            except (ImportError, OSError):
                pass
            self._lock.close()
            self._lock = None

    def _check_config(self) -> None:
        """Compare the configuration with the stored one (or store it) and set ``self.run_id``."""
        path = self.run_dir / CONFIG_FILE
        if path.exists():
            _check_regular(path)
            try:
                stored = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as e:
                raise RunStoreError(f"{path}: unreadable ({e})") from None
            if not isinstance(stored, dict):
                raise RunStoreError(f"{path}: unreadable (not a JSON object)")
            self.run_id = _stored_run_id(path, stored)
            old = stored.get("config", {})
            if "collisions" in self.config and "collisions" not in old and "mode" in old:
                # an episode run made before walls stopped the camera ran without them
                old = dict(old, collisions=False)
            diff = config_diff(old, self.config)
            if diff and not self._has_records():
                # Nothing ran under the stored configuration (a first attempt that stopped before its first
                # episode): the new one replaces it, so a corrected command is never blocked by a mistyped one.
                self.run_id = self.run_id or new_run_id()
                self._write_json(path, {"run_id": self.run_id, "config": self.config, "provenance": self.provenance})
                self.stored_provenance = self.provenance
                return
            if diff:
                raise RunConfigError(config_refusal(self.run_dir, diff, old, self.config, stored.get("provenance")))
            changed = old != self.config  # only mutable keys changed: remember the latest values
            stored["config"] = self.config
            if self.run_id is None and not self._has_records():  # stored before runs had an id, still empty
                self.run_id = new_run_id()
                stored = {"run_id": self.run_id, **{k: v for k, v in stored.items() if k != "run_id"}}
                changed = True
            if changed:
                self._write_json(path, stored)
            self.stored_provenance = stored.get("provenance", {})
            if not self.provenance:  # resumed without new provenance: records carry the stored one
                self.provenance = dict(self.stored_provenance)
        else:
            # A new run, or (rarely) a results file whose config.json is gone: it keeps its first record's id
            records, _, _ = _scan(self.run_dir / RESULTS_FILE)
            self.run_id = _first_run_id(records) if records else new_run_id()
            head = {"run_id": self.run_id} if self.run_id else {}
            self._write_json(path, {**head, "config": self.config, "provenance": self.provenance})
            self.stored_provenance = self.provenance

    def _has_records(self) -> bool:
        path = self.run_dir / RESULTS_FILE
        if not path.exists() or path.stat().st_size == 0:
            return False
        records, _, _ = _scan(path)
        return bool(records)

    @staticmethod
    def _write_json(path: Path, obj: dict) -> None:
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(_jsonable(obj), indent=2, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)

    # -- queries
    def done_keys(self, include_errors: bool = True, retry_reasons: Iterable[str] = ()) -> set[str]:
        """Keys of the finished episodes (their latest record). ``include_errors=False`` leaves out every
        failure (a record with an ``error``, see :func:`~spatialact.records.is_failure`), so those run
        again; ``retry_reasons`` leaves out the records whose ``reason`` is one of them (the runner passes
        ``("api_error",)`` by default)."""
        retry = set(retry_reasons)
        if include_errors and not retry:
            return set(self._done)
        return {k for k, r in self._by_key.items()
                if not ((not include_errors and is_failure(r)) or r.get("reason") in retry)}

    def latest(self, key: str) -> dict | None:
        """The latest record of ``key``, or None."""
        return self._by_key.get(key)

    def records(self) -> list[dict]:
        return list(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    # -- writing
    def _sync(self) -> None:
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())

    def append(self, record: dict) -> str:
        """Append one episode record (one line; flushed and fsynced) and return its key.

        A record without ``key`` gets one from (task_id, agent, env, mode, seed); a record without
        ``provenance`` gets the store's. The record is written with ``key`` first, then the run's ``run_id`` (any
        ``run_id`` it came with is replaced; a run made before runs had one writes none), then its other fields
        in their order.
        """
        if self._fh is None:
            raise RunStoreError(f"{self.run_dir}: the store is closed")
        key = _key_of(record)
        rec = {"key": key, **({"run_id": self.run_id} if self.run_id else {}),
               **{k: v for k, v in record.items() if k not in ("key", "run_id")}}
        if not rec.get("provenance"):
            rec["provenance"] = self.provenance
        line = _dumps(rec)
        self._fh.write(line + "\n")
        self._sync()
        self._by_key[key] = json.loads(line)
        self._done.add(key)
        return key

    def frame_path(self, key: str, name: str, ext: str = "png") -> tuple[Path, str]:
        """The absolute and run-relative path of a frame; both components sanitised and checked to stay inside."""
        rel = Path(FRAMES_DIR) / safe_name(key) / f"{safe_name(name, 40)}.{ext}"
        full = (self.run_dir / rel).resolve()
        root = (self.run_dir / FRAMES_DIR).resolve()
        if root not in full.parents:
            raise ValueError(f"frame path {rel} escapes the run directory")
        return full, rel.as_posix()

    def write_frame(self, key: str, name: str, rgb: np.ndarray) -> str:
        """Save an (H, W, 3) uint8 image as PNG under ``frames/<key>/<name>.png``; returns the relative path."""
        from PIL import Image

        a = np.asarray(rgb)
        if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] not in (3, 4):
            raise ValueError(f"write_frame: expected an (H, W, 3) uint8 image, got {a.dtype} {a.shape}")
        full, rel = self.frame_path(key, name)
        full.parent.mkdir(parents=True, exist_ok=True)
        tmp = full.with_name(full.name + ".tmp")
        Image.fromarray(np.ascontiguousarray(a[..., :3])).save(tmp, format="PNG")
        os.replace(tmp, full)
        return rel

    def close(self) -> None:
        if getattr(self, "_fh", None) is not None:
            self._sync()
            self._fh.close()
            self._fh = None
        self._release_lock()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass
