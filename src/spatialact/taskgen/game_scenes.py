"""Game scenes for tasks cut from a game recording: the task builder's last step for source ``game``
(docs/trajectories.md).

Each task built from a game trajectory (``spatialact game record``) gets the level it was recorded in as its scene —
``{"type": "game", "wad", "map", "wad_sha256", "start", "trajectory", "keyframes"}``, a reference, never arrays
(:func:`~spatialact.envs.game_world.game_scene`) — so that it runs closed-loop in GameNav. As for DROID, what the
game cannot run is dropped and counted, never clamped: a pair whose start or goal the game cannot reach from the
map's start state (the recorded walk moved a lift or raised stairs first), and a pair whose ground truth the game,
executing it from the start as the oracle does, does not follow to the goal (the straight line between two
keyframes cuts a corner into a wall). Every task kept stores the shortest walkable start→goal distance of its level
(:func:`~spatialact.envs.doom.geodesic.geodesic_d0`) as ``meta["d0"]`` (metres) with ``meta["d0_kind"] =
"geodesic"``: the ``d0`` of its SPL. Poses are the recording's C2W (4, 4), metres, world +Z up, OpenCV axes.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

from ..envs.doom.geodesic import geodesic_d0
from ..envs.doom.wad import BUNDLED_WADS, WadError, check_wad, resolve_wad, wad_sha256
from ..envs.executor import execute_sequence
from ..envs.game_world import game_scene
from ..envs.registry import make_env
from ..trajectories.errors import check_regular

__all__ = ["attach_game_scenes", "recorded_wad", "named_wad", "with_geodesic_d0", "UNREACHABLE", "NOT_EXECUTED", "NO_ROUTE"]

#: The reasons a pair is dropped (the keys of the skipped counts).
UNREACHABLE = "start or goal not reachable in the level as at the map's start (the recorded walk changed the level)"
NOT_EXECUTED = "the game does not execute the ground truth to the goal (a wall in the way: a corner cut)"
NO_ROUTE = "no walkable route from start to goal on the map's lines (its geodesic distance, SPL's d0, is undefined)"
#: Decimals of ``meta["d0"]`` (metres): a micrometre, so a task file is the same on every machine.
D0_DECIMALS = 6


def with_geodesic_d0(task, wad_path, level: str):
    """``task`` with ``meta["d0"]`` (the geodesic start→goal distance in metres, rounded to :data:`D0_DECIMALS`)
    and ``meta["d0_kind"] = "geodesic"``; None when the player cannot walk from the start to the goal."""
    d0 = geodesic_d0(wad_path, level, task.start_pose, task.goal_pose)
    if not math.isfinite(d0):
        return None
    return replace(task, meta={**(task.meta or {}), "d0": round(d0, D0_DECIMALS), "d0_kind": "geodesic"})


def named_wad(traj) -> Path:
    """The WAD a game recording names (``meta.json`` ``wad.name``), looked up only where a recording may point: a
    plain file name (no folder part, not ``.`` or ``..``) of a regular file inside the recording's own folder (its
    real path too: a link out of the folder is refused), else a WAD bundled with vizdoom (``freedoom1.wad``,
    ``freedoom2.wad``). A name with a folder part, an absolute path, or one found in neither place is refused in one
    line naming the field (ValueError): a recording never makes spatialact open a file elsewhere."""
    where = traj.meta.get("path") or "<trajectory>"
    name = traj.meta.get("wad")
    hint = " (give the WAD it was recorded in: --wad FILE)"
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name
            or "\0" in name or Path(name).name != name):
        raise ValueError(f"{where}: meta.json field 'wad.name': {str(name)[:80]!r} is not a plain file name (a "
                         f"recording names its WAD inside its folder or a bundled WAD, {', '.join(BUNDLED_WADS)})"
                         f"{hint}")
    folder = traj.meta.get("path")  # None: a trajectory built in memory (the game suite's), bundled WADs only
    root = Path(os.path.realpath(folder)) if folder else None
    local = root / name if root is not None else None
    if local is not None and os.path.lexists(local):
        real = Path(os.path.realpath(local))
        if real.parent != root or not check_regular(real):
            raise ValueError(f"{where}: meta.json field 'wad.name': {name} in the recording's folder is not a "
                             f"regular file inside it{hint}")
        return real
    if name.lower() in BUNDLED_WADS:
        try:
            return resolve_wad(name.lower())
        except WadError as e:
            raise ValueError(f"{where}: meta.json field 'wad.name': {e}") from None
    raise ValueError(f"{where}: meta.json field 'wad.name': {name} is neither in the recording's folder nor a "
                     f"bundled WAD ({', '.join(BUNDLED_WADS)}){hint}")


def recorded_wad(traj, wad=None) -> Path:
    """The WAD file a game recording was made in: ``wad`` (a path or a bundled name) when given, else the WAD the
    recording names (:func:`named_wad`: in its folder or bundled, nowhere else); its SHA-256 must be the
    recording's (``meta.json`` ``wad.sha256``). One-line ValueError naming what is wrong."""
    where = traj.meta.get("path", "<trajectory>")
    if wad is None:
        path = named_wad(traj)
    else:
        try:
            path = resolve_wad(wad)
        except WadError as e:
            raise ValueError(f"{where}: wad: {e}") from None
    sha = traj.meta.get("wad_sha256")
    actual = wad_sha256(path)
    if sha != actual:
        raise ValueError(f"{where}: wad.sha256: the recording was made in a WAD with SHA-256 {str(sha)[:12]}…, and "
                         f"{path} is {actual[:12]}… (another version of the WAD)")
    level = traj.meta.get("map")
    try:
        check_wad(path, None if level is None else [level])
    except WadError as e:
        raise ValueError(f"{where}: wad: {e}") from None
    return path


def attach_game_scenes(tasks, traj, *, wad=None, recording: bool = True, limit: int | None = None):
    """The builder's last step for a game recording: each task (from ``pairs_from_trajectory``, whose
    ``meta["keyframes"]`` are its ground truth's frame indices) gets its level as scene — with the recording's
    ``trajectory`` path and ``keyframes`` when ``recording`` — and the tag ``map``, and is run in GameNav from
    its start with its ground truth (what the oracle does); tasks whose start or goal the game cannot reach, or
    whose ground truth does not end within the task's success thresholds, are dropped and counted; each task kept
    gets its geodesic ``meta["d0"]`` (:func:`with_geodesic_d0`; none found: dropped, :data:`NO_ROUTE`); ``limit``:
    stop once that many are kept. Returns (tasks with scenes, {reason: number of tasks skipped})."""
    path = recorded_wad(traj, wad)
    level = traj.meta.get("map")
    out, skipped = [], {}
    env = make_env("nav", backend="game", wad=path, map=level, width=160, height=120, wrap=False)
    try:
        for t in tasks:
            if limit is not None and len(out) >= limit:
                break
            kf = (t.meta or {}).get("keyframes")
            if not kf:
                raise ValueError(f"task {t.id!r}: meta.keyframes is missing (build it with pairs_from_trajectory)")
            ref = {"trajectory": str(traj.meta.get("path")), "keyframes": kf} if recording else {}
            t = replace(t, scene=game_scene(path, level, t.start_pose, **ref), tags={**t.tags, "map": level})
            why = None
            try:
                if not execute_sequence(env, t.gt, t, render=False).success:
                    why = NOT_EXECUTED
            except ValueError as e:
                if "not reached" not in str(e):
                    raise
                why = UNREACHABLE
            kept = with_geodesic_d0(t, path, level) if why is None else None
            if kept is None:
                why = why or NO_ROUTE
                skipped[why] = skipped.get(why, 0) + 1
                continue
            out.append(kept)
    finally:
        env.close()
    return out, skipped
