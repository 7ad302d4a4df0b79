"""Task building from a camera path, without images: tasks per second.

Measures, on one core:
- ``pairs_from_trajectory`` (pairs sampled, ground truth extracted by closed-loop quantisation, in-context example
  extracted, tasks made) on ``examples/camera_walk.txt`` (600 frames, TUM format) and on a 20 000-frame walk;
- the whole ``spatialact tasks from-trajectory --no-images --no-scene`` path in-process (``build_trajectory_tasks``:
  the above, plus every record validated against the task schema and written).

``--against SRC``: the same measurement run in a second process on another source tree (e.g. a checkout of an
earlier commit: ``git worktree add /tmp/old <commit>``, then ``--against /tmp/old/src``), printed side by side
with the ratio — the before/after of a change measured in one run.

Usage: python benchmarks/bench_tasks_build.py [--quick] [--against SRC] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _walk(n: int):
    """A smooth, seeded walk (C2W poses, metres, 30 Hz) of ``n`` frames with a slow pan: a long camera path."""
    import numpy as np

    from spatialact.geometry import ptr_to_matrix
    from spatialact.trajectories import Trajectory

    rng = np.random.default_rng(0)
    t = np.arange(n) / 30.0
    heading = np.cumsum(rng.normal(0, 0.01, n))
    pos = np.cumsum(np.stack([np.cos(heading), np.sin(heading), np.zeros(n)], 1) * 0.01, axis=0)
    P = np.tile(np.eye(4), (n, 1, 1))
    base = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])  # camera looking along +Y, world +Z up
    P[:, :3, :3] = np.einsum("ij,njk->nik", base, ptr_to_matrix(heading, np.zeros(n), np.zeros(n)))
    P[:, :3, 3] = pos + [0, 0, 1.5]
    return Trajectory(poses=P, timestamps=t, fps=30.0, meta={"source": "walk", "path": "walk"})


def _rate(fn, n_tasks_hint: int, repeat: int) -> tuple[float, int]:
    best, made = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        made = fn()
        best = min(best, time.perf_counter() - t0)
    return made / best, made


def measure(quick: bool) -> dict:
    from spatialact.taskgen import build_trajectory_tasks
    from spatialact.tasks import pairs_from_trajectory
    from spatialact.trajectories import load_trajectory

    n = 200 if quick else 1000
    repeat = 2 if quick else 3
    walk_file = ROOT / "examples" / "camera_walk.txt"
    cam = load_trajectory(walk_file)
    long = _walk(20_000)
    pairs_from_trajectory(cam, n=10)  # warm imports and caches
    out = {}
    out["pairs_from_trajectory, camera_walk.txt (600 frames)"] = _rate(
        lambda: len(pairs_from_trajectory(cam, n=n, seed=0)), n, repeat)
    out["pairs_from_trajectory, 20 000-frame walk"] = _rate(
        lambda: len(pairs_from_trajectory(long, n=n, seed=0)), n, repeat)
    with tempfile.TemporaryDirectory() as d:
        def build():
            return len(build_trajectory_tasks(walk_file, Path(d) / "t.jsonl", n=n, images=False, scene=False).tasks)
        out["build_trajectory_tasks (validated, written), camera_walk.txt"] = _rate(build, n, repeat)
    return {k: {"tasks_per_s": r, "tasks": m} for k, (r, m) in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--against", metavar="SRC", help="another source tree measured in the same run")
    ap.add_argument("--json", action="store_true", help="print the measurement as JSON (used by --against)")
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    here = measure(a.quick)
    if a.json:
        print(json.dumps(here))
        return
    other = None
    if a.against:
        env = dict(os.environ, PYTHONPATH=str(Path(a.against).resolve()))
        cmd = [sys.executable, __file__, "--json"] + (["--quick"] if a.quick else [])
        other = json.loads(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from figures import record

    for k, v in here.items():
        o = other[k]["tasks_per_s"] if other else None
        record("bench_tasks_build.py", f"tasks built without images: {k}", v["tasks_per_s"], "tasks/s",
               anchor=f"the same, source tree {a.against}" if other else None, anchor_value=o,
               aim="≥ 1,000 tasks/s")
    print(f"{'measurement':62s} {'tasks/s':>9s}" + (f" {'against':>9s} {'ratio':>6s}" if other else ""))
    for k, v in here.items():
        line = f"{k:62s} {v['tasks_per_s']:9.0f}"
        if other:
            o = other[k]["tasks_per_s"]
            line += f" {o:9.0f} {v['tasks_per_s'] / o:5.2f}×"
        print(line)


if __name__ == "__main__":
    main()
