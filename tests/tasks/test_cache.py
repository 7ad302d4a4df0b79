"""Loading a task file once (docs/tasks.md): the in-process memo keyed by SHA-256 and the on-disk verdicts."""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile

import numpy as np
import pytest

from spatialact.tasks import (TaskFileError, clear_task_cache, file_sha256, load_task_file, load_tasks,
                              pairs_from_trajectory, save_tasks, task_cache_dir)
from spatialact.tasks import io as task_io
from spatialact.trajectories import Trajectory
from traj_helpers import smooth_poses


@pytest.fixture(scope="module")
def tasks():
    P, t = smooth_poses(200, 30.0, seed=6, scale=1.0)
    return pairs_from_trajectory(Trajectory(P, t, 30.0), n=5, seed=0)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("SPATIALACT_CACHE", str(d))
    clear_task_cache()
    yield d / "tasks"
    clear_task_cache()


class _Counter:
    """Wraps io._parse to count full validations and trusted (verdict) parses."""

    def __init__(self, monkeypatch):
        self.full = self.trusted = 0
        real = task_io._parse

        def spy(path, data, folder, *, validate=True):
            if validate:
                self.full += 1
            else:
                self.trusted += 1
            return real(path, data, folder, validate=validate)
        monkeypatch.setattr(task_io, "_parse", spy)


def test_memo_loads_a_file_once(tmp_path, tasks, cache_dir, monkeypatch):
    p = save_tasks(tasks, tmp_path / "t.jsonl")
    n = _Counter(monkeypatch)
    a = load_tasks(p)
    b = load_tasks(p)
    assert (n.full, n.trusted) == (1, 0)
    assert [x is y for x, y in zip(a, b)] == [True] * len(tasks)  # the same Task objects
    assert a is not b  # but a new list each time
    f = load_task_file(p)
    assert f.sha256 == file_sha256(p) and len(f) == len(tasks) and f.tasks[0] is a[0]
    assert [t.id for t in load_tasks(p, ids=[tasks[2].id, "nope"])] == [tasks[2].id]
    # shared tasks cannot be changed in place
    with pytest.raises(ValueError, match="read-only"):
        a[0].start_pose[0, 3] = 5.0
    # changed bytes: parsed again
    p.write_text(p.read_text() + "\n")
    c = load_tasks(p)
    assert n.full == 2 and c[0] is not a[0] and [t.id for t in c] == [t.id for t in a]
    # cache=False: always parsed, never memoised
    load_tasks(p, cache=False)
    assert n.full == 3


def test_memo_is_keyed_by_folder_too(tmp_path, tasks, cache_dir):
    """The same bytes in another folder resolve relative paths there."""
    t = tasks[0].with_(start_image=str(tmp_path / "a" / "img.png"))
    pa = save_tasks([t], tmp_path / "a" / "t.jsonl")
    pb = tmp_path / "b" / "t.jsonl"
    pb.parent.mkdir()
    pb.write_bytes(pa.read_bytes())
    assert load_tasks(pa)[0].start_image == str(tmp_path / "a" / "img.png")
    assert load_tasks(pb)[0].start_image == str(tmp_path / "b" / "img.png")


def test_memo_keeps_a_few_files(tmp_path, tasks, cache_dir):
    paths = [save_tasks([t.with_(id=f"f{i}")], tmp_path / f"{i}.jsonl") for i, t in
             enumerate([tasks[0]] * (task_io.MEMO_FILES + 2))]
    for p in paths:
        load_tasks(p)
    assert len(task_io._MEMO) == task_io.MEMO_FILES


def test_disk_verdict_skips_validation_in_a_new_process(tmp_path, tasks, cache_dir, monkeypatch):
    p = save_tasks(tasks, tmp_path / "t.jsonl")
    n = _Counter(monkeypatch)
    first = load_tasks(p)
    verdict = cache_dir / f"{file_sha256(p)}.json"
    v = json.loads(verdict.read_text())
    assert v["valid"] is True and v["n_tasks"] == len(tasks) and v["sha256"] == file_sha256(p)
    clear_task_cache()  # as a new process would start
    again = load_tasks(p)
    assert (n.full, n.trusted) == (1, 1)
    assert [t.to_dict() for t in again] == [t.to_dict() for t in first]


@pytest.mark.parametrize("garbage", ["", "{not json", "[]", '{"valid": true}', None])
def test_corrupt_verdict_is_ignored_and_rebuilt(tmp_path, tasks, cache_dir, monkeypatch, garbage):
    p = save_tasks(tasks, tmp_path / "t.jsonl")
    load_tasks(p)
    verdict = cache_dir / f"{file_sha256(p)}.json"
    v = json.loads(verdict.read_text())
    if garbage is None:  # well-formed, but for another number of tasks: not this file's verdict
        verdict.write_text(json.dumps(dict(v, n_tasks=v["n_tasks"] + 1)))
    else:
        verdict.write_text(garbage)
    clear_task_cache()
    n = _Counter(monkeypatch)
    assert len(load_tasks(p)) == len(tasks)
    assert n.full == 1 and n.trusted == (1 if garbage is None else 0)
    assert json.loads(verdict.read_text()) == v  # rewritten


def test_verdict_from_other_rules_is_not_trusted(tmp_path, tasks, cache_dir, monkeypatch):
    p = save_tasks(tasks, tmp_path / "t.jsonl")
    load_tasks(p)
    verdict = cache_dir / f"{file_sha256(p)}.json"
    verdict.write_text(json.dumps(dict(json.loads(verdict.read_text()), validator="1.0:older")))
    clear_task_cache()
    n = _Counter(monkeypatch)
    load_tasks(p)
    assert (n.full, n.trusted) == (1, 0)


def test_invalid_file_leaves_no_verdict(tmp_path, tasks, cache_dir):
    rec = tasks[0].to_dict()
    rec["n_steps"] += 1
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    with pytest.raises(TaskFileError, match="field 'n_steps'"):
        load_tasks(p)
    with pytest.raises(TaskFileError, match="field 'n_steps'"):  # not memoised either
        load_tasks(p)
    assert not (cache_dir / f"{file_sha256(p)}.json").exists()


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "c"))
    assert task_cache_dir() == tmp_path / "c" / "tasks"
    monkeypatch.delenv("SPATIALACT_CACHE")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert task_cache_dir() == tmp_path / "tmp" / f"spatialact-{os.getuid()}" / "tasks"


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_verdict_in_a_folder_others_can_write_is_not_trusted(tmp_path, tasks, cache_dir, monkeypatch):
    p = save_tasks(tasks, tmp_path / "t.jsonl")
    load_tasks(p)
    assert (cache_dir.stat().st_mode & 0o777) == 0o700
    os.chmod(cache_dir, 0o777)  # someone else could have planted the verdict
    clear_task_cache()
    n = _Counter(monkeypatch)
    load_tasks(p)
    assert (n.full, n.trusted) == (1, 0)


def test_unwritable_cache_is_no_error(tmp_path, tasks, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("SPATIALACT_CACHE", str(blocker))  # a file where the folder should be
    clear_task_cache()
    p = save_tasks(tasks, tmp_path / "t.jsonl")
    assert len(load_tasks(p)) == len(tasks)
    clear_task_cache()


@pytest.mark.skipif(importlib.util.find_spec("orjson") is None, reason="orjson not installed")
def test_fast_parser_agrees_with_the_standard_one(tasks):
    line = json.dumps(tasks[0].to_dict()).encode()
    assert task_io._loads(line) == task_io._loads_std(line)
    for bad in (b'{"a": NaN}', b'{"a": Infinity}', b'{"a": 1,}', b'{"a": "\xff"}'):
        with pytest.raises(ValueError):
            task_io._loads(bad)
    big = task_io._loads(b'{"a": 123456789012345678901234567890, "b": 18446744073709551616}')
    assert big == {"a": 123456789012345678901234567890, "b": 2 ** 64} and type(big["a"]) is int
    assert np.isinf(task_io._loads(b'{"a": 1e999}')["a"])
