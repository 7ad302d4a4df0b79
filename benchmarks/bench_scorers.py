"""Benchmark of the scorers: batch against the per-record loop, side by side in one run, and a large answer file.

1. Per-step scores: steps per second of ``score_steps_batch`` (numpy float64; torch CPU; torch CUDA when present)
   and of the per-record reference loop (``score_step``), on the same random steps; ratio batch / loop.
2. Episodes: ``score_episodes_batch`` against a loop of ``score_episode``.
3. ``spatialact score`` on a generated answer file of ``--answer-steps`` steps (default 10 million: 1 million
   10-step answers to 1 000 tasks), run as a subprocess; wall time, throughput and its peak memory (max RSS).
   (``bench_score_e2e.py`` compares the whole command with lmms-eval's scorer on the same answers.)

numpy runs on one core (BLAS threads are pinned to 1 before numpy is imported; torch CPU gets one thread too).
Not part of the test suite. Usage:
    python benchmarks/bench_scorers.py [--steps N] [--answer-steps N] [--quick] [--skip-file]
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.spatial.transform import Rotation  # noqa: E402

from spatialact.action_space import ActionSequence, Step, StepSizes  # noqa: E402
from spatialact.scorers import (KIND_CODES, score_episode, score_episodes_batch, score_step,  # noqa: E402
                                score_steps_batch, sequence_arrays)


sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import record  # noqa: E402

def best_of(f, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def bench_steps(n: int, n_loop: int) -> list[tuple[str, float]]:
    rng = np.random.default_rng(0)
    p = rng.normal(scale=0.2, size=(n, 3))
    g = rng.normal(scale=0.2, size=(n, 3))
    Rp = Rotation.random(n, random_state=1).as_matrix()
    Rg = Rotation.random(n, random_state=2).as_matrix()
    gp = rng.integers(-1, 2, n)
    gg = rng.integers(-1, 2, n)
    rows = []
    t_loop = best_of(lambda: [score_step(p[i], g[i], Rp[i], Rg[i], gp[i], gg[i], 0.0626) for i in range(n_loop)], 1)
    loop_rate = n_loop / t_loop
    rows.append(("per-record loop (score_step)", loop_rate))
    score_steps_batch(p[:1000], g[:1000], Rp[:1000], Rg[:1000], gp[:1000], gg[:1000])
    rows.append(("numpy batch, 1 core", n / best_of(lambda: score_steps_batch(p, g, Rp, Rg, gp, gg))))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        torch.set_num_threads(1)
        score_steps_batch(p[:1000], g[:1000], Rp[:1000], Rg[:1000], gp[:1000], gg[:1000], backend="torch",
                          device="cpu")
        rows.append(("torch CPU batch, 1 thread (incl. transfer)",
                     n / best_of(lambda: score_steps_batch(p, g, Rp, Rg, gp, gg, backend="torch", device="cpu"))))
        if torch.cuda.is_available():
            dev = "cuda"
            tp, tg, tRp, tRg = (torch.as_tensor(x, device=dev) for x in (p, g, Rp, Rg))
            score_steps_batch(tp, tg, tRp, tRg, gp, gg, backend="torch")

            def run_cuda():
                score_steps_batch(tp, tg, tRp, tRg, gp, gg, backend="torch")
                torch.cuda.synchronize()

            rows.append((f"torch CUDA batch ({torch.cuda.get_device_name(0)}, data on GPU)", n / best_of(run_cuda)))
    return rows, loop_rate


def _random_seq(rng, sizes, n_steps):
    steps = []
    for _ in range(n_steps):
        signed = rng.integers(-5, 6, 6) * (rng.random(6) < 0.5)
        steps.append(Step.from_signed(signed, int(rng.integers(0, 2))))
    return ActionSequence(tuple(steps), sizes)


def bench_episodes(n_ep: int, n_loop: int):
    rng = np.random.default_rng(1)
    sizes = StepSizes.manipulation()
    preds = [_random_seq(rng, sizes, int(rng.integers(1, 8))) for _ in range(n_ep)]
    gts = [_random_seq(rng, sizes, int(rng.integers(1, 8))) for _ in range(n_ep)]
    steps = sum(max(len(a), len(b)) for a, b in zip(preds, gts))
    t_loop = best_of(lambda: [score_episode(a, b, "manip") for a, b in zip(preds[:n_loop], gts[:n_loop])], 1)
    pa = [sequence_arrays(s) for s in preds]
    ga = [sequence_arrays(s) for s in gts]
    args = (np.concatenate([m for m, _ in pa]), np.concatenate([g for _, g in pa]), [len(s) for s in preds],
            np.concatenate([m for m, _ in ga]), np.concatenate([g for _, g in ga]), [len(s) for s in gts],
            np.full(n_ep, KIND_CODES["manip"]), sizes.translation)
    t_batch = best_of(lambda: score_episodes_batch(*args))
    return n_loop / t_loop, n_ep / t_batch, steps / n_ep


def make_answer_file(d: Path, total_steps: int, steps_per_answer: int = 10, n_tasks: int = 1_000):
    """Tasks (1 000, 10 steps each) and answers: total_steps / 10 answers, each a perturbed ground truth
    (a pool of one distinct answer text per task, written round-robin: 1 000 answers per task for 10M steps)."""
    from spatialact.tasks import Task, save_tasks

    rng = np.random.default_rng(2)
    n_ans = total_steps // steps_per_answer
    n_tasks = min(n_tasks, n_ans)
    tasks = []
    for i in range(n_tasks):
        kind = ("nav", "manip", "hand")[i % 3]
        sizes = StepSizes.for_kind(kind)
        gt = _random_seq(rng, sizes, steps_per_answer)
        if kind == "nav":
            gt = ActionSequence(tuple(s.with_gripper(None) for s in gt.steps), sizes)
        tasks.append(Task(id=f"t{i}", kind=kind, source=("proc", "droid", "egodex")[i % 3], start_pose=np.eye(4),
                          goal_pose=gt.to_poses()[-1], gt=gt, sizes=sizes, tags={"level": str(i % 4)}))
    save_tasks(tasks, d / "tasks.jsonl")
    # A pool of distinct answer texts per task (perturbed ground truths), written round-robin.
    pool = []
    for t in tasks:
        c = np.array([s.counts for s in t.gt.steps]).reshape(-1, 6, 2)
        signed = c[:, :, 0] - c[:, :, 1]
        noise = rng.integers(-1, 2, signed.shape) * (rng.random(signed.shape) < 0.3)
        seq = ActionSequence.from_signed_counts(signed + noise, t.sizes,
                                                gripper=[s.gripper if s.gripper is not None else -1
                                                         for s in t.gt.steps])
        pool.append(seq.to_text("stepped", names="symbol" if rng.random() < 0.5 else "name"))
    with open(d / "answers.jsonl", "w", encoding="utf-8") as f:
        for k in range(n_ans):
            i = k % n_tasks
            f.write(json.dumps({"task_id": f"t{i}", "response": pool[i]}, ensure_ascii=False) + "\n")
        f.write("not json at all\n")
    return n_ans, n_ans * steps_per_answer


# The scoring process reports its own peak resident memory. VmHWM belongs to the process's memory image after
# exec; getrusage's ru_maxrss would also count the benchmark's own memory, inherited over fork before exec.
_CHILD = ("import sys\n"
          "from spatialact.cli.main import main\n"
          "rc = main(sys.argv[1:])\n"
          "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
          "print('VmHWM_kB', hwm, file=sys.stderr)\n"
          "sys.exit(rc)\n")


def bench_file(total_steps: int):
    with tempfile.TemporaryDirectory() as td:
        d = Path(td)
        t = time.perf_counter()
        n_ans, n_steps = make_answer_file(d, total_steps)
        gen = time.perf_counter() - t
        size = (d / "answers.jsonl").stat().st_size
        print(f"  generated {n_ans:,} answers / {n_steps:,} steps ({size / 1e6:.0f} MB) in {gen:.0f} s", flush=True)
        t = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _CHILD, "score", str(d / "answers.jsonl"),
                            str(d / "tasks.jsonl"), "--json", "--no-progress"], capture_output=True, text=True)
        wall = time.perf_counter() - t
        if r.returncode != 0:
            print(r.stderr)
            raise SystemExit("score run failed")
        peak_kb = int(r.stderr.strip().splitlines()[-1].split()[1])
        s = json.loads(r.stdout)
        print(f"  spatialact score: {wall:.0f} s wall, {n_steps / wall:,.0f} steps/s, {n_ans / wall:,.0f} answers/s")
        print(f"  peak memory of the scoring process (VmHWM): {peak_kb / 1024:.0f} MiB")
        print(f"  overall {s['overall']['mean']:.4f} [{s['overall']['ci_low']:.4f}, {s['overall']['ci_high']:.4f}]"
              f" n={s['overall']['n']:,}; invalid_json {s['counts']['invalid_json']}")
        return wall, peak_kb


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=2_000_000, help="steps for the batch timing (default 2M)")
    ap.add_argument("--loop-steps", type=int, default=20_000, help="steps for the per-record loop (default 20k)")
    ap.add_argument("--answer-steps", type=int, default=10_000_000, help="steps in the answer file (default 10M)")
    ap.add_argument("--quick", action="store_true", help="small sizes (a 200k-step answer file)")
    ap.add_argument("--skip-file", action="store_true", help="skip the answer-file run")
    ap.add_argument("--only-file", action="store_true", help="only the answer-file run")
    a = ap.parse_args()
    if a.quick:
        a.steps, a.loop_steps, a.answer_steps = 300_000, 5_000, 200_000

    if a.only_file:
        print(f"3. spatialact score on a {a.answer_steps:,}-step answer file (chunks of 20,000 answers)")
        bench_file(a.answer_steps)
        return 0
    print(f"1. per-step scores, {a.steps:,} random steps (loop: {a.loop_steps:,}); edge-free random data")
    rows, loop_rate = bench_steps(a.steps, a.loop_steps)
    for name, rate in rows:
        print(f"  {name:58s} {rate / 1e6:8.3f} M steps/s   {rate / loop_rate:8.1f}x loop")
        if not name.startswith("per-record loop"):
            record("bench_scorers.py", f"per-step scores: {name}", rate, "steps/s", anchor="per-record Python loop",
                   anchor_value=loop_rate)

    print("2. episodes (manip, 1-7 steps each, counts), batch vs score_episode loop")
    loop_eps, batch_eps, mean_k = bench_episodes(20_000, 1_000)
    print(f"  score_episode loop     {loop_eps:10,.0f} episodes/s  ({loop_eps * mean_k:,.0f} steps/s)")
    print(f"  score_episodes_batch   {batch_eps:10,.0f} episodes/s  ({batch_eps * mean_k:,.0f} steps/s)   "
          f"{batch_eps / loop_eps:.1f}x loop")
    record("bench_scorers.py", "episodes: score_episodes_batch", batch_eps, "episodes/s",
           anchor="score_episode loop", anchor_value=loop_eps)

    if not a.skip_file:
        print(f"3. spatialact score on a {a.answer_steps:,}-step answer file (chunks of 20,000 answers)")
        bench_file(a.answer_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
