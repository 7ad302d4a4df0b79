"""The game engine stopping — killed mid-episode or while it starts, crashed, hung, or its caller killed — fails the
call (and so the episode) that met it, with a reason, and leaves no process behind; the next episode gets a new
engine. Every kill here is of a process this test started, found from the engine's handle (the worker's pid, the
game's pid), never by name; every wait is bounded.

Before the engine ran in a worker process (spatialact.envs.doom.worker), each of these ended the caller: a killed
game left the binding in a futex wait (a hang) or failed later, unrelated episodes; a game killed while it started
crashed the caller (SIGSEGV); a killed caller left its games running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("vizdoom")
pytest.importorskip("pybullet")

from spatialact import geometry  # noqa: E402
from spatialact.action_space import ActionSequence, StepSizes  # noqa: E402
from spatialact.envs import make_env  # noqa: E402
from spatialact.envs.doom.engine import level_rotation  # noqa: E402
from spatialact.envs.doom.worker import EngineProcess, EngineStopped, child_pids  # noqa: E402
from spatialact.envs.game_world import GameWorld, close_parked_engines, game_scene  # noqa: E402

SRC = str(Path(__file__).parents[3] / "src")
SIZES = StepSizes.navigation()
START = geometry.make_pose(level_rotation(0.0), np.array([-192.0, -192.0, 41.0]) / 32.0)  # MAP01's player start


def _task(task_id, counts):
    from spatialact.tasks import Task

    gt = ActionSequence.from_signed_counts(np.atleast_2d(counts), SIZES, cap=10)
    return Task(id=task_id, kind="nav", source="game", start_pose=START, goal_pose=gt.to_poses(START)[-1], gt=gt,
                sizes=SIZES, scene=game_scene("freedoom2.wad", "MAP01", START))


def _gone(pid: int) -> bool:
    """Process ``pid`` has exited (no such process, or a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _start_time(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _wait_gone(pids, timeout=10.0) -> list[int]:
    """Waits until every (pid, start time or None) has exited; returns those still running after ``timeout`` s (a
    start time tells the process from a later one that took its pid)."""
    end = time.monotonic() + timeout
    while True:
        left = [p for p, t in pids if not _gone(p) and (t is None or _start_time(p) == t)]
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.05)


def _kill_game(engine) -> int:
    pid = engine.engine_pid
    assert pid in child_pids(engine.pid)  # the game is the worker's child: this test's grandchild
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.fixture
def task():
    return _task("crash-a", [[0, 0, 3, 0, 0, 0], [0, 0, 0, 0, 2, 0]])


def test_an_engine_killed_mid_episode_fails_that_step_with_a_reason_and_the_next_episode_gets_a_new_one(task):
    env = make_env("nav", task=task, width=160, height=120, action_mode="step", wrap=False)
    obs, _ = env.reset(options={"task": task})
    first_view = obs["rgb"].copy()
    step = np.full(7, 10)
    step[2], step[6] = 11, 1  # one unit of Dolly
    env.step(step)
    eng = env.world.engine
    worker, game = eng.pid, _kill_game(eng)
    t = time.monotonic()
    with pytest.raises(EngineStopped, match=r"^the game engine stopped: its process \(pid \d+\) exited .*\(during a "
                                            r"step; MAP01 of freedoom2.wad\)$"):
        env.step(step)
    assert time.monotonic() - t < 5.0  # no hang: the game's exit is seen at once
    assert not eng.alive and _wait_gone([(worker, None), (game, None)], 5.0) == []
    with pytest.raises(EngineStopped):  # every later call says the same
        eng.execute(np.eye(4))
    # the next episode (a reset in the same env) starts a new engine; the game is deterministic: the same first view
    obs, _ = env.reset(options={"task": task})
    assert env.world.engine is not eng and env.world.engine.alive and env.world.engine.pid != worker
    assert np.array_equal(obs["rgb"], first_view)
    env.close()


def test_a_stopped_engine_is_not_parked_and_one_that_stopped_while_parked_is_replaced(task):
    close_parked_engines()
    env = make_env("nav", task=task, width=160, height=120, wrap=False)
    env.reset(options={"task": task})
    eng = env.world.engine
    env.close()  # parked for the next world of this level
    game = _kill_game(eng)
    assert _wait_gone([(game, None)], 5.0) == []
    end = time.monotonic() + 5.0  # the leader thread is a zombie before the whole game has exited (its pidfd says)
    while eng.alive and time.monotonic() < end:
        time.sleep(0.02)
    assert not eng.alive
    env2 = make_env("nav", task=task, width=160, height=120, wrap=False)
    env2.reset(options={"task": task})  # the dead engine is not reused: no episode fails for it
    assert env2.world.engine is not eng and env2.world.engine.alive
    assert _wait_gone([(eng.pid, None)], 5.0) == []
    env2.close()


def test_a_hung_engine_meets_the_calls_deadline():
    eng = EngineProcess(None, "MAP01", (160, 120), call_deadline_s=1.5)
    worker, game = eng.pid, eng.engine_pid
    os.kill(game, signal.SIGSTOP)  # alive but silent: the binding would wait for it forever
    t = time.monotonic()
    dolly = np.eye(4)
    dolly[2, 3] = 1.0
    with pytest.raises(EngineStopped, match=r"did not answer within 1.5 s \(during a step"):
        eng.execute(dolly)
    assert 1.4 <= time.monotonic() - t < 10.0
    assert _wait_gone([(worker, None), (game, None)], 5.0) == []


@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL], ids=["SIGSEGV", "SIGKILL"])
def test_a_crash_of_the_worker_is_contained_reported_and_takes_the_game_with_it(sig):
    eng = EngineProcess(None, "MAP01", (160, 120))
    worker, game = eng.pid, eng.engine_pid
    assert child_pids(game) == []  # the game starts no process of its own
    os.kill(worker, sig)  # SIGSEGV: what a crash inside the binding does to the process that loaded it
    assert _wait_gone([(game, None)], 5.0) == []  # the game died with its worker (its launcher's PR_SET_PDEATHSIG)
    with pytest.raises(EngineStopped, match=rf"its worker crashed \({sig.name}\)"):
        eng.start()


def _kill_the_next_game_while_it_starts(known: set, killed: list, stop: threading.Event):
    """Watch this process's new children (workers) for a game process and SIGKILL it as soon as it is there."""
    while not stop.is_set():
        for w in child_pids(os.getpid()):
            if w in known:
                continue
            for g in child_pids(w):
                try:
                    exe = os.readlink(f"/proc/{g}/exe")
                except OSError:
                    continue
                if Path(exe).name == "vizdoom":  # exec'd by the launcher: the game is loading
                    os.kill(g, signal.SIGKILL)
                    killed.append((w, g))
                    return
        time.sleep(0.002)


def test_an_engine_killed_while_it_starts_fails_the_start_not_the_process():
    for _ in range(2):
        known, killed, stop = set(child_pids(os.getpid())), [], threading.Event()
        th = threading.Thread(target=_kill_the_next_game_while_it_starts, args=(known, killed, stop))
        th.start()
        try:
            with pytest.raises(EngineStopped, match="the game engine stopped: .*during the start of the game"):
                EngineProcess(None, "MAP01", (160, 120), start_deadline_s=30)
        finally:
            stop.set()
            th.join(5)
        assert killed and _wait_gone([(killed[0][0], None)], 5.0) == []
    with EngineProcess(None, "MAP01", (160, 120)) as eng:  # and the next one starts
        assert eng.alive


def _game_tasks(n):
    moves = ([[0, 0, 2, 0, 0, 0]], [[0, 0, 0, 0, 2, 0]], [[0, 0, 1, 0, 0, 0], [0, 0, 0, 0, -1, 0]],
             [[1, 0, 1, 0, 0, 0]])
    return [_task(f"g{i}", moves[i % len(moves)]) for i in range(n)]


def test_eval_fails_only_the_episode_whose_engine_was_killed_and_a_resume_completes(tmp_path, monkeypatch):
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval

    close_parked_engines()
    tasks = _game_tasks(4)
    killed = []
    move = GameWorld.move

    def move_and_kill(self, delta):  # the game is killed during episode g1, before its first step
        if self.task.id == "g1" and not killed:
            killed.append(_kill_game(self.engine))
        return move(self, delta)

    monkeypatch.setattr(GameWorld, "move", move_and_kill)
    cfg = EpisodeConfig(mode="closed-loop", width=160, height=120)
    t = time.monotonic()
    s = run_eval(tasks, AgentSpec("oracle"), cfg, tmp_path / "run", task_source="test", progress=False, echo=False)
    assert time.monotonic() - t < 120
    recs = {r["task_id"]: r for r in read_records(tmp_path / "run")}
    assert killed and s.n_errors == 1 and set(recs) == {t.id for t in tasks}
    assert recs["g1"]["reason"] == "error" and "the game engine stopped" in recs["g1"]["error"]
    assert all(recs[k]["reason"] is None and recs[k]["success"] for k in ("g0", "g2", "g3"))
    monkeypatch.setattr(GameWorld, "move", move)
    s = run_eval(tasks, AgentSpec("oracle"), cfg, tmp_path / "run", task_source="test", progress=False, echo=False,
                 retry_errors=True)
    recs = {r["task_id"]: r for r in read_records(tmp_path / "run")}
    assert s.n_new == 1 and s.n_errors == 0 and all(r["success"] for r in recs.values())


def test_eval_killed_with_sigkill_leaves_no_engine_running(tmp_path):
    from spatialact.tasks import save_tasks

    tasks_file = tmp_path / "tasks.jsonl"
    save_tasks(_game_tasks(40), tasks_file)
    code = "import sys\nfrom spatialact.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    for k in range(2):
        p = subprocess.Popen([sys.executable, "-c", code, "eval", "--tasks", str(tasks_file), "--mode", "closed-loop",
                              "--agent", "oracle", "--size", "96", "--no-progress",
                              "--out", str(tmp_path / f"run{k}")], env={**os.environ, "PYTHONPATH": SRC},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            procs, end = [], time.monotonic() + 60
            while not procs and time.monotonic() < end and p.poll() is None:
                time.sleep(0.05)  # until a worker and its game run
                procs = [(w, g) for w in child_pids(p.pid) for g in child_pids(w)]
            assert procs, "no game started"
            time.sleep(0.5 * k)  # once while it starts, once in an episode
            pids = [(q, _start_time(q)) for w, g in procs for q in (w, g)]
        finally:
            p.kill()
            p.wait(10)
        assert _wait_gone(pids, 10.0) == [], json.dumps(pids)
