"""Build task files (JSON Lines, validated against the shipped schema).

  spatialact tasks from-trajectory TRAJ --out tasks.jsonl [--n 10] [--seed 0] [--kind manip]
      start/goal frame pairs from one trajectory, with exact ground truth (docs/trajectories.md); start/goal PNGs are
      written next to the task file (folder <out stem>_images/) when the trajectory's frames decode. Every task
      gets a replay scene (DROID → GripperManip, EgoDex hands → HandManip, camera paths → CameraNav in --scene or
      a room around the segment, game recordings → GameNav in the recorded level), so it runs closed-loop; DROID
      pairs out of the Panda's reach and game pairs the game does not execute to the goal are skipped.
  spatialact tasks procedural --kind nav --out tasks.jsonl [--n 10] [--seed 0]
      random reachable goals in procedural simulator scenes.

The same seed gives the same file. Prints a table of the tasks written (--json: one JSON object).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from spatialact.vocab import ANSWER_FORMATS, KINDS

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
    t.add_argument("--answer-format", choices=list(ANSWER_FORMATS), default="stepped")
    t.add_argument("--no-images", action="store_true", help="do not write PNG frames")
    t.add_argument("--scene", metavar="FILE", default=None,
                   help="camera paths: a mesh scene (.glb/.gltf/.obj/.ply) to replay in (default: a procedural room"
                        " enclosing each task's start-goal segment)")
    t.add_argument("--extrinsics", metavar="FILE", default=None,
                   help="DROID: JSON file with the exterior camera's pose in the robot base frame, [x, y, z, rx, ry,"
                        " rz] (metres, extrinsic xyz Euler in radians), overriding camera_extrinsics.<camera>")
    t.add_argument("--wad", metavar="FILE", default=None,
                   help="game recordings: the WAD the level was recorded in (default: the bundled WAD the recording "
                        "names; its SHA-256 must match)")
    t.add_argument("--no-scene", action="store_true",
                   help="write no replay scene (tasks then run one-shot only; no simulator needed)")
    _common(t)
    q = sub.add_parser("procedural", help="random reachable goals in procedural scenes",
                       description="Tasks in procedural simulator scenes (needs the sim extra: PyBullet).")
    _common(q)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True,
                   help="task file to write (.jsonl; replaced atomically: a link is followed, a FIFO or read-only "
                        "file refused)" + ("; - writes it to standard output (the table then goes to stderr)"
                                           if p.prog.endswith("procedural") else ""))
    p.add_argument("--n", type=count_arg(1, 1_000_000), default=10, help="number of tasks (default 10)")
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed (default 0)")
    p.add_argument("--kind", choices=list(KINDS), default=None,
                   help="task kind (from-trajectory default: the trajectory's; procedural default: nav)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _from_trajectory(args: argparse.Namespace):
    from spatialact.taskgen.trajectory_tasks import build_trajectory_tasks

    from .main import CLIError

    for opt, v in (("--min-motion", args.min_motion), ("--max-motion", args.max_motion),
                   ("--max-seconds", args.max_seconds)):
        if v is not None and not (math.isfinite(v) and v >= 0):
            raise CLIError(f"{opt} must be a finite number ≥ 0, got {v}")
    scenes = not args.no_scene
    built = build_trajectory_tasks(
        args.traj, args.out, format=args.format, episode=args.episode, entity=args.entity, camera=args.camera,
        n=args.n, seed=args.seed, min_motion=args.min_motion, max_motion=args.max_motion,
        max_seconds=args.max_seconds, kind=args.kind, answer_format=args.answer_format, images=not args.no_images,
        scene=scenes, mesh=scene_file(args.scene) if scenes else None,
        extrinsics=_extrinsics_file(args.extrinsics) if scenes else None, wad=args.wad)
    for why, k in built.skipped.items():
        print(f"spatialact tasks: skipped {k} task{'s' * (k != 1)}: {why}", file=sys.stderr)
    return built.tasks, built.path


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
    if os.path.exists(path) and not os.path.isfile(path):  # a folder, a device (/dev/zero), a pipe: never read
        raise ValueError(f"--extrinsics {path}: not a regular file; name a JSON file")
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"--extrinsics {path}: cannot read a JSON file ({e})") from None
    v = data.get("extrinsics") if isinstance(data, dict) else data
    if (not isinstance(v, list) or len(v) != 6
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
        raise ValueError(f"--extrinsics {path}: field 'extrinsics': expected 6 finite numbers [x, y, z, rx, ry, rz]")
    return [float(x) for x in v]


def _procedural(args: argparse.Namespace):
    from spatialact.tasks import save_tasks

    try:
        from spatialact.taskgen import procedural_tasks
    except ImportError as e:
        raise ValueError(f"procedural tasks need the simulator (pip install 'spatialact[sim]'): {e}") from None
    tasks = procedural_tasks(args.kind or "nav", args.n, args.seed)
    return tasks, save_tasks(tasks, args.out, option="--out", stdout=True)


# action name -> builder(args) -> (tasks, the task file written)
TASK_BUILDERS = {"from-trajectory": _from_trajectory, "procedural": _procedural}


def run(args: argparse.Namespace) -> int:
    from .main import check_out

    to_stdout = args.action == "procedural"  # one file; from-trajectory writes its images beside it
    check_out(args.out, folder=False, stdout=to_stdout)
    if args.action == "from-trajectory" and not args.no_images:
        from spatialact.outputs import check_output_beside
        from spatialact.taskgen.trajectory_tasks import image_dir_for

        check_output_beside(args.out, image_dir_for(args.out))  # a device: refused, the images have no place
    folder = contextlib.nullcontext()
    if str(args.out) != "-":
        from spatialact.outputs import folder_for_work

        # by the output rule: a dangling link above the file makes its folder; a build that gives nothing removes it
        folder = folder_for_work(Path(args.out).parent)
    with folder:
        tasks, path = TASK_BUILDERS[args.action](args)
    if str(args.out) == "-":  # standard output holds the tasks themselves: what is shown goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            _show(args, tasks, path)
    else:
        _show(args, tasks, path)
    return 0


def _show(args: argparse.Namespace, tasks: list, path) -> None:
    """The tasks written: a table (--json: one JSON object)."""
    from spatialact.geometry import rotation_error

    from .table import format_table

    if args.json:
        print_json({"out": str(path), "n": len(tasks), "ids": [t.id for t in tasks]})
        return
    # Start-to-goal motion from the poses themselves, so every builder's table shows it.
    rows = [[t.id, t.kind, t.n_steps, float(np.linalg.norm(t.goal_pose[:3, 3] - t.start_pose[:3, 3])),
             float(np.degrees(rotation_error(t.start_pose, t.goal_pose))), "png" if t.start_image else "rendered"
             if t.scene else "no"] for t in tasks]
    print(format_table(rows, ["id", "kind", "steps", "distance m", "turn °", "images"],
                       title=f"{len(tasks)} tasks → {path}  (images: png files, or rendered from the scene on demand)"))
