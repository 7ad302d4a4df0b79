"""The evaluation runner: tasks × agent × environment → a resumable run directory (docs/evaluation.md).

Episodes run in this process (``workers=1``), in a pool of worker processes (``workers=N``) or as Ray tasks
(``backend="ray"``). Whatever runs them, only this process writes the run directory — one writer, records
appended and fsynced one at a time as episodes finish — and every episode is seeded from the run seed and its
task id alone, so the three ways give the same records in a possibly different order.

Before anything is written, :func:`run_eval` builds the agent once (a bad name, a missing model or a secret passed
as an argument raises ``AgentConfigError``) and asks :func:`~spatialact.evaluation.episode.check_runnable` about
every task (a task that cannot run in the mode raises :class:`TaskNotRunnable`). Worker processes die with this
one (``PR_SET_PDEATHSIG`` on Linux, a watchdog thread elsewhere), and a run that stops early kills them.

Failures (``reason`` ``api_error`` or ``error``) are printed as they happen and counted in the summary; rerunning
the same command retries the ``api_error`` episodes, ``retry_errors=True`` every failure. Three connection
failures in a row before any answer stop the run with :class:`EndpointUnreachable`.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

from ..records import RETRIED_ON_RESUME, episode_key, is_failure
from ..tasks import Task
from ..vocab import MAX_WORKERS, RUN_BACKENDS
from .episode import (EpisodeConfig, check_runnable, env_name, episode_seed, episode_steps, free_camera_task,
                      observation_supplies, run_episode, world_kind)

__all__ = ["AgentSpec", "RunSummary", "run_eval", "run_config", "TaskNotRunnable", "EndpointUnreachable",
           "failure_line", "CONNECTION_FAILURES_TO_STOP", "choose_workers", "usable_cpus",
           "EPISODES_PER_WORKER", "MAX_REPEATS", "collision_note", "pin_differences", "pins_note", "MAX_CONCURRENCY",
           "API_CONCURRENCY", "default_concurrency", "live_caps", "WORLD_MB", "GAME_MB", "WORLD_MEMORY_MB",
           "MAX_LIVE_GAMES", "MAX_POOLED_WORLDS", "ENDPOINT_CHECK_S", "DEFAULT_BASE_URL", "endpoint_url",
           "endpoint_problem", "PendingEpisodes", "pending_episodes"]

BACKENDS = RUN_BACKENDS
#: Seconds the check before a run waits for a TCP connection to an API agent's endpoint (:func:`endpoint_problem`).
ENDPOINT_CHECK_S = 5.0
#: The endpoint of an API agent given no ``base_url`` (and no ``OPENAI_BASE_URL`` in the environment): the
#: ``openai`` client's own default.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Connection failures in a row, before any episode got through, that stop a run.
CONNECTION_FAILURES_TO_STOP = 3
#: ``workers="auto"``: one worker per this many episodes to run (at most one per usable CPU). A worker costs about
#: 1.5 s before its first episode (a fresh interpreter, 0.5 s of imports, then a cold first episode: the GL
#: context, shaders and texture mipmaps), about 2-6 episodes' worth (benchmarks/bench_workers.py), which a
#: worker given 16 episodes earns back; fewer, and one process is as fast or faster.
EPISODES_PER_WORKER = 16
#: The most model requests in flight one process may be asked for (``eval --concurrency``).
MAX_CONCURRENCY = 256
#: ``--concurrency`` when not given, for the agents that talk to an endpoint (``spatialact.agents.API_AGENTS``);
#: every other agent (baselines, local models, plug-ins) runs one episode at a time.
API_CONCURRENCY = 16
#: Memory a live world takes in a process, in MB, by renderer: an estimate at or above the measure
#: (benchmarks/bench_concurrency.py, --concurrency 64: the run's RSS growth over its peak of live worlds, 49 MB
#: tiny and 93 MB gl on llvmpipe, idle pooled worlds counted against it; 46 MB and 70-78 MB with 16 worlds).
WORLD_MB = {"tiny": 50, "gl": 95, "egl": 95, "auto": 95}
#: ... and a live game level (its world, frames and the game engine process it holds), in MB.
GAME_MB = 200
#: The memory one process's live worlds may take, in MB (and at most half of the memory available when the run
#: starts, shared between the processes): the number of live worlds is this divided by :data:`WORLD_MB`.
WORLD_MEMORY_MB = 8192
#: The most game levels alive at once in one process (each holds a game engine process).
MAX_LIVE_GAMES = 8
#: The most finished free-camera worlds one process keeps for the next episode in the same scene
#: (``spatialact.evaluation.episode.WorldPool``; ``eval --concurrency`` above 1).
MAX_POOLED_WORLDS = 16


class TaskNotRunnable(ValueError):
    """A task that cannot run in the requested mode / environment (refused before the run starts)."""


class EndpointUnreachable(RuntimeError):
    """The first episodes of a run all failed to connect to the agent's endpoint: the run stopped."""


@dataclass(frozen=True)
class AgentSpec:
    """Which agent to build in each worker: a name of ``spatialact.agents.make_agent`` (an alias such as
    ``Oracle`` or ``mllm`` is replaced by the canonical name, so it resumes the same run) and its keyword
    arguments (JSON-able, never secrets: a key-like argument raises ``AgentConfigError``; API keys are read
    from the environment or a key file by the agent itself)."""

    name: str
    kwargs: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        from ..agents import canonical_agent_name, check_agent_args

        object.__setattr__(self, "name", canonical_agent_name(self.name))
        object.__setattr__(self, "kwargs", dict(self.kwargs))
        check_agent_args(self.kwargs)
        if "seed" in self.kwargs:
            from ..agents import AgentConfigError

            raise AgentConfigError("agent argument 'seed': an agent's seed is derived per episode from the run's "
                                   "seed (give --seed N instead)")
        model = self.kwargs.get("model")
        if self.name == "hf" and isinstance(model, str) and os.path.isdir(os.path.expanduser(model)):
            # a local model folder is one folder whatever the working directory: stored resolved
            self.kwargs["model"] = str(Path(model).expanduser().resolve())
        from ..agents import API_AGENTS

        if self.name in API_AGENTS and isinstance(self.kwargs.get("base_url"), str):
            from ..agents.openai_agent import normalise_base_url

            # one endpoint however it is typed (a trailing '/'): resuming with either form is the same run
            self.kwargs["base_url"] = normalise_base_url(self.kwargs["base_url"])

    def build(self, task_id: str, seed: int, repeat: int = 0):
        """The agent of one episode, seeded from the run seed and the task (:func:`episode_seed`) plus ``repeat``
        (``eval --repeats K``: each repeat's agent draws other numbers; modulo 2³¹, a C int). An agent with a
        ``repeat`` attribute (the API agents: it enters their response cache key, so a repeat asks the endpoint
        again instead of reading the first repeat's answer) is told its repeat."""
        from ..agents import make_agent

        agent = make_agent(self.name, seed=(episode_seed(seed, task_id) + int(repeat)) & 0x7FFFFFFF, **self.kwargs)
        if repeat and hasattr(agent, "repeat"):
            agent.repeat = int(repeat)
        return agent

    def validate(self):
        """Build the agent once, here (no request is made), so that a bad configuration is refused before a run
        directory is touched; returns the agent."""
        from ..agents import make_agent

        return make_agent(self.name, seed=0, **self.kwargs)

    def endpoint(self) -> str | None:
        """The URL the agent talks to, as a message names it (None for agents that talk to nothing)."""
        from ..agents import API_AGENTS

        if self.name not in API_AGENTS:
            return None
        if self.kwargs.get("base_url"):
            return str(self.kwargs["base_url"])
        return f"{endpoint_url(self)} (the default base_url)"

    def to_dict(self) -> dict:
        """The agent as a run records it (``config.json``): header *names* of ``params.extra_headers``, never
        their values, and a file plug-in's SHA-256 as ``name_sha256`` (``spatialact.agents.recorded_agent``)."""
        from ..agents import recorded_agent

        return recorded_agent(self.name, self.kwargs)


def endpoint_url(agent: AgentSpec) -> str | None:
    """The base URL an API agent's requests go to: its ``base_url``, else ``OPENAI_BASE_URL`` from the environment
    (as the ``openai`` client reads it), else :data:`DEFAULT_BASE_URL`; None for an agent that talks to nothing."""
    from ..agents import API_AGENTS

    if agent.name not in API_AGENTS:
        return None
    return str(agent.kwargs.get("base_url") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)


def _proxy_for(scheme: str, host: str) -> str | None:
    """The proxy URL the HTTP client would go through for ``scheme://host`` (``HTTPS_PROXY`` / ``HTTP_PROXY`` /
    ``ALL_PROXY``, unless ``NO_PROXY`` covers the host), or None."""
    import urllib.request

    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(host, proxies):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"


def endpoint_problem(url: str, timeout: float = ENDPOINT_CHECK_S) -> str | None:
    """Why the endpoint ``url`` cannot be reached (``"connection refused"``, ``"host name not found"``, ``"no
    answer within 5 s"``, …), or None when a TCP connection to its host and port (the URL's, or 443 / 80 by
    scheme) opens within ``timeout`` seconds; the connection is closed at once. Through the proxy the HTTP client
    would use, when the environment names one for that URL. Nothing is sent: no request, no key, no cost. A server
    that accepts connections but answers badly is found by the run itself."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(str(url))
        host, port = parts.hostname, parts.port
    except ValueError as e:  # a port that is no number, a bracket left open
        return f"not a URL a connection can be opened to: {str(e)[:80]}"
    if not host:
        return "it names no host"
    port = port or (443 if parts.scheme == "https" else 80)
    via = ""
    proxy = _proxy_for(parts.scheme or "http", host)
    if proxy is not None:
        try:
            p = urlsplit(proxy)
            host, port = p.hostname or host, p.port or (443 if p.scheme == "https" else 80)
        except ValueError:
            return f"its proxy {proxy[:80]!r} has a port that is not a number"
        via = f" (through the proxy {host}:{port})"
    try:
        conn = socket.create_connection((host, port), timeout=timeout)
    except socket.gaierror:
        return f"host name {host!r} not found{via}"
    except ConnectionRefusedError:
        return f"connection refused{via}"
    except (socket.timeout, TimeoutError):
        return f"no answer within {timeout:g} s{via}"
    except OSError as e:
        return f"{(e.strerror or str(e) or type(e).__name__).lower()}{via}"
    conn.close()
    return None


@dataclass(frozen=True)
class RunSummary:
    run_dir: Path
    n_tasks: int
    n_skipped: int  # episodes finished by an earlier run of the same command (a task per variant)
    n_new: int
    n_errors: int  # failures among the episodes run now
    failures: dict = field(default_factory=dict)  # reason -> count, over the latest records of the run's tasks
    workers: int = 1  # the worker processes (or Ray CPUs) the episodes ran on (choose_workers)
    notes: tuple = ()  # warnings found before the run (collision_note), one line each
    repeats: int = 1  # every episode ran this many times (eval --repeats K)
    concurrency: int = 1  # agent calls in flight at most, per process (eval --concurrency N)
    figures: dict = field(default_factory=dict)  # requests, retries, tokens, cost, peaks, wall time (_Progress)
    stopped: str | None = None  # "max_cost": the run stopped at its cost budget (resumable)

    @property
    def n_failed(self) -> int:
        return int(sum(self.failures.values()))


def run_config(agent: AgentSpec, cfg: EpisodeConfig, task_source: str, task_hash: str | None) -> dict:
    """The configuration a run directory is tied to; rerunning with a different one is refused."""
    return {"tasks": task_source, "tasks_sha256": task_hash, "agent": agent.to_dict(), **cfg.to_dict()}


def failure_line(record: dict) -> str:
    """One console line for a failed episode: task, reason, kind and the (scrubbed) error text."""
    err = " ".join(str(record.get("error") or "").split())
    if len(err) > 240:
        err = err[:237] + "..."
    kind = record.get("error_kind")
    return f"{record.get('task_id')}: {record.get('reason') or 'error'}" + (f" ({kind})" if kind else "") + \
        f": {err}"


def _run_one(task: Task, agent: AgentSpec, cfg: EpisodeConfig, repeat: int = 0,
             plan: dict | None = None) -> tuple[dict, dict, dict | None]:
    """One episode (repeat ``repeat``) in whatever process runs it; returns (record, {frame name: RGB array}, the
    figures of this process's request gate or None). ``plan`` (:func:`_plan`): the gate this process sends its
    requests through, made on its first episode."""
    gate = _ensure_gate(plan)
    # A bad agent configuration (AgentConfigError) or an unreadable task image (TaskInputError) propagates and
    # stops the run; everything else that goes wrong inside an episode is recorded with it instead.
    record, frames = run_episode(task, agent.build(task.id, cfg.seed, repeat), cfg, repeat)
    return record, dict(frames.items()), (_figures_of(gate, None) if gate is not None else None)


def _episode_gen(job: tuple, pool=None):
    """The generator of one job's episode (:func:`~spatialact.evaluation.episode.episode_steps`), its agent built
    here, its world from ``pool`` (a :class:`~spatialact.evaluation.episode.WorldPool`) when given."""
    task, agent, cfg, repeat = job  # the Task itself: frozen, it pickles to a worker process as it is
    return episode_steps(task, agent.build(task.id, cfg.seed, repeat), cfg, repeat, pool)


def default_concurrency(agent_name: str) -> int:
    """``--concurrency`` when not given: :data:`API_CONCURRENCY` for an agent that talks to an endpoint
    (``spatialact.agents.API_AGENTS``), 1 for any other (baselines, local models, plug-ins)."""
    from ..agents import API_AGENTS

    return API_CONCURRENCY if agent_name in API_AGENTS else 1


def _available_mb() -> float | None:
    """MemAvailable of /proc/meminfo in MB (None where there is none)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024.0
    except (OSError, ValueError, IndexError):
        pass
    return None


def live_caps(cfg: EpisodeConfig, processes: int = 1) -> dict:
    """How many episodes of each kind (:func:`~spatialact.evaluation.episode.world_kind`) one process keeps alive
    at once, and how many finished worlds it keeps for reuse: ``{"world": ..., "pool": ..., "game": ...}``. The
    memory of its worlds, live and pooled, stays within :data:`WORLD_MEMORY_MB`, and within half the memory
    available now shared by ``processes``, at :data:`WORLD_MB` a world for the run's renderer (a quarter of them,
    at most :data:`MAX_POOLED_WORLDS`, pooled; :data:`GAME_MB` a game level, at most :data:`MAX_LIVE_GAMES`); at
    least one live of each kind."""
    budget = float(WORLD_MEMORY_MB)
    avail = _available_mb()
    if avail is not None:
        budget = min(budget, avail / 2.0 / max(1, int(processes)))
    per = WORLD_MB.get(cfg.renderer, max(WORLD_MB.values()))
    worlds = max(1, int(budget // per))
    pool = min(MAX_POOLED_WORLDS, worlds // 4)
    return {"world": max(1, worlds - pool), "pool": pool,
            "game": max(1, min(MAX_LIVE_GAMES, int(budget // GAME_MB)))}


def _plan(agent: AgentSpec, cfg: EpisodeConfig, concurrency: int, processes: int, max_rpm, max_tpm) -> dict:
    """How each process runs its episodes: ``concurrency`` agent calls in flight, the live-world caps, and whether
    (and with which budgets, divided between the ``processes``) its requests pass a gate."""
    from ..agents import API_AGENTS

    n = max(1, int(processes))
    import uuid

    return {"run_id": uuid.uuid4().hex, "concurrency": int(concurrency), "caps": live_caps(cfg, n),
            "gate": agent.name in API_AGENTS or bool(max_rpm) or bool(max_tpm),
            "max_rpm": float(max_rpm) / n if max_rpm else None, "max_tpm": float(max_tpm) / n if max_tpm else None}


def _ensure_gate(plan: dict | None):
    """This process's request gate for ``plan`` (made and installed on first use; None when the plan has none)."""
    if not plan or not plan.get("gate"):
        return None
    from ..agents.wire import RequestGate, current_gate, install_gate

    gate = current_gate()
    if gate is None or gate.closed or getattr(gate, "run_id", None) != plan.get("run_id"):
        gate = RequestGate(plan["concurrency"], plan.get("max_rpm"), plan.get("max_tpm"))
        gate.run_id = plan.get("run_id")  # a Ray worker process serves run after run: one gate a run
        install_gate(gate)
    return gate


def _figures_of(gate, inter, pool=None) -> dict:
    """One process's figures now: its gate's (requests in flight, the adaptive limit, retries, outcomes), its
    interleaver's (agent calls in progress, live episodes) and its world pool's (worlds made, reused), keyed by
    process id."""
    f = {"pid": os.getpid()}
    if pool is not None:
        f.update(worlds_made=pool.made, worlds_reused=pool.reused)
    if gate is not None:
        f.update(gate.snapshot())
    if inter is not None:
        f.update(busy=inter.busy, peak_busy=inter.peak_busy, live=inter.live, peak_live=inter.peak_live,
                 peak_worlds=inter.peak_kinds.get("world", 0), peak_games=inter.peak_kinds.get("game", 0))
        if gate is None:
            f.update(in_flight=inter.busy, peak_in_flight=inter.peak_busy, limit=inter.concurrency)
    return f


def _interleaved(jobs, plan: dict, stop=None, progress=None) -> Iterator[tuple[dict, dict, dict | None]]:
    """Run ``(kind, job)`` pairs in this process, ``plan["concurrency"]`` at once
    (:class:`~spatialact.evaluation.concurrent.Interleaver`), through a request gate of this run's own; yields
    (record, frames, figures) as each episode ends. ``progress`` (a :class:`_Progress`) reads the figures live."""
    from ..agents.wire import RequestGate, use_gate
    from .concurrent import Interleaver

    from .episode import WorldPool

    caps = dict(plan.get("caps") or {})
    pool = WorldPool(caps.pop("pool", 0))
    inter = Interleaver(plan["concurrency"], caps, stop, idle=pool.has)
    gate = RequestGate(plan["concurrency"], plan.get("max_rpm"), plan.get("max_tpm")) if plan.get("gate") else None
    if progress is not None:
        progress.local = lambda: _figures_of(gate, inter, pool)
    try:
        with use_gate(gate):
            for record, frames in inter.run(jobs, lambda job: _episode_gen(job, pool)):
                yield record, dict(frames.items()), _figures_of(gate, inter, pool)
    finally:
        pool.close()


def _queued_jobs(job_q, stop) -> Iterator:
    """The jobs a worker process takes from the run's queue until its end mark (None) or the stop event."""
    while not stop.is_set():
        job = job_q.get()
        if job is None:
            return
        yield job


def _worker_main(parent_pid: int, render_threads: int, job_q, res_q, stop, plan: dict) -> None:
    """A worker process of ``--workers N --concurrency M``: runs the queue's jobs M at once, sending each result
    back as it ends; an exception that stops the run is sent back as it is (or as its one line)."""
    _worker_init(parent_pid, render_threads)
    try:
        for item in _interleaved(_queued_jobs(job_q, stop), plan, stop):
            res_q.put(("result", item))
    except BaseException as e:  # noqa: BLE001 - the parent raises it
        import pickle

        try:
            pickle.dumps(e)
        except Exception:  # noqa: BLE001 - an exception that does not pickle: its line
            e = RuntimeError(f"{type(e).__name__}: {e}")
        res_q.put(("error", e))
    finally:
        res_q.put(("done", None))


def _kill(procs) -> None:
    for p in procs:
        try:
            if p.is_alive():
                p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    for p in procs:
        try:
            p.join(timeout=5)
        except (OSError, ValueError, AttributeError, AssertionError):
            pass


def _local_concurrent(jobs: list, workers: int, plan: dict, stop) -> Iterator[tuple[dict, dict, dict | None]]:
    """``workers`` spawned processes, each running ``plan["concurrency"]`` episodes at once from one shared queue
    (:func:`_worker_main`); results come back as each episode ends. ``stop`` set: no process starts another
    episode, the live ones finish. A process that dies, or an exception in one, stops the run (the rest killed)."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    job_q, res_q, ev = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_worker_main, name=f"spatialact-worker-{i}",
                         args=(os.getpid(), max(1, usable_cpus() // workers), job_q, res_q, ev, plan))
             for i in range(workers)]
    finished = False
    try:
        for p in procs:
            p.start()
        for job in jobs:
            job_q.put(job)
        for _ in procs:
            job_q.put(None)
        ended = 0
        while ended < len(procs):
            if stop is not None and stop.is_set():
                ev.set()
            try:
                kind, payload = res_q.get(timeout=0.5)
            except queue.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"a worker process died (exit code {dead[0].exitcode}); rerunning the same "
                                       f"command resumes the run") from None
                continue
            if kind == "result":
                yield payload
            elif kind == "error":
                raise payload
            else:
                ended += 1
        finished = True
    finally:
        ev.set()
        if finished:
            for p in procs:
                p.join(timeout=10)
        _kill(procs)
        for q in (job_q, res_q):
            q.cancel_join_thread()
            q.close()


def _ray_stream(jobs: list, plan: dict):
    """A Ray task of ``--backend ray --concurrency N``: its share of the jobs, N at once, each result as it ends."""
    yield from _interleaved(jobs, plan, None)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, else the CPU count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def choose_workers(requested, n_episodes: int, cpus: int | None = None) -> int:
    """How many worker processes run ``n_episodes`` episodes: ``requested`` is a count (1 to
    :data:`spatialact.vocab.MAX_WORKERS`; never more workers than episodes, so none starts idle) or ``"auto"``: one
    worker per :data:`EPISODES_PER_WORKER` episodes, at most one per usable CPU (:func:`usable_cpus`), at least one.
    A count outside 1…MAX_WORKERS or another text raises ValueError (one line)."""
    n = max(0, int(n_episodes))
    if requested == "auto":
        c = usable_cpus() if cpus is None else max(1, int(cpus))
        return max(1, min(c, n // EPISODES_PER_WORKER))
    if isinstance(requested, bool) or not isinstance(requested, int) or not 1 <= requested <= MAX_WORKERS:
        raise ValueError(f"workers must be 'auto' or a whole number from 1 to {MAX_WORKERS} (MAX_WORKERS), got "
                         f"{str(requested)[:40]!r}")
    return max(1, min(requested, n))


def _worker_init(parent_pid: int, render_threads: int = 0) -> None:
    """Runs first in every worker process: die with the parent, even when it is killed with SIGKILL; and give the
    software renderer (Mesa's llvmpipe, which starts a thread per CPU in every process) its share of the CPUs,
    ``render_threads``, unless ``LP_NUM_THREADS`` is set already (the images are the same for any thread count)."""
    if render_threads > 0:
        os.environ.setdefault("LP_NUM_THREADS", str(render_threads))
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except Exception:  # pragma: no cover - no prctl: the watchdog below still runs
            pass
        else:
            if os.getppid() != parent_pid:  # the parent died before prctl took effect
                os._exit(1)
            return

    def watchdog():  # pragma: no cover - not Linux
        import time

        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=watchdog, daemon=True, name="spatialact-parent-watchdog").start()


def _stop_pool(pool: ProcessPoolExecutor, finished: bool) -> None:
    if finished:
        pool.shutdown(wait=True)
        return
    # Stopped early (an error, Ctrl-C, too many connection failures): cancel what has not started and kill the
    # workers still in an episode, rather than wait for them. (ProcessPoolExecutor has no public handle on its
    # processes; _processes has been there since Python 3.2.)
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    _kill(procs)


def _local(jobs: list[tuple[Task, AgentSpec, EpisodeConfig, int]], workers: int, plan: dict | None = None,
           progress=None) -> Iterator[tuple[dict, dict, dict | None]]:
    """One episode at a time per process: here (``workers`` 1, through a request gate of this run's own when
    ``plan`` has one) or in a pool of spawned worker processes (each with its gate). ``progress.stop`` set: no
    episode starts after it."""
    if workers <= 1:
        from ..agents.wire import RequestGate, use_gate

        gate = None
        if plan and plan.get("gate"):
            gate = RequestGate(plan["concurrency"], plan.get("max_rpm"), plan.get("max_tpm"))
        if progress is not None:
            progress.local = lambda: _figures_of(gate, None) if gate is not None else None
        with use_gate(gate):
            for job in jobs:
                if progress is not None and progress.stop.is_set():
                    return
                record, frames, _ = _run_one(*job)
                yield record, frames, None
        return
    import multiprocessing as mp

    # "spawn": a forked PyBullet or Ray client is not safe to reuse.
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"), initializer=_worker_init,
                               initargs=(os.getpid(), max(1, usable_cpus() // workers)))
    finished = False
    try:
        it = iter(jobs)
        running = set()
        for job in it:
            running.add(pool.submit(_run_one, *job, plan))
            if len(running) >= 2 * workers:
                break
        while running:
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                yield fut.result()
                nxt = None if progress is not None and progress.stop.is_set() else next(it, None)
                if nxt is not None:
                    running.add(pool.submit(_run_one, *nxt, plan))
        finished = True
    finally:
        _stop_pool(pool, finished)


def _ray(jobs: list, workers: int, plan: dict | None = None, stop=None) -> Iterator[tuple[dict, dict, dict | None]]:
    """The episodes as Ray tasks on a local Ray instance (``workers`` CPUs): one task an episode at concurrency 1;
    with ``plan["concurrency"]`` above 1, one streaming task per worker, each running its share of the ``(kind,
    job)`` pairs that many at once (:func:`_ray_stream`). ``stop`` set: the tasks are cancelled (episodes in
    progress are run again on a resume; their answers come from the response cache)."""
    import ray

    started = False
    if not ray.is_initialized():
        ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                 configure_logging=False, ignore_reinit_error=True)
        started = True
    pending = []
    try:
        if plan is not None and plan["concurrency"] > 1:
            stream = ray.remote(num_cpus=1)(_ray_stream)
            n = len(jobs)  # contiguous shares: a scene's tasks stay together (the world pool reuses its world)
            shares = [jobs[k * n // workers:(k + 1) * n // workers] for k in range(workers)]
            pending = [stream.remote(share, plan) for share in shares if share]
            while pending and not (stop is not None and stop.is_set()):
                ready, _ = ray.wait(pending, num_returns=1)
                for gen in ready:
                    try:
                        ref = next(gen)
                    except StopIteration:
                        pending.remove(gen)
                        continue
                    yield ray.get(ref)
            return
        remote = ray.remote(num_cpus=1)(_run_one)
        pending = [remote.remote(*job, plan) for job in jobs]
        while pending and not (stop is not None and stop.is_set()):
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield ray.get(ref)
    finally:
        for ref in pending:  # stopped early: do not leave tasks running on the Ray instance
            try:
                ray.cancel(ref, force=True)
            except Exception:
                pass
        if started:
            ray.shutdown()


def _echo(line: str, bar) -> None:
    msg = f"spatialact: episode failed: {line}"
    if bar is not None:
        bar.write(msg, file=sys.stderr)
    else:
        print(msg, file=sys.stderr, flush=True)


def check_tasks(tasks: list[Task], cfg: EpisodeConfig, agent=None) -> None:
    """Refuse (:class:`TaskNotRunnable`, one line) when any task cannot run with ``cfg`` — or with ``agent``, when
    it has a ``check_task(task, supplies)`` (e.g. a cue the environment cannot supply); names the first and how
    many there are."""
    bad = []
    agent_check = getattr(agent, "check_task", None)
    for t in tasks:
        why = check_runnable(t, cfg)
        if why is None and agent_check is not None:
            why = agent_check(t, observation_supplies(t, cfg))
        if why:
            bad.append(why)
    if bad:
        more = f" ({len(bad)} of {len(tasks)} tasks cannot run)" if len(bad) > 1 else ""
        raise TaskNotRunnable(bad[0] + more)


def _store_results(results, store, agent: AgentSpec, bar, echo: bool, on_record,
                   progress=None) -> tuple[int, int]:
    """Write each finished episode (frames, then its record) as it comes; returns (episodes written, failures).
    Three connection failures in a row before any episode got through raise :class:`EndpointUnreachable`.
    ``progress`` (:class:`~spatialact.evaluation.progress.RunProgress`) is told every record."""
    n_new = n_err = 0
    conn_streak, got_through = 0, False
    for record, frames, figures in results:
        record["frames"] = {name: store.write_frame(record["key"], name, rgb) for name, rgb in frames.items()}
        store.append(record)
        n_new += 1
        failed = is_failure(record)
        n_err += failed
        if failed and echo:
            _echo(failure_line(record), bar)
        if on_record is not None:
            on_record(record)
        if progress is not None:
            progress.add(record, figures, failed)
        elif bar is not None:
            bar.update(1)
        if not got_through:
            if record.get("reason") == "api_error" and record.get("error_kind") == "connection":
                conn_streak += 1
                if conn_streak >= CONNECTION_FAILURES_TO_STOP:
                    raise EndpointUnreachable(
                        f"stopped after {conn_streak} connection failures in a row at the start: cannot reach "
                        f"{agent.endpoint() or 'the agent'} (is the server running, is base_url right?); rerunning "
                        f"the same command retries these episodes")
            else:
                got_through = True
    return n_new, n_err


def _results(backend: str, jobs: list, n_workers: int, plan: dict, prog) -> Iterator[tuple[dict, dict, dict | None]]:
    """The run's episodes as they end, from the way that runs them: Ray, this process (one at a time or
    interleaved), or worker processes (each one at a time or interleaved)."""
    if backend == "ray":
        return _ray(jobs, n_workers, plan, prog.stop)
    if plan["concurrency"] > 1:
        if n_workers <= 1:
            return _interleaved(jobs, plan, prog.stop, prog)
        return _local_concurrent(jobs, n_workers, plan, prog.stop)
    return _local(jobs, n_workers, plan, prog)


def collision_note(tasks: list[Task], cfg: EpisodeConfig) -> str | None:
    """A one-line warning when walls are on (``cfg.collisions``) and some free-camera tasks have a ground truth
    that goes through their scene's geometry (``spatialact.envs.collision_problem``): how many, and the first ids.
    Their one-shot scores do not change (the answer is scored against the ground truth), but a closed-loop
    camera, or an executed answer, is stopped by the walls short of the goal. None when there are none, or when
    the environments have no walls."""
    if not cfg.collisions:
        return None
    free = [t for t in tasks if free_camera_task(t, cfg)]
    if not free:
        return None
    try:
        from ..envs import collision_problem
    except ImportError:  # an environments build without walls
        return None
    bad = [(t.id, why) for t in free if (why := collision_problem(t))]
    if not bad:
        return None
    first = ", ".join(repr(i) for i, _ in bad[:3]) + (", ..." if len(bad) > 3 else "")
    return (f"{len(bad)} of {len(free)} free-camera tasks have a ground truth that goes through their scene's "
            f"geometry (first {first}: {' '.join(str(bad[0][1]).split())[:160]}); their one-shot scores are "
            f"unchanged, but with walls on the camera is stopped short of the goal (closed-loop success and SPL, "
            f"an executed answer's end pose); --no-collisions runs them without walls")


def pin_differences(pins: dict, cfg: EpisodeConfig, prompt_version: str | None = None) -> dict:
    """``{pin: [pinned, used]}`` for each of a frozen suite's pins (``image_size``, ``renderer``,
    ``render_quality``, ``profile``, ``prompt_version``) that a run with ``cfg`` (and an agent of that prompt
    version; None: an agent without a prompt, not compared) does not follow."""
    size = cfg.width if cfg.width == cfg.height else f"{cfg.width}x{cfg.height}"
    used = {"image_size": size, "renderer": cfg.renderer, "render_quality": cfg.render_quality,
            "profile": cfg.profile, "prompt_version": prompt_version}
    return {k: [pins[k], v] for k, v in used.items()
            if pins.get(k) is not None and v is not None and v != pins[k]}


def pins_note(suite: str, differ: dict) -> str:
    """The one-line warning for a run that does not follow its frozen suite's pins."""
    name = str(suite).split("/", 1)[0]
    what = ", ".join(f"{k} {used} (pinned {pin})" for k, (pin, used) in differ.items())
    return f"--suite {suite}: {what}: not comparable with {name} results (recorded as suite_pins_differ)"


#: The most repeats of every episode a run may ask for (``eval --repeats``).
MAX_REPEATS = 100


def _check_run_arguments(agent, cfg: EpisodeConfig, backend: str, workers, variants, repeats) -> tuple[str, ...]:
    """run_eval's arguments that are refused before anything is built (ValueError, TypeError: one line); returns
    the variants to run."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    choose_workers(workers, 1)  # a bad count or text
    if not isinstance(agent, AgentSpec):
        raise TypeError(f"run_eval takes an AgentSpec, got {type(agent).__name__}")
    from ..agents.plugins import plugin_sha256

    if backend == "ray" and plugin_sha256(agent.name):
        raise ValueError(f"--backend ray needs an agent its workers can import by module: {agent.name!r} is a file; "
                         f"put it on PYTHONPATH (or install it) and name it module:Class, or use --backend local")
    if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
        raise ValueError(f"repeats must be a whole number from 1 to {MAX_REPEATS} (MAX_REPEATS), got "
                         f"{str(repeats)[:40]!r}")
    variants = (cfg.variant,) if variants is None else tuple(variants)
    if not variants or len(set(variants)) != len(variants):
        raise ValueError(f"variants must be distinct and at least one, got {variants!r}")
    from ..diagnostics.mirror import check_variant

    for v in variants:
        check_variant(v)
    return variants


def _run_configuration(tasks, agent: AgentSpec, cfg: EpisodeConfig, desc: dict, task_source: str, task_hash,
                       variants: tuple, repeats: int, suite, suite_sha256, suite_pins,
                       sweep: bool = True) -> tuple[dict, list[str]]:
    """(the run's configuration, the warnings found before the run: :func:`collision_note` — when ``sweep`` —,
    :func:`pins_note`)."""
    # a frozen suite's tasks were swept when it was built (and its file is checked against its SHA-256): not again
    note = collision_note(tasks, cfg) if suite is None and sweep else None
    config = run_config(agent, cfg, task_source, task_hash)
    version = (desc.get("params") or {}).get("prompt_version")
    notes = [note] if note else []
    if suite is not None:
        config.update(suite=suite, suite_sha256=suite_sha256)
        differ = pin_differences(suite_pins or {}, cfg, version)
        if differ:
            config["suite_pins_differ"] = differ
            notes.append(pins_note(suite, differ))
    if repeats > 1:
        config["repeats"] = int(repeats)
    if version:  # a prompted agent: answers to another prompt are another run
        config["prompt_version"] = version
    if variants != (cfg.variant,):
        config["variants"] = list(variants)
    return config, notes


def _positive(name: str, v, whole: bool = False, zero: bool = False):
    """``v`` when it is a finite number above 0 (``zero``: or 0; ``whole``: a whole number), else ValueError naming
    ``name``; None passes."""
    import math

    if v is None:
        return None
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and (v >= 0 if zero else v > 0)
    if ok and whole:
        ok = float(v).is_integer()
    if not ok:
        kind = "a whole number" if whole else "a finite number"
        raise ValueError(f"{name} must be {kind} {'≥ 0' if zero else 'above 0'}, got {str(v)[:40]!r}")
    return v


def _check_concurrency(agent: AgentSpec, concurrency, max_rpm, max_tpm, max_cost) -> int:
    """The concurrency to run at (``concurrency``, or :func:`default_concurrency` for None); refuses (ValueError,
    one line) a count outside 1…:data:`MAX_CONCURRENCY`, budgets that are not positive numbers, and ``max_cost``
    for an API agent without prices (its every cost would be 0)."""
    if concurrency is None:
        concurrency = default_concurrency(agent.name)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= MAX_CONCURRENCY:
        raise ValueError(f"concurrency must be a whole number from 1 to {MAX_CONCURRENCY} (MAX_CONCURRENCY), got "
                         f"{str(concurrency)[:40]!r}")
    _positive("max_rpm", max_rpm)
    _positive("max_tpm", max_tpm)
    _positive("max_cost", max_cost, zero=True)
    from ..agents import API_AGENTS

    if max_cost is not None and agent.name in API_AGENTS and not (agent.kwargs.get("price_in")
                                                                  or agent.kwargs.get("price_out")):
        raise ValueError("--max-cost needs the agent's prices, or every cost is 0: --agent-arg price_in=USD "
                         "--agent-arg price_out=USD (per million prompt / completion tokens)")
    return int(concurrency)


def _episode_keys(tasks: list[Task], label: str, cfg: EpisodeConfig, variants: tuple, repeats: int) -> dict:
    """``{(task id, variant, repeat): episode key}`` of a run, in run order (repeat, task, variant)."""
    return {(t.id, v, k): episode_key(t.id, label, env_name(t, cfg), cfg.mode, cfg.seed, v, k)
            for k in range(repeats) for t in tasks for v in variants}


def _todo(tasks: list[Task], keys: dict, done: set, variants: tuple, repeats: int) -> list[tuple]:
    """The (task, variant, repeat) of every episode whose key is not ``done``, in run order."""
    return [(t, v, k) for k in range(repeats) for t in tasks for v in variants if keys[t.id, v, k] not in done]


@dataclass(frozen=True)
class PendingEpisodes:
    """What a run would do now (:func:`pending_episodes`): ``todo``, the (task, variant, repeat) of each episode to
    run, in run order; ``total`` episodes in the run (tasks × variants × repeats); ``done``, those already in the
    run directory that a resume skips; ``refusal``, the one line a resume would be refused with (the directory was
    made with another configuration; then ``done`` is 0), else None."""

    todo: tuple
    total: int
    done: int
    refusal: str | None = None


def pending_episodes(tasks: Iterable[Task], agent: AgentSpec, cfg: EpisodeConfig, run_dir: str | os.PathLike, *,
                     task_source: str, task_hash: str | None = None, limit: int | None = None,
                     variants: Sequence[str] | None = None, repeats: int = 1, retry_errors: bool = False,
                     suite: str | None = None, suite_sha256: str | None = None,
                     suite_pins: dict | None = None) -> PendingEpisodes:
    """The episodes :func:`run_eval` with the same arguments would run now, read without writing anything: every
    (task, variant, repeat) of the first ``limit`` tasks, less those whose latest record in ``run_dir`` (when it is
    a run directory) is a result — an ``api_error`` is run again, and with ``retry_errors`` every failure — as a
    resume does. The agent is built once (no request is made) for the name its records carry. A run directory whose
    stored configuration differs (outside the keys that may change) gives the refusal line instead of skipping."""
    import json

    from ..records import record_key
    from .results import config_diff, config_refusal, is_run_dir, read_config, read_records

    variants = _check_run_arguments(agent, cfg, "local", 1, variants, repeats)
    tasks = list(tasks)
    if limit is not None:
        tasks = tasks[: max(0, int(limit))]
    built = agent.validate()
    desc = built.describe() if hasattr(built, "describe") else {"agent": agent.name}
    keys = _episode_keys(tasks, desc.get("agent") or agent.name, cfg, variants, repeats)
    done: set = set()
    records = read_records(run_dir) if is_run_dir(run_dir) else []
    if records:
        stored = read_config(run_dir)
        old = stored.get("config", {})
        new, _ = _run_configuration(tasks, agent, cfg, desc, task_source, task_hash, variants, repeats, suite,
                                    suite_sha256, suite_pins, sweep=False)
        new = json.loads(json.dumps(new, default=str))
        if "collisions" in new and "collisions" not in old and "mode" in old:
            old = dict(old, collisions=False)  # a run made before walls ran without them (as RunStore reads it)
        diff = config_diff(old, new)
        if diff:
            return PendingEpisodes(tuple(_todo(tasks, keys, set(), variants, repeats)), len(keys), 0,
                                   config_refusal(run_dir, diff, old, new, stored.get("provenance")))
        done = {record_key(r) for r in records
                if not (retry_errors and is_failure(r)) and r.get("reason") not in RETRIED_ON_RESUME}
    todo = _todo(tasks, keys, done, variants, repeats)
    return PendingEpisodes(tuple(todo), len(keys), len(keys) - len(todo))


def run_eval(tasks: Iterable[Task], agent: AgentSpec, cfg: EpisodeConfig, run_dir: str | os.PathLike, *,
             task_source: str, task_hash: str | None = None, task_file: str | None = None,
             limit: int | None = None, workers: int | str = 1, backend: str = "local", progress: bool = True,
             retry_errors: bool = False, echo: bool = True,
             on_record: Callable[[dict], None] | None = None,
             variants: Sequence[str] | None = None, repeats: int = 1, suite: str | None = None,
             suite_sha256: str | None = None, suite_pins: dict | None = None, concurrency: int | None = None,
             max_rpm: float | None = None, max_tpm: float | None = None,
             max_cost: float | None = None) -> RunSummary:
    """Run ``agent`` on ``tasks`` (the first ``limit`` of them) and append one record per episode to
    ``run_dir/results.jsonl``.

    ``variants`` runs every task once per variant (``("", "mirror")``: plain and mirrored, FlipEval —
    ``spatialact eval --flip``); the records are told apart by their ``variant`` field and key. Default: the one
    variant of ``cfg``. Several variants are part of the run's configuration (``"variants"``).

    ``workers``: a count or ``"auto"`` (:func:`choose_workers`: never more workers than episodes to run; auto, one
    per :data:`EPISODES_PER_WORKER` episodes and usable CPU); ``RunSummary.workers`` says how many ran them.

    ``repeats`` (1 to :data:`MAX_REPEATS`) runs every episode that many times: repeat k > 0 has ``|r<k>`` at the
    end of its key, ``repeat: k`` in its record and an agent seeded ``episode_seed + k`` (an API agent asks its
    endpoint again: the repeat is part of its response cache key). ``repeats`` is in the configuration when above
    1 and may change on a resume (more repeats add episodes; finished ones are skipped, repeat by repeat).

    ``suite`` / ``suite_sha256``: the frozen suite the tasks came from and its file's SHA-256
    (``spatialact.taskgen.suite_info``), in the configuration (when given) and in every record's provenance.
    ``suite_pins``: the suite's pins; the ones this run does not follow (:func:`pin_differences`) are recorded in
    the configuration (``suite_pins_differ``) and warned about (not comparable with the suite's results).

    ``concurrency`` (1 to :data:`MAX_CONCURRENCY`; None: :func:`default_concurrency`, 16 for an API agent, else 1):
    how many episodes one process keeps going at once, their worlds stepped on one thread while their agents' calls
    wait for the model on threads of their own (:class:`~spatialact.evaluation.concurrent.Interleaver`); with
    ``workers`` or Ray each process runs its own ``concurrency``. An API agent's requests pass a request gate per
    process (``spatialact.agents.wire.RequestGate``): at most ``concurrency`` in flight, fewer while the endpoint
    rate-limits, fails or slows down (adaptive), within ``max_rpm`` requests and ``max_tpm`` tokens a minute
    (divided between the processes). The live worlds of a process are bounded by :func:`live_caps`. ``max_cost``
    (USD): once the cost recorded in the run directory reaches it, no episode starts and the run ends when those in
    progress are written (``RunSummary.stopped == "max_cost"``; resumable with a higher budget). The same seed gives
    the same records at any concurrency (keyed by episode; their order and timings aside) for an agent that
    answers the same to the same request. ``RunSummary.figures``: requests in flight at the peak, the adaptive
    limit, retries, tokens, cost, wall time (``spatialact.evaluation.progress.RunProgress.figures``).

    Before the run, :func:`collision_note` warns (stderr with ``echo``; ``RunSummary.notes``) about free-camera
    tasks whose ground truth goes through walls while collisions are on; the run goes on. Not for a frozen suite
    (``suite`` given): its builder left such tasks out.

    Checked before anything is written: the backend and workers, the agent (built once: ``AgentConfigError``)
    and every task (:class:`TaskNotRunnable`). Episodes already in the run directory are skipped, except those
    that ended in an ``api_error`` (and, with ``retry_errors``, every failure), so rerunning the same command
    resumes; a run directory made with a different configuration is refused (``RunConfigError`` naming the key
    that differs). ``echo`` prints each failure to stderr as it happens. Three connection failures in a row at
    the start raise :class:`EndpointUnreachable` naming the endpoint.
    """
    from .results import RunStore, provenance

    variants = _check_run_arguments(agent, cfg, backend, workers, variants, repeats)
    concurrency = _check_concurrency(agent, concurrency, max_rpm, max_tpm, max_cost)
    tasks = list(tasks)
    if limit is not None:
        tasks = tasks[: max(0, int(limit))]
    cfgs = {v: replace(cfg, variant=v) for v in variants}
    built = agent.validate()
    desc = built.describe() if hasattr(built, "describe") else {"agent": agent.name}
    label = desc.get("agent") or agent.name
    for c in cfgs.values():
        check_tasks(tasks, c, built)
    if backend == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ValueError("--backend ray needs Ray: pip install 'spatialact[ray]'") from None
    config, notes = _run_configuration(tasks, agent, cfg, desc, task_source, task_hash, variants, repeats, suite,
                                       suite_sha256, suite_pins)
    prov = provenance(task_file=task_file, agent=desc, seed=cfg.seed, suite=suite, suite_sha256=suite_sha256)
    store = RunStore(run_dir, config, prov)
    for line in notes if echo else ():  # once the run directory took the run (a refused resume says only that)
        print(f"spatialact: warning: {line}", file=sys.stderr, flush=True)
    try:
        if retry_errors:
            done = store.done_keys(include_errors=False)
        else:
            done = store.done_keys(retry_reasons=RETRIED_ON_RESUME)
        keys = _episode_keys(tasks, label, cfg, variants, repeats)
        todo = _todo(tasks, keys, done, variants, repeats)
        jobs = [(t, agent, cfgs[v], k) for t, v, k in todo]
        total = len(keys)
        n_workers = choose_workers(workers, len(jobs))
        plan = _plan(agent, cfg, concurrency, n_workers, max_rpm, max_tpm)
        if concurrency > 1:  # (kind, job, group): live worlds bounded by kind, reused by scene (group)
            from .episode import WorldPool

            jobs = [(world_kind(t, cfgs[v]), job, WorldPool.key(t, cfgs[v])) for (t, v, _), job in zip(todo, jobs)]
        spent = sum(float((r.get("usage") or {}).get("cost_usd") or 0.0) for r in store.records())
        bar = None
        if progress and jobs:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, initial=total - len(todo), desc=f"{label} {cfg.mode}", unit="ep",
                       dynamic_ncols=True)
        from .progress import RunProgress

        prog = RunProgress(bar, concurrency, n_workers, spent, max_cost)
        results = _results(backend, [] if prog.stop.is_set() else jobs, n_workers, plan, prog)
        prog.start()
        try:
            n_new, n_err = _store_results(results, store, agent, bar, echo, on_record, prog)
        finally:
            results.close()  # stopped early: the workers are stopped now, not at garbage collection
            prog.close()
            if bar is not None:
                bar.close()
        figures = prog.figures()
        failures = Counter(r["reason"] or "error" for r in (store.latest(k) for k in keys.values())
                           if r is not None and is_failure(r))
    finally:
        store.close()
    stopped = "max_cost" if prog.stop.is_set() and n_new + (total - len(todo)) < total else None
    return RunSummary(Path(run_dir), len(tasks), total - len(todo), n_new, n_err, dict(sorted(failures.items())),
                      n_workers, tuple(notes), int(repeats), concurrency, figures, stopped)
