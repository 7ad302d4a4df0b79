"""Worker processes of `spatialact eval`, measured side by side in one run (not part of the tests).

Why `--workers 2` can be slower than 1 (20 navigation episodes: 12.8 s against 9.6 s as once measured): a worker is a
fresh interpreter (spawn: a forked PyBullet or GL context is not safe) that imports spatialact (about 0.5 s) and
then runs a cold first episode — the GL context, the shaders, the texture mipmaps — which one process pays once
and every worker pays again; the episodes themselves are CPU-bound (PyBullet and Mesa's llvmpipe, which already
renders on every core), so with two CPUs, or CPUs other programs use, two workers share what one had. Task records
and frames travel between processes in milliseconds (measured below). Hence ``--workers auto``: one worker per
``EPISODES_PER_WORKER`` (16) episodes and at most one per usable CPU; and each worker's llvmpipe gets its share
of the CPUs (``LP_NUM_THREADS``), not one thread per CPU each.

Prints, for the renderers asked (default tiny and auto) and worker counts 1, 2 and auto:
  * the parts of a worker's start: a bare interpreter, importing the runner, a cold and a warm episode in a fresh
    process, pickling one task record and one episode's frames;
  * per run: wall time, CPU seconds (this process + workers), the time to the first record, and the ratios to one
    worker (wall and CPU) side by side. Nothing is asserted: the ratios depend on the machine and its load, which
    is printed (the load average and the usable CPUs).

Usage: .venv/bin/python benchmarks/bench_workers.py [--episodes 20] [--renderers tiny,auto] [--workers 1,2,auto]
       [--quick]
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import shutil
import subprocess
import sys
import tempfile
import time

_WORKER = r"""
import json, sys, time
t0 = time.perf_counter()
from spatialact.evaluation.runner import AgentSpec, _run_one  # what unpickling a job imports in a worker
from spatialact.evaluation.episode import EpisodeConfig
from spatialact.tasks import Task  # a job carries the Task itself
t1 = time.perf_counter()
tasks = [Task.from_dict(r) for r in json.load(open(sys.argv[2]))]
cfg, spec = EpisodeConfig(renderer=sys.argv[1]), AgentSpec("oracle")
_run_one(tasks[0], spec, cfg)
t2 = time.perf_counter()
_run_one(tasks[1], spec, cfg)
print(t1 - t0, t2 - t1, time.perf_counter() - t2)
"""


from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import record  # noqa: E402

def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def _timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - t, out


def worker_start_parts(renderers) -> None:
    """What a worker costs before its episodes run at full speed, measured in fresh interpreters as a worker starts:
    the imports that unpickling a job brings, then a first episode (its own imports: PyBullet, the environments, the
    GL context) against the next one."""
    import json

    from spatialact.evaluation.episode import EpisodeConfig, run_episode
    from spatialact.evaluation.runner import AgentSpec
    from spatialact.taskgen.suites import builtin_suite

    py = sys.executable
    bare, _ = _timed([py, "-c", "pass"])
    print(f"a worker's start (fresh interpreters; a bare one takes {bare:.2f} s):")
    tasks = builtin_suite("nav:2", seed=0)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([t.to_dict() for t in tasks], f)
    try:
        for r in renderers:
            _, out = _timed([py, "-c", _WORKER, r, f.name])
            imp, first, warm = (float(x) for x in out.split()[-3:])
            print(f"  renderer {r}: imports {imp:.2f} s, first episode {first:.2f} s, the next {warm:.2f} s: a "
                  f"worker costs {imp + first - warm:.2f} s more than one more episode in a warm process "
                  f"({(imp + first - warm) / warm:.1f} episodes' worth)")
    finally:
        os.unlink(f.name)
    rec = tasks[0].to_dict()
    s = time.perf_counter()
    blob = pickle.dumps(rec)
    pickle.loads(blob)
    task_s = time.perf_counter() - s
    _, frames = run_episode(tasks[0], AgentSpec("oracle").build(tasks[0].id, 0),
                            EpisodeConfig(renderer="tiny", width=384, height=384))
    s = time.perf_counter()
    fblob = pickle.dumps(dict(frames.items()))
    pickle.loads(fblob)
    print(f"  pickling a task record ({len(blob) / 1024:.1f} KiB) {task_s * 1e3:.2f} ms; an episode's frames at 384² "
          f"({len(fblob) / 2 ** 20:.2f} MiB) {(time.perf_counter() - s) * 1e3:.2f} ms")


def run_once(tasks, renderer: str, workers, root: str) -> dict:
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.runner import AgentSpec, run_eval

    out = os.path.join(root, f"{renderer}-{workers}")
    shutil.rmtree(out, ignore_errors=True)
    first = []
    c0, t0 = _cpu(), time.perf_counter()
    summary = run_eval(tasks, AgentSpec("oracle"), EpisodeConfig(renderer=renderer), out, task_source="bench",
                       workers=workers, progress=False, on_record=lambda r: first or first.append(time.perf_counter()))
    wall = time.perf_counter() - t0
    return {"wall": wall, "cpu": _cpu() - c0, "first": first[0] - t0, "workers": summary.workers}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--episodes", type=int, default=20)
    ap.add_argument("--renderers", default="tiny,auto")
    ap.add_argument("--workers", default="1,2,auto")
    ap.add_argument("--quick", action="store_true", help="8 episodes, the tiny renderer")
    args = ap.parse_args()
    if args.quick:
        args.episodes, args.renderers = 8, "tiny"
    from spatialact.evaluation.runner import EPISODES_PER_WORKER, usable_cpus
    from spatialact.taskgen.suites import builtin_suite

    renderers = args.renderers.split(",")
    counts = [w if w == "auto" else int(w) for w in args.workers.split(",")]
    print(f"usable CPUs {usable_cpus()}, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{args.episodes} navigation episodes (oracle agent); auto = one worker per {EPISODES_PER_WORKER} "
          f"episodes, at most one per usable CPU")
    worker_start_parts(renderers)
    tasks = builtin_suite(f"nav:{args.episodes}", seed=0)
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as root:
        for r in renderers:
            rows = [(w, run_once(tasks, r, w, root)) for w in counts]
            base = next((m for w, m in rows if w == 1), rows[0][1])
            print(f"\nrenderer {r}:")
            print(f"  {'workers':>8} {'used':>4} {'wall s':>7} {'cpu s':>7} {'first s':>7} {'wall/1':>7} {'cpu/1':>6}")
            for w, m in rows:
                record("bench_workers.py", f"eval wall time, {args.episodes} nav episodes, renderer {r}, --workers {w}"
                       f" ({m['workers']} used)", m["wall"], "s", anchor="--workers 1", anchor_value=base["wall"],
                       higher_is_better=False)
                print(f"  {str(w):>8} {m['workers']:>4} {m['wall']:7.2f} {m['cpu']:7.2f} {m['first']:7.2f} "
                      f"{m['wall'] / base['wall']:7.2f} {m['cpu'] / base['cpu']:6.2f}")


if __name__ == "__main__":
    main()
