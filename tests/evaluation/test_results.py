"""The results store: resume semantics, fsync'd appends, parquet round trip, load_run, path sanitising."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from _fabricate import checker_image, fabricate_run, fake_record, make_task
from spatialact.evaluation import results as R
from spatialact.evaluation.results import (RunConfigError, RunStore, RunStoreError, export_parquet, load_run,
                                           provenance, read_parquet, read_records, safe_name)

CFG = {"agent": "oracle", "mode": "one-shot", "env": "pybullet", "seed": 0, "tasks": "t.jsonl", "limit": 5,
       "workers": 1, "profile": {"name": "paper", "weights": [1, 1, 1]}}


def _rec(i, **kw):
    return fake_record(make_task(f"t{i}"), **kw)


def test_append_and_resume_done_keys(tmp_path):
    with RunStore(tmp_path / "run", CFG, {"x": 1}) as s:
        assert s.done_keys() == set()
        k0 = s.append(_rec(0))
        s.append(_rec(1, error="TimeoutError: boom"))
        assert k0 == "t0|oracle|pybullet|one-shot|0"
    with RunStore(tmp_path / "run", CFG) as s:
        assert s.done_keys() == {"t0|oracle|pybullet|one-shot|0", "t1|oracle|pybullet|one-shot|0"}
        assert s.done_keys(include_errors=False) == {"t0|oracle|pybullet|one-shot|0"}
        s.append(_rec(1))  # retried: the last record of a key wins
    recs = read_records(tmp_path / "run")
    assert [r["task_id"] for r in recs] == ["t0", "t1"] and recs[1]["error"] is None
    assert len(read_records(tmp_path / "run", dedupe=False)) == 3
    # every line is complete JSON with provenance
    lines = (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    assert all(json.loads(l)["provenance"] for l in lines)
    assert json.loads(lines[0])["provenance"] == {"x": 1}


def test_changed_config_refused_naming_the_key(tmp_path):
    with RunStore(tmp_path / "run", CFG) as s:
        s.append(_rec(0))
    with pytest.raises(RunConfigError, match=r"mode \(\"one-shot\" → \"closed-loop\"\)"):
        RunStore(tmp_path / "run", dict(CFG, mode="closed-loop"))
    with pytest.raises(RunConfigError, match=r"profile\.weights"):
        RunStore(tmp_path / "run", dict(CFG, profile={"name": "paper", "weights": [1, 1, 2]}))
    with pytest.raises(RunConfigError, match=r"model \(new"):
        RunStore(tmp_path / "run", dict(CFG, model="gpt"))
    # limit, workers, backend, progress, out, json, verbose may change
    RunStore(tmp_path / "run", dict(CFG, limit=50, workers=4, backend="ray", progress=False, out="x", json=True,
                                    verbose=2)).close()
    stored = json.loads((tmp_path / "run" / "config.json").read_text())
    assert stored["config"]["limit"] == 50
    # tuples and lists are the same configuration
    RunStore(tmp_path / "run", dict(CFG, profile={"name": "paper", "weights": (1, 1, 1)})).close()


def test_a_run_without_records_takes_the_new_configuration(tmp_path):
    # A first attempt that stopped before its first episode must not block the corrected command.
    RunStore(tmp_path / "run", CFG).close()
    with RunStore(tmp_path / "run", dict(CFG, mode="closed-loop")) as s:
        assert s.done_keys() == set()
        s.append(_rec(0, mode="closed-loop"))
    assert json.loads((tmp_path / "run" / "config.json").read_text())["config"]["mode"] == "closed-loop"
    with pytest.raises(RunConfigError, match="mode"):  # now it has a record: the configuration is fixed
        RunStore(tmp_path / "run", CFG)


def test_truncated_last_line_dropped_and_reported(tmp_path):
    run = tmp_path / "run"
    with RunStore(run, CFG) as s:
        s.append(_rec(0))
        s.append(_rec(1))
    path = run / "results.jsonl"
    data = path.read_bytes()
    full = data + R._dumps(dict(_rec(2), key="t2|oracle|pybullet|one-shot|0")).encode()
    path.write_bytes(full[: len(data) + 57])  # killed mid-write
    with pytest.warns(RuntimeWarning, match="line 3 is incomplete"):
        assert len(read_records(run)) == 2  # readers skip it, file untouched
    assert path.stat().st_size == len(data) + 57
    with pytest.warns(RuntimeWarning, match="incomplete"):
        s = RunStore(run, CFG)
    assert "line 3" in s.dropped
    assert s.done_keys() == {"t0|oracle|pybullet|one-shot|0", "t1|oracle|pybullet|one-shot|0"}
    assert path.read_bytes() == data  # cut back to the last whole record
    s.append(_rec(2))
    s.close()
    assert [r["task_id"] for r in read_records(run)] == ["t0", "t1", "t2"]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    run = tmp_path / "run"
    with RunStore(run, CFG) as s:
        s.append(_rec(0))
    path = run / "results.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with RunStore(run, CFG) as s:
        assert len(s.done_keys()) == 1
        s.append(_rec(1))
    assert len(path.read_text().splitlines()) == 2 and len(read_records(run)) == 2


def test_corrupt_middle_line_is_an_error(tmp_path):
    run = tmp_path / "run"
    with RunStore(run, CFG) as s:
        s.append(_rec(0))
    with open(run / "results.jsonl", "a") as f:
        f.write("garbage\n" + R._dumps(_rec(1)) + "\n")
    with pytest.raises(RunStoreError, match=r"results.jsonl: line 2 is not a JSON record"):
        RunStore(run, CFG)


def test_second_writer_refused(tmp_path):
    s = RunStore(tmp_path / "run", CFG)
    code = textwrap.dedent(f"""
        import sys
        from spatialact.evaluation.results import RunStore, RunStoreError
        try:
            RunStore({str(tmp_path / 'run')!r}, {CFG!r})
        except RunStoreError as e:
            print("refused:", e); sys.exit(3)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH="src"))
    assert out.returncode == 3 and "another process" in out.stdout
    s.close()
    RunStore(tmp_path / "run", CFG).close()  # free again


def test_append_is_fsynced(tmp_path, monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(R.os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    with RunStore(tmp_path / "run", CFG) as s:
        n0 = len(calls)
        s.append(_rec(0))
        assert len(calls) == n0 + 1
        # the line is on disk (visible to another reader) before append returns
        assert (tmp_path / "run" / "results.jsonl").read_text().count("\n") == 1
    with RunStore(tmp_path / "run2", CFG, fsync=False) as s:
        n0 = len(calls)
        s.append(_rec(0))
        assert len(calls) == n0


def test_killed_writer_loses_nothing_finished(tmp_path):
    # a child appends 3 records then dies with SIGKILL in the middle of a 4th write
    code = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, "tests")
        from _fabricate import fake_record, make_task
        from spatialact.evaluation import results as R
        s = R.RunStore({str(tmp_path / 'run')!r}, {CFG!r})
        for i in range(3):
            s.append(fake_record(make_task(f"t{{i}}")))
        line = R._dumps(fake_record(make_task("t3")))
        s._fh.write(line[:40]); s._fh.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH="src"))
    assert out.returncode != 0
    with pytest.warns(RuntimeWarning, match="incomplete"):
        with RunStore(tmp_path / "run", CFG) as s:
            assert len(s.done_keys()) == 3


def test_nan_becomes_null_and_numpy_is_serialised(tmp_path):
    with RunStore(tmp_path / "run", CFG) as s:
        s.append(dict(_rec(0), score=float("nan"), pred_poses=np.eye(4)[None], n_steps=np.int64(3)))
    r = read_records(tmp_path / "run")[0]
    assert r["score"] is None and r["pred_poses"] == [np.eye(4).tolist()] and r["n_steps"] == 3


def test_frame_paths_are_sanitised(tmp_path):
    run = tmp_path / "run"
    with RunStore(run, CFG) as s:
        for key in ["../../evil|a|b|c|0", "/etc/passwd", "..", "a/../../b", "ok-id|oracle|pybullet|one-shot|0",
                    "x" * 500, "ünïcode|\\..\\win"]:
            rel = s.write_frame(key, "../../start", checker_image())
            full = (run / rel).resolve()
            assert (run / "frames").resolve() in full.parents and full.exists()
            assert ".." not in rel.split("/")
    assert not (tmp_path / "evil").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    # distinct ids stay distinct after sanitising
    assert safe_name("a/b") != safe_name("a_b") and safe_name("a_b") == "a_b"
    assert len(safe_name("x" * 500)) < 100


def test_load_run_columns_and_parquet_round_trip(tmp_path):
    fabricate_run(tmp_path / "run", agent="openai", model="m-1", n=5)
    df = load_run(tmp_path / "run")
    assert len(df) == 5
    for col in ("run", "key", "task_id", "kind", "source", "tags", "agent", "model", "env", "mode", "seed", "score",
                "s_d", "s_theta", "s_step", "s_rot", "s_grip", "per_step", "ok", "reason", "repairs", "n_repairs",
                "response", "pred", "gt_poses", "pred_poses", "final_position_error", "final_rotation_error",
                "success", "path_length", "spl", "n_steps", "latency_s", "usage", "frames", "provenance", "error",
                "tag.difficulty", "tag.viewpoint", "prompt_tokens", "completion_tokens", "cost_usd"):
        assert col in df.columns, col
    assert df["run"].iloc[0] == "run" and df["prompt_tokens"].sum() == 5000
    p = export_parquet(tmp_path / "run")
    assert p == tmp_path / "run" / "results.parquet" and p.exists()
    back = read_parquet(p)
    assert list(back.columns) == list(df.columns)
    for c in df.columns:
        for a, b in zip(df[c], back[c]):
            if isinstance(a, float) and np.isnan(a):
                assert b is None or np.isnan(b)
            else:
                assert a == b, c


def test_provenance_fields(tmp_path):
    tf = tmp_path / "tasks.jsonl"
    tf.write_text("{}\n")
    p = provenance(task_file=tf, agent={"agent": "openai", "model": "m"}, seed=4)
    assert p["spatialact_version"] and p["seed"] == 4 and p["model"] == "m"
    assert len(p["task_file_sha256"]) == 64
    assert p["git_commit"] is None or len(p["git_commit"]) == 40


def test_missing_run_dir_messages(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such run directory"):
        read_records(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        load_run(tmp_path / "empty")


# ----- the run's identity ---------------------------------------------------------------------------------------
def test_the_store_writes_its_run_id_after_the_key_replacing_any_other(tmp_path):
    """A record that comes with another run's id (or none, or no key) is written with this run's, right after its
    key; the other fields keep their order."""
    with RunStore(tmp_path / "run", CFG) as s:
        rid = s.run_id
        assert len(rid) == 32 and int(rid, 16) >= 0 and rid == R.read_run_id(tmp_path / "run")
        s.append(dict(_rec(0), run_id="0" * 32))
        no_key = {k: v for k, v in _rec(1).items() if k != "key"}
        s.append(no_key)
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["run_id"] for r in lines] == [rid, rid]
    assert list(lines[0]) == ["key", "run_id", *[k for k in _rec(0) if k != "key"]]
    assert list(lines[1]) == ["key", "run_id", *no_key]
    assert RunStore(tmp_path / "other", CFG).run_id != rid  # random: another run, another id


def test_a_run_stored_before_run_ids_resumes_without_them(tmp_path):
    """config.json without run_id and records without it (what the store wrote before): resumed, it stays so, and a
    record that carries an id is another run's. Empty, it gets one."""
    run = tmp_path / "run"
    with RunStore(run, CFG) as s:
        s.append(_rec(0))
    stored = json.loads((run / "config.json").read_text())
    del stored["run_id"]
    (run / "config.json").write_text(json.dumps(stored))
    path = run / "results.jsonl"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_text()).items() if k != "run_id"}) + "\n")
    with RunStore(run, CFG) as s:
        assert s.run_id is None and len(s) == 1
        s.append(dict(_rec(1), run_id="f" * 32))  # the run's own record: written without an id
    assert not any("run_id" in json.loads(x) for x in path.read_text().splitlines())
    assert "run_id" not in json.loads((run / "config.json").read_text()) and len(read_records(run)) == 2
    with open(path, "a") as f:
        f.write(R._dumps(dict(_rec(2), run_id="f" * 32)) + "\n")
    with pytest.raises(RunStoreError, match=r"line 3 is a record of another run \(run_id ffffffffffff…; this run "
                                            r"was made before runs had one"):
        RunStore(run, CFG)
    with pytest.raises(RunStoreError, match="line 3 is a record of another run"):
        read_records(run)
    empty = tmp_path / "empty"
    RunStore(empty, CFG).close()
    stored = json.loads((empty / "config.json").read_text())
    del stored["run_id"]
    (empty / "config.json").write_text(json.dumps(stored))
    with RunStore(empty, CFG) as s:  # nothing in it yet: it takes an id now
        assert s.run_id and json.loads((empty / "config.json").read_text())["run_id"] == s.run_id


def test_a_foreign_record_is_named_by_file_and_line_and_its_id_shown_escaped(tmp_path):
    run = tmp_path / "run"
    with RunStore(run, CFG) as s:
        s.append(_rec(0))
        rid = s.run_id
    with open(run / "results.jsonl", "a") as f:
        f.write(R._dumps(dict(_rec(1), key="k1", run_id="\x1b[31mred\n" * 50)) + "\n")
    with pytest.raises(RunStoreError) as e:
        read_records(run)
    msg = str(e.value)
    assert msg.startswith(f"{run / 'results.jsonl'}: line 2 is a record of another run (run_id \"\\u001b[31mred")
    assert "\n" not in msg and "\x1b" not in msg and f"≠ this run's {rid[:12]}…" in msg and len(msg) < 400
