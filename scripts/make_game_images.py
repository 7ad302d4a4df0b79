"""Make the README's game images: a Doom level recorded, a task built from it, the oracle run closed-loop in the game.

Runs four spatialact commands (printed as run, so they can be repeated by hand) and writes into docs/images:

* ``game_start.png``, ``game_goal.png``, ``game_final.png``: the start view, the goal view and the view where the
  oracle's closed-loop episode ended, as the run stored them (``<run>/frames``; the game renders 640×480 and eval
  stores them at ``--size`` 480×480, resized here to 320×240, the game's 4:3 aspect);
* ``game_path.png``: the level's top view (its line segments from the WAD: solid walls black, two-sided lines grey)
  with the explorer's walk, the task's ground truth and the path the oracle walked in the game.

The task shown is the oracle's successful episode with the longest path. Everything is deterministic (the explorer's
seed, the task builder, the oracle), so the same vizdoom gives the same images.

Usage: .venv/bin/python scripts/make_game_images.py [--work scratch/game_images] [--out docs/images]
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
from pathlib import Path

import numpy as np
from PIL import Image

MAP, SEED, SECONDS, N_TASKS, SIZE = "MAP01", 0, 20, 10, 480
SHOWN = (320, 240)  # the game's 4:3


def _run(args: list[str]) -> None:
    from spatialact.cli.main import main

    print("spatialact " + shlex.join(args), flush=True)
    code = main(args)
    if code != 0:
        raise SystemExit(f"spatialact {args[0]} failed (exit {code})")


def _top_view(walk, task, record, out: Path) -> None:
    """The level's line segments with the walk, the ground truth and the executed path (metres, x east, y north)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    from spatialact.envs.doom.wad import map_lines, resolve_wad

    seg, one_sided, _ = map_lines(resolve_wad(task.scene["wad"]), task.scene["map"])
    seg = seg / 32.0  # 1 map unit = 1/32 m
    fig, ax = plt.subplots(figsize=(6.4, 4.8), dpi=100)
    ax.add_collection(LineCollection(seg[~one_sided].reshape(-1, 2, 2), colors="0.75", linewidths=0.7))
    ax.add_collection(LineCollection(seg[one_sided].reshape(-1, 2, 2), colors="black", linewidths=1.2))
    xy = walk.poses[:, :2, 3]
    ax.plot(xy[:, 0], xy[:, 1], color="tab:blue", lw=1, alpha=0.5, label=f"explorer's walk ({SECONDS} s)")
    ran = np.asarray(record["pred_poses"])[:, :2, 3]
    ax.plot(ran[:, 0], ran[:, 1], "-", color="tab:red", lw=4, alpha=0.5, label="oracle, closed-loop in the game")
    gt = task.gt_poses()[:, :2, 3]
    ax.plot(gt[:, 0], gt[:, 1], "--", color="tab:green", lw=1.5, label="ground truth")
    ax.plot(*gt[0], "o", color="black", ms=6, label="start")
    ax.plot(*gt[-1], "*", color="tab:green", ms=12, label="goal")
    lo, hi = xy.min(0) - 4.0, xy.max(0) + 4.0
    ax.set_xlim(lo[0], hi[0])
    ax.set_ylim(lo[1], hi[1])
    ax.set_aspect("equal")
    ax.set_xlabel("x (m, east)")
    ax.set_ylabel("y (m, north)")
    ax.set_title(f"freedoom2.wad {task.scene['map']}: top view")
    ax.legend(loc="best", fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", default="scratch/game_images", help="folder for the recording, tasks and run")
    ap.add_argument("--out", default="docs/images")
    args = ap.parse_args(argv)
    work, out = Path(args.work), Path(args.out)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    out.mkdir(parents=True, exist_ok=True)
    walk_dir, tasks_file, run = work / "map01", work / "game.jsonl", work / "oracle"
    _run(["game", "record", "--map", MAP, "--seconds", str(SECONDS), "--seed", str(SEED), "--out", str(walk_dir)])
    _run(["tasks", "from-trajectory", str(walk_dir), "--n", str(N_TASKS), "--out", str(tasks_file)])
    _run(["eval", "--tasks", str(tasks_file), "--mode", "closed-loop", "--agent", "oracle", "--size", str(SIZE),
          "--out", str(run), "--no-progress"])

    from spatialact.evaluation.results import read_records
    from spatialact.tasks import load_tasks
    from spatialact.trajectories import load_trajectory

    records = read_records(run)
    ok = [r for r in records if r["success"]]
    print(f"oracle closed-loop: {len(ok)}/{len(records)} episodes reached the goal in the game")
    best = max(ok, key=lambda r: (r["path_length"], r["task_id"]))
    task = next(t for t in load_tasks(tasks_file) if t.id == best["task_id"])
    for name in ("start", "goal", "final"):
        img = Image.open(run / best["frames"][name]).convert("RGB").resize(SHOWN, Image.LANCZOS)
        img.save(out / f"game_{name}.png", optimize=True)
    _top_view(load_trajectory(walk_dir, "game"), task, best, out / "game_path.png")
    print(json.dumps({"task": best["task_id"], "gt": task.gt.to_text(), "steps": best["n_executed"],
                      "path_m": round(best["path_length"], 3),
                      "final_position_error_m": round(best["final_position_error"], 4),
                      "blocked": best.get("blocked")}))
    for name in ("start", "goal", "final", "path"):
        print(out / f"game_{name}.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
