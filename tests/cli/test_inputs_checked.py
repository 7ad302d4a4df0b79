"""Hostile inputs (docs/reliability.md, "Hostile inputs: nodes, nesting, the cache"): what sits where a file is read.

* **Nodes**: a FIFO (opening it waits for a writer for ever), a character device (``/dev/zero`` never ends: a node
  made here with ``mknod`` as root, and a link to ``/dev/zero``), a folder — as ANSWERS or TASKS of ``score``,
  ``eval --tasks``, QUESTIONS and ``--answers`` of ``questions score``, the file ``parse`` reads, and the files of a
  recording (``meta.json``, ``poses.npz``, ``rgb.mp4``, a depth frame): refused in one line naming the file and
  what it is (exit 2), never opened; the node is left as it was.
* **Nesting**: a task file nested 100,000 deep ended ``score`` in a RecursionError traceback; every JSON reader now
  measures a line against one limit (``jsonline.MAX_JSON_DEPTH``) before decoding it.
* **The cache**: a FIFO at a response-cache entry hung ``eval``, a link to ``/dev/zero`` read until memory ran out;
  such an entry is now a miss, said once per run.
* **Messages**: a float where a whole number belongs, a ``poses.npz`` that is a device, a FIFO ``.lock``, a numeric
  question's answer written as text, and the partial folder a killed ``game record`` left behind.

Each case that could block runs under a deadline: :func:`_within` runs the call in a thread and, past it, opens
the FIFOs for writing and closing to release a reader that waits on them, then fails the test.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from _fabricate import image_tasks, make_task
from spatialact.cli.main import main
from spatialact.tasks import save_tasks

SRC = str(Path(__file__).parents[2] / "src")
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
DEADLINE = 60.0

#: What each kind of node is called in the one line that refuses it.
SAID = {"fifo": "is a FIFO (named pipe), not a regular file", "device": "is a character device, not a regular file",
        "zero_link": "is a character device, not a regular file", "folder": "is a folder"}
NODES = ["fifo", "zero_link", "folder", pytest.param("device", marks=pytest.mark.skipif(
    not AS_ROOT, reason="making a device node needs root"))]


def make_node(path: Path, kind: str) -> Path:
    """A FIFO, a character device like /dev/zero (mknod 1,5, as root), a link to /dev/zero, or a folder at
    ``path``."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))
    elif kind == "zero_link":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return path


def _node_intact(path: Path, kind: str) -> bool:
    st = os.lstat(path)
    return {"fifo": stat.S_ISFIFO, "device": stat.S_ISCHR, "zero_link": stat.S_ISLNK,
            "folder": stat.S_ISDIR}[kind](st.st_mode)


def _release(fifos) -> None:
    """Give a reader blocked on opening each FIFO a writer that closes at once (it reads the end of the file)."""
    for f in fifos:
        try:
            os.close(os.open(f, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def _within(fn, *args, fifos=(), seconds: float = DEADLINE):
    """``fn(*args)``'s result, the call made in a thread: past ``seconds`` the FIFOs are released and the test
    fails (the call blocked). Exceptions pass through."""
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        _release(fifos)
        t.join(10)
        pytest.fail(f"{getattr(fn, '__name__', fn)}{args}: still running after {seconds:g} s (blocked on a FIFO?)")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _cli(argv, capsys, fifos=()) -> tuple[int, str]:
    """`spatialact ARGV` in this process under the deadline: (exit status, its stderr)."""
    def call():
        try:
            return main(list(map(str, argv)))
        except SystemExit as e:
            return e.code

    rc = _within(call, fifos=fifos)
    return rc, capsys.readouterr().err


def _one_line(err: str, *words) -> str:
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), err
    return lines[0]


@pytest.fixture
def task_file(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    return save_tasks([make_task(f"t{i}", signed=((0, 0, i + 1, 0, 0, 0),)) for i in range(3)], d / "tasks.jsonl")


def _answers(path: Path, n: int = 3) -> Path:
    path.write_text("".join(json.dumps({"task_id": f"t{i}", "response": '{"actions": ["W"], "step_nums": [1]}'})
                            + "\n" for i in range(n)))
    return path


# ----- nodes: refused unopened, in one line ------------------------------------------------------------------------
@pytest.mark.parametrize("kind", NODES)
def test_score_refuses_answers_and_tasks_that_are_no_regular_file(tmp_path, task_file, capsys, kind):
    node = make_node(tmp_path / "node.jsonl", kind)
    out = tmp_path / "out" / "s.jsonl"
    answers = _answers(tmp_path / "a.jsonl")
    for argv, what in ((["score", node, task_file, "--out", out], "answers file"),
                       (["score", answers, node, "--out", out], "task file")):
        rc, err = _cli(argv, capsys, fifos=[node] if kind == "fifo" else ())
        line = _one_line(err, str(node), SAID[kind])
        assert rc == 2 and (what in line or kind == "folder")
        assert not out.exists() and not out.parent.exists()
    assert _node_intact(node, kind)
    from spatialact.scorers.offline import score_file

    with pytest.raises((ValueError, FileNotFoundError), match=re.escape(SAID[kind].split(",")[0])):
        _within(score_file, node, task_file, fifos=[node] if kind == "fifo" else ())


@pytest.mark.parametrize("kind", ["fifo", "zero_link"])
def test_score_refuses_a_hierarchy_file_that_is_no_regular_file_or_nests_too_deep(tmp_path, task_file, capsys, kind):
    node = make_node(tmp_path / "tree.json", kind)
    answers = _answers(tmp_path / "a.jsonl")
    rc, err = _cli(["score", answers, task_file, "--tree", node, "--out", tmp_path / "s.jsonl"], capsys,
                   fifos=[node] if kind == "fifo" else ())
    assert rc == 2
    _one_line(err, str(node), SAID[kind], "hierarchy file")
    deep = tmp_path / "deep.json"
    deep.write_text('{"name": "r", "children": ' + "[" * 100_000 + "]" * 100_000 + "}")
    rc, err = _cli(["score", answers, task_file, "--tree", deep, "--out", tmp_path / "s.jsonl"], capsys)
    assert rc == 2
    _one_line(err, f"--tree {deep}: nested deeper than 256 levels")
    assert not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize("kind", NODES)
def test_eval_refuses_a_task_file_that_is_no_regular_file(tmp_path, capsys, kind):
    node = make_node(tmp_path / "tasks.jsonl", kind)
    rc, err = _cli(["eval", "--tasks", node, "--agent", "stay", "--env", "none", "--out", tmp_path / "run",
                    "--no-progress"], capsys, fifos=[node] if kind == "fifo" else ())
    assert rc == 2
    _one_line(err, str(node), SAID[kind])
    assert _node_intact(node, kind) and not (tmp_path / "run" / "results.jsonl").exists()


@pytest.mark.parametrize("kind", NODES)
def test_questions_score_refuses_questions_and_answers_that_are_no_regular_file(tmp_path, capsys, kind):
    """Both refused before anything is read: the answers file is looked at before the question file is loaded."""
    node = make_node(tmp_path / "node.jsonl", kind)
    some = tmp_path / "q.jsonl"
    some.write_text('{"id": "q"}\n')
    fifos = [node] if kind == "fifo" else ()
    for argv, what in ((["questions", "score", node, "--answers", some], "question file"),
                       (["questions", "score", some, "--answers", node], "answers file")):
        rc, err = _cli([*argv, "--out", tmp_path / "s.jsonl"], capsys, fifos=fifos)
        assert rc == 2
        line = _one_line(err, str(node), SAID[kind])
        assert what in line or kind == "folder"
    assert _node_intact(node, kind) and not (tmp_path / "s.jsonl").exists()


@pytest.mark.parametrize("kind", ["fifo", "zero_link", pytest.param("device", marks=pytest.mark.skipif(
    not AS_ROOT, reason="making a device node needs root"))])
def test_parse_refuses_a_file_that_is_no_regular_file(tmp_path, capsys, kind):
    node = make_node(tmp_path / "answer.txt", kind)
    rc, err = _cli(["parse", node], capsys, fifos=[node] if kind == "fifo" else ())
    assert rc == 2
    _one_line(err, str(node), SAID[kind], "answer file")
    assert _node_intact(node, kind)


# ----- a recording (a game trajectory folder, written by the real writer) -----------------------------------------
N_FRAMES = 4


def write_recording(out: Path, frames: int = N_FRAMES) -> Path:
    """A small game trajectory folder written by GameTrajectoryWriter: 16x12 frames, a camera walking along +x."""
    pytest.importorskip("av")
    from _fabricate import look_pose
    from spatialact.trajectories.game import GameTrajectoryWriter

    K = np.array([[8.0, 0, 7.5], [0, 9.6, 5.5], [0, 0, 1]])
    depth = {"scale_m": 0.22, "offset_m": 0.11, "quantisation_m": 0.22, "far_level": 255}
    meta = {"wad": {"name": "test.wad", "sha256": "0" * 64}, "map": "MAP01",
            "engine": {"name": "test", "version": "0"}, "units": {"map_unit_m": 1 / 32}}
    rng = np.random.default_rng(0)
    with GameTrajectoryWriter(out, fps=35.0, width=16, height=12, intrinsics=K, depth=depth, meta=meta) as w:
        for i in range(frames):
            pose = look_pose([0.1 * i, 0.0, 1.5])
            w.add(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8), rng.integers(0, 255, (12, 16), dtype=np.uint8),
                  pose, tic=i, action=(1, 0, 0, 0, 0))
        w.close()
    return out


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    return write_recording(tmp_path_factory.mktemp("rec") / "walk")


def _copy(recording: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(recording, dst)
    return dst


def test_the_small_recording_reads_back(recording):
    from spatialact.trajectories import load_trajectory
    from spatialact.trajectories.game import read_depth

    traj = load_trajectory(recording)
    assert len(traj) == N_FRAMES and traj.meta["source"] == "game"
    assert len(read_depth(traj, range(N_FRAMES))) == N_FRAMES
    assert sorted(os.listdir(recording)) == ["depth", "meta.json", "poses.npz", "rgb.mp4"]  # no .lock left in it


@pytest.mark.parametrize("kind", ["fifo", "zero_link", "folder"])
@pytest.mark.parametrize("name,field", [("meta.json", "(file)"), ("poses.npz", "(file)"), ("rgb.mp4", "video"),
                                        ("depth/000002.png", "depth")])
def test_a_recording_file_that_is_no_regular_file_is_refused_saying_what_it_is(recording, tmp_path, kind, name,
                                                                                 field):
    """Before, a poses.npz link to /dev/zero was called "missing", and a FIFO depth frame blocked the reader."""
    from spatialact.trajectories import TrajectoryError, load_trajectory

    rec = _copy(recording, tmp_path / "rec")
    (rec / name).unlink()
    node = make_node(rec / name, kind)
    with pytest.raises(TrajectoryError) as e:
        _within(load_trajectory, rec, fifos=[node] if kind == "fifo" else ())
    msg = str(e.value)
    assert "\n" not in msg and f"field '{field}'" in msg and SAID[kind].split(",")[0] in msg, msg
    assert str(node) in msg and "missing" not in msg, msg
    if name.startswith("depth"):
        assert "frame 2" in msg
    assert _node_intact(node, kind)


def test_a_depth_frame_made_a_fifo_after_loading_is_refused_by_read_depth(recording, tmp_path, capsys):
    from spatialact.trajectories import TrajectoryError, load_trajectory
    from spatialact.trajectories.game import read_depth

    rec = _copy(recording, tmp_path / "rec")
    traj = load_trajectory(rec)
    (rec / "depth" / "000001.png").unlink()
    fifo = make_node(rec / "depth" / "000001.png", "fifo")
    with pytest.raises(TrajectoryError, match=r"field 'depth', frame 1: is a FIFO \(named pipe\), not a regular file"):
        _within(read_depth, traj, [0, 1], fifos=[fifo])
    rc, err = _cli(["extract", rec / "meta.json", "--json"], capsys, fifos=[fifo])  # the CLI says it in one line
    assert rc == 2
    _one_line(err, "000001.png", "is a FIFO")


def test_a_whole_number_written_as_a_float_is_said_as_written(recording, tmp_path):
    """`frames: 351.0` was refused as "got the number 351": the message now shows what the file holds."""
    from spatialact.trajectories import TrajectoryError, load_trajectory

    rec = _copy(recording, tmp_path / "rec")
    meta = json.loads((rec / "meta.json").read_text())
    meta["frames"] = float(N_FRAMES)
    (rec / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(TrajectoryError) as e:
        load_trajectory(rec)
    assert str(e.value).endswith(f"field 'frames': expected a whole number from 1 to 100,000,000, got the number "
                                 f"{N_FRAMES}.0"), str(e.value)


def test_a_recordings_meta_json_nested_100000_deep_is_refused_in_one_line(recording, tmp_path):
    from spatialact.trajectories import TrajectoryError, load_trajectory

    rec = _copy(recording, tmp_path / "rec")
    (rec / "meta.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TrajectoryError, match=r"meta\.json: field '\(file\)': nested deeper than 256 levels"):
        load_trajectory(rec)


# ----- the partial folder of a killed recording ------------------------------------------------------------------
def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_the_next_writer_removes_partial_folders_of_dead_writers_only(tmp_path):
    """A killed writer leaves ``.<name>.partial-<pid>-<random>``: the next writer in the folder removes it when the
    process is gone and no one holds its lock; a live writer's (its process alive, or its lock held), a link named
    like one and other folders stay."""
    pytest.importorskip("av")
    import fcntl

    from spatialact.trajectories.game import GameTrajectoryWriter

    dead = _dead_pid()
    stale = tmp_path / f".walk.partial-{dead}-abc123"
    (stale / "depth").mkdir(parents=True)
    (stale / "depth" / "000000.png").write_bytes(b"x")
    (stale / ".lock").write_bytes(b"")
    old_style = tmp_path / f".other.partial-{dead}-zz9"  # another recording's, no lock file: its process is gone
    old_style.mkdir()
    live_pid = tmp_path / f".walk.partial-{os.getppid()}-def456"  # a live process
    live_pid.mkdir()
    held = tmp_path / f".walk.partial-{dead}-held1"  # the process id is gone (another machine?) but the lock is held
    held.mkdir()
    (held / ".lock").write_bytes(b"")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1]); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(held / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        target = tmp_path / "elsewhere"
        target.mkdir()
        link = tmp_path / f".walk.partial-{dead}-link1"
        link.symlink_to(target)
        keep = tmp_path / "walk-notes"
        keep.mkdir()
        before = set(tmp_path.iterdir())
        w = GameTrajectoryWriter(tmp_path / "walk", fps=35.0, width=16, height=12, intrinsics=np.eye(3),
                                 depth={}, meta={})
        try:
            (mine,) = set(tmp_path.iterdir()) - before
            assert mine.name.startswith(f".walk.partial-{os.getpid()}-")
            with open(mine / ".lock") as f:  # this writer holds its own lock
                with pytest.raises(BlockingIOError):
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            left = sorted(p.name for p in tmp_path.iterdir())
            assert left == sorted([live_pid.name, held.name, link.name, "elsewhere", "walk-notes", mine.name]), left
        finally:
            w.abort()
        assert not mine.exists()
    finally:
        holder.kill()
        holder.wait()
    from spatialact.trajectories.game import remove_stale_partials

    assert remove_stale_partials(tmp_path) == [held]  # its holder is gone now
    assert link.is_symlink() and target.is_dir() and live_pid.is_dir()


def _partials(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if ".partial-" in p.name)


def test_a_killed_game_record_leaves_a_partial_folder_the_next_one_removes(tmp_path):
    """The real command: `game record` killed with SIGKILL mid-recording leaves its hidden partial folder; the next
    `game record` into the same folder removes it and writes its own trajectory."""
    pytest.importorskip("vizdoom")
    env = dict(os.environ, PYTHONPATH=SRC)
    def cmd(seconds, out):
        return [sys.executable, "-m", "spatialact.cli.main", "game", "record", "--seconds", seconds, "--resolution",
                "160x120", "--no-progress", "--out", str(tmp_path / out)]

    proc = subprocess.Popen(cmd("60", "walk"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until frames are being written
            parts = _partials(tmp_path)
            if parts and (parts[0] / "depth").is_dir() and len(os.listdir(parts[0] / "depth")) >= 5:
                break
            assert proc.poll() is None, "game record ended before it was killed"
            time.sleep(0.1)
        else:
            pytest.fail("game record wrote no frame within 120 s")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the recorder and its game processes
        proc.wait()
    (left,) = _partials(tmp_path)
    assert left.name.startswith(f".walk.partial-{proc.pid}-") and not (tmp_path / "walk").exists()
    r = subprocess.run(cmd("0.2", "walk2"), env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _partials(tmp_path) == [] and (tmp_path / "walk2" / "meta.json").is_file()


# ----- a FIFO .lock in a run directory ------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", NODES)
def test_a_run_lock_that_is_no_regular_file_is_refused_saying_what_it_is(tmp_path, capsys, kind):
    """A FIFO .lock was refused as "not seekable" (a traceback's words); now one line saying what it is."""
    tasks = image_tasks(tmp_path / "tasks", 1)
    tf = save_tasks(tasks, tmp_path / "tasks" / "tasks.jsonl")
    run = tmp_path / "run"
    run.mkdir()
    node = make_node(run / ".lock", kind)
    rc, err = _cli(["eval", "--tasks", tf, "--agent", "stay", "--env", "none", "--out", run, "--no-progress"], capsys,
                   fifos=[node] if kind == "fifo" else ())
    assert rc == 2
    _one_line(err, str(node), SAID[kind].split(",")[0], "a run directory's .lock is a regular file")
    assert _node_intact(node, kind) and not (run / "results.jsonl").exists()
    if kind == "fifo":  # removed, the run goes ahead and the lock is a regular file again
        node.unlink()
        rc, err = _cli(["eval", "--tasks", tf, "--agent", "stay", "--env", "none", "--out", run, "--no-progress"],
                       capsys)
        assert rc == 0, err
        assert stat.S_ISREG(os.lstat(node).st_mode) and (run / "results.jsonl").is_file()


# ----- one nesting limit for every JSON reader ----------------------------------------------------------------------
def _depth(v) -> int:
    """The nesting depth of a decoded JSON value (the reference json_depth is checked against)."""
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    return 0


def _random_value(rng, depth: int):
    """A random JSON value nesting at most ``depth`` levels, its strings full of brackets, quotes and backslashes."""
    pick = rng.integers(0 if depth > 0 else 2, 5)
    if pick == 0:
        return [_random_value(rng, depth - 1) for _ in range(rng.integers(0, 4))]
    if pick == 1:
        return {"".join(rng.choice(list('ab[{"\\]}'), rng.integers(0, 5))): _random_value(rng, depth - 1)
                for _ in range(rng.integers(0, 4))}
    if pick == 2:
        return "".join(rng.choice(list('x[]{}"\\\\/\n\u00e9\u2603'), rng.integers(0, 12)))
    return [1.5, None, True, -3][pick - 3] if pick == 3 else int(rng.integers(-9, 9))


def test_json_depth_is_the_depth_a_decoder_sees():
    from spatialact.jsonline import json_depth

    by_hand = [("1", 0), ('"[[["', 0), ("[]", 1), ("{}", 1), ('[[], {"a": [1, [2]]}]', 4), ('["\\"[[["]', 1),
               ('["\\\\", [[]]]', 3), ('{"k\\\\\\"[": [[{}]]}', 4), ('"\\\\\\\\"', 0), ("[" * 300 + "]" * 300, 300),
               ('[{"a": "]]]]"}, [[["}"]]]]', 4), ("", 0)]
    for text, want in by_hand:
        assert json_depth(text) == want, text
        assert json_depth(text.encode()) == want, text
    rng = np.random.default_rng(7)
    for _ in range(500):
        v = _random_value(rng, int(rng.integers(0, 8)))
        for text in (json.dumps(v), json.dumps(v, ensure_ascii=False, indent=1)):
            assert json_depth(text) == _depth(json.loads(text)), text


def test_check_depth_refuses_just_past_the_limit_in_linear_time():
    """The limit itself passes, one more level is refused; a 100,000-deep line and a line of a million escaped
    quotes and brackets inside one string are measured (a quadratic measure would not finish)."""
    from spatialact.jsonline import MAX_JSON_DEPTH, TooDeep, check_depth, fast_loads, json_depth

    assert MAX_JSON_DEPTH == 256
    check_depth("[" * 256 + "]" * 256)
    with pytest.raises(TooDeep, match="nested deeper than 256 levels"):
        check_depth(b"[" * 257 + b"]" * 257)
    check_depth('["' + "[" * 100_000 + '"]')  # brackets inside a string do not nest
    loads = fast_loads(json.loads)
    assert loads(b'{"a": [' * 128 + b"1" + b"]}" * 128) is not None  # 256 levels: decoded
    with pytest.raises(TooDeep):
        loads(b"[" * 100_000 + b"]" * 100_000)
    assert json_depth(b'{"a": "' + b'\\"[{' * 1_000_000 + b'"}') == 1
    assert json_depth(b"[" * 1_000_000) == 1_000_000


def _deep_task_file(tmp_path: Path, depth: int, where: str = "line") -> Path:
    """A task file: a valid task on line 1, and on line 2 a task nested ``depth`` deep (a whole line of brackets,
    or a valid task whose ``meta`` nests that deep)."""
    good = save_tasks([make_task("t0")], tmp_path / "one.jsonl").read_text()
    if where == "line":
        second = "[" * depth + "]" * depth
    else:
        rec = json.loads(save_tasks([make_task("t1")], tmp_path / "two.jsonl").read_text())
        rec["meta"] = "DEEP"  # the record (1), its meta (2), lists to ``depth``
        second = json.dumps(rec).replace('"DEEP"', '{"x": ' + "[" * (depth - 2) + "]" * (depth - 2) + "}")
    p = tmp_path / "deep.jsonl"
    p.write_text(good + second + "\n")
    return p


def test_a_task_file_nested_100000_deep_is_refused_naming_file_and_line(tmp_path, capsys):
    """`score` ended in a RecursionError traceback (msgspec), `eval --tasks` already refused; both now say the same
    line, before any decoder recursed."""
    from spatialact.tasks.fields import decode_task_fields

    answers = _answers(tmp_path / "a.jsonl", 1)
    for where in ("line", "meta"):
        deep = _deep_task_file(tmp_path, 100_000, where)
        assert decode_task_fields(deep.read_bytes()) is None  # not decoded: the validator names the line
        want = f"{deep}:2: nested deeper than 256 levels (jsonline.MAX_JSON_DEPTH"
        rc, err = _cli(["score", answers, deep, "--out", tmp_path / "s.jsonl"], capsys)
        assert rc == 2
        _one_line(err, want)
        rc, err = _cli(["eval", "--tasks", deep, "--agent", "stay", "--env", "none", "--out", tmp_path / "run",
                        "--no-progress"], capsys)
        assert rc == 2
        _one_line(err, want)


def test_a_task_nested_to_the_limit_loads_and_one_more_level_is_refused(tmp_path):
    from spatialact.jsonline import json_depth
    from spatialact.tasks.fields import decode_task_fields
    from spatialact.tasks import TaskFileError, load_tasks

    at = _deep_task_file(tmp_path, 256, "meta")
    assert json_depth(at.read_text().splitlines()[1]) == 256
    assert [t.id for t in load_tasks(at, cache=False)] == ["t0", "t1"]
    assert decode_task_fields(at.read_bytes()) is not None
    past = _deep_task_file(tmp_path, 257, "meta")
    with pytest.raises(TaskFileError, match=r"deep\.jsonl:2: nested deeper than 256 levels"):
        load_tasks(past, cache=False)
    assert decode_task_fields(past.read_bytes()) is None


def test_an_answer_nested_too_deep_is_an_invalid_line_and_the_others_are_scored(tmp_path, task_file):
    from spatialact.scorers.offline import score_file

    answers = _answers(tmp_path / "a.jsonl", 2)
    with open(answers, "a") as f:
        f.write('{"task_id": "t2", "response": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    s = score_file(answers, task_file, out=tmp_path / "s.jsonl")
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in rows] == [None, None, "invalid_json"]
    assert "nested deeper than 256 levels" in rows[2]["error"]
    assert s["counts"]["invalid_json"] == 1 and s["counts"]["scored"] == 3


def test_a_question_file_nested_too_deep_is_refused_naming_the_line(tmp_path):
    from spatialact.questions import QuestionFileError, load_question_file

    q = tmp_path / "q.jsonl"
    q.write_text("\n" + '{"id": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    with pytest.raises(QuestionFileError, match=r"q\.jsonl:2: nested deeper than 256 levels"):
        load_question_file(q)


# ----- questions: a numeric answer written as text; an answer nested too deep -----------------------------------
@pytest.fixture(scope="module")
def question_file(tmp_path_factory):
    pytest.importorskip("pybullet")
    from spatialact.questions import build_questions

    d = tmp_path_factory.mktemp("q")
    return build_questions(d / "q.jsonl", n=1, seed=0, size=32, types=["distance"]).path


def _numeric(path: Path) -> tuple[list[dict], int]:
    recs = [json.loads(x) for x in Path(path).read_text().splitlines()]
    return recs, next(i for i, r in enumerate(recs) if r["format"] == "numeric")


def test_a_numeric_answer_written_as_text_is_read_as_the_number_with_a_note(tmp_path, question_file, capsys):
    """`"answer": "79"` was refused as "must have at most 1 characters": a model or a converter writes numbers as
    text, so the loader reads it as the number and says so; text that is no number is refused saying the answer is
    a number."""
    from spatialact.questions import QuestionFileError, load_question_file

    recs, i = _numeric(question_file)
    true = recs[i]["answer"]
    recs[i]["answer"] = repr(true)
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps(r) + "\n" for r in recs))
    qf = load_question_file(q)
    assert qf.questions[i]["answer"] == true
    assert qf.notes == (f"{q}:{i + 1}: question {recs[i]['id']!r}: field 'answer': the text {repr(true)!r} read as "
                        f"the number {true!r}",)
    recs[i]["answer"] = "79"
    q.write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert load_question_file(q).questions[i]["answer"] == 79
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"question_id": recs[i]["id"], "response": "79"}) + "\n"
                       + '{"question_id": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    rc, err = _cli(["questions", "score", q, "--answers", answers, "--out", tmp_path / "s.jsonl", "--json"], capsys)
    assert rc == 0, err
    assert err.count("\n") == 1 and "note:" in err and "the text '79' read as the number 79" in err
    rows = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    assert rows[0]["correct"] is True and rows[0]["answer"] == 79 and rows[1]["reason"] == "invalid_json"
    for bad in ("79 m", "seventy-nine", "1e999", "nan", ""):
        recs[i]["answer"] = bad
        q.write_text("".join(json.dumps(r) + "\n" for r in recs))
        with pytest.raises(QuestionFileError) as e:
            load_question_file(q)
        assert str(e.value) == (f"{q}:{i + 1}: question {recs[i]['id']!r}: field 'answer': a numeric question's "
                                f"answer is a number, got the text {bad!r}")


# ----- the response cache -------------------------------------------------------------------------------------------
def test_read_entry_reads_only_regular_files_of_bounded_size_and_says_so_once(tmp_path, capsys):
    from spatialact import cache

    cache.SAID.clear()
    good = tmp_path / "good.json"
    good.write_bytes(b"x" * 100)
    assert cache.read_entry(good, limit=100) == b"x" * 100
    assert capsys.readouterr().err == ""
    bad = [make_node(tmp_path / k, k) for k in ("fifo", "zero_link", "folder")]
    if AS_ROOT:
        bad.append(make_node(tmp_path / "device", "device"))
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 101)
    for p in [*bad, big]:
        assert _within(cache.read_entry, p, 100, fifos=[p] if p.name == "fifo" else ()) is None
    assert cache.read_entry(tmp_path / "absent.json") is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cache entry" in err and "said once" in err and "fifo" in err, err
    assert all(_node_intact(p, p.name) for p in bad)
    assert cache.write_entry(tmp_path / "sub" / "e.json", b"{}") and (tmp_path / "sub" / "e.json").read_bytes() == b"{}"
    assert not cache.write_entry(tmp_path / "fifo" / "e.json", b"{}")  # under a FIFO: not written, no error
    assert not cache.write_entry(tmp_path / "e.json", b"x" * 101, limit=100)


def test_a_task_verdict_that_is_a_fifo_is_a_miss(tmp_path, monkeypatch, capsys):
    import hashlib

    from spatialact import cache
    from spatialact.tasks import clear_task_cache, load_task_file, task_cache_dir

    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "cache"))
    cache.SAID.clear()
    tf = save_tasks([make_task("t0")], tmp_path / "tasks.jsonl")
    verdict = task_cache_dir() / f"{hashlib.sha256(tf.read_bytes()).hexdigest()}.json"
    verdict.parent.mkdir(parents=True, mode=0o700)
    os.mkfifo(verdict, 0o600)
    clear_task_cache()
    assert [t.id for t in _within(load_task_file, tf, fifos=[verdict]).tasks] == ["t0"]
    assert "cache entry" in capsys.readouterr().err
    assert stat.S_ISREG(os.lstat(verdict).st_mode)  # rewritten as a verdict (the cache's own folder)


def test_response_cache_entries_that_are_no_regular_file_are_asked_again(tmp_path, api_key):
    """`eval` with the OpenAI agent over a loopback server: its response cache filled, then each entry replaced by a
    FIFO, a link to /dev/zero and a folder. The next run used to hang on the FIFO (or read /dev/zero until memory ran
    out); now each is a miss, asked again, said in one line; the entries are regular files again afterwards (the
    folder stays a folder: never replaced) and a third run takes the answers from the cache."""
    pytest.importorskip("openai")
    from _chat_server import FakeServer

    tasks = image_tasks(tmp_path / "tasks", 3)
    tf = save_tasks(tasks, tmp_path / "tasks" / "tasks.jsonl")
    store = tmp_path / "responses"
    server = FakeServer()
    try:
        def run(out):
            argv = ["eval", "--no-progress", "--tasks", str(tf), "--env", "none", "--out", str(tmp_path / out),
                    "--agent", "openai", "--agent-arg", "model=test-vlm", "--agent-arg", f"base_url={server.url}",
                    "--agent-arg", "api_key_env=SPATIALACT_TEST_KEY", "--agent-arg", "backoff=0",
                    "--agent-arg", f"cache_dir={store}"]
            return subprocess.run([sys.executable, "-m", "spatialact.cli.main", *argv], capture_output=True,
                                  text=True, env=dict(os.environ, PYTHONPATH=SRC), timeout=180)

        r = run("first")
        assert r.returncode == 0, r.stderr
        entries = sorted(store.rglob("*.json"))
        assert len(entries) == 3 and len(server.requests) == 3
        kinds = ["fifo", "zero_link", "folder"]
        for p, kind in zip(entries, kinds):
            p.unlink()
            make_node(p, kind)
        try:
            r = run("second")
        except subprocess.TimeoutExpired:
            _release([entries[0]])
            raise
        assert r.returncode == 0, r.stderr
        assert len(server.requests) == 6  # every answer asked again
        said = [x for x in r.stderr.splitlines() if "cache entry" in x]
        assert len(said) == 1 and "said once" in said[0], r.stderr
        assert [stat.S_ISREG(os.lstat(p).st_mode) for p in entries] == [True, True, False]
        assert stat.S_ISDIR(os.lstat(entries[2]).st_mode)
        r = run("third")
        assert r.returncode == 0, r.stderr
        assert len(server.requests) == 7  # two hits, the folder's asked again
    finally:
        server.close()


def test_a_cache_entry_nested_too_deep_is_a_miss(tmp_path):
    from spatialact.agents.openai_agent import ResponseCache

    c = ResponseCache(tmp_path)
    key = "ab" * 32
    c.put(key, {"text": "hello"})
    assert c.get(key)["text"] == "hello"
    p = tmp_path / "ab" / f"{key}.json"
    p.write_text('{"key": "' + key + '", "text": "x", "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert c.get(key) is None


# ----- the renderers' own caches: a FIFO planted at an entry is never read -------------------------------------------
def test_a_fifo_at_a_texture_or_mesh_cache_entry_is_replaced_or_missed_not_read(tmp_path, monkeypatch):
    from spatialact.envs import textures
    from spatialact.envs.gl import meshes

    monkeypatch.setenv("SPATIALACT_CACHE", str(tmp_path / "cache"))
    first = textures.texture_path("wood", (0.5, 0.4, 0.3), seed=1)  # made once, then planted over with a FIFO
    os.remove(first)
    os.mkfifo(first)
    again = _within(textures.texture_path, "wood", (0.5, 0.4, 0.3), 1, fifos=[first])
    assert again == first and stat.S_ISREG(os.stat(first).st_mode)  # written anew as a PNG, the FIFO replaced
    fifo = tmp_path / "cache" / "mesh.npz"
    os.mkfifo(fifo)
    assert _within(meshes._load, str(fifo), fifos=[str(fifo)]) is None  # a miss, never opened


def test_a_hierarchy_tree_nested_too_deep_or_a_fifo_is_refused_from_python(tmp_path):
    from spatialact.scorers.aggregate import load_tree

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ValueError, match="deep.json: .*nest"):
        load_tree(deep)
    fifo = tmp_path / "tree.json"
    os.mkfifo(fifo)
    with pytest.raises(FileNotFoundError, match="is a FIFO"):
        _within(load_tree, fifo, fifos=[str(fifo)])
