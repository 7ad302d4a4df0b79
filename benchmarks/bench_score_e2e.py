"""`spatialact score` end to end against lmms-eval's own scorer, on the same answers.

Side by side in one run, on the same files:

* **spatialact**: ``spatialact score ANSWERS TASKS --json --no-progress`` (a subprocess: interpreter start-up,
  imports, task-file reading and decoding, reading, matching, parsing, batch scoring, writing the per-answer JSONL,
  the bootstrap summary — everything a user waits for), one worker. Cold: an empty task cache (``SPATIALACT_CACHE``
  pointing at a new folder: the task file is decoded and checked); warm: the cache has the file's scoring table.
  ``--before SRC`` runs the spatialact of another source tree (e.g. an export of main before a change) the same way
  in the same run.
* **lmms-eval, the generous way**: lmms-eval 0.7.3's ``manipulateeval`` from ``lmms_eval/tasks/spatialtreebench/
  metrics/rule_metrics.py`` (loaded by file path: the package itself pulls torch; ``pip install --no-deps
  lmms-eval==0.7.3``) called in-process on the same answers; only the calls are timed (each sample's ``hint`` —
  the task's ``to_lmms_extra_info``, stored as JSON text the way lmms-eval's docs carry it — decoded per sample, as
  lmms-eval does); its interpreter start-up, imports and the reading of the answer and hint files are not counted.

Both report wall time and CPU time (user + system of the process; for lmms-eval, of its loop): on a shared machine
the CPU time is the steadier figure.

Data: navigation tasks sampled from synthetic camera paths with the real task builder (``pairs_from_trajectory``;
1–4 steps each, stepped format) in two weights: light (the builder's own in-context example, about 2.6 KB a task)
and heavy (an in-context example 15 s earlier on the path, about 27 steps, and image paths: about 7 KB a task, the
weight of ``tasks from-trajectory`` files); and model-like answers: the ground truth with ±1 count noise on about a
third of the primitives, a dropped or added step now and then, written with symbols (lmms-eval reads only symbols)
or names, most bare, some in a fenced ```json block after a sentence, a few unreadable. Sizes:

1. ``--tasks`` answers to as many tasks (default 20 000 / 20 000), light (1a) and heavy (1b): lmms-eval, then
   spatialact cold and warm (``--before``: that tree first), then the fixed cost (one answer to one task:
   interpreter start-up and imports). ``--workers2``: also ``--workers 2``, cold.
2. ``--big`` answers to ``--big-tasks`` tasks (default 1 000 000 answers to 1 000 tasks, 16 distinct answer texts
   per task): spatialact with 1 and 2 workers (warm task cache); lmms-eval on the first ``--lmms-sample`` answers
   (its rate is flat in the file size).

Every process is pinned to one core with ``taskset`` where it exists (``--workers 2`` gets two), BLAS threads 1,
with its bytecode cached (``PYTHONPYCACHEPREFIX``; as an installed package would have it).
Generated files are kept in ``--workdir`` (default: a temporary folder) and reused when present.

Usage: python benchmarks/bench_score_e2e.py [--quick] [--tasks N] [--big N] [--big-tasks N] [--workdir DIR]
       [--skip-big] [--repeat R] [--before SRC] [--workers2]
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


sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import record  # noqa: E402

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


def make_tasks(n: int, heavy: bool = False) -> list:
    """``n`` navigation tasks from synthetic camera paths. Light (about 2.6 KB a task): the builder's own
    in-context example (a nearby frame). Heavy (about 7 KB, the weight of ``tasks from-trajectory`` files with
    their in-context examples and images): the example starts 15 s earlier on the path (a sequence of about 27
    steps, extracted as the builder extracts it) and the start, goal and example images are named."""
    from spatialact.tasks.trajectory_pairs import pairs_from_trajectory

    tasks, seed = [], 0
    while len(tasks) < n:
        path = camera_path(seed)
        got = pairs_from_trajectory(path, n=min(TASKS_PER_PATH, n - len(tasks)), seed=seed, max_seconds=2.0,
                                    id_prefix=f"cam{seed:03d}")
        tasks += [with_long_example(path, t) for t in got] if heavy else got
        seed += 1
    return tasks[:n]


EXAMPLE_GAP = 450  # frames between a heavy task's example and its start (15 s at 30 fps)


def with_long_example(path, task):
    """``task`` with an in-context example that starts EXAMPLE_GAP frames before its start (or after, near the
    path's beginning), and image paths (not read by scoring)."""
    from spatialact.tasks.extraction import extract_actions

    i = task.meta["start_frame"]
    e = i - EXAMPLE_GAP if i >= EXAMPLE_GAP else min(len(path) - 1, i + EXAMPLE_GAP)
    idx = np.arange(e, i + 1) if e <= i else np.arange(e, i - 1, -1)
    seq = extract_actions(path.select(idx), sizes=task.sizes, mode="metric").sequence
    img = f"images/{task.id}"
    ex = {"start_pose": path.poses[e].tolist(), "start_image": f"{img}-example.png", "sequence": seq.to_dict()}
    return task.with_(example=ex, start_image=f"{img}-start.png", goal_image=f"{img}-goal.png",
                      meta={**task.meta, "example_frame": int(e)})


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


def make_files(d: Path, n_tasks: int, n_answers: int, seed: int = 0, variants: int = 16, heavy: bool = False) -> dict:
    """tasks.jsonl, answers.jsonl (``{"task_id", "response"}``) and hints.jsonl (each task's lmms-eval extra_info
    as JSON text, ``{"task_id", "hint"}``) in ``d``; reused when they exist."""
    from spatialact.scorers import to_lmms_extra_info
    from spatialact.tasks import save_tasks

    d.mkdir(parents=True, exist_ok=True)
    files = {k: d / f"{k}.jsonl" for k in ("tasks", "answers", "hints")}
    if all(p.exists() for p in files.values()):
        return files
    t0 = time.perf_counter()
    tasks = make_tasks(n_tasks, heavy)
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
recs = []
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        if len(recs) >= limit:
            break
        recs.append(json.loads(line))
t1 = time.perf_counter()
c1 = time.process_time()
total = n = 0
for rec in recs:
    try:
        res = rm.manipulateeval(response=rec["response"], answer=None, extra_info=json.loads(hints[rec["task_id"]]))
        s = float(res["score"])
    except Exception:
        s = 0.0
    total += s
    n += 1
t2 = time.perf_counter()
print(json.dumps({"n": n, "mean": total / max(n, 1), "loop_s": t2 - t1, "loop_cpu_s": time.process_time() - c1,
                  "setup_s": t1 - t0}))
'''


def _taskset(cores: int) -> list[str]:
    if shutil.which("taskset") is None:
        return []
    avail = sorted(os.sched_getaffinity(0))
    return ["taskset", "-c", ",".join(str(c) for c in avail[:cores])]


#: lmms-eval's own environment, made by set-up (scripts/setup.sh): never the user's .venv.
LMMS_PYTHON = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".lmms-venv", "bin", "python")


def lmms_available() -> bool:
    """Whether lmms-eval's environment exists and holds the spatialtreebench metric file."""
    if not os.path.exists(LMMS_PYTHON):
        return False
    probe = ("import importlib.util, os, sys; s = importlib.util.find_spec('lmms_eval'); "
             "sys.exit(0 if s and os.path.exists(os.path.join(os.path.dirname(s.origin), 'tasks', "
             "'spatialtreebench', 'metrics', 'rule_metrics.py')) else 1)")
    return subprocess.run([LMMS_PYTHON, "-c", probe], capture_output=True).returncode == 0


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
    r = subprocess.run(_taskset(1) + [LMMS_PYTHON, "-c", LMMS_LOOP, str(files["answers"]), str(files["hints"]),
                                      str(limit)], capture_output=True, text=True, env=child_env())
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"lmms-eval loop failed:\n{r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


def run_spatialact(files: dict, out: Path, cache: Path, workers: int = 1, extra=(), src: str | None = None) -> dict:
    """``spatialact score`` as a process; ``cache``: its task cache folder (SPATIALACT_CACHE; a fresh, empty one
    is a cold run); ``src``: another spatialact source tree to run (``--before``), first on PYTHONPATH."""
    cmd = _taskset(max(1, workers)) + [sys.executable, "-c", _CHILD, "score", str(files["answers"]),
                                       str(files["tasks"]), "--json", "--no-progress", "--out", str(out),
                                       "--workers", str(workers), *extra]
    env = child_env(SPATIALACT_CACHE=str(cache))
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    c0 = _children_cpu()
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    cpu = _children_cpu() - c0
    if r.returncode != 0:
        raise SystemExit(f"spatialact score failed:\n{r.stderr}")
    s = json.loads(r.stdout)
    hwm = [ln for ln in r.stderr.splitlines() if ln.startswith("VmHWM_kB")]
    return {"wall_s": wall, "cpu_s": cpu, "n": s["counts"]["scored"], "mean": s["overall"]["mean"], "summary": s,
            "peak_mib": int(hwm[-1].split()[1]) / 1024 if hwm else float("nan")}


# `spatialact score` as its console script runs it, plus the process's own peak resident memory (VmHWM: the
# memory image after exec; getrusage would count this benchmark's memory, inherited over fork).
_CHILD = ("import sys\n"
          "from spatialact.cli.main import main\n"
          "rc = main(sys.argv[1:])\n"
          "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')]\n"
          "print('VmHWM_kB', hwm[0].split()[1] if hwm else 'nan', file=sys.stderr)\n"
          "sys.exit(rc)\n")


def _children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children: the steadier figure on a shared machine."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


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
    def line(name: str, r: dict, n: int, ref: float | None = None, ref_cpu: float | None = None) -> float:
        rate = n / r["wall_s"]
        s = f"  {name:44s} {r['wall_s']:8.2f} s  {rate:12,.0f} answers/s"
        if ref is not None:
            s += f"   {rate / ref:6.1f}x lmms-eval"
        if "cpu_s" in r:
            s += f"   (CPU {r['cpu_s']:.2f} s" + (f", {n / r['cpu_s'] / ref_cpu:.1f}x lmms-eval's CPU)" if ref_cpu
                                                   else ")")
        print(s, flush=True)
        return rate

    def first_run(self) -> None:
        a, work = self.a, self.work
        for heavy in (False, True):
            weight = "with long in-context examples, ~7 KB a task" if heavy else "~2.6 KB a task"
            print(f"\n1{'b' if heavy else 'a'}. {a.tasks:,} answers to {a.tasks:,} navigation tasks (1-4 steps, "
                  f"stepped; {weight})")
            files = make_files(work / f"e2e_{a.tasks}_{a.tasks}{'_heavy' if heavy else ''}", a.tasks, a.tasks,
                               heavy=heavy)
            print(f"  task file {files['tasks'].stat().st_size / 1e6:.0f} MB "
                  f"({files['tasks'].stat().st_size / a.tasks / 1e3:.1f} KB a task)")
            self.one_weight(files)

    def one_weight(self, files: dict) -> None:
        a, work = self.a, self.work
        ref = ref_cpu = None
        if self.has_lmms:
            r = self.best(lambda: run_lmms(files, a.tasks))
            ref, ref_cpu = r["n"] / r["loop_s"], r["n"] / r["loop_cpu_s"]
            print(f"  {'lmms-eval manipulateeval in-process (1 core)':44s} {r['loop_s']:8.2f} s  {ref:12,.0f} "
                  f"answers/s   (CPU {r['loop_cpu_s']:.2f} s; the calls alone: start-up, imports, file reading not "
                  f"counted; mean {r['mean']:.4f})")
        out = work / "scores.jsonl"
        sides = [("before", a.before), ("", None)] if a.before else [("", None)]
        for label, src in sides:
            name = f"spatialact score{' (' + label + ')' if label else ''}"
            cold = self.best(lambda: run_spatialact(files, out, fresh_cache(work), src=src))
            self.line(f"{name}, cold, 1 core", cold, cold["n"], ref, ref_cpu)
            cache = work / f"warm_cache{'_' + label if label else ''}"
            run_spatialact({**files, "answers": self.tiny["answers"]}, work / "s1.jsonl", cache, src=src)
            warm = self.best(lambda: run_spatialact(files, out, cache, src=src))
            self.line(f"{name}, warm, 1 core", warm, warm["n"], ref, ref_cpu)
            if not label:
                print(f"  overall mean (paper profile) {warm['mean']:.6f}; cold {cold['mean']:.6f}")
                kb = files["tasks"].stat().st_size / a.tasks / 1e3
                for state, r in (("cold", cold), ("warm (task cache)", warm)):
                    cpu = "cpu_s" in r and ref_cpu
                    record("bench_score_e2e.py", f"spatialact score, {state}, {a.tasks:,} answers to {a.tasks:,} "
                           f"tasks of {kb:.1f} KB, one worker, start-up counted ({'CPU' if cpu else 'wall'} time)",
                           r["n"] / (r["cpu_s"] if cpu else r["wall_s"]), "answers/s",
                           anchor="lmms-eval manipulateeval in-process, its calls only",
                           anchor_value=ref_cpu if cpu else ref,
                           aim="≥ 5× lmms-eval" if state == "cold" else "≥ 10× lmms-eval")
        if a.workers2:
            w2 = self.best(lambda: run_spatialact(files, out, fresh_cache(work), workers=2))
            self.line("spatialact score --workers 2, cold (2 cores)", w2, w2["n"], ref)
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
    ap.add_argument("--before", default=None, metavar="SRC",
                    help="also run the spatialact of another source tree (its src/ folder) in the same run")
    ap.add_argument("--workers2", action="store_true", help="also --workers 2 (cold) in the first run")
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
