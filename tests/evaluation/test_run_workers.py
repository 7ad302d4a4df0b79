"""How many worker processes a run starts: ``--workers N`` is bounded (1…MAX_WORKERS) and never
starts more workers than episodes; ``--workers auto`` starts one per EPISODES_PER_WORKER episodes and at most one per
usable CPU, so a short run stays in one process (a worker costs about 1.5 s before its first episode:
benchmarks/bench_workers.py measures it). Counted, not timed: the processes alive while the run's records arrive."""

from __future__ import annotations

from pathlib import Path

import pytest

from _fabricate import image_tasks
from spatialact.cli.main import main
from spatialact.evaluation.episode import EpisodeConfig
from spatialact.evaluation.results import read_records
from spatialact.evaluation.runner import EPISODES_PER_WORKER, AgentSpec, choose_workers, run_eval, usable_cpus
from spatialact.tasks import save_tasks
from spatialact.vocab import MAX_WORKERS

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="counts processes in Linux /proc")


def _children(pid: int) -> set[int]:
    """Direct child processes of ``pid`` that run a Python worker (not multiprocessing's resource tracker)."""
    try:
        kids = map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        return set()
    out = set()
    for k in kids:
        try:
            cmd = Path(f"/proc/{k}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmd:
            out.add(k)
    return out


def _tasks(folder: Path, n: int) -> list:
    return image_tasks(folder, n, goal_seed=50, answer_format="flat")


def _run(tasks, out: Path, workers) -> tuple[int, set[int]]:
    import os

    seen: set[int] = set()
    # Python children an earlier test of this process left alive on purpose (a parked game engine's worker) are not
    # this run's: only the processes that appear while it runs count.
    before = _children(os.getpid())
    summary = run_eval(tasks, AgentSpec("oracle"), EpisodeConfig(env="none"), out, task_source="t", workers=workers,
                       progress=False, on_record=lambda r: seen.update(_children(os.getpid())))
    assert len(read_records(out)) == len(tasks)
    return summary.workers, seen - before


def test_the_rule():
    assert choose_workers(1, 500) == 1 and choose_workers(8, 3) == 3 and choose_workers(8, 0) == 1
    assert choose_workers(MAX_WORKERS, 10 ** 6) == MAX_WORKERS
    assert choose_workers("auto", 20, cpus=2) == 1  # a short run: 20 episodes, one process
    assert choose_workers("auto", 2 * EPISODES_PER_WORKER, cpus=2) == 2
    assert choose_workers("auto", 100 * EPISODES_PER_WORKER, cpus=6) == 6
    assert choose_workers("auto", 5, cpus=64) == 1
    for bad in (0, -1, MAX_WORKERS + 1, 10 ** 5, "many", True, 2.5):
        with pytest.raises(ValueError, match="workers must be 'auto' or a whole number from 1 to 64"):
            choose_workers(bad, 10)
    assert usable_cpus() >= 1


def test_auto_runs_a_short_run_in_this_process(tmp_path):
    tasks = _tasks(tmp_path / "tasks", EPISODES_PER_WORKER - 1)
    used, seen = _run(tasks, tmp_path / "run", "auto")
    assert used == 1 and seen == set()  # no worker process started


def test_no_more_workers_than_episodes(tmp_path):
    tasks = _tasks(tmp_path / "tasks", 2)
    used, seen = _run(tasks, tmp_path / "run", 6)
    assert used == 2 and 1 <= len(seen) <= 2


def test_the_cli_bounds_and_reports_the_count(tmp_path, capsys):
    tasks = _tasks(tmp_path / "tasks", 3)
    tf = save_tasks(tasks, tmp_path / "tasks" / "tasks.jsonl")
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as e:
        main(["eval", "--tasks", str(tf), "--env", "none", "--out", str(out), "--workers", "100000"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and not out.exists() and len(err.strip().splitlines()) == 1
    assert "--workers: must be from 1 to 64 (MAX_WORKERS) or auto, got 100000" in err
    assert main(["eval", "--no-progress", "--tasks", str(tf), "--env", "none", "--out", str(out), "--workers",
                 "auto"]) == 0
    assert "--workers auto ran 3 episodes on 1 worker" in capsys.readouterr().err
