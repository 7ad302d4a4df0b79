"""The built-in ``game`` suite: a fixed, versioned task file from three Freedoom maps, shipped with spatialact.

How it is made (:func:`build_game_suite`, ``python scripts/make_game_suite.py``): on each map of :data:`SUITE_MAPS`
(``freedoom2.wad``), the deterministic explorer walks :data:`SUITE_SECONDS` seconds from the map's start (seed 0);
start/goal pairs of that walk get their exact ground truth (:func:`~spatialact.tasks.trajectory_pairs.
pairs_from_trajectory`, metric extraction, seeded), their level as scene and their geodesic start→goal distance as
``meta["d0"]`` (metres, SPL's d0; :func:`~spatialact.taskgen.game_scenes.attach_game_scenes`), and the pairs the game
does not execute to the goal are dropped; the first :data:`PER_MAP` of each map whose ground truth has at most :data:`MAX_STEPS` steps are kept.
Nothing of the walk is stored: the tasks reference the level
(WAD name, SHA-256, map, start), their start and goal views are rendered by the game when they run (one-shot
included), so the file is small (no images) and the same on every machine. The version is in the file's name and
in every task id (``game-v1-map01-000123-000160``); a new build of the suite is a new version, never a silent
change.

``builtin_suite("game")`` reads the shipped file (:func:`game_suite_tasks`); ``game:N`` keeps the first N tasks of
each map. Poses are C2W (4, 4), metres, world +Z up, OpenCV camera axes.
"""

from __future__ import annotations

from dataclasses import replace
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = ["SUITE_VERSION", "SUITE_FILE", "SUITE_WAD", "SUITE_MAPS", "SUITE_SECONDS", "PER_MAP", "SUITE_SEED",
           "MAX_STEPS", "build_game_suite", "game_suite_tasks", "suite_path"]

SUITE_VERSION = 1
SUITE_FILE = f"game-v{SUITE_VERSION}.jsonl"
SUITE_WAD = "freedoom2.wad"
SUITE_MAPS = ("MAP01", "MAP02", "MAP03")
SUITE_SECONDS = 60.0     # the explorer's walk on each map
PER_MAP = 10             # tasks kept per map
SUITE_SEED = 0           # the explorer's and the pair sampler's seed
MAX_STEPS = 10           # longest ground truth kept (a walk that turns slowly in place extracts into many steps)


def suite_path() -> Path:
    """The shipped task file of the ``game`` suite (package data ``spatialact/data/suites/``)."""
    return Path(str(resources.files("spatialact").joinpath("data", "suites", SUITE_FILE)))


def _walk(map_name: str, seconds: float, seed: int):
    """The explorer's walk on ``map_name`` as an in-memory game trajectory (poses only; nothing written)."""
    from ..envs.doom.engine import TICRATE, DoomEngine
    from ..envs.doom.explorer import Explorer
    from ..trajectories.trajectory import Trajectory

    with DoomEngine(SUITE_WAD, map_name, (160, 120)) as engine:
        poses = np.stack([f.pose for f in Explorer(engine, seed=seed).run(int(round(seconds * TICRATE)))])
        info = engine.describe()
    t = np.arange(len(poses)) / float(TICRATE)
    meta = {"source": "game", "kind": "nav", "metric": True, "entity": "camera", "wad": info["wad"],
            "wad_sha256": info["wad_sha256"], "map": info["map"], "path": None}
    return Trajectory(poses, t, float(TICRATE), meta=meta)


def build_game_suite(out=None, *, maps=SUITE_MAPS, seconds: float = SUITE_SECONDS, per_map: int = PER_MAP,
                     seed: int = SUITE_SEED) -> tuple[list, dict]:
    """Build the suite's tasks (see the module docstring) and, with ``out``, write them as a task file. Returns
    (tasks, {map: {reason: pairs dropped}}). Deterministic: the same arguments give the same file."""
    from ..tasks import save_tasks
    from ..tasks.trajectory_pairs import pairs_from_trajectory
    from .game_scenes import attach_game_scenes

    tasks, skipped = [], {}
    for name in maps:
        traj = _walk(name, seconds, seed)
        prefix = f"game-v{SUITE_VERSION}-{name.lower()}"
        cand = pairs_from_trajectory(traj, n=8 * per_map, seed=seed, image_dir=None, example=False,
                                     id_prefix=prefix)
        cand = [t for t in cand if t.n_steps <= MAX_STEPS]
        kept, dropped = attach_game_scenes(cand, traj, recording=False, limit=per_map)
        skipped[name] = dropped
        for t in kept:
            meta = {k: v for k, v in t.meta.items() if k not in ("trajectory", "episode", "entity")}
            meta["walk"] = {"map": name, "seconds": float(seconds), "seed": int(seed), "explorer": "spatialact"}
            tasks.append(replace(t, meta=meta, tags={**t.tags, "suite": f"game-v{SUITE_VERSION}"}))
    if out is not None:
        save_tasks(tasks, out)
    return tasks, skipped


def game_suite_tasks(per_map: int | None = None) -> list:
    """The shipped ``game`` suite's tasks; ``per_map``: only the first that many of each map."""
    from ..tasks import load_tasks

    tasks = list(load_tasks(suite_path()))
    if per_map is None:
        return tasks
    seen: dict = {}
    out = []
    for t in tasks:
        m = t.scene["map"]
        seen[m] = seen.get(m, 0) + 1
        if seen[m] <= per_map:
            out.append(t)
    return out
