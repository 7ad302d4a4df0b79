"""Make every picture the README and docs show (docs/images/*.png), each from what the page shows beside it.

:data:`PICTURES` is the table: for each picture, the files it writes into docs/images, the pages that show them,
and what those pages show beside them — the command lines of a ```bash block, which this script runs exactly as
written, or the name of the script that draws it. tests/docs/test_doc_images.py reads this table and the pages and
checks that they agree, so a page's command and its picture cannot drift apart.

* ``pairs`` — a start / goal pair from each environment, 256×256, drawn here (the pages name this script): with the
  project's gl renderer (``<stem>_start.png``, ``<stem>_goal.png``) and with PyBullet's TinyRenderer, the renderer
  before it (``<stem>_start_tiny.png``, ``<stem>_goal_tiny.png``); tasks from ``procedural_tasks`` with fixed seeds.
* ``replay`` — the contact sheet of ``spatialact replay`` on the shipped DROID sample (examples/droid, synthetic).
* ``game`` — a Doom level recorded, tasks built from it, the oracle run closed-loop in the game: the start, goal and
  final views of the oracle's successful episode with the longest path, as the run stored them, and the level's
  top view (its line segments from the WAD) with the explorer's walk, the ground truth and the executed path.
* ``quality`` — the render qualities side by side (scripts/make_quality_sheet.py).

Commands run with bash in ``--work`` (emptied first; ``examples`` and ``scripts`` linked into it, so the pages'
relative paths hold), with this interpreter's ``bin`` first on PATH; what they write lies under ``--work``, and only
the pictures are copied into ``--out``. Everything is deterministic (seeds, the task builder, the oracle), so the
same libraries give the same pictures (per machine: llvmpipe and a GPU differ in rounding).

Usage: .venv/bin/python scripts/make_readme_images.py [--only NAME ...] [--out docs/images]
                                                      [--work scratch/doc_images]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]

# (file stem, kind, seed, variant)
PAIRS = [("nav", "nav", 5, "reach"), ("nav2", "nav", 2, "reach"), ("manip", "manip", 2, "pick_place"),
         ("hand", "hand", 4, "grab_move")]
# renderer -> file-name suffix
RENDERERS = {"gl": "", "tiny": "_tiny"}
PAIR_SIZE = 256


@dataclass(frozen=True)
class Picture:
    """A picture the docs show. ``commands``: the command lines shown beside it (each page's nearest ```bash block
    before the picture holds every one of them), run here as written; empty when ``script`` draws it, and then each
    page names ``script`` beside the picture."""
    name: str
    images: tuple[str, ...]
    pages: tuple[str, ...]
    commands: tuple[str, ...] = ()
    script: str | None = None


GAME_COMMANDS = (
    "spatialact game record --map MAP01 --seconds 20 --seed 0 --out scratch/game/map01",
    "spatialact tasks from-trajectory scratch/game/map01 --n 10 --out scratch/game.jsonl",
    "spatialact eval --tasks scratch/game.jsonl --mode closed-loop --agent oracle --size 320x240 "
    "--out scratch/runs/game",
)

PICTURES = [
    Picture("pairs", tuple(f"{stem}_{name}{suffix}.png" for stem, *_ in PAIRS for name in ("start", "goal")
                           for suffix in RENDERERS.values()),
            ("README.md", "docs/environments.md"), script="scripts/make_readme_images.py"),
    Picture("replay", ("replay_droid.png",), ("README.md", "docs/environments.md"),
            commands=("spatialact replay examples/droid --episode 0 --out scratch/replay-droid",)),
    Picture("game", ("game_start.png", "game_goal.png", "game_final.png", "game_path.png"), ("README.md",),
            commands=GAME_COMMANDS),
    Picture("quality", ("render_quality.png",), ("docs/environments.md",), script="scripts/make_quality_sheet.py"),
]


def render_pairs(out: Path, size: int = PAIR_SIZE) -> None:
    """The start / goal pairs of :data:`PAIRS`, with each renderer of :data:`RENDERERS`, into ``out``."""
    from spatialact.envs import make_env
    from spatialact.taskgen import procedural_tasks

    for stem, kind, seed, variant in PAIRS:
        task = procedural_tasks(kind, 1, seed=seed, variant=variant)[0]
        for renderer, suffix in RENDERERS.items():
            env = make_env(kind, width=size, height=size, renderer=renderer, wrap=False)
            try:
                obs, info = env.reset(options={"task": task})
                for name, img in (("start", obs["rgb"]), ("goal", obs["goal_rgb"])):
                    path = out / f"{stem}_{name}{suffix}.png"
                    Image.fromarray(np.asarray(img)).save(path, optimize=True)
                    print(path, info["renderer"], task.gt.to_text())
            finally:
                env.close()


def run_commands(commands, work: Path) -> None:
    """Each command with bash in ``work``, as written; a failure ends the script with its exit status."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               MPLBACKEND="Agg")
    for cmd in commands:
        print(f"$ {cmd}", flush=True)
        r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env)
        if r.returncode:
            raise SystemExit(f"{cmd}: exit {r.returncode}")


def collect_replay(work: Path, out: Path) -> None:
    shutil.copyfile(work / "scratch/replay-droid/contact_sheet.png", out / "replay_droid.png")


def _top_view(walk, task, record, seconds: float, out: Path) -> None:
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
    ax.plot(xy[:, 0], xy[:, 1], color="tab:blue", lw=1, alpha=0.5, label=f"explorer's walk ({seconds:g} s)")
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


def collect_game(work: Path, out: Path) -> None:
    """The start, goal and final views of the oracle's successful episode with the longest path (as the run stored
    them), and the top view."""
    from spatialact.evaluation.results import read_records
    from spatialact.tasks import load_tasks
    from spatialact.trajectories import load_trajectory

    run, walk_dir = work / "scratch/runs/game", work / "scratch/game/map01"
    records = read_records(run)
    ok = [r for r in records if r["success"]]
    print(f"oracle closed-loop: {len(ok)}/{len(records)} episodes reached the goal in the game")
    best = max(ok, key=lambda r: (r["path_length"], r["task_id"]))
    task = next(t for t in load_tasks(work / "scratch/game.jsonl") if t.id == best["task_id"])
    for name in ("start", "goal", "final"):
        Image.open(run / best["frames"][name]).convert("RGB").save(out / f"game_{name}.png", optimize=True)
    walk = load_trajectory(walk_dir, "game")
    _top_view(walk, task, best, float(walk.timestamps[-1] - walk.timestamps[0]), out / "game_path.png")
    print(json.dumps({"task": best["task_id"], "gt": task.gt.to_text(), "steps": best["n_executed"],
                      "path_m": round(best["path_length"], 3),
                      "final_position_error_m": round(best["final_position_error"], 4),
                      "blocked": best.get("blocked")}))


def make_quality(work: Path, out: Path) -> None:
    run_commands(["python scripts/make_quality_sheet.py --out scratch/render_quality.png"], work)
    shutil.copyfile(work / "scratch/render_quality.png", out / "render_quality.png")


COLLECT = {"replay": collect_replay, "game": collect_game}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs/images"), help="folder of the pictures (default docs/images)")
    ap.add_argument("--work", default=str(ROOT / "scratch/doc_images"),
                    help="folder the commands run in, emptied first (default scratch/doc_images)")
    ap.add_argument("--only", nargs="+", choices=[p.name for p in PICTURES], help="make these pictures only")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    for pic in PICTURES:
        if args.only and pic.name not in args.only:
            continue
        work = Path(args.work).resolve() / pic.name
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        for name in ("examples", "scripts"):
            (work / name).symlink_to(ROOT / name, target_is_directory=True)
        if pic.name == "pairs":
            render_pairs(out)
        elif pic.name == "quality":
            make_quality(work, out)
        else:
            run_commands(pic.commands, work)
            COLLECT[pic.name](work, out)
        for image in pic.images:
            print(out / image)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
