"""The evaluation runner: tasks × agent × environment → a resumable run directory (SPEC §8).

Episodes run in this process (``workers=1``), in a pool of worker processes (``workers=N``) or as Ray tasks
(``backend="ray"``). Whatever runs them, only this process writes the run directory — one writer, records
appended and fsynced one at a time as episodes finish — and every episode is seeded from the run seed and its
task id alone, so the three ways give the same records in a possibly different order.
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..tasks import Task
from .episode import EpisodeConfig, env_name, episode_key, episode_seed, run_episode

__all__ = ["AgentSpec", "RunSummary", "run_eval", "run_config"]

BACKENDS = ("local", "ray")


@dataclass(frozen=True)
class AgentSpec:
    """Which agent to build in each worker: a name of ``spatialact.agents.make_agent`` and its keyword
    arguments (JSON-able, never secrets: API keys are read from the environment by the agent itself)."""

    name: str
    kwargs: dict = field(default_factory=dict)

    def build(self, task_id: str, seed: int):
        from ..agents import make_agent

        return make_agent(self.name, seed=episode_seed(seed, task_id), **self.kwargs)

    def to_dict(self) -> dict:
        return {"name": self.name, "kwargs": dict(self.kwargs)}


@dataclass(frozen=True)
class RunSummary:
    run_dir: Path
    n_tasks: int
    n_skipped: int  # finished by an earlier run of the same command
    n_new: int
    n_errors: int


def run_config(agent: AgentSpec, cfg: EpisodeConfig, task_source: str, task_hash: str | None) -> dict:
    """The configuration a run directory is tied to; rerunning with a different one is refused."""
    return {"tasks": task_source, "tasks_sha256": task_hash, "agent": agent.to_dict(), **cfg.to_dict()}


def _agent_label(agent: AgentSpec) -> str:
    return agent.name


def _run_one(task_record: dict, agent: AgentSpec, cfg: EpisodeConfig) -> tuple[dict, dict]:
    """One episode in whatever process runs it; returns (record, {frame name: RGB array})."""
    task = Task.from_record(task_record)
    # A bad agent configuration (AgentConfigError: no API key, unknown model) propagates and aborts the run;
    # everything that goes wrong inside an episode is recorded with it instead.
    record, frames = run_episode(task, agent.build(task.id, cfg.seed), cfg)
    return record, dict(frames.items())


def _local(jobs: list[tuple[dict, AgentSpec, EpisodeConfig]], workers: int) -> Iterator[tuple[dict, dict]]:
    if workers <= 1:
        for job in jobs:
            yield _run_one(*job)
        return
    import multiprocessing as mp

    # "spawn": a forked PyBullet or Ray client is not safe to reuse.
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        it = iter(jobs)
        running = set()
        for job in it:
            running.add(pool.submit(_run_one, *job))
            if len(running) >= 2 * workers:
                break
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()
                nxt = next(it, None)
                if nxt is not None:
                    running.add(pool.submit(_run_one, *nxt))


def _ray(jobs: list[tuple[dict, AgentSpec, EpisodeConfig]], workers: int) -> Iterator[tuple[dict, dict]]:
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                 configure_logging=False, ignore_reinit_error=True)
        started = True
    try:
        remote = ray.remote(num_cpus=1)(_run_one)
        pending = [remote.remote(*job) for job in jobs]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        if started:
            ray.shutdown()


def run_eval(tasks: Iterable[Task], agent: AgentSpec, cfg: EpisodeConfig, run_dir: str | os.PathLike, *,
             task_source: str, task_hash: str | None = None, task_file: str | None = None,
             limit: int | None = None, workers: int = 1, backend: str = "local", progress: bool = True,
             on_record: Callable[[dict], None] | None = None) -> RunSummary:
    """Run ``agent`` on ``tasks`` (the first ``limit`` of them) and append one record per episode to
    ``run_dir/results.jsonl``. Episodes already in the run directory are skipped, so rerunning the same
    command resumes; a run directory made with a different configuration is refused (``ValueError`` naming
    the key that differs)."""
    from .results import RunStore, provenance

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    tasks = list(tasks)
    if limit is not None:
        tasks = tasks[: max(0, int(limit))]
    config = run_config(agent, cfg, task_source, task_hash)
    prov = provenance(task_file=task_file, agent=agent.to_dict(), seed=cfg.seed)
    store = RunStore(run_dir, config, prov)
    done = store.done_keys()
    label = _agent_label(agent)
    todo = [t for t in tasks if episode_key(t.id, label, env_name(t, cfg), cfg.mode, cfg.seed) not in done]
    jobs = [(t.to_record(), agent, cfg) for t in todo]
    runner = _ray if backend == "ray" else _local
    n_new = n_err = 0
    bar = None
    if progress and jobs:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), initial=len(tasks) - len(todo), desc=f"{label} {cfg.mode}", unit="ep",
                   dynamic_ncols=True)
    try:
        for record, frames in runner(jobs, workers):
            paths = {name: store.write_frame(record["key"], name, rgb) for name, rgb in frames.items()}
            record["frames"] = paths
            store.append(record)
            n_new += 1
            n_err += record.get("error") is not None
            if on_record is not None:
                on_record(record)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(score=f"{record['score']:.3f}")
    finally:
        if bar is not None:
            bar.close()
    return RunSummary(Path(run_dir), len(tasks), len(tasks) - len(todo), n_new, n_err)
