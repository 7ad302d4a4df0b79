"""`spatialact score` under hostile options and inputs: every bound is tested by counting what the run
did (processes started, notes kept, bytes stored), never by a timer."""

from __future__ import annotations

import json
import multiprocessing.process
import re
from pathlib import Path

import pytest

from _fabricate import make_task
from spatialact import vocab
from spatialact.cli.main import main
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


# ----- workers and bootstrap resamples --------------------------------------------------------------------------
def test_the_bounds_are_declared_once():
    """MAX_WORKERS and MAX_N_BOOT are assigned in one module of src (spatialact.vocab) and imported by the rest: the
    command line, score_file and eval cannot drift apart."""
    src = Path(__file__).parents[2] / "src" / "spatialact"
    for name in ("MAX_WORKERS", "MAX_N_BOOT"):
        assign = re.compile(rf"^\s*{name}\s*(:[^=]*)?=", re.M)
        homes = [str(p.relative_to(src)) for p in sorted(src.rglob("*.py")) if assign.search(p.read_text("utf-8"))]
        assert homes == ["vocab.py"], (name, homes)
    assert (vocab.MAX_WORKERS, vocab.MAX_N_BOOT) == (64, 100_000)


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


# ----- one limit per input line ---------------------------------------------------------------------------------
class _Endless:
    """A binary stream of ``byte`` without end that counts the bytes it gave (a pipe from /dev/zero, or worse)."""

    def __init__(self, byte: bytes = b"\0"):
        self.byte, self.given = byte, 0

    def read(self, n: int = -1) -> bytes:
        assert n > 0, "an endless stream read whole"
        self.given += n
        return self.byte * n


def _split(data: bytes, limit: int) -> list:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return [("long", len(x)) if len(x) > limit else x for x in lines]


def test_lines_are_read_as_split_and_longer_ones_are_marked(monkeypatch):
    """iter_lines against bytes.split on random files read in random small pieces (lines across pieces, long lines
    of every length around the limit); read_bounded returns the file or names the first long line."""
    import io
    import random

    from spatialact.jsonline import LineTooLong, LongLine, iter_lines, read_bounded

    rng = random.Random(0)

    class Trickle(io.RawIOBase):
        def __init__(self, data):
            self.data, self.pos = data, 0

        def read(self, n=-1):
            r = self.data[self.pos:self.pos + min(n, rng.randint(1, 5))]
            self.pos += len(r)
            return r

    for _ in range(2000):
        parts = [bytes(rng.choice(b"ab \r{}") for _ in range(rng.choice([0, 1, 3, 6, 7, 8, 15])))
                 for _ in range(rng.randint(0, 10))]
        data = b"\n".join(parts) + (b"\n" if rng.random() < 0.5 else b"")
        limit = rng.randint(1, 9)
        got = [("long", x.nbytes) if type(x) is LongLine else x for x in iter_lines(Trickle(data), limit)]
        want = _split(data, limit)
        assert got == want, (data, limit)
        long = [k for k, x in enumerate(want) if type(x) is tuple]
        if long:
            with pytest.raises(LineTooLong) as e:
                read_bounded(Trickle(data), limit)
            assert e.value.lineno == long[0] + 1
        else:
            assert read_bounded(Trickle(data), limit) == data


def test_an_endless_line_is_read_in_bounded_memory():
    """/dev/zero or worse: read_bounded stops within the limit plus one block; iter_lines skips at most
    MAX_SKIP_BYTES of one line (never holding more than a block of it) and then refuses the stream."""
    from spatialact.jsonline import MAX_LINE_BYTES, MAX_SKIP_BYTES, LineTooLong, iter_lines, read_bounded

    assert (MAX_LINE_BYTES, MAX_SKIP_BYTES) == (16 << 20, 1 << 30)
    s = _Endless()
    with pytest.raises(LineTooLong, match="line 1: longer than 16 MiB"):
        read_bounded(s)
    assert s.given <= 2 * MAX_LINE_BYTES
    s = _Endless(b"x")
    lines = iter_lines(s, limit=1000)
    with pytest.raises(LineTooLong, match="line 1: no line end within 1024 MiB"):
        next(lines)
    assert MAX_SKIP_BYTES < s.given <= MAX_SKIP_BYTES + (2 << 20)


def test_a_long_answer_line_is_an_invalid_line_and_the_others_are_scored(tmp_path, task_file):
    from spatialact.jsonline import MAX_LINE_BYTES

    answers = tmp_path / "a.jsonl"
    ok = json.dumps({"task_id": "t0", "response": '{"actions": ["W"], "step_nums": [1]}'}).encode()
    long = json.dumps({"task_id": "t1", "response": "W" * MAX_LINE_BYTES}).encode()
    answers.write_bytes(ok + b"\n" + long + b"\n" + ok + b"\n")
    s = score_file(answers, task_file, out=tmp_path / "s.jsonl")
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [(r["line"], r["reason"]) for r in lines] == [(1, None), (2, "invalid_line"), (3, None)]
    assert lines[1]["error"] == (f"line of {len(long):,} bytes, longer than the limit (16,777,216 bytes, "
                                 "MAX_LINE_BYTES); not read")
    assert s["counts"]["invalid_line"] == 1 and s["counts"]["scored"] == 3
    assert (tmp_path / "s.jsonl").stat().st_size < 4000  # nothing of the long line is stored


def test_score_dev_zero_is_refused_in_one_line(tmp_path, task_file, capsys):
    """`score /dev/zero TASKS` ended in MemoryError; `score ANSWERS /dev/zero` hashed /dev/zero for ever. Both are
    now refused unread, as every input that is no regular file (a character device here); an endless stream on
    standard input (`score - TASKS < /dev/zero`) is read in bounded memory and refused after MAX_SKIP_BYTES."""
    import subprocess
    import sys

    answers = _answers(tmp_path / "a.jsonl", 3)
    out = tmp_path / "s.jsonl"
    assert main(["score", "/dev/zero", str(task_file), "--out", str(out)]) == 2
    assert "/dev/zero: is a character device, not a regular file (an answers file" in _one_line(capsys)
    assert not out.exists()
    assert main(["score", str(answers), "/dev/zero", "--out", str(out)]) == 2
    assert "/dev/zero: is a character device, not a regular file (a task file" in _one_line(capsys)
    assert not out.exists()
    with open("/dev/zero", "rb") as zeros:
        r = subprocess.run([sys.executable, "-m", "spatialact.cli.main", "score", "-", str(task_file), "--out",
                            str(out), "--no-progress"], stdin=zeros, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "answers file -: line 1: no line end within 1024 MiB: not a JSON Lines file" in r.stderr
    assert not out.exists()


def test_a_task_file_with_a_long_line_is_refused_naming_file_and_line(tmp_path, task_file, capsys):
    from spatialact.tasks import TaskFileError, load_tasks

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(task_file.read_bytes() + b'{"id": "' + b"x" * (17 << 20) + b'"}\n')
    with pytest.raises(TaskFileError, match=r"bad.jsonl:5: line longer than 16 MiB"):
        load_tasks(bad, cache=False)
    assert main(["score", str(_answers(tmp_path / "a.jsonl", 3)), str(bad), "--out", str(tmp_path / "s")]) == 2
    assert "bad.jsonl:5: line longer than 16 MiB" in _one_line(capsys)


# ----- repair notes ---------------------------------------------------------------------------------------------
WORST = "[" + ",".join(['["W"]'] * 166_666) + "]"  # 1 MB: 166 666 one-name steps, one repair each


def test_the_worst_answer_keeps_twenty_notes_and_counts_them_all():
    from spatialact.action_space import parse_response
    from spatialact.action_space.parsing import MAX_REPAIR_NOTES

    assert len(WORST) == 999_997 and MAX_REPAIR_NOTES == 20
    r = parse_response(WORST)
    assert r.ok and len(r.sequence.steps) == 166_666 and r.n_repairs == 166_666
    assert r.repairs == (*(f"steps[{i}].actions[0]: missing step_num becomes 1" for i in range(20)),
                         "$: 166,646 more repairs not listed (166,666 in all)")
    assert r.to_dict()["n_repairs"] == 166_666
    few = parse_response("[" + ",".join(['["W"]'] * 20) + "]")  # at the cap: every note, no count note
    assert few.n_repairs == 20 and len(few.repairs) == 20


def test_the_worst_answer_writes_a_short_score_line(tmp_path, task_file):
    """It wrote a 9.2 MB line of 166 666 repair notes; now 21 notes and the count."""
    from spatialact.scorers import score_answer
    from spatialact.tasks import load_tasks

    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"task_id": "t0", "response": WORST}) + "\n", encoding="utf-8")
    score_file(answers, task_file, out=tmp_path / "s.jsonl")
    data = (tmp_path / "s.jsonl").read_bytes()
    assert len(data) < 3000
    rec = json.loads(data)
    assert rec["n_repairs"] == 166_666 and len(rec["repairs"]) == 21 and rec["ok"]
    ref = score_answer(WORST, load_tasks(task_file)[0])
    assert ref["n_repairs"] == 166_666 and ref["repairs"] == rec["repairs"] and ref["score"] == rec["score"]


# ----- a ground truth that does not lead to its goal ------------------------------------------------------------
def _reference_gt_problem(task):
    """evaluation.episode.gt_problem as it was (one task, Task.gt_poses): the reference of the batched check."""
    import math

    import numpy as np

    from spatialact.geometry import rotation_error

    end = task.gt_poses()[-1]
    d = float(np.linalg.norm(end[:3, 3] - np.asarray(task.goal_pose)[:3, 3]))
    r = float(rotation_error(end, np.asarray(task.goal_pose)))
    pos, rot = float(task.success.get("position", np.inf)), float(task.success.get("rotation", np.inf))
    if d <= pos + 1e-9 and r <= rot + 1e-9:
        return None
    return (f"field 'gt': replayed from start_pose it ends {d:.3g} m / {math.degrees(r):.3g}° from goal_pose, "
            f"beyond the success thresholds ({pos:g} m / {math.degrees(rot):.3g}°): the ground truth does not lead "
            f"to the goal")


def _random_tasks(n: int, seed: int = 0):
    """Tasks of every kind, counts and vector steps, random starts, goals moved by random amounts around the
    success thresholds (about half of them miss)."""
    from dataclasses import replace

    import numpy as np
    from scipy.spatial.transform import Rotation

    from spatialact import geometry
    from spatialact.action_space import ActionSequence, Step, StepSizes

    rng = np.random.default_rng(seed)
    tasks = []
    for i in range(n):
        kind = ("nav", "manip", "hand")[i % 3]
        sizes = StepSizes.for_kind(kind)
        steps = []
        for _ in range(int(rng.integers(1, 9))):
            if rng.random() < 0.2:
                steps.append(Step.from_motion(rng.normal(scale=[0.05] * 3 + [0.1] * 3)))
            else:
                steps.append(Step.from_signed(rng.integers(-4, 5, 6) * (rng.random(6) < 0.5)))
        gt = ActionSequence(tuple(steps), sizes)
        start = geometry.make_pose(geometry.ptr_to_matrix(*rng.uniform(-3, 3, 3)), rng.normal(size=3))
        t = make_task(f"r{i}", kind=kind, start=start)
        t = replace(t, gt=gt, goal_pose=gt.to_poses(start)[-1])
        if rng.random() < 0.6:  # moved: by up to twice the position threshold, or turned by up to twice the angle
            g = t.goal_pose.copy()
            if rng.random() < 0.5:
                g[:3, 3] += rng.normal(size=3) / np.sqrt(3) * rng.uniform(0, 2) * t.success["position"]
            else:
                axis = rng.normal(size=3)
                turn = axis / np.linalg.norm(axis) * rng.uniform(0, 2) * t.success["rotation"]
                g[:3, :3] = g[:3, :3] @ Rotation.from_rotvec(turn).as_matrix()
            t = replace(t, goal_pose=g)
        tasks.append(t)
    return tasks


def test_the_batched_check_is_evaluations_check():
    """One vectorised replay of 300 ground truths decides as the per-task reference (Task.gt_poses) did, with the
    same message; evaluation's gt_problem is that check."""
    import numpy as np

    from spatialact.evaluation.episode import gt_problem
    from spatialact.scorers.ground_truth import ground_truth_misses, ground_truth_problem, success_thresholds

    tasks = _random_tasks(300)
    ref = [_reference_gt_problem(t) for t in tasks]
    assert 60 < sum(r is not None for r in ref) < 240
    th = np.array([success_thresholds(t.success) for t in tasks])
    miss, d, r = ground_truth_misses(np.array([t.start_pose for t in tasks]), np.array([t.goal_pose for t in tasks]),
                                     np.concatenate([t.gt.as_motions() for t in tasks]),
                                     [len(t.gt.steps) for t in tasks], th[:, 0], th[:, 1])
    assert miss.tolist() == [x is not None for x in ref]
    assert [ground_truth_problem(t) for t in tasks] == ref == [gt_problem(t) for t in tasks]


def _moved_goal(task, metres: float):
    from dataclasses import replace

    g = task.goal_pose.copy()
    g[:3, 3] += [metres, 0.0, 0.0]
    return replace(task, goal_pose=g)


def test_answers_to_a_task_whose_ground_truth_misses_its_goal_are_not_scored(tmp_path):
    """A goal moved 50 m scored 1.0 offline while eval refused the task: now score null, reason gt_problem,
    counted, out of every mean, never missing (not even with --missing-as-zero)."""
    from spatialact.scorers import score_answer

    good = [make_task(f"ok{i}", signed=((0, 0, 3, 0, 0, 0),)) for i in range(3)]
    bad = _moved_goal(make_task("moved", signed=((0, 0, 3, 0, 0, 0),)), 50.0)
    tf = tmp_path / "t.jsonl"
    save_tasks([*good, bad], tf)
    answer = '{"actions": ["W"], "step_nums": [3]}'
    assert score_answer(answer, bad)["score"] == 1.0  # what the per-record scorer says: the sequences agree
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"task_id": t, "response": answer}) + "\n"
                               for t in ("ok0", "moved", "ok1", "moved")), encoding="utf-8")
    s = score_file(answers, tf, out=tmp_path / "s.jsonl", missing_as_zero=True)
    lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [(r["task_id"], r["score"], r["reason"]) for r in lines] == [
        ("ok0", 1.0, None), ("moved", None, "gt_problem"), ("ok1", 1.0, None), ("moved", None, "gt_problem")]
    assert lines[1]["error"].startswith("field 'gt': replayed from start_pose it ends 50 m / 0° from goal_pose")
    assert "total" not in lines[1] and lines[1]["kind"] == "nav"
    c = s["counts"]
    assert (c["gt_problem"], c["gt_problem_tasks"], c["missing"], c["scored"]) == (2, 1, 1, 4)
    assert s["gt_problem_task_ids"] == ["moved"] and s["missing_task_ids"] == ["ok2"]
    assert s["overall"]["n"] == 3 and s["overall"]["mean"] == pytest.approx(2 / 3)  # ok2 missing, as 0


def test_a_task_file_with_no_valid_task_is_refused(tmp_path, capsys):
    tf = tmp_path / "t.jsonl"
    save_tasks([_moved_goal(make_task(f"m{i}"), 1.0 + i) for i in range(2)], tf)
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"task_id": "m0", "response": "{}"}) + "\n", encoding="utf-8")
    out = tmp_path / "s.jsonl"
    assert main(["score", str(answers), str(tf), "--out", str(out)]) == 2
    msg = _one_line(capsys)
    assert f"task file {tf}: no valid task: the ground truth of every task (2) does not lead to its goal; the " \
           "first, task 'm0': field 'gt': replayed from start_pose it ends 1 m" in msg
    assert not out.exists()


def test_the_check_is_in_the_cached_table_too(tmp_path, monkeypatch):
    """The warm path (the scoring table read from the cache) marks the same tasks."""
    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "cache"))
    tf = tmp_path / "t.jsonl"
    save_tasks([make_task("ok"), _moved_goal(make_task("moved"), 3.0)], tf)
    answers = tmp_path / "a.jsonl"
    answers.write_text("".join(json.dumps({"task_id": t, "response": "{}"}) + "\n" for t in ("ok", "moved")),
                       encoding="utf-8")
    cold = score_file(answers, tf, out=tmp_path / "cold.jsonl")
    assert any((tmp_path / "cache").rglob("*.pickle"))
    warm = score_file(answers, tf, out=tmp_path / "warm.jsonl")
    assert (tmp_path / "warm.jsonl").read_bytes() == (tmp_path / "cold.jsonl").read_bytes()
    assert warm["counts"]["gt_problem"] == cold["counts"]["gt_problem"] == 1
