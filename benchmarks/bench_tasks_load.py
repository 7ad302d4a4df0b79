"""Task files loaded per second: the new loader (compiled schema checks) against the jsonschema validator.

One run, side by side, on the same file of real task records (``pairs_from_trajectory`` on smooth camera paths,
written by ``save_tasks``; ~2 KB a line):

* ``jsonschema``: what the loader did before (parse, ``jsonschema`` Draft 2020-12 validation, the semantic checks,
  ``Task.from_dict``), on a subset of the lines (it is slow);
* ``cold``: ``load_tasks(path, cache=False)`` — parse, compiled schema checks, semantic checks, build Tasks;
* ``verdict``: a new process loading a file it validated before (the on-disk verdict cache; validation skipped);
* ``memo``: a second load in the same process (read + SHA-256 of the file, the parsed tasks reused).

Also the cost of each stage per task, so a regression can be located. Best of several passes each, in CPU time of
this process (the machine may be shared); compare the ratios. Not part of the test suite.

Usage: python benchmarks/bench_tasks_load.py [--n 5000]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import best, record  # noqa: E402

from traj_helpers import smooth_poses  # noqa: E402

from spatialact.tasks import Task, clear_task_cache, load_tasks, save_tasks, task_schema  # noqa: E402
from spatialact.jsonline import fast_loads  # noqa: E402
from spatialact.tasks.validation import schema_validator, semantic_problems  # noqa: E402
from spatialact.tasks import pairs_from_trajectory  # noqa: E402
from spatialact.trajectories import Trajectory  # noqa: E402


def build_tasks(n: int) -> list[Task]:
    """``n`` distinct tasks from several smooth camera paths (real builder output)."""
    out: list[Task] = []
    seed = 0
    while len(out) < n:
        P, t = smooth_poses(240, 30.0, seed=seed, scale=0.8)
        tr = Trajectory(P, t, 30.0, meta={"source": "tum", "path": f"/data/seq{seed:03d}.txt"})
        # every other path without the example (the three-image prompt): lines of 1.5-3 KB, ~2 KB on average
        out += pairs_from_trajectory(tr, n=min(400, n - len(out)), seed=seed, max_motion=0.8, example=seed % 2 == 1)
        seed += 1
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000, help="tasks in the file (default 5000)")
    ap.add_argument("--n-jsonschema", type=int, default=300, help="lines the jsonschema loop validates (default 300)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as d:
        os.environ["SPATIALACT_CACHE"] = str(Path(d) / "cache")
        tasks = build_tasks(args.n)
        path = save_tasks(tasks, Path(d) / "tasks.jsonl")
        lines = path.read_bytes().splitlines()
        n = len(lines)
        size = path.stat().st_size
        print(f"{n} tasks, {size / n:.0f} bytes a line on average; JSON parser: "
              f"{'orjson' if importlib.util.find_spec('orjson') else 'json (standard library)'}")

        import jsonschema

        reference = jsonschema.Draft202012Validator(task_schema())
        sub = lines[: args.n_jsonschema]

        def old_loader():
            for raw in sub:
                rec = json.loads(raw)
                if next(reference.iter_errors(rec), None) is None and not semantic_problems(rec):
                    Task.from_dict(rec)

        t_old = best(old_loader, 2) / len(sub)
        t_cold = best(lambda: load_tasks(path, cache=False), 3) / n

        def from_verdict():
            clear_task_cache()  # what a new process sees: no memo, the verdict on disk
            load_tasks(path)

        load_tasks(path)  # writes the verdict
        t_verdict = best(from_verdict, 3) / n
        load_tasks(path)
        t_memo = best(lambda: load_tasks(path), 5) / n

        rows = [("jsonschema (before)", t_old), ("new loader, cold", t_cold),
                ("new loader, verdict on disk", t_verdict), ("new loader, memo (same process)", t_memo)]
        print(f"\n{'loader':34s} {'tasks/s':>12s} {'µs/task':>10s} {'vs jsonschema':>14s}")
        for name, t in rows:
            print(f"{name:34s} {1 / t:12,.0f} {t * 1e6:10.1f} {t_old / t:13.0f}x")
        record("bench_tasks_load.py", f"load_tasks, cold (full validation), {size / n / 1e3:.1f} KB tasks",
               1 / t_cold, "tasks/s", anchor="jsonschema Draft 2020-12 validation loop", anchor_value=1 / t_old)
        record("bench_tasks_load.py", "load_tasks, verdict cached on disk (a new process)", 1 / t_verdict,
               "tasks/s", anchor="jsonschema Draft 2020-12 validation loop", anchor_value=1 / t_old)

        import gc

        loads = fast_loads(lambda raw: json.loads(raw.decode("utf-8")))  # the loader's decoding (spatialact.jsonline)
        gc.disable()  # as the loader does while it parses
        recs = [loads(raw) for raw in lines]
        compiled = schema_validator()
        stages = [
            ("parse JSON", lambda: [loads(raw) for raw in lines]),
            ("schema checks (compiled)", lambda: [compiled.is_valid(r) for r in recs]),
            ("semantic checks (poses batched)", lambda: [semantic_problems(r, poses=False) for r in recs]),
            ("Task.from_dict", lambda: [Task.from_dict(r) for r in recs]),
        ]
        print(f"\n{'stage (cold load)':34s} {'µs/task':>10s}")
        for name, fn in stages:
            print(f"{name:34s} {best(fn, 3) / n * 1e6:10.1f}")
        t_js = best(lambda: [reference.is_valid(r) for r in recs[: args.n_jsonschema]], 2) / len(sub)
        print(f"{'schema checks (jsonschema)':34s} {t_js * 1e6:10.1f}")


if __name__ == "__main__":
    main()
