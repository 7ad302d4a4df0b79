"""`spatialact score` under hostile options and inputs (issue P): every bound is tested by counting what the run
did (processes started, notes kept, bytes stored), never by a timer."""

from __future__ import annotations

import json
import multiprocessing.process

import pytest

from _fabricate import make_task
from spatialact.cli import score as score_cli
from spatialact.cli.main import main
from spatialact.scorers import offline
from spatialact.scorers.offline import score_file
from spatialact.tasks import save_tasks


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert err and "\n" not in err, err
    return err


@pytest.fixture()
def task_file(tmp_path):
    tasks = [make_task(f"t{i}", signed=((0, 0, 1 + i % 5, 0, 0, 0),)) for i in range(4)]
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks, path)
    return path


def _answers(path, n: int):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"task_id": f"t{i % 4}", "response": '{"actions": ["W"], "step_nums": [2]}'}) + "\n")
    return path


@pytest.fixture()
def started(monkeypatch):
    """The processes started in this process (every multiprocessing start goes through BaseProcess.start)."""
    count = []
    real = multiprocessing.process.BaseProcess.start

    def start(self):
        count.append(self)
        return real(self)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
    return count


# ----- workers and bootstrap resamples (P 3) ---------------------------------------------------------------------
def test_the_bounds_of_the_command_are_the_pipelines():
    assert (score_cli.MAX_WORKERS, score_cli.MAX_N_BOOT) == (offline.MAX_WORKERS, offline.MAX_N_BOOT) == (64, 100_000)


@pytest.mark.parametrize("opt,value,msg", [
    ("--workers", "100000", "--workers must be at most 64, got 100,000"),
    ("--workers", "65", "--workers must be at most 64, got 65"),
    ("--n-boot", "1000000000", "--n-boot must be at most 100,000, got 1,000,000,000"),
])
def test_too_many_workers_or_resamples_are_refused_in_one_line_before_any_work(tmp_path, task_file, capsys, started,
                                                                              opt, value, msg):
    answers = _answers(tmp_path / "a.jsonl", 10)
    out = tmp_path / "s.jsonl"
    assert main(["score", str(answers), str(task_file), "--out", str(out), opt, value]) == 2
    assert msg in _one_line(capsys)
    assert started == [] and not out.exists()


@pytest.mark.parametrize("kw,msg", [({"workers": 65}, "workers must be at most 64 (MAX_WORKERS), got 65"),
                                    ({"n_boot": 10 ** 9}, "n_boot must be at most 100,000 (MAX_N_BOOT)")])
def test_score_file_refuses_the_same_bounds(tmp_path, task_file, started, kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        score_file(_answers(tmp_path / "a.jsonl", 10), task_file, **kw)
    assert started == []


def test_no_more_workers_start_than_there_are_pieces_of_work(tmp_path, task_file, started):
    """25 lines in pieces of 10 are 3 pieces: 3 processes for --workers 8; 5 lines (one piece): none at all. The
    output is the same as one process's."""
    answers = _answers(tmp_path / "a.jsonl", 25)
    one = score_file(answers, task_file, out=tmp_path / "one.jsonl")
    assert started == []
    many = score_file(answers, task_file, out=tmp_path / "many.jsonl", workers=8, chunk=10)
    assert len(started) == 3
    assert (tmp_path / "many.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert {k: v for k, v in many.items() if k != "out"} == {k: v for k, v in one.items() if k != "out"}
    started.clear()
    small = _answers(tmp_path / "small.jsonl", 5)
    score_file(small, task_file, out=tmp_path / "small_8.jsonl", workers=8)
    assert started == []
    score_file(small, task_file, out=tmp_path / "small_1.jsonl")
    assert (tmp_path / "small_8.jsonl").read_bytes() == (tmp_path / "small_1.jsonl").read_bytes()


def test_the_command_starts_no_more_workers_than_pieces(tmp_path, task_file, started, capsys):
    answers = _answers(tmp_path / "a.jsonl", 12)
    assert main(["score", str(answers), str(task_file), "--out", str(tmp_path / "s.jsonl"), "--workers", "64",
                 "--chunk", "5", "--json", "--no-progress"]) == 0
    assert len(started) == 3  # pieces of 5, 5 and 2 lines
    assert json.loads(capsys.readouterr().out)["counts"]["scored"] == 12
