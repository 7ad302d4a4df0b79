"""The frozen benchmark suite ``l4-v1`` (docs/benchmark.md): five tracks of tasks, shipped as one task file.

Tracks (:data:`TRACKS`; every task carries ``tags.track`` and ``meta.track``):

* ``nav`` — a free camera in procedural rooms over the difficulty ladder L1–L5 (:func:`~.ladder.ladder_tasks`,
  :data:`NAV_PER_LEVEL` a level);
* ``manip`` — the Franka Panda at a tabletop: reach, pick-and-place and push (:func:`~.procedural.procedural_tasks`);
* ``hand`` — a floating hand at a tabletop: reach and grab-and-move;
* ``game`` — the player's camera in ten Freedoom 2 levels through ViZDoom (:func:`~.game_suite.build_game_suite`'s
  walks and ground truths, :data:`GAME_PER_MAP` a map);
* ``camera`` — smooth camera paths generated in procedural rooms (a spline through clear waypoints, the view swinging
  about the direction of travel), cut into tasks as ``tasks from-trajectory`` cuts a recording: metric extraction
  (:func:`~spatialact.tasks.trajectory_pairs.pairs_from_trajectory`), the room as the scene.

Each track is drawn from fixed seeds and kept in the order drawn; a candidate is left out when its ground-truth path
passes through the scene's geometry (:func:`spatialact.envs.collision_problem`) or when doing nothing already scores
above :data:`S0_MAX` (s0, :func:`spatialact.scorers.null_score`, either mode); the counts left out are in the card.
Every task's ``meta`` holds ``s0`` (``{"one-shot", "closed-loop"}``, profile ``paper``), ``built_from`` (the
builder's id) and ``image_sha256`` (``{"start", "goal"}``: SHA-256 of the raw uint8 RGB array bytes, (H, W, 3)
C order, of the views an evaluation at the suite's :data:`PINS` shows: renderer ``tiny``, the same pixels on every
machine). ``l4-v1-lite`` is a listed subset: the first tasks of each track (per level, per map), ids in the card.

``builtin_suite("l4-v1")``, ``"l4-v1/nav"``, ``"l4-v1-lite"``, ``"l4-v1-lite/manip"`` read the shipped file
(:func:`frozen_suite_tasks`), checking its SHA-256 against the card; :func:`frozen_suite_info` is what
``suite_info`` says about them. ``scripts/make_l4_suite.py`` builds the file and the card (:func:`build_track`,
:func:`make_card`) and, with ``--check``, rebuilds and compares them byte for byte. A released version never changes:
a fix is ``l4-v2``. Poses are C2W (4, 4), metres, world +Z up, OpenCV camera axes.
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from .. import geometry
from ..tasks import Task
from ..vocab import LEVELS, MODES

__all__ = ["SUITE_NAME", "SUITE_VERSION", "LITE_NAME", "FROZEN_NAMES", "TRACKS", "TRACK_KINDS", "PINS",
           "TRACK_SIZES", "LITE_SIZES", "NAV_PER_LEVEL", "GAME_MAPS", "GAME_PER_MAP", "S0_MAX", "SEEDS",
           "suite_path", "card_path", "questions_path", "load_card", "parse_frozen_spec", "is_frozen_spec",
           "frozen_suite_tasks", "frozen_suite_info", "build_track", "quota_key", "lite_ids", "make_card",
           "view_hashes", "task_lines"]

SUITE_NAME = "l4-v1"
SUITE_VERSION = 1
LITE_NAME = f"{SUITE_NAME}-lite"
FROZEN_NAMES = (SUITE_NAME, LITE_NAME)
TRACKS = ("nav", "manip", "hand", "game", "camera")
#: The task kind of each track.
TRACK_KINDS = {"nav": "nav", "manip": "manip", "hand": "hand", "game": "nav", "camera": "nav"}
#: What changes a score, fixed for the suite: the images (size, renderer, render quality: ``tiny`` draws the same
#: pixels on every machine, so the image hashes can be checked anywhere), the prompt and the step-score profile.
PINS = {"image_size": 384, "renderer": "tiny", "render_quality": "default", "prompt_version": "spatialact-l4-v2",
        "profile": "paper"}

NAV_PER_LEVEL = 80
#: Ten Freedoom 2 levels (MAP05 is left out: its 90 s walk gives too few start/goal pairs the game executes).
GAME_MAPS = ("MAP01", "MAP02", "MAP03", "MAP04", "MAP06", "MAP07", "MAP08", "MAP09", "MAP10", "MAP11")
GAME_PER_MAP = 36
GAME_SECONDS = 90.0      # the explorer's walk on each map
GAME_MARGIN = 8          # ground truths asked for beyond GAME_PER_MAP a map (some are left out)
#: Tasks per track (sized so that the 95% half-width of noisy-oracle's skill at noise 2 is at most 0.03).
TRACK_SIZES = {"nav": NAV_PER_LEVEL * len(LEVELS), "manip": 360, "hand": 340,
               "game": GAME_PER_MAP * len(GAME_MAPS), "camera": 240}
#: The lite split: the first tasks of each track (nav: per level, game: per map).
LITE_SIZES = {"nav": 10 * len(LEVELS), "manip": 24, "hand": 24, "game": 3 * len(GAME_MAPS), "camera": 24}
S0_MAX = 0.9
#: The base seed of each track's draws (batch b uses seed + b).
SEEDS = {"nav": 41_000, "manip": 42_000, "hand": 43_000, "game": 0, "camera": 44_000}
_BATCH = {"nav": 4, "manip": 12, "hand": 12}      # nav: tasks per level of one ladder_tasks call
_MAX_BATCHES = 400                                # a builder that keeps failing stops here, saying so
_CAMERA = {"fps": 10.0, "speed_m_s": 0.45, "waypoints": 6, "tasks_per_path": 10, "max_seconds": 5.0}
_INSTRUCTION = "Move the camera from the start view to the goal view."
# builder meta that names files or readers of a recording the suite does not ship
_DROP_META = ("trajectory", "episode", "entity", "example_frame")

COLLISION = "ground-truth path through the scene's geometry (collision_problem)"
NULL_HIGH = f"the null answer scores above {S0_MAX} (s0)"
BLANK_VIEW = "start or goal view against a surface or blank (view_ok)"


# ----- the shipped files -----------------------------------------------------------------------------------------
def _data(name: str) -> Path:
    return Path(str(resources.files("spatialact").joinpath("data", "suites", name)))


def suite_path() -> Path:
    """The shipped task file of ``l4-v1`` (all tracks)."""
    return _data(f"{SUITE_NAME}.jsonl")


def card_path() -> Path:
    """The shipped suite card (``l4-v1.card.json``): pins, counts, SHA-256s, the lite ids, measured half-widths."""
    return _data(f"{SUITE_NAME}.card.json")


def questions_path() -> Path:
    """The shipped question file of the question track (its images are rendered where it is used)."""
    return _data(f"{SUITE_NAME}.questions.jsonl")


@lru_cache(maxsize=1)
def _card_cached(mtime_ns: int) -> dict:
    return json.loads(card_path().read_text(encoding="utf-8"))


def load_card() -> dict:
    """The suite card as a dict (read once per file version)."""
    p = card_path()
    if not p.is_file():
        raise ValueError(f"suite {SUITE_NAME}: its card {p} is missing (build it: scripts/make_l4_suite.py)")
    return json.loads(json.dumps(_card_cached(p.stat().st_mtime_ns)))  # a copy the caller may change


# ----- names -----------------------------------------------------------------------------------------------------
def is_frozen_spec(spec: str) -> bool:
    """Whether ``spec`` names the frozen suite (``l4-v1``, ``l4-v1-lite``, with or without ``/<track>``)."""
    return isinstance(spec, str) and spec.split("/", 1)[0].split(":", 1)[0] in FROZEN_NAMES


def parse_frozen_spec(spec: str) -> tuple[str, str | None]:
    """(suite name, track or None) of ``l4-v1``, ``l4-v1/nav``, ``l4-v1-lite``, ``l4-v1-lite/manip``; a one-line
    ValueError for anything else."""
    name, slash, track = spec.partition("/")
    if ":" in spec:
        raise ValueError(f"suite {spec[:60]!r}: a frozen suite is run whole (':N' does not apply); "
                         f"{LITE_NAME} is its small split, and eval --limit N runs the first N tasks")
    if name not in FROZEN_NAMES:
        raise ValueError(f"suite {spec[:60]!r}: not a frozen suite ({', '.join(FROZEN_NAMES)})")
    if slash and track not in TRACKS:
        raise ValueError(f"suite {spec[:60]!r}: unknown track {track[:20]!r} (tracks: {', '.join(TRACKS)}; the "
                         "question track is run with `spatialact questions score`, see docs/benchmark.md)")
    return name, (track if slash else None)


# ----- reading -----------------------------------------------------------------------------------------------------
def _checked_file():
    """The shipped task file, loaded (validated), with its SHA-256 checked against the card's."""
    from ..tasks import load_task_file

    card = load_card()
    tf = load_task_file(suite_path())
    if tf.sha256 != card["sha256"]:
        raise ValueError(f"{suite_path()}: SHA-256 {tf.sha256[:12]}… is not the card's {card['sha256'][:12]}… "
                         f"(the shipped {SUITE_NAME} was changed; reinstall spatialact)")
    return tf, card


def frozen_suite_tasks(spec: str) -> list[Task]:
    """The tasks of ``l4-v1``, ``l4-v1/<track>``, ``l4-v1-lite`` or ``l4-v1-lite/<track>``, in file order."""
    name, track = parse_frozen_spec(spec)
    tf, card = _checked_file()
    lite = set(card["lite"]["ids"]) if name == LITE_NAME else None
    return [t for t in tf.tasks if (track is None or t.meta.get("track") == track) and (lite is None or t.id in lite)]


def frozen_suite_info(spec: str) -> dict:
    """What identifies a run's tasks: ``name``, ``version``, ``track`` (None for all), ``sha256`` (of the shipped
    task file, which holds every track and the lite split), ``pins``, ``n_tasks``, and ``split`` (``full`` or
    ``lite``)."""
    name, track = parse_frozen_spec(spec)
    card = load_card()
    split = "lite" if name == LITE_NAME else "full"
    counts = card["lite"]["per_track"] if split == "lite" else {t: v["n"] for t, v in card["tracks"].items()}
    n = counts[track] if track else sum(counts.values())
    return {"name": name, "version": SUITE_VERSION, "track": track, "sha256": card["sha256"],
            "pins": dict(card["pins"]), "n_tasks": int(n), "split": split}


# ----- building ----------------------------------------------------------------------------------------------------
def quota_key(track: str, task: Task) -> str:
    """The stratum a track's quota counts a task in: its level (nav), its map (game), else the track."""
    if track == "nav":
        return str(task.tags["level"])
    if track == "game":
        return str(task.scene["map"])
    return track


def _quotas(track: str) -> dict[str, int]:
    if track == "nav":
        return {lv: NAV_PER_LEVEL for lv in LEVELS}
    if track == "game":
        return {m: GAME_PER_MAP for m in GAME_MAPS}
    return {track: TRACK_SIZES[track]}


def _batches(track: str, drops: Counter):
    """Candidate tasks of a procedural track, batch after batch (deterministic; a batch's tasks do not depend on
    how many are taken)."""
    from .ladder import ladder_tasks
    from .procedural import procedural_tasks

    for b in range(_MAX_BATCHES):
        if track == "nav":
            yield from ladder_tasks("nav", _BATCH["nav"], seed=SEEDS["nav"] + b)
        else:
            yield from procedural_tasks(track, _BATCH[track], seed=SEEDS[track] + b)
    raise RuntimeError(f"{SUITE_NAME}/{track}: quotas not met after {_MAX_BATCHES} batches ({dict(drops)} left out)")


def _game_candidates(drops: Counter):
    """The game track's candidates: each map's walk and ground truths (game_suite's builder), map after map."""
    from .game_suite import build_game_suite

    for m in GAME_MAPS:
        tasks, skipped = build_game_suite(None, maps=(m,), seconds=GAME_SECONDS, per_map=GAME_PER_MAP + GAME_MARGIN,
                                          seed=SEEDS["game"])
        for why, k in skipped.get(m, {}).items():
            drops[why] += k
        yield from tasks


def _catmull_rom(points: np.ndarray, per_segment: int = 200) -> np.ndarray:
    """A Catmull-Rom spline (uniform) through ``points`` (K, 3), ``per_segment`` samples a segment, ends included."""
    P = np.vstack([2 * points[0] - points[1], points, 2 * points[-1] - points[-2]])
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[:, None]
    out = []
    for i in range(1, len(P) - 2):
        p0, p1, p2, p3 = P[i - 1], P[i], P[i + 1], P[i + 2]
        out.append(0.5 * (2 * p1 + (p2 - p0) * t + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t ** 2
                          + (3 * p1 - p0 - 3 * p2 + p3) * t ** 3))
    out.append(P[-2][None])
    return np.concatenate(out)


def _waypoints(world, rng, k: int) -> np.ndarray | None:
    """``k`` eye positions (metres) in the room's navigable box, 1.25–1.7 m high, 0.4 m clear of furniture, each
    at least 0.8 m (in x–y) from the one before and joined to it by a segment 0.35 m clear of furniture."""
    box, scene = world.scene.nav_box, world.scene
    pts: list[np.ndarray] = []
    for _ in range(500):
        if len(pts) == k:
            return np.array(pts)
        x = np.array([rng.uniform(*box[0]), rng.uniform(*box[1]), rng.uniform(1.25, 1.7)])
        if scene.inside_obstacle(x, 0.4) or (pts and np.linalg.norm(x[:2] - pts[-1][:2]) < 0.8):
            continue
        if pts and any(scene.inside_obstacle(s, 0.35) for s in np.linspace(pts[-1], x, 30)):
            continue
        pts.append(x)
    return None


def camera_path(world, rng) -> tuple[np.ndarray, np.ndarray] | None:
    """A smooth handheld-like camera path in the loaded room: (C2W poses (N, 4, 4), timestamps (N,) s), or None.

    The eye follows a Catmull-Rom spline through :func:`_waypoints` at ``speed_m_s`` (sampled at ``fps``); the view
    looks along the direction of travel swung by a slow sine (20–45° amplitude, 6–12 s period), pitched −12…0°
    and rolled within ±2° (slow sines of random phase)."""
    c = _CAMERA
    pts = _waypoints(world, rng, c["waypoints"])
    if pts is None:
        return None
    dense = _catmull_rom(pts)
    arc = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(dense, axis=0), axis=1))]
    s = np.arange(0.0, arc[-1], c["speed_m_s"] / c["fps"])
    pos = np.stack([np.interp(s, arc, dense[:, j]) for j in range(3)], axis=1)
    tangent = np.gradient(pos, axis=0)
    t = np.arange(len(pos)) / c["fps"]
    amp, period, phase = np.radians(rng.uniform(20, 45)), rng.uniform(6, 12), rng.uniform(0, 2 * np.pi)
    yaw = np.unwrap(np.arctan2(tangent[:, 1], tangent[:, 0])) + amp * np.sin(2 * np.pi * t / period + phase)
    pitch = np.radians(-6 + 6 * np.sin(2 * np.pi * t / rng.uniform(5, 9) + rng.uniform(0, 2 * np.pi)))
    roll = np.radians(2.0 * np.sin(2 * np.pi * t / rng.uniform(4, 8) + rng.uniform(0, 2 * np.pi)))
    from ..envs.camera import look_at

    poses = np.empty((len(pos), 4, 4))
    for i in range(len(pos)):
        T = look_at(pos[i], pos[i] + np.array([np.cos(yaw[i]), np.sin(yaw[i]), 0.0]))
        poses[i] = T @ geometry.make_pose(geometry.rot_x(pitch[i]) @ geometry.rot_z(roll[i]), np.zeros(3))
    return poses, t


def _camera_candidates(drops: Counter):
    """The camera track's candidates: one generated path per room, cut into tasks as a recording is."""
    from ..envs.registry import make_env
    from ..tasks.trajectory_pairs import pairs_from_trajectory
    from ..trajectories.trajectory import Trajectory

    env = make_env("nav", width=32, height=32, renderer="tiny", wrap=False)
    world = env.world
    rng = np.random.default_rng([SEEDS["camera"], 5])
    try:
        for k in range(_MAX_BATCHES):
            room = int(rng.integers(2 ** 31 - 1))
            world.load_scene({"generator": "room", "seed": room})
            got = camera_path(world, rng)
            if got is None:
                drops["no clear path in the room"] += 1
                continue
            poses, t = got
            traj = Trajectory(poses, t, _CAMERA["fps"], meta={"source": "camera_path", "kind": "nav",
                                                             "metric": True, "path": None})
            for task in pairs_from_trajectory(traj, n=_CAMERA["tasks_per_path"], seed=room, example=False,
                                              max_seconds=_CAMERA["max_seconds"], id_prefix=f"camera-path{k:03d}"):
                if not (world.view_ok(task.start_pose) and world.view_ok(task.goal_pose)):
                    drops[BLANK_VIEW] += 1
                    continue
                yield task.with_(scene=world.scene.spec, instruction=_INSTRUCTION,
                                 meta={**task.meta, "camera_path": {"room_seed": room, "frames": len(poses),
                                                                    **_CAMERA}})
    finally:
        env.close()
    raise RuntimeError(f"{SUITE_NAME}/camera: quota not met after {_MAX_BATCHES} rooms ({dict(drops)} left out)")


def _candidates(track: str, drops: Counter):
    if track == "game":
        return _game_candidates(drops)
    if track == "camera":
        return _camera_candidates(drops)
    return _batches(track, drops)


def _null_scores(task: Task) -> dict[str, float]:
    from ..scorers import null_score

    return {m: float(null_score(task, m, PINS["profile"])) for m in MODES}


def _select(track: str, limit: int | None, drops: Counter) -> list[tuple[Task, dict]]:
    """The track's tasks in the order drawn, each with its s0: candidates whose quota stratum is full are passed
    over, those left out are counted in ``drops``; stops when every quota is met (or after ``limit`` tasks)."""
    from ..envs import collision_problem

    quota = _quotas(track)
    kept: list[tuple[Task, dict]] = []
    gen = _candidates(track, drops)
    try:
        for task in gen:
            key = quota_key(track, task)
            if quota.get(key, 0) <= 0:
                continue
            if collision_problem(task) is not None:
                drops[COLLISION] += 1
                continue
            s0 = _null_scores(task)
            if max(s0.values()) > S0_MAX:
                drops[NULL_HIGH] += 1
                continue
            quota[key] -= 1
            kept.append((task, s0))
            if (limit is not None and len(kept) >= limit) or not any(quota.values()):
                break
    finally:
        gen.close()
    if limit is None and any(quota.values()):
        raise RuntimeError(f"{SUITE_NAME}/{track}: quotas not met ({quota}; {dict(drops)} left out)")
    return kept


def _finish(track: str, k: int, task: Task, s0: dict) -> Task:
    meta = {key: v for key, v in task.meta.items() if key not in _DROP_META}
    meta.update(track=track, s0=s0, built_from=task.id)
    return task.with_(id=f"{SUITE_NAME}-{track}-{k:04d}", tags={**task.tags, "suite": SUITE_NAME, "track": track},
                      meta=meta)


def view_hashes(tasks, *, size: int = PINS["image_size"], renderer: str = PINS["renderer"],
                quality: str = PINS["render_quality"]):
    """For each task, ``{"start": hex, "goal": hex}``: :func:`~spatialact.image_files.array_sha256` of the start
    and goal views an evaluation shows (``env.reset(options={"task": task})``'s ``rgb`` and ``goal_rgb``, as
    ``spatialact eval`` makes its environment) at ``size`` × ``size``, ``renderer`` and ``quality``. One environment
    per Gymnasium id (a kind's, the game's) is reset task after task (the same images as a fresh one: tested)."""
    from ..envs.registry import env_id_for, make_env
    from ..image_files import array_sha256

    envs: dict = {}
    try:
        for task in tasks:
            key = env_id_for(task.kind, task.scene)
            if key not in envs:
                envs[key] = make_env(task.kind, task=task, action_mode="continuous", renderer=renderer, width=size,
                                     height=size, seed=0, terminate_on_success=False, render_quality=quality)
            obs, _ = envs[key].reset(seed=0, options={"task": task})
            yield {"start": array_sha256(obs["rgb"]), "goal": array_sha256(obs["goal_rgb"])}
    finally:
        for env in envs.values():
            env.close()


def build_track(track: str, limit: int | None = None) -> tuple[list[Task], dict]:
    """A track's tasks as shipped (ids, tags, ``meta.s0``, ``meta.image_sha256``) and {reason: candidates left
    out}. ``limit``: only the first that many (the same tasks as the full build's first: a quick check)."""
    if track not in TRACKS:
        raise ValueError(f"unknown track {track!r} (tracks: {', '.join(TRACKS)})")
    drops: Counter = Counter()
    kept = _select(track, limit, drops)
    tasks = [_finish(track, k, t, s0) for k, (t, s0) in enumerate(kept)]
    tasks = [t.with_(meta={**t.meta, "image_sha256": h}) for t, h in zip(tasks, view_hashes(tasks))]
    return tasks, dict(sorted(drops.items()))


def task_lines(tasks) -> list[bytes]:
    """The task file lines (bytes, newline included) ``save_tasks`` writes for ``tasks``."""
    import tempfile

    from ..tasks import save_tasks

    with tempfile.TemporaryDirectory() as d:
        path = save_tasks(tasks, Path(d) / "tasks.jsonl")
        return path.read_bytes().splitlines(keepends=True)


# ----- the card ----------------------------------------------------------------------------------------------------
def lite_ids(tasks) -> list[str]:
    """The lite split: the first tasks of each track in file order, per level (nav) and per map (game)."""
    out, seen = [], Counter()
    for t in tasks:
        track = t.meta["track"]
        strata = {"nav": len(LEVELS), "game": len(GAME_MAPS)}.get(track, 1)
        key = (track, quota_key(track, t))
        if seen[key] < LITE_SIZES[track] // strata:
            seen[key] += 1
            out.append(t.id)
    return out


def _tag_counts(tasks) -> dict:
    counts: dict = {}
    for t in tasks:
        for k, v in t.tags.items():
            if k in ("suite", "track"):
                continue
            counts.setdefault(k, Counter())[str(v)] += 1
    return {k: dict(sorted(c.items())) for k, c in sorted(counts.items())}


def make_card(tasks: list[Task], sha256: str, n_bytes: int, drops: dict, half_widths: dict,
              questions: dict | None) -> dict:
    """The suite card: pins, the file's SHA-256 and size, per track its count, tag counts, mean s0, candidates left
    out and noisy-oracle's measured skill interval, the lite split, the question track."""
    tracks = {}
    for track in TRACKS:
        ts = [t for t in tasks if t.meta["track"] == track]
        tracks[track] = {
            "n": len(ts), "kind": TRACK_KINDS[track], "counts": _tag_counts(ts),
            "s0_mean": {m: round(float(np.mean([t.meta["s0"][m] for t in ts])), 4) for m in MODES} if ts else None,
            "left_out": drops.get(track, {}), "noisy_oracle_skill": half_widths.get(track)}
    lite = lite_ids(tasks)
    per = Counter(t.meta["track"] for t in tasks if t.id in set(lite))
    return {
        "suite": SUITE_NAME, "version": SUITE_VERSION, "file": suite_path().name, "sha256": sha256,
        "bytes": int(n_bytes), "n_tasks": len(tasks), "pins": dict(PINS), "tracks": tracks,
        "lite": {"name": LITE_NAME, "n": len(lite), "per_track": {t: per[t] for t in TRACKS}, "ids": lite},
        "questions": questions,
        "build": {"script": "scripts/make_l4_suite.py", "seeds": dict(SEEDS), "s0_max": S0_MAX,
                  "game": {"maps": list(GAME_MAPS), "walk_seconds": GAME_SECONDS, "per_map": GAME_PER_MAP},
                  "camera_paths": dict(_CAMERA), "nav_per_level": NAV_PER_LEVEL},
    }
