"""Build task files (JSON Lines, validated against the shipped schema).

  spatialact tasks from-trajectory TRAJ --out tasks.jsonl [--n 10] [--seed 0] [--kind manip]
      start/goal frame pairs from one trajectory, with exact ground truth (SPEC §5.3); start/goal PNGs are
      written next to the task file (folder <out stem>_images/) when the trajectory's frames decode. Every task
      gets a replay scene (DROID → GripperManip, EgoDex hands → HandManip, camera paths → CameraNav in --scene or
      a room around the segment), so it runs closed-loop; DROID pairs out of the Panda's reach are skipped.
  spatialact tasks procedural --kind nav --out tasks.jsonl [--n 10] [--seed 0]
      random reachable goals in procedural simulator scenes.

The same seed gives the same file. Prints a table of the tasks written (--json: one JSON object).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from .main import count_arg, print_json, seed_arg


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    t = sub.add_parser("from-trajectory", help="start/goal frame pairs from a trajectory file",
                       description="Sample start/goal frame pairs from one trajectory and write tasks.")
    t.add_argument("traj", metavar="TRAJ", help="trajectory file or LeRobot dataset folder")
    t.add_argument("--format", default=None, help="trajectory format (default: guessed)")
    t.add_argument("--episode", type=int, default=None, help="episode of a LeRobot dataset (default: first)")
    t.add_argument("--entity", default=None, help="what moves (EgoDex: camera, rightHand, leftHand)")
    t.add_argument("--camera", default=None, help="DROID camera for the images (default exterior_1_left)")
    t.add_argument("--min-motion", type=float, default=None, metavar="M", help="least start-to-goal distance")
    t.add_argument("--max-motion", type=float, default=None, metavar="M", help="largest start-to-goal distance")
    t.add_argument("--max-seconds", type=float, default=None, help="longest start-to-goal time")
    t.add_argument("--answer-format", choices=["flat", "stepped", "vector"], default="stepped")
    t.add_argument("--no-images", action="store_true", help="do not write PNG frames")
    t.add_argument("--scene", metavar="FILE", default=None,
                   help="camera paths: a mesh scene (.glb/.gltf/.obj/.ply) to replay in (default: a procedural room"
                        " enclosing each task's start-goal segment)")
    t.add_argument("--extrinsics", metavar="FILE", default=None,
                   help="DROID: JSON file with the exterior camera's pose in the robot base frame, [x, y, z, rx, ry,"
                        " rz] (metres, extrinsic xyz Euler in radians), overriding camera_extrinsics.<camera>")
    t.add_argument("--no-scene", action="store_true",
                   help="write no replay scene (tasks then run one-shot only; no simulator needed)")
    _common(t)
    q = sub.add_parser("procedural", help="random reachable goals in procedural scenes",
                       description="Tasks in procedural simulator scenes (needs the sim extra: PyBullet).")
    _common(q)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="task file to write (.jsonl)")
    p.add_argument("--n", type=count_arg(1, 1_000_000), default=10, help="number of tasks (default 10)")
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    p.add_argument("--kind", choices=["nav", "manip", "hand"], default=None,
                   help="task kind (from-trajectory default: the trajectory's; procedural default: nav)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _from_trajectory(args: argparse.Namespace) -> list:
    from spatialact.trajectories import load_trajectory
    from spatialact.tasks.from_trajectory import tasks_from_trajectory

    from .main import CLIError

    for opt, v in (("--min-motion", args.min_motion), ("--max-motion", args.max_motion),
                   ("--max-seconds", args.max_seconds)):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise CLIError(f"{opt} must be a finite number ≥ 0, got {v}")
    opts = {} if args.camera is None else {"camera": args.camera}
    traj = load_trajectory(args.traj, args.format, episode=args.episode, entity=args.entity, **opts)
    out = Path(args.out)
    image_dir = None if args.no_images else out.parent / f"{out.stem}_images"
    made = [d for d in (out.parent, *out.parent.parents) if not d.exists()]  # folders a refusal must not leave
    tasks = tasks_from_trajectory(traj, n=args.n, seed=args.seed, min_motion=args.min_motion,
                                  max_motion=args.max_motion, kind=args.kind, answer_format=args.answer_format,
                                  image_dir=image_dir, max_seconds=args.max_seconds)
    if not tasks:
        from spatialact.action_space import StepSizes
        from spatialact.tasks.from_trajectory import default_motion_range

        kind = args.kind or traj.meta.get("kind") or "nav"
        lo, hi = default_motion_range(kind, StepSizes.for_kind(kind))
        lo = lo if args.min_motion is None else args.min_motion
        hi = hi if args.max_motion is None else args.max_motion
        span = float(np.linalg.norm(traj.positions.max(0) - traj.positions.min(0))) if len(traj.positions) else 0.0
        raise CLIError(f"{args.traj}: no task: no pair of its {len(traj.positions)} frames is {lo:g}–{hi:g} m apart "
                       f"with a ground truth of at least one step (the path spans {span:.3g} m; see --min-motion, "
                       f"--max-motion, --max-seconds)")
    if args.no_scene:
        return tasks
    try:
        from spatialact.envs import attach_replay_scenes
    except ImportError as e:
        raise ValueError(f"replay scenes need the simulator (pip install 'spatialact[sim]'), or pass --no-scene: "
                         f"{e}") from None
    built = tasks
    tasks, skipped = attach_replay_scenes(tasks, traj, mesh=scene_file(args.scene),
                                          extrinsics=_extrinsics_file(args.extrinsics))
    _remove_unused_images(built, tasks, image_dir)
    reasons = "; ".join(f"{k} {why}" for why, k in skipped.items())
    if not tasks:
        for d in made:  # deepest first
            if d.is_dir() and not any(d.iterdir()):
                d.rmdir()
        raise CLIError(f"{args.traj}: no task: each of the {len(built)} built was skipped ({reasons})")
    for why, k in skipped.items():
        print(f"spatialact tasks: skipped {k} task{'s' * (k != 1)}: {why}", file=sys.stderr)
    return tasks


def _images(t) -> set:
    return {p for p in (t.start_image, t.goal_image, (t.example or {}).get("start_image")) if p}


def _remove_unused_images(built: list, kept: list, image_dir) -> None:
    """The PNGs written for tasks that were then skipped, and the image folder when nothing is left in it."""
    keep = set().union(*map(_images, kept)) if kept else set()
    for t in built:
        for p in _images(t) - keep:
            Path(p).unlink(missing_ok=True)
    if image_dir is not None and Path(image_dir).is_dir() and not any(Path(image_dir).iterdir()):
        Path(image_dir).rmdir()


def scene_file(path: str | None) -> str | None:
    """The absolute path of a mesh scene named on the command line (``--scene``), checked; None without one."""
    if path is None:
        return None
    from spatialact.envs.scenes import MESH_FORMATS

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--scene {path}: no such file")
    if p.suffix.lower() not in MESH_FORMATS:
        raise ValueError(f"--scene {path}: format {p.suffix or '(none)'} is not supported (use "
                         f"{', '.join(MESH_FORMATS)})")
    return str(p.resolve())


def _extrinsics_file(path: str | None):
    """[x, y, z, rx, ry, rz] from a JSON file (a list, or an object with "extrinsics"), checked; None without one."""
    if path is None:
        return None
    import math

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"--extrinsics {path}: cannot read a JSON file ({e})") from None
    v = data.get("extrinsics") if isinstance(data, dict) else data
    if (not isinstance(v, list) or len(v) != 6
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
        raise ValueError(f"--extrinsics {path}: field 'extrinsics': expected 6 finite numbers [x, y, z, rx, ry, rz]")
    return [float(x) for x in v]


def _procedural(args: argparse.Namespace) -> list:
    try:
        from spatialact.envs import procedural_tasks
    except ImportError as e:
        raise ValueError(f"procedural tasks need the simulator (pip install 'spatialact[sim]'): {e}") from None
    return procedural_tasks(args.kind or "nav", args.n, args.seed)


# action name -> builder(args) -> list[Task]
TASK_BUILDERS = {"from-trajectory": _from_trajectory, "procedural": _procedural}


def run(args: argparse.Namespace) -> int:
    from spatialact.tasks import save_tasks

    from .main import check_out
    from .table import format_table

    check_out(args.out, folder=False)
    tasks = TASK_BUILDERS[args.action](args)
    path = save_tasks(tasks, args.out)
    if args.json:
        print_json({"out": str(path), "n": len(tasks), "ids": [t.id for t in tasks]})
        return 0
    import numpy as np

    from spatialact.geometry import rotation_error

    # Start-to-goal motion from the poses themselves, so every builder's table shows it.
    rows = [[t.id, t.kind, t.n_steps, float(np.linalg.norm(t.goal_pose[:3, 3] - t.start_pose[:3, 3])),
             float(np.degrees(rotation_error(t.start_pose, t.goal_pose))), "png" if t.start_image else "rendered"
             if t.scene else "no"] for t in tasks]
    print(format_table(rows, ["id", "kind", "steps", "distance m", "turn °", "images"],
                       title=f"{len(tasks)} tasks → {path}  (images: png files, or rendered from the scene on demand)"))
    return 0
