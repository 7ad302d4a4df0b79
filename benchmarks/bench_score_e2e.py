"""`spatialact score` end to end against lmms-eval's own scorer, on the same answers (issue J).

Both sides run as whole processes on the same files, side by side in one run:

* **spatialact**: ``spatialact score ANSWERS TASKS --json --no-progress`` (a subprocess: interpreter start-up,
  imports, task-file loading, reading, matching, parsing, batch scoring, writing the per-answer JSONL, the
  bootstrap summary — everything a user waits for).
* **lmms-eval**: a plain Python loop over the same answer file, as lmms-eval's ``process_results`` does it: each
  line's sample is matched to its task's ``hint`` (the task's ``to_lmms_extra_info``, stored as JSON text the way
  lmms-eval's docs carry it and decoded per sample, as lmms-eval does), then scored by lmms-eval 0.7.3's
  ``manipulateeval`` (every answer has several steps) from ``lmms_eval/tasks/spatialtreebench/metrics/
  rule_metrics.py``, loaded by file path (the package itself pulls torch; ``pip install --no-deps lmms-eval==0.7.3``).
  Its process also starts an interpreter and imports numpy and scipy; the hints are prepared beforehand and not
  timed (lmms-eval reads them from its dataset).

Data: navigation tasks sampled from synthetic camera paths with the real task builder
(``tasks_from_trajectory``; 1–4 steps each, stepped format), and model-like answers: the ground truth with ±1
count noise on about a third of the primitives, a dropped or added step now and then, written with symbols
(lmms-eval reads only symbols) or names, most bare, some in a fenced ```json block after a sentence, a few
unreadable. Sizes:

1. ``--tasks`` answers to as many tasks (default 20 000 / 20 000): spatialact cold (an empty task cache,
   ``SPATIALACT_CACHE`` pointing at a new folder: the task file is validated in full), then warm (the cache has
   seen the file: validation is skipped), each with 1 and 2 workers; lmms-eval once. Then the fixed cost (one
   answer to one task: interpreter start-up and imports).
2. ``--big`` answers to ``--big-tasks`` tasks (default 1 000 000 answers to 1 000 tasks, 16 distinct answer texts
   per task): spatialact with 1 and 2 workers (warm task cache); lmms-eval on the first ``--lmms-sample`` answers
   (its rate is flat in the file size).

Every process is pinned to one core with ``taskset`` where it exists (``--workers 2`` gets two), BLAS threads 1,
with its bytecode cached (``PYTHONPYCACHEPREFIX``; as an installed package would have it).
Generated files are kept in ``--workdir`` (default: a temporary folder) and reused when present.

Usage: python benchmarks/bench_score_e2e.py [--quick] [--tasks N] [--big N] [--big-tasks N] [--workdir DIR]
       [--skip-big] [--repeat R]
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

# ------------------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------------------
FRAMES = 3000          # frames per synthetic camera path (30 fps)
TASKS_PER_PATH = 1000  # tasks sampled from one path


def camera_path(seed: int, n: int = FRAMES):
    """A smooth random camera walk (positions and pan/tilt/roll integrated twice from white noise), C2W poses."""
    from scipy.spatial.transform import Rotation

    from spatialact.trajectories import Trajectory

    rng = np.random.default_rng([seed, 17])
    v = np.clip(np.cumsum(rng.normal(scale=0.002, size=(n, 3)), axis=0), -0.02, 0.02)
    ang = 0.2 * np.cumsum(np.cumsum(rng.normal(scale=0.0005, size=(n, 3)), axis=0), axis=0)
    T = np.tile(np.eye(4), (n, 1, 1))
    T[:, :3, :3] = Rotation.from_euler("YXZ", ang).as_matrix()
    T[:, :3, 3] = np.cumsum(v, axis=0)
    return Trajectory(poses=T, timestamps=np.arange(n) / 30.0, fps=30.0,
                      meta={"path": f"camera_{seed:03d}.txt", "kind": "nav", "source": "camera"})


def make_tasks(n: int) -> list:
    from spatialact.tasks.from_trajectory import tasks_from_trajectory

    tasks, seed = [], 0
    while len(tasks) < n:
        tasks += tasks_from_trajectory(camera_path(seed), n=min(TASKS_PER_PATH, n - len(tasks)), seed=seed,
                                       max_seconds=2.0, id_prefix=f"cam{seed:03d}")
        seed += 1
    return tasks[:n]


def answer_text(task, rng) -> str:
    """A model-like answer to ``task``: its ground truth with noise, as text."""
    from spatialact.action_space import ActionSequence

    c = np.array([s.counts for s in task.gt.steps]).reshape(-1, 6, 2)
    signed = c[:, :, 0] - c[:, :, 1]
    signed = signed + rng.integers(-1, 2, signed.shape) * (rng.random(signed.shape) < 0.3)
    u = rng.random()
    if u < 0.05 and len(signed) > 1:
        signed = signed[:-1]                                          # a step short
    elif u < 0.10:
        signed = np.vstack([signed, rng.integers(-2, 3, (1, 6))])     # a step too many
    if not np.abs(signed).sum():
        signed[0, 2] = 1
    seq = ActionSequence.from_signed_counts(signed, task.sizes)
    body = seq.to_text("stepped", names="symbol" if rng.random() < 0.8 else "name")
    u = rng.random()
    if u < 0.02:
        return "I would move the camera forward and then turn a little to the right."   # unreadable
    if u < 0.25:
        return "The goal view is ahead and to the right, so:\n```json\n" + body + "\n```"
    return body


def make_files(d: Path, n_tasks: int, n_answers: int, seed: int = 0, variants: int = 16) -> dict:
    """tasks.jsonl, answers.jsonl (``{"task_id", "response"}``) and hints.jsonl (each task's lmms-eval extra_info
    as JSON text, ``{"task_id", "hint"}``) in ``d``; reused when they exist."""
    from spatialact.scorers import to_lmms_extra_info
    from spatialact.tasks import save_tasks

    d.mkdir(parents=True, exist_ok=True)
    files = {k: d / f"{k}.jsonl" for k in ("tasks", "answers", "hints")}
    if all(p.exists() for p in files.values()):
        return files
    t0 = time.perf_counter()
    tasks = make_tasks(n_tasks)
    save_tasks(tasks, files["tasks"])
    with open(files["hints"], "w", encoding="utf-8") as f:
        for t in tasks:
            f.write(json.dumps({"task_id": t.id, "hint": json.dumps(to_lmms_extra_info(t))}) + "\n")
    rng = np.random.default_rng([seed, 3])
    # One distinct answer text per (task, variant); answers beyond the tasks cycle through `variants` per task.
    n_var = 1 if n_answers <= n_tasks else max(1, min(variants, -(-n_answers // n_tasks)))
    pool = [[answer_text(t, rng) for _ in range(n_var)] for t in tasks]
    order = rng.permutation(n_answers) % n_tasks if n_answers > n_tasks else rng.permutation(n_answers)
    seen = np.zeros(n_tasks, dtype=np.int64)  # answers so far per task: the variants are used in turn
    with open(files["answers"], "w", encoding="utf-8") as f:
        for i in order.tolist():
            t = tasks[i]
            f.write(json.dumps({"task_id": t.id, "response": pool[i][seen[i] % n_var]}, ensure_ascii=False) + "\n")
            seen[i] += 1
    print(f"  generated {n_tasks:,} tasks and {n_answers:,} answers in {time.perf_counter() - t0:.0f} s "
          f"({files['answers'].stat().st_size / 1e6:.0f} MB answers, {files['tasks'].stat().st_size / 1e6:.0f} MB "
          f"tasks)", flush=True)
    return files


# ------------------------------------------------------------------------------------------------------------
# The two scorers, each a whole process
# ------------------------------------------------------------------------------------------------------------
LMMS_LOOP = r'''
import importlib.util, json, os, sys, time
t0 = time.perf_counter()
spec = importlib.util.find_spec("lmms_eval")
path = os.path.join(os.path.dirname(spec.origin), "tasks", "spatialtreebench", "metrics", "rule_metrics.py")
mspec = importlib.util.spec_from_file_location("_lmms_rule_metrics", path)
rm = importlib.util.module_from_spec(mspec)
mspec.loader.exec_module(rm)
hints = {}
with open(sys.argv[2], encoding="utf-8") as f:
    for line in f:
        r = json.loads(line)
        hints[r["task_id"]] = r["hint"]
limit = int(sys.argv[3])
t1 = time.perf_counter()
total = n = 0
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        if n >= limit:
            break
        rec = json.loads(line)
        try:
            res = rm.manipulateeval(response=rec["response"], answer=None, extra_info=json.loads(hints[rec["task_id"]]))
            s = float(res["score"])
        except Exception:
            s = 0.0
        total += s
        n += 1
t2 = time.perf_counter()
print(json.dumps({"n": n, "mean": total / max(n, 1), "loop_s": t2 - t1, "setup_s": t1 - t0}))
'''


def _taskset(cores: int) -> list[str]:
    if shutil.which("taskset") is None:
        return []
    avail = sorted(os.sched_getaffinity(0))
    return ["taskset", "-c", ",".join(str(c) for c in avail[:cores])]


def lmms_available() -> bool:
    import importlib.util

    try:
        spec = importlib.util.find_spec("lmms_eval")
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None and os.path.exists(os.path.join(
        os.path.dirname(spec.origin), "tasks", "spatialtreebench", "metrics", "rule_metrics.py"))


def child_env(**extra) -> dict:
    """The environment of the measured processes: bytecode cached (as for an installed package; this machine
    sets PYTHONDONTWRITEBYTECODE, which makes every process compile its modules again) in a folder of the
    benchmark's own, BLAS on one thread."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    env.update(extra)
    return env


PYCACHE = os.path.join(tempfile.gettempdir(), f"spatialact-bench-pycache-{os.getuid()}")


def run_lmms(files: dict, limit: int) -> dict:
    t = time.perf_counter()
    r = subprocess.run(_taskset(1) + [sys.executable, "-c", LMMS_LOOP, str(files["answers"]), str(files["hints"]),
                                      str(limit)], capture_output=True, text=True, env=child_env())
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"lmms-eval loop failed:\n{r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


def run_spatialact(files: dict, out: Path, cache: Path, workers: int = 1, extra=()) -> dict:
    """``spatialact score`` as a process; ``cache``: its task cache folder (SPATIALACT_CACHE; a fresh, empty one
    is a cold run)."""
    cmd = _taskset(max(1, workers)) + [sys.executable, "-c", _CHILD, "score", str(files["answers"]),
                                       str(files["tasks"]), "--json", "--no-progress", "--out", str(out),
                                       "--workers", str(workers), *extra]
    env = child_env(SPATIALACT_CACHE=str(cache))
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"spatialact score failed:\n{r.stderr}")
    s = json.loads(r.stdout)
    hwm = [ln for ln in r.stderr.splitlines() if ln.startswith("VmHWM_kB")]
    return {"wall_s": wall, "n": s["counts"]["scored"], "mean": s["overall"]["mean"], "summary": s,
            "peak_mib": int(hwm[-1].split()[1]) / 1024 if hwm else float("nan")}


# `spatialact score` as its console script runs it, plus the process's own peak resident memory (VmHWM: the
# memory image after exec; getrusage would count this benchmark's memory, inherited over fork).
_CHILD = ("import sys\n"
          "from spatialact.cli.main import main\n"
          "rc = main(sys.argv[1:])\n"
          "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
          "print('VmHWM_kB', hwm[0].split()[1] if hwm else 'nan', file=sys.stderr)\n"
          "sys.exit(rc)\n")


def fresh_cache(work: Path) -> Path:
    """An empty task cache folder: nothing is known about any task file (a cold run)."""
    return Path(tempfile.mkdtemp(prefix="cold_cache_", dir=work))


class Bench:
    """Shared state of one benchmark run: the work folder, the warm task cache, the reporting helpers."""

    def __init__(self, a, work: Path):
        self.a, self.work = a, work
        self.has_lmms = lmms_available()
        self.warm_cache = work / "warm_cache"
        # one answer to one task through both scorers: bytecode compiled and cached before anything is timed
        self.tiny = make_files(work / "e2e_1_1", 1, 1)
        run_spatialact(self.tiny, work / "s1.jsonl", self.warm_cache)
        if self.has_lmms:
            run_lmms(self.tiny, 1)

    def prime(self, files: dict) -> None:
        """The task file seen once (its verdict cached), with a one-line answer file."""
        run_spatialact({**files, "answers": self.tiny["answers"]}, self.work / "s1.jsonl", self.warm_cache)

    def best(self, f) -> dict:
        runs = [f() for _ in range(max(1, self.a.repeat))]
        return min(runs, key=lambda r: r["wall_s"])

    @staticmethod
    def line(name: str, r: dict, n: int, ref: float | None = None) -> float:
        rate = n / r["wall_s"]
        s = f"  {name:44s} {r['wall_s']:8.2f} s  {rate:12,.0f} answers/s"
        if ref is not None:
            s += f"   {rate / ref:6.1f}x lmms-eval"
        print(s, flush=True)
        return rate

    def first_run(self) -> None:
        a, work = self.a, self.work
        print(f"\n1. {a.tasks:,} answers to {a.tasks:,} navigation tasks (1-4 steps, stepped)")
        files = make_files(work / f"e2e_{a.tasks}_{a.tasks}", a.tasks, a.tasks)
        ref = None
        if self.has_lmms:
            r = self.best(lambda: run_lmms(files, a.tasks))
            ref = self.line("lmms-eval manipulateeval loop (1 core)", r, r["n"])
            print(f"  {'':44s} (loop alone {r['n'] / r['loop_s']:,.0f} answers/s; start-up and hints "
                  f"{r['setup_s']:.2f} s; mean {r['mean']:.4f})")
        out = work / "scores.jsonl"
        cold = self.best(lambda: run_spatialact(files, out, fresh_cache(work)))
        self.line("spatialact score, cold task cache (1 core)", cold, cold["n"], ref)
        self.prime(files)
        warm = self.best(lambda: run_spatialact(files, out, self.warm_cache))
        self.line("spatialact score, warm task cache (1 core)", warm, warm["n"], ref)
        w2 = self.best(lambda: run_spatialact(files, out, fresh_cache(work), workers=2))
        self.line("spatialact score --workers 2, cold (2 cores)", w2, w2["n"], ref)
        w2w = self.best(lambda: run_spatialact(files, out, self.warm_cache, workers=2))
        self.line("spatialact score --workers 2, warm (2 cores)", w2w, w2w["n"], ref)
        print(f"  overall mean (paper profile) {warm['mean']:.4f}")
        fixed = self.best(lambda: run_spatialact(self.tiny, work / "s1.jsonl", self.warm_cache))
        print(f"  {'fixed cost: one answer to one task (start-up, imports)':44s} {fixed['wall_s']:8.2f} s")

    def big_run(self) -> None:
        a, work = self.a, self.work
        print(f"\n2. {a.big:,} answers to {a.big_tasks:,} tasks ({a.variants} distinct answer texts per task at most)")
        files = make_files(work / f"e2e_{a.big_tasks}_{a.big}_v{a.variants}", a.big_tasks, a.big, variants=a.variants)
        ref = None
        if self.has_lmms:
            r = self.best(lambda: run_lmms(files, a.lmms_sample))
            ref = r["n"] / r["wall_s"]
            print(f"  {'lmms-eval loop (1 core), first ' + format(r['n'], ',') + ' answers':44s}"
                  f" {r['wall_s']:8.2f} s  {ref:12,.0f} answers/s   (all {a.big:,}: ~{a.big / ref:,.0f} s)")
        out = work / "scores_big.jsonl"
        self.prime(files)
        r1 = self.best(lambda: run_spatialact(files, out, self.warm_cache, workers=1))
        self.line("spatialact score (1 core)", r1, r1["n"], ref)
        r2 = self.best(lambda: run_spatialact(files, out, self.warm_cache, workers=2))
        self.line("spatialact score --workers 2 (2 cores)", r2, r2["n"], ref)
        print(f"  peak memory of the scoring process (VmHWM): {r1['peak_mib']:.0f} MiB (1 worker), "
              f"{r2['peak_mib']:.0f} MiB (main process of 2 workers); answer file "
              f"{files['answers'].stat().st_size / 2**20:.0f} MiB")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=20_000, help="tasks, and answers to them (default 20 000)")
    ap.add_argument("--big", type=int, default=1_000_000, help="answers in the large run (default 1 000 000)")
    ap.add_argument("--big-tasks", type=int, default=1_000, help="tasks in the large run (default 1 000)")
    ap.add_argument("--lmms-sample", type=int, default=50_000,
                    help="answers lmms-eval scores in the large run (its rate is flat in the size; default 50 000)")
    ap.add_argument("--variants", type=int, default=16,
                    help="distinct answer texts per task in the large run (default 16; the parser memoises steps)")
    ap.add_argument("--quick", action="store_true", help="small sizes: 2 000 / 2 000 and 100 000 / 1 000")
    ap.add_argument("--skip-big", action="store_true", help="only the first run")
    ap.add_argument("--only-big", action="store_true", help="only the large run")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement; the best is reported")
    ap.add_argument("--workdir", default=None, help="keep the generated files here (reused when present)")
    a = ap.parse_args()
    if a.quick:
        a.tasks, a.big, a.lmms_sample = 2_000, 100_000, 10_000
    tmp = None
    if a.workdir is None:
        tmp = tempfile.TemporaryDirectory()
        work = Path(tmp.name)
    else:
        work = Path(a.workdir)
    try:
        b = Bench(a, work)
        if not b.has_lmms:
            print("lmms-eval is not installed (pip install --no-deps lmms-eval==0.7.3): its side is skipped")
        print(f"python {sys.version.split()[0]}, {len(os.sched_getaffinity(0))} cores available; every process "
              f"pinned ({'taskset' if _taskset(1) else 'no taskset: not pinned'}), BLAS threads 1")
        if not a.only_big:
            b.first_run()
        if not a.skip_big:
            b.big_run()
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
