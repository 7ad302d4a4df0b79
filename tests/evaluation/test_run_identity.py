"""A run's identity: every record carries the ``run_id`` of the run directory that wrote it, so a record pasted in
from another run is refused — on resume (`spatialact eval`) and wherever the run is read (`spatialact report`,
`load_run`) — in one line naming the file and the line, exit 2. Real runs only: `spatialact eval` with the oracle on
scene-less image tasks (`--env none`), in this process.

Before run ids, a record copied from another run's results.jsonl was counted as this run's (a fourth episode in a
run of three, its score in the report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _fabricate import image_tasks
from spatialact.cli.main import main
from spatialact.evaluation.results import RunStore, RunStoreError, load_run, read_records, read_run_id
from spatialact.tasks import save_tasks

N_TASKS = 4


@pytest.fixture
def task_file(tmp_path) -> Path:
    path = tmp_path / "tasks" / "tasks.jsonl"
    save_tasks(image_tasks(tmp_path / "tasks", N_TASKS), path)
    return path


def _eval(capsys, task_file, out, *extra) -> tuple[int, str]:
    """`spatialact eval` of the oracle on the task file into ``out``: (exit status, stderr)."""
    code = main(["eval", "--tasks", str(task_file), "--env", "none", "--out", str(out), "--no-progress", "--json",
                 *extra])
    return code, capsys.readouterr().err


def _report(capsys, run, out) -> tuple[int, str]:
    code = main(["report", str(run), "--out", str(out)])
    return code, capsys.readouterr().err


def _one_line(err: str) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _lines(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines() if x.strip()]


def _stored_id(run: Path):
    return json.loads((run / "config.json").read_text()).get("run_id")


def _two_runs(capsys, task_file, tmp_path) -> tuple[Path, Path]:
    """Run ``a`` (the first three tasks) and run ``b`` (all four), made by the same command but for ``--out``."""
    a, b = tmp_path / "a", tmp_path / "b"
    assert _eval(capsys, task_file, a, "--limit", "3")[0] == 0
    assert _eval(capsys, task_file, b)[0] == 0
    return a, b


def test_each_run_has_its_own_id_and_every_record_carries_it_after_the_key(tmp_path, capsys, task_file):
    a, b = _two_runs(capsys, task_file, tmp_path)
    ida, idb = _stored_id(a), _stored_id(b)
    assert isinstance(ida, str) and len(ida) == 32 and int(ida, 16) >= 0  # 32 hexadecimal digits
    assert ida != idb  # the same command, another directory: another run
    assert read_run_id(a) == ida and read_run_id(b) == idb
    for run, rid, n in ((a, ida, 3), (b, idb, N_TASKS)):
        recs = _lines(run)
        assert len(recs) == n and all(r["run_id"] == rid for r in recs)
        assert all(list(r)[:2] == ["key", "run_id"] for r in recs)
    # the configuration is what it was: the id sits beside it, not in it (a resume compares the configuration)
    assert "run_id" not in json.loads((a / "config.json").read_text())["config"]


def test_a_record_pasted_from_another_run_is_refused_on_resume_and_in_the_report(tmp_path, capsys, task_file):
    a, b = _two_runs(capsys, task_file, tmp_path)
    ida, idb = _stored_id(a), _stored_id(b)
    foreign = (b / "results.jsonl").read_text().splitlines()[3]  # t3: an episode run a has not run (yet)
    assert json.loads(foreign)["task_id"] == "t3"
    with open(a / "results.jsonl", "a") as f:
        f.write(foreign + "\n")
    before = (a / "results.jsonl").read_bytes()
    want = (f"{a / 'results.jsonl'}: line 4 is a record of another run (run_id {idb[:12]}… ≠ this run's "
            f"{ida[:12]}…); remove that line, or start a new run")

    code, err = _eval(capsys, task_file, a)  # resume: it would have counted t3 as done, 4 episodes of a's
    assert code == 2 and want in _one_line(err)
    assert (a / "results.jsonl").read_bytes() == before  # nothing run, nothing appended, nothing cut
    code, err = _eval(capsys, task_file, a, "--dry-run")  # what is left to run: read, refused the same way
    assert code == 2 and want in _one_line(err)

    code, err = _report(capsys, a, tmp_path / "rep")
    assert code == 2 and want in _one_line(err)
    with pytest.raises(RunStoreError, match="line 4 is a record of another run"):
        load_run(a)

    # taken out again, the run resumes: t3 is run under a's id
    (a / "results.jsonl").write_bytes(before[: before.rindex(foreign.encode())])
    code, err = _eval(capsys, task_file, a)
    assert code == 0, err
    recs = read_records(a)
    assert [r["task_id"] for r in recs] == ["t0", "t1", "t2", "t3"] and {r["run_id"] for r in recs} == {ida}
    assert _report(capsys, a, tmp_path / "rep2")[0] == 0


def test_a_record_without_an_id_in_a_run_that_has_one_is_refused(tmp_path, capsys, task_file):
    """A line from a run made before runs had an id (or a record stripped of it) is no record of this run."""
    a, b = _two_runs(capsys, task_file, tmp_path)
    rec = {k: v for k, v in _lines(b)[3].items() if k != "run_id"}
    with open(a / "results.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    want = f"{a / 'results.jsonl'}: line 4 has no run_id, and this run's records carry one ({_stored_id(a)[:12]}…)"
    code, err = _eval(capsys, task_file, a)
    assert code == 2 and want in _one_line(err)
    code, err = _report(capsys, a, tmp_path / "rep")
    assert code == 2 and want in _one_line(err)


def test_a_resumed_run_keeps_its_id(tmp_path, capsys, task_file):
    a = tmp_path / "a"
    assert _eval(capsys, task_file, a, "--limit", "1")[0] == 0
    rid = _stored_id(a)
    assert _eval(capsys, task_file, a, "--limit", "2")[0] == 0  # resumed: one more episode
    # a key that may change (stored again): every task, twice
    assert _eval(capsys, task_file, a, "--repeats", "2")[0] == 0
    assert json.loads((a / "config.json").read_text())["config"]["repeats"] == 2
    assert _eval(capsys, task_file, a, "--repeats", "2")[0] == 0  # nothing left to run
    assert _stored_id(a) == rid
    recs = _lines(a)
    assert len(recs) == 2 * N_TASKS and all(r["run_id"] == rid for r in recs)
    assert _report(capsys, a, tmp_path / "rep")[0] == 0


def test_a_run_without_records_keeps_its_id_when_it_takes_a_corrected_configuration(tmp_path):
    run = tmp_path / "run"
    RunStore(run, {"mode": "one-shot"}).close()
    rid = _stored_id(run)
    with RunStore(run, {"mode": "closed-loop"}) as s:  # nothing ran under the first: it is replaced
        assert s.run_id == rid
    assert _stored_id(run) == rid and json.loads((run / "config.json").read_text())["config"]["mode"] == "closed-loop"


def _strip_ids(run: Path) -> None:
    """What the writer before run ids left: config.json without ``run_id`` and records without it (the other
    fields, and their order, are what that writer wrote)."""
    stored = json.loads((run / "config.json").read_text())
    del stored["run_id"]
    (run / "config.json").write_text(json.dumps(stored, indent=2) + "\n")
    (run / "results.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "run_id"}) + "\n"
                                               for r in _lines(run)))


def test_a_run_made_before_run_ids_reads_and_resumes_as_before(tmp_path, capsys, task_file):
    a, b = _two_runs(capsys, task_file, tmp_path)
    _strip_ids(a)
    assert read_run_id(a) is None and len(read_records(a)) == 3
    assert _report(capsys, a, tmp_path / "rep")[0] == 0
    code, err = _eval(capsys, task_file, a)  # resumed: t3 runs, written without an id (the run stays as it was)
    assert code == 0, err
    recs = _lines(a)
    assert [r["task_id"] for r in recs] == ["t0", "t1", "t2", "t3"] and not any("run_id" in r for r in recs)
    assert "run_id" not in json.loads((a / "config.json").read_text())
    # a record that carries an id is another run's
    with open(a / "results.jsonl", "a") as f:
        f.write(json.dumps(dict(_lines(b)[0], key="t0|oracle|none|one-shot|0|x")) + "\n")
    code, err = _eval(capsys, task_file, a)
    line = _one_line(err)
    assert code == 2 and f"{a / 'results.jsonl'}: line 5 is a record of another run (run_id {_stored_id(b)[:12]}…;" \
                         in line and "made before runs had one" in line
    code, err = _report(capsys, a, tmp_path / "rep2")
    assert code == 2 and "line 5 is a record of another run" in _one_line(err)


def test_a_run_directory_without_config_takes_its_first_records_id(tmp_path, capsys, task_file):
    a, b = _two_runs(capsys, task_file, tmp_path)
    (a / "config.json").unlink()
    assert read_run_id(a) == _lines(a)[0]["run_id"] and len(read_records(a)) == 3
    with open(a / "results.jsonl", "a") as f:
        f.write((b / "results.jsonl").read_text().splitlines()[3] + "\n")
    with pytest.raises(RunStoreError, match="line 4 is a record of another run"):
        read_records(a)


@pytest.mark.parametrize("bad", ["", "a b", 7, "x" * 129])
def test_a_malformed_run_id_in_config_is_refused_in_one_line(tmp_path, capsys, task_file, bad):
    a = tmp_path / "a"
    assert _eval(capsys, task_file, a, "--limit", "1")[0] == 0
    stored = json.loads((a / "config.json").read_text())
    stored["run_id"] = bad
    (a / "config.json").write_text(json.dumps(stored))
    for code, err in (_eval(capsys, task_file, a), _report(capsys, a, tmp_path / "rep")):
        assert code == 2 and f"{a / 'config.json'}: run_id must be 1 to 128 letters" in _one_line(err)
