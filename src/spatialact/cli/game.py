"""Doom levels (ViZDoom, the Freedoom WADs it ships).

  spatialact game record --map MAP01 --seconds 30 --seed 0 --out DIR [--wad freedoom2.wad] [--resolution 320x240]
      a deterministic explorer walks the level at a walking pace (1.4 m/s) from the map's start, never pressing
      use (doors stay as at the start), and writes a game trajectory folder: meta.json, poses.npz (C2W poses in
      metres, world +Z up, OpenCV camera axes), rgb.mp4 and depth/ (8-bit depth, metres = offset + level x scale).
      The same seed gives the same files. load_trajectory(DIR) / spatialact extract DIR read it.

1 map unit = 1/32 m. Needs the game extra: pip install 'spatialact[game]'.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from pathlib import Path

from .main import CLIError, check_out, print_json, seed_arg

RESOLUTION_CHOICES = ("160x120", "320x240", "640x480")
MAX_SECONDS = 3600.0


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number") from None
    if not (math.isfinite(v) and 0 < v <= MAX_SECONDS):
        raise argparse.ArgumentTypeError(f"{text[:40]} is not between 0 (excluded) and {MAX_SECONDS:g}")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = sub.add_parser("record", help="record a deterministic walk through a level as a game trajectory folder",
                       description="Walk a Doom level with the deterministic explorer and write a game trajectory "
                                   "folder (meta.json, poses.npz, rgb.mp4, depth/).")
    r.add_argument("--map", default="MAP01", help="map name in the WAD (default MAP01; freedoom1.wad: E1M1 ...)")
    r.add_argument("--seconds", type=_seconds, default=10.0,
                   help=f"game time to record, seconds (35 frames a second; default 10, at most {MAX_SECONDS:g})")
    r.add_argument("--seed", type=seed_arg, default=0, help="explorer seed (default 0)")
    r.add_argument("--wad", default=None, help="an IWAD file, or freedoom1.wad / freedoom2.wad (default "
                                               "freedoom2.wad, shipped with vizdoom)")
    r.add_argument("--out", required=True, help="folder to write (must not exist, or be empty)")
    r.add_argument("--resolution", choices=RESOLUTION_CHOICES, default="320x240", help="image size (default "
                                                                                       "320x240)")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of a summary line")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")


def _check_out_folder(path) -> None:
    """--out must be a folder that does not exist, or an empty one, where files can be written: a trial folder is
    made (and removed) in its nearest existing folder before any work."""
    out = check_out(path, "--out", folder=True)
    if out.is_dir() and any(out.iterdir()):
        raise CLIError(f"--out {out}: exists and is not empty")
    base = next((q for q in [out.parent, *out.parent.parents] if q.exists()), Path("."))
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".spatialact-write-test-", dir=base))
    except OSError as e:
        raise CLIError(f"--out {out}: cannot write in {base} ({e.strerror or e})") from None


def _record(args: argparse.Namespace) -> int:
    from spatialact.envs.doom.engine import GameUnavailable, require_vizdoom
    from spatialact.envs.doom.wad import WadError, check_map, check_wad, resolve_wad

    try:
        require_vizdoom()
    except GameUnavailable as e:
        raise CLIError(str(e)) from None
    _check_out_folder(args.out)
    try:
        wad = resolve_wad(args.wad)
        check_wad(wad, [check_map(wad, args.map)])  # damaged map data would crash the game: refused first
    except WadError as e:
        raise CLIError(f"--wad/--map: {e}") from None
    from spatialact.envs.doom.engine import TICRATE
    from spatialact.envs.doom.record import record_level

    width, height = (int(v) for v in args.resolution.split("x"))
    total = int(round(args.seconds * TICRATE)) + 1
    bar = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm.auto import tqdm

        bar = tqdm(total=total, desc=f"game {args.map.upper()}", unit="frame", file=sys.stderr)
    try:
        out = record_level(args.out, map=args.map, seconds=args.seconds, seed=args.seed, wad=wad,
                           resolution=(width, height), progress=None if bar is None else (lambda n: bar.update(1)))
    finally:
        if bar is not None:
            bar.close()
    from spatialact.trajectories.game import read_game

    traj = read_game(out)
    d = traj.describe()
    summary = {"out": str(out), "frames": len(traj), "fps": traj.fps, "seconds": traj.duration,
               "path_length_m": d["path_length_m"], "map": traj.meta["map"], "wad": traj.meta["wad"],
               "wad_sha256": traj.meta["wad_sha256"], "engine_version": traj.meta["engine_version"],
               "seed": args.seed}
    if args.json:
        print_json(summary)
    else:
        print(f"{out}: {len(traj)} frames ({traj.duration:.2f} s at {traj.fps:g} fps) in {traj.meta['wad']} "
              f"{traj.meta['map']}, walked {d['path_length_m']:.1f} m (seed {args.seed})")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "record":
        return _record(args)
    raise CLIError(f"unknown action {args.action!r}")
