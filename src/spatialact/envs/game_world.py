"""A Doom level played through ViZDoom: the world of GameNav (docs/game.md, docs/environments.md "GameNav").

The controlled frame is the player's camera, as :class:`~spatialact.envs.doom.engine.DoomEngine` reports it: C2W
(4, 4) float64 in metres (1 map unit = 1/32 m), the map's x east and y north, world +Z up, OpenCV camera axes; the
eye 41 units (1.28 m) above the floor. What the game can and cannot do, and how a step is executed:

* a step's body-frame Δ is driven **through the game's physics** (:meth:`DoomEngine.execute`): walk to the target
  position (momentum, braking, collisions; within 1 mm in open space), fly the height a Pedestal commands, turn
  (Pan) and look (Tilt) exactly. A wall, a step too high or a closed door stops the player: :meth:`move` returns
  True (``info["blocked"]``). A step that crosses a level's exit line ends the game's episode: the player is put
  back where the step began (the level as at the map's start) and the step counts as blocked
  (``info["level_exit"]``);
* **Tilt** is Doom's look, within 32° up and 56° down (``info["tilt_clamped"]`` when cut); the image of a tilted
  view is the level view shifted vertically, so :attr:`GameWorld.camera` is per frame: fy = 1.2·fx and the
  principal point moved down by fy·tan(tilt), with :attr:`pose` reporting the tilt as a rotation about the camera's
  +X (what the model's Tilt did, what is scored);
* **Roll cannot be executed** (the game camera cannot roll): the rest of the step is executed, the roll is dropped
  and reported in ``info["roll_dropped"]`` (radians, what the step asked for and the camera did not do), and the pose
  stays level, so the roll shows in the rotation error;
* the world **renders only the player's current view** (``renders_any_pose`` False): :meth:`render_views` refuses
  other poses. The goal view is rendered by starting the level at the goal pose (:meth:`goal_view`);
* depth is the game's 8-bit buffer in metres, the middle of its level (quantisation 7.14 map units = 0.223 m,
  ±0.11 m; floors read up to one level nearer), clipped at the camera's far plane (20 m) as every environment's.

The engine runs in a worker process of its own (:class:`~spatialact.envs.doom.worker.EngineProcess`; docs/game.md
"The engine's processes"), every call with a deadline: a game that is killed, crashes or hangs fails the call that met
it with :class:`~spatialact.envs.doom.worker.EngineStopped` ("the game engine stopped: …", so the episode fails with
that reason) and never the caller; the next :meth:`GameWorld.load_scene` (the next episode) starts a new engine. The
engines die with the process that started them.

Scenes (a reference to a level, never arrays; docs/tasks.md "Game scenes")::

    {"type": "game", "wad": "freedoom2.wad", "map": "MAP01", "wad_sha256": "<64 hex>",
     "start": {"position": [x, y, z], "yaw_deg": a, "level": "initial"},
     "monsters": false, "trajectory": "path", "keyframes": [i, ..., j]}

``wad`` is a WAD bundled with vizdoom (``freedoom1.wad``, ``freedoom2.wad``) or a path; ``wad_sha256`` pins the
exact file (another version is refused); ``start`` is the task's start in the game's own units (the eye in map
units, yaw in degrees counter-clockwise from east) with the level in its ``initial`` state (doors, lifts and items as
at the map's start); ``trajectory`` and ``keyframes`` (optional) name the recording the task was cut from (its
frames are shown with ``observation="recorded"`` / ``"both"``). ``reset()`` without a task loads the environment's
own level (``wad=``, ``map=``) as ``{"generator": "game", "seed": n}``.

Random tasks (:meth:`GameWorld.sample_task`): a start on the explorer's walk through the level (seeded by the scene's
seed; level, looking where it walked), a ground truth of 1–3 random whole-unit steps of Truck, Dolly and Pan (the
game's level camera needs no Tilt, Roll or flying), which **the engine executes** from the start: only a walk the
game completes (no wall, reached within 1 cm) makes a task, so its goal is reachable by construction.
"""

from __future__ import annotations

import atexit
import hashlib
import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, StepSizes
from ..tasks import Task
from ..tasks.scene import Scene, parse_scene
from .camera import CameraSpec
from .doom.engine import (RESOLUTIONS, TILT_DOWN_LIMIT_DEG, TILT_UP_LIMIT_DEG, UNIT_M, depth_to_metres,
                          require_vizdoom, yaw_tilt_roll)
from .doom.wad import BUNDLED_WADS, DEFAULT_MAP, WadError, check_map, check_wad, resolve_wad, wad_sha256
from .doom.worker import EngineProcess
from .sampling import sample_signed_counts
from .world import World

__all__ = ["GameWorld", "LoadedLevel", "GameRecording", "GAME_SCENE_TYPE", "is_game_scene", "game_scene",
           "check_game_scene", "game_scene_problem", "engine_resolution", "close_parked_engines", "POOL_SIZE",
           "START_TOLERANCE", "GAME_AXIS_WEIGHTS", "GAME_MAX_COUNTS"]

GAME_SCENE_TYPE = "game"
#: A task's start must agree with its scene's ``start`` within (map units, degrees).
START_TOLERANCE = (1.0, 0.5)
#: Random ground truths (truck, pedestal, dolly, tilt, pan, roll): the level camera walks and turns only.
GAME_AXIS_WEIGHTS = (1.0, 0.0, 1.2, 0.0, 1.2, 0.0)
GAME_MAX_COUNTS = (10, 0, 10, 0, 6, 0)
WALK_SECONDS = 20.0           # the explorer's walk that random starts are drawn from
WALK_EVERY = 7                # one candidate start every this many tics of the walk
REACHED_M = 0.01              # a random ground truth counts as executed when it ends this close to its goal
_RECORDED_POSITION_SCALE = 0.2               # "recorded" observation: nearest frame by pos/0.2 m ...
_RECORDED_ROTATION_SCALE = math.radians(10)  # ... + rot/10° (as replay scenes)
_RECORDED_POSE_TOL = (1e-3, 1e-3)            # m, rad: a recorded task starts and ends on recorded poses


# Game processes kept for the next world of the same level (GameWorld.close parks its engine here): an evaluation
# makes one environment per episode, and starting vizdoom costs more than an episode's start. Keyed by the level and
# the screen; only this process's (a forked child never reuses its parent's game process). An engine that stopped is
# never parked, and one that stopped while parked is closed when taken: the next world starts a new one.
POOL_SIZE = 2
_POOL_LOCK = threading.Lock()
_PARKED: OrderedDict = OrderedDict()


def _take_engine(key) -> EngineProcess | None:
    with _POOL_LOCK:
        entry = _PARKED.pop(key, None)
    if entry is None or entry[0] != os.getpid():
        return None
    if not entry[1].alive:
        entry[1].close()
        return None
    return entry[1]


def _park_engine(key, engine: EngineProcess) -> None:
    if not engine.alive:
        engine.close()
        return
    closing = []
    with _POOL_LOCK:
        if key in _PARKED:
            closing.append(_PARKED.pop(key)[1])
        _PARKED[key] = (os.getpid(), engine)
        while len(_PARKED) > POOL_SIZE:
            closing.append(_PARKED.popitem(last=False)[1][1])
    for e in closing:
        e.close()


@atexit.register
def close_parked_engines() -> None:
    """Close the game processes kept for reuse (at exit, or to free them now)."""
    with _POOL_LOCK:
        entries = list(_PARKED.values())
        _PARKED.clear()
    for pid, engine in entries:
        if pid == os.getpid():
            engine.close()


def is_game_scene(scene) -> bool:
    """Whether a scene is a game level: a task's typed scene (``task.scene.is_game``) or a scene object read as one
    (``{"type": "game", ...}``, :func:`spatialact.tasks.scene.parse_scene`)."""
    if isinstance(scene, Scene):
        return scene.is_game
    return isinstance(scene, dict) and parse_scene(scene).is_game


def engine_resolution(width: int, height: int) -> tuple[int, int]:
    """The game screen an observation of ``width`` × ``height`` is rendered at: the smallest of the engine's 4:3
    resolutions covering it (the largest when none does); other sizes are resized from it."""
    for w, h in RESOLUTIONS:
        if w >= width and h >= height:
            return w, h
    return RESOLUTIONS[-1]


def _bad(where: str, field_: str, msg: str) -> ValueError:
    return ValueError(f"{where}: {field_}: {msg}")


def _wad_reference(path: Path) -> str:
    """How a scene names a WAD: the bundled name when it is one of vizdoom's, else its absolute path."""
    if path.name.lower() in BUNDLED_WADS:
        try:
            if resolve_wad(path.name.lower()) == path:
                return path.name.lower()
        except WadError:
            pass
    return str(path)


def game_scene(wad, map: str, start_pose, *, trajectory=None, keyframes=None, monsters: bool = False) -> dict:
    """The scene reference of a task starting at ``start_pose`` (C2W, metres, level) in ``map`` of ``wad`` (a
    bundled name or a path): ``{"type": "game", "wad", "map", "wad_sha256", "start", ...}``, with the recording's
    ``trajectory`` path and ``keyframes`` when given."""
    path = resolve_wad(wad)
    T = geometry.as_pose(start_pose)
    yaw, _, _ = yaw_tilt_roll(T[:3, :3])
    pos = T[:3, 3] / UNIT_M
    out = {"type": GAME_SCENE_TYPE, "wad": _wad_reference(path), "map": check_map(path, map),
           "wad_sha256": wad_sha256(path),
           "start": {"position": [round(float(v), 4) for v in pos],
                     "yaw_deg": round(math.degrees(yaw) % 360.0, 6), "level": "initial"}}
    if monsters:
        out["monsters"] = True
    if trajectory is not None:
        out["trajectory"] = str(trajectory)
        out["keyframes"] = [int(k) for k in keyframes]
    return out


def _finite(v, n: int | None = None) -> bool:
    vals = v if n is not None else [v]
    if n is not None and (not isinstance(v, (list, tuple)) or len(v) != n):
        return False
    return all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vals)


def check_game_scene(spec, where: str = "scene") -> dict:
    """A game scene checked (one-line ValueError ``<where>: scene.<field>: ...``): the WAD exists (bundled or a
    file) and its SHA-256 is ``wad_sha256``, the map is in it, ``start`` is a position (3 map units) and a yaw
    (degrees) with the level ``initial``, the optional fields have their types. Returns it with ``wad_path``
    (absolute) added."""
    if not isinstance(spec, dict) or spec.get("type") != GAME_SCENE_TYPE:
        raise _bad(where, "scene.type", f"a game scene has type {GAME_SCENE_TYPE!r}, got {spec!r:.80}")
    wad = spec.get("wad")
    if not isinstance(wad, str) or not wad:
        raise _bad(where, "scene.wad", f"expected a WAD name or path, got {wad!r:.80}")
    try:
        path = resolve_wad(wad)
    except WadError as e:
        raise _bad(where, "scene.wad", str(e)) from None
    try:
        name = check_map(path, spec.get("map") if isinstance(spec.get("map"), str) else repr(spec.get("map")))
    except WadError as e:
        raise _bad(where, "scene.map", str(e)) from None
    try:
        check_wad(path, [name])
    except WadError as e:
        raise _bad(where, "scene.wad", str(e)) from None
    sha = spec.get("wad_sha256")
    if not isinstance(sha, str) or len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
        raise _bad(where, "scene.wad_sha256", f"expected 64 lower-case hex digits, got {sha!r:.80}")
    actual = wad_sha256(path)
    if sha != actual:
        raise _bad(where, "scene.wad_sha256", f"{sha[:12]}… is not the SHA-256 of {path} ({actual[:12]}…): the "
                                              "task was made on another version of this WAD")
    start = spec.get("start")
    if (not isinstance(start, dict) or not _finite(start.get("position"), 3) or not _finite(start.get("yaw_deg"))
            or start.get("level", "initial") != "initial"):
        raise _bad(where, "scene.start", 'expected {"position": [x, y, z] map units, "yaw_deg": degrees, "level": '
                                         f'"initial"}}, got {start!r:.120}')
    if not isinstance(spec.get("monsters", False), bool):
        raise _bad(where, "scene.monsters", f"expected true or false, got {spec.get('monsters')!r:.40}")
    traj, kf = spec.get("trajectory"), spec.get("keyframes")
    if traj is not None and (not isinstance(traj, str) or not traj):
        raise _bad(where, "scene.trajectory", f"expected the recording's path, got {traj!r:.80}")
    if kf is not None and (not isinstance(kf, list) or len(kf) < 2
                           or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in kf)
                           or any(b <= a for a, b in zip(kf, kf[1:]))):
        raise _bad(where, "scene.keyframes", f"expected ≥ 2 increasing frame indices, got {kf!r:.80}")
    if (traj is None) != (kf is None):
        raise _bad(where, "scene.keyframes" if kf is None else "scene.trajectory",
                   "a recording is named by both trajectory and keyframes")
    return {**spec, "map": name, "wad_path": str(path)}


def game_scene_problem(task, env: str = "pybullet") -> str | None:
    """Why a game task cannot run in the simulator ``env`` (one line naming the field or option, without the task),
    or None: the game needs vizdoom and the default simulator (``--env pybullet``: GameNav); its scene must name an
    existing WAD with the recorded SHA-256 and a map in it, and a ``start`` that is the task's ``start_pose``."""
    if env != "pybullet":
        return f"--env {env}: game tasks run in the game (GameNav), with the default --env pybullet"
    try:
        require_vizdoom()
        check_game_scene(task.scene, where="scene")
        GameWorld.check_start(task.scene["start"], task.start_pose, where="scene")
    except ImportError as e:
        return str(e)
    except ValueError as e:
        msg = str(e)
        return msg[len("scene: "):] if msg.startswith("scene: ") else msg
    return None


@dataclass
class LoadedLevel:
    """The loaded level (the game's :class:`~spatialact.envs.scenes.SceneInfo`; a task's scene is a
    :class:`spatialact.tasks.scene.GameScene`): ``spec`` (the scene spec it was loaded from), the WAD's path, map,
    SHA-256, whether monsters are in it, and the ``seed`` of its random starts (the explorer's walk, computed on
    first use)."""

    spec: dict
    wad_path: Path
    map: str
    wad_sha256: str
    monsters: bool
    seed: int = 0
    walk: np.ndarray | None = None   # (M, 4, 4) C2W candidate starts (metres)


@dataclass
class GameRecording:
    """The recording a game task was cut from (:attr:`World.recording <spatialact.envs.world.World.recording>`):
    the game trajectory (source ``game``) and the task's keyframes (first = start, last = goal)."""

    trajectory: object
    keyframes: np.ndarray
    path: str
    _frames: OrderedDict = field(default_factory=OrderedDict)

    @property
    def goal_frame(self) -> int:
        return int(self.keyframes[-1])

    def has_frames(self) -> bool:
        return self.trajectory.images is not None

    def nearest(self, pose: np.ndarray) -> tuple[int, float]:
        """(frame, distance) of the recorded frame of the task's segment nearest C2W ``pose`` by
        ``‖Δp‖/0.2 m + angle/10°``."""
        idx = np.arange(int(self.keyframes[0]), int(self.keyframes[-1]) + 1)
        P = self.trajectory.poses[idx]
        d = (np.linalg.norm(P[:, :3, 3] - pose[:3, 3], axis=1) / _RECORDED_POSITION_SCALE
             + geometry.geodesic_angle(P[:, :3, :3], pose[:3, :3]) / _RECORDED_ROTATION_SCALE)
        j = int(np.argmin(d))
        return int(idx[j]), float(d[j])

    def frame(self, i: int, width: int, height: int) -> np.ndarray:
        """Recorded frame ``i`` as RGB (height, width, 3) uint8 (resized when needed; a small cache)."""
        key = (int(i), int(width), int(height))
        if key not in self._frames:
            rgb = self.trajectory.frame(int(i))
            if rgb is None:
                raise ValueError(f"scene.trajectory: {self.path}: no recorded frames")
            self._frames[key] = _resize_rgb(rgb, width, height)
            while len(self._frames) > 64:
                self._frames.popitem(last=False)
        return self._frames[key].copy()

    def start_gripper(self) -> None:
        """The game has no gripper."""
        return None


def _resize_rgb(rgb: np.ndarray, width: int, height: int) -> np.ndarray:
    if rgb.shape[:2] == (height, width):
        return rgb
    from PIL import Image

    return np.asarray(Image.fromarray(rgb).resize((int(width), int(height)), Image.BILINEAR))


def _resize_nearest(a: np.ndarray, width: int, height: int) -> np.ndarray:
    h, w = a.shape[:2]
    if (h, w) == (height, width):
        return a
    rows = np.minimum(((np.arange(height) + 0.5) * h / height).astype(np.int64), h - 1)
    cols = np.minimum(((np.arange(width) + 0.5) * w / width).astype(np.int64), w - 1)
    return a[rows][:, cols]


class GameWorld(World):
    """A Doom level through ViZDoom; see the module docstring.

    ``wad`` (a bundled name or a path; default ``freedoom2.wad``) and ``map`` (default ``MAP01``): the level of
    ``reset()`` without a task; ``monsters`` (False: an empty level); ``renderer`` is accepted and ignored (the game
    draws its own images). The game screen is the smallest 4:3 resolution covering the observation size
    (:func:`engine_resolution`); other sizes are resized from it, and :attr:`camera` says so.
    """

    kind = "nav"
    has_gripper = False
    default_generator = GAME_SCENE_TYPE
    renders_any_pose = False
    environment = "spatialact/GameNav-v0"  # registry.GAME_NAV_ID: game tasks run in GameNav
    blocks_motion = True  # walls stop a step short: eval records ``blocked`` per executed step

    def __init__(self, camera, renderer: str = "tiny", wad=None, map: str = DEFAULT_MAP, monsters: bool = False):
        super().__init__(camera)
        require_vizdoom()
        try:
            self.wad_path = resolve_wad(wad)
        except WadError as e:
            raise ValueError(f"wad: {e}") from None
        try:
            self.map = check_map(self.wad_path, map)
        except WadError as e:
            raise ValueError(f"map: {e}") from None
        try:
            check_wad(self.wad_path, [self.map])
        except WadError as e:
            raise ValueError(f"wad: {e}") from None
        self.monsters = bool(monsters)
        self.resolution = engine_resolution(camera.width, camera.height)
        self.engine: EngineProcess | None = None
        self._level = None
        self._last = None            # what the last move did (engine.Execution), None after a start
        self._level_exit = False
        self._recording = None
        self._goal_cache: OrderedDict = OrderedDict()

    # ----- the camera: the engine's, per frame -------------------------------------------------------------------
    @property
    def camera(self) -> CameraSpec:
        """The camera of the current image: the game screen's intrinsics (fx from the 90° horizontal field of view,
        fy = 1.2·fx, principal point moved down by fy·tan(tilt)), resized to the observation size; far plane the
        environment's. Before the level is loaded, the environment's camera."""
        if self.engine is None:
            return self.base_camera
        w, h = self.resolution
        cam = CameraSpec.from_K(self.engine.intrinsics(), w, h, near=self.base_camera.near, far=self.base_camera.far)
        W, H = self.base_camera.width, self.base_camera.height
        return cam if (w, h) == (W, H) else cam.resized(W, H)

    @camera.setter
    def camera(self, value) -> None:  # World.__init__ assigns it; the game's camera is always the engine's
        pass

    @classmethod
    def scene_aspect(cls, scene) -> float | None:
        """Game screens are 4:3."""
        return 4.0 / 3.0

    # ----- scene and task -----------------------------------------------------------------------------------------
    @classmethod
    def check_scene(cls, spec) -> dict:
        if isinstance(spec, dict) and spec.get("generator") == GAME_SCENE_TYPE and "type" not in spec:
            return dict(spec)
        checked = check_game_scene(spec)
        checked.pop("wad_path")
        return checked

    @classmethod
    def check_task(cls, task, cfg) -> str | None:
        """The pre-run check of a game task (:meth:`World.check_task`): FlipEval closed-loop is refused (the mirrored
        level does not exist), then :func:`game_scene_problem` (vizdoom, ``--env pybullet``, the WAD and its
        SHA-256, the map, the start)."""
        tid = f"task {task.id!r}"
        if cfg.variant == "mirror" and cfg.mode == "closed-loop":
            return (f"{tid}: --flip closed-loop cannot run a game task: the mirrored level does not exist (run --flip "
                    f"with --mode one-shot)")
        problem = game_scene_problem(task, cfg.env)
        return f"{tid}: {problem}" if problem else None

    @classmethod
    def replays_recording(cls, scene) -> bool:
        return is_game_scene(scene) and bool(scene.get("trajectory")) and bool(scene.get("keyframes"))

    def load_scene(self, spec: dict, where: str = "scene") -> None:
        """Load the level a game scene names (or, for ``{"generator": "game", "seed": n}``, the world's own level);
        the game process is kept while the level, its monsters and the screen stay the same."""
        if isinstance(spec, dict) and spec.get("generator") == GAME_SCENE_TYPE and "type" not in spec:
            path, name, monsters, seed = self.wad_path, self.map, self.monsters, spec.get("seed", 0)
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise _bad(where, "scene.seed", f"expected a whole number, got {seed!r:.40}")
        elif is_game_scene(spec):
            checked = check_game_scene(spec, where)
            path, name, monsters, seed = Path(checked["wad_path"]), checked["map"], bool(spec.get("monsters")), 0
        else:
            raise _bad(where, "scene", f"GameNav plays game levels ({{\"type\": \"game\", ...}}), not {spec!r:.80}")
        level = (str(path), name, monsters, self.resolution)
        if self.engine is not None and (level != self._level or not self.engine.alive):
            _park_engine(self._level, self.engine)  # a stopped engine is closed, not parked
            self.engine = None
        if self.engine is None:
            self.engine = _take_engine(level) or EngineProcess(path, name, self.resolution, monsters=monsters)
            if level != self._level:
                self._goal_cache.clear()
            self._level = level
        if self.scene is None or self.scene.spec != spec:
            walk = self.scene.walk if (self.scene is not None and self.scene.seed == seed
                                       and self.scene.wad_path == path and self.scene.map == name) else None
            self.scene = LoadedLevel(spec=dict(spec), wad_path=path, map=name, wad_sha256=wad_sha256(path),
                                   monsters=monsters, seed=int(seed), walk=walk)

    def configure_task(self, task, observation: str = "sim") -> None:
        """Check the task against the game: start and goal level or tilted within the look's limits, never rolled;
        the scene's ``start`` is the task's start (1 map unit, 0.5°); with ``observation`` ``recorded`` / ``both``
        the recording (``scene.trajectory``) is loaded and its poses at the first and last keyframe must be the
        task's start and goal (1 mm, 1 mrad)."""
        self.task = task
        where = f"task {task.id}"
        for name, T in (("start_pose", task.start_pose), ("goal_pose", task.goal_pose)):
            _, tilt, roll = yaw_tilt_roll(np.asarray(T)[:3, :3])
            if abs(roll) > math.radians(0.5):
                raise _bad(where, name, f"is rolled by {math.degrees(roll):.3g}°: the game camera cannot roll")
            if not -TILT_DOWN_LIMIT_DEG - 0.5 <= math.degrees(tilt) <= TILT_UP_LIMIT_DEG + 0.5:
                raise _bad(where, name, f"looks {math.degrees(tilt):.3g}° up, beyond the game's look limits "
                                        f"({TILT_UP_LIMIT_DEG:g}° up, {TILT_DOWN_LIMIT_DEG:g}° down)")
        scene = task.scene if is_game_scene(task.scene) else None
        if scene is not None:
            self.check_start(scene["start"], task.start_pose, where)
        self._recording = None
        if observation != "sim" and scene is not None and self.replays_recording(scene):
            self._recording = self._load_recording(scene, task, where)

    @staticmethod
    def check_start(start: dict, T: np.ndarray, where: str) -> None:
        """Refuse (one-line ValueError ``<where>: scene.start: ...``) a scene ``start`` that is not the pose ``T``
        (C2W, metres) within :data:`START_TOLERANCE`."""
        yaw, _, _ = yaw_tilt_roll(np.asarray(T)[:3, :3])
        d = float(np.linalg.norm(np.asarray(start["position"], dtype=np.float64) - np.asarray(T)[:3, 3] / UNIT_M))
        a = abs((math.degrees(yaw) - float(start["yaw_deg"]) + 180.0) % 360.0 - 180.0)
        if d > START_TOLERANCE[0] or a > START_TOLERANCE[1]:
            raise _bad(where, "scene.start", f"is {d:.3g} map units and {a:.3g}° from start_pose (they must agree "
                                             f"within {START_TOLERANCE[0]:g} unit and {START_TOLERANCE[1]:g}°)")

    @staticmethod
    def _load_recording(scene: dict, task, where: str) -> GameRecording:
        from ..trajectories import load_trajectory

        path = str(scene["trajectory"])
        try:
            traj = load_trajectory(path, "game")
        except (FileNotFoundError, ValueError) as e:
            raise _bad(where, "scene.trajectory", (str(e).strip().splitlines() or ["unreadable"])[0]) from None
        kf = np.asarray(scene["keyframes"], dtype=np.int64)
        if kf[-1] >= len(traj):
            raise _bad(where, "scene.keyframes", f"frame {int(kf[-1])} is past the recording's last ({len(traj) - 1})")
        for name, T, k in (("start_pose", task.start_pose, kf[0]), ("goal_pose", task.goal_pose, kf[-1])):
            dp = float(np.linalg.norm(T[:3, 3] - traj.poses[k, :3, 3]))
            dr = float(geometry.rotation_error(T, traj.poses[k]))
            if dp > _RECORDED_POSE_TOL[0] or dr > _RECORDED_POSE_TOL[1]:
                raise _bad(where, name, f"is not the recording's pose at frame {int(k)} (off by {dp:.3g} m, "
                                        f"{math.degrees(dr):.3g}°)")
        return GameRecording(traj, kf, path)

    @property
    def recording(self):
        """The configured task's recording when the episode shows recorded frames (``observation`` ``recorded`` or
        ``both`` and a scene naming its trajectory), else None."""
        return self._recording

    # ----- the player ----------------------------------------------------------------------------------------------
    def _started(self) -> EngineProcess:
        if self.engine is None:
            raise RuntimeError("GameWorld: load a scene first (load_scene)")
        return self.engine

    def _start_at(self, T, what: str) -> None:
        try:
            self._started().start(T)
        except ValueError as e:
            tid = self.task.id if self.task is not None else "?"
            raise _bad(f"task {tid}", what, str(e)) from None

    def set_start(self, task) -> None:
        """Start the level (as at the map's start) with the player at ``task.start_pose``: deterministic, within 1
        map unit and 0.5° (:meth:`DoomEngine.start`)."""
        self._start_at(task.start_pose, "start_pose")
        self._last, self._level_exit = None, False

    def move(self, delta: np.ndarray) -> bool:
        """Execute one step's Δ through the game's physics; True when a wall (or the level's exit) stopped it."""
        eng = self._started()
        before = eng.pose()
        self._last = eng.execute(delta)
        self._level_exit = eng.finished
        if self._level_exit:  # the step crossed an exit line and the game ended the level: back to where it began
            eng.start(before)
            return True
        return bool(self._last.blocked)

    @property
    def pose(self) -> np.ndarray:
        return self._started().pose()

    # ----- images ----------------------------------------------------------------------------------------------------
    def _render(self, depth: bool):
        rgb, levels = self._started().render_raw()
        W, H = self.base_camera.width, self.base_camera.height
        d = None
        if depth:
            d = np.minimum(_resize_nearest(depth_to_metres(levels, self.engine.height), W, H),
                           np.float32(self.base_camera.far))
        return _resize_rgb(rgb, W, H), d

    def render_views(self, poses, depth: bool = False, segmentation: bool = False) -> tuple:
        """The player's current view, once per pose asked for; every pose must be the current camera pose (the game
        draws only the player's view) and segmentation is not available."""
        if segmentation:
            raise ValueError("GameWorld: the game gives no segmentation images")
        P = np.asarray(poses, dtype=np.float64).reshape(-1, 4, 4)
        cur = self.pose
        for T in P:
            dp, dr = float(np.linalg.norm(T[:3, 3] - cur[:3, 3])), float(geometry.rotation_error(T, cur))
            if dp > 1e-6 or dr > 1e-6:
                raise ValueError(f"GameWorld renders only the player's current view (renders_any_pose is False): a "
                                 f"pose {dp:.3g} m / {math.degrees(dr):.3g}° from it was asked for")
        rgb, d = self._render(depth)
        k = len(P)
        return (np.repeat(rgb[None], k, axis=0), None if d is None else np.repeat(d[None], k, axis=0), None)

    def observe(self, depth: bool = False) -> tuple:
        return self._render(depth)

    def goal_view(self) -> np.ndarray:
        """The view at the task's goal pose, rendered by starting the level there (the level as at the map's start,
        the same screen as the observations); cached per task and goal. Call before :meth:`set_start`."""
        task = self.task
        key = (task.id, np.asarray(task.goal_pose, dtype=np.float64).tobytes(), self.base_camera.width,
               self.base_camera.height)
        if key not in self._goal_cache:
            self._start_at(task.goal_pose, "goal_pose")
            self._goal_cache[key] = self._render(False)[0]
            while len(self._goal_cache) > 32:
                self._goal_cache.popitem(last=False)
        return self._goal_cache[key].copy()

    # ----- info ------------------------------------------------------------------------------------------------------
    def extra_info(self) -> dict:
        """``reached`` (the last step ended within the engine's tolerance of its target), ``game_tics`` (the game
        tics it took), ``roll_dropped`` (radians of roll it asked for and the camera cannot make), ``tilt_clamped``
        (its tilt was cut to the look limits), ``level_exit`` (it crossed an exit line and was undone)."""
        ex = self._last
        if ex is None:
            return {"reached": True, "game_tics": 0, "roll_dropped": 0.0, "tilt_clamped": False, "level_exit": False}
        return {"reached": bool(ex.reached and not self._level_exit), "game_tics": int(ex.tics),
                "roll_dropped": float(ex.roll_dropped), "tilt_clamped": bool(ex.tilt_clamped),
                "level_exit": bool(self._level_exit)}

    @property
    def gl_renderer(self) -> str:
        version = self.engine.engine_version if self.engine is not None else require_vizdoom().__version__
        return f"ViZDoom {version} software renderer"

    def close(self) -> None:
        """Give the game process back: it is kept (at most :data:`POOL_SIZE` of them, closed at exit or by
        :func:`close_parked_engines`) for the next world of the same level in this process, which starts it anew; an
        engine that stopped is closed instead."""
        if self.engine is not None:
            _park_engine(self._level, self.engine)
            self.engine = None
        self._level = None

    # ----- random tasks ------------------------------------------------------------------------------------------
    def walk_starts(self) -> np.ndarray:
        """Candidate starts in the loaded level (M, 4, 4) C2W: every :data:`WALK_EVERY`-th pose of the explorer's
        walk of :data:`WALK_SECONDS` seconds seeded by the scene's seed (level, looking where it walked)."""
        scene = self.scene
        if scene.walk is None:
            poses = self._started().walk_poses(scene.seed, int(WALK_SECONDS * 35), WALK_EVERY)
            scene.walk = poses[1:] if len(poses) > 1 else poses
        return scene.walk

    def execute_ground_truth(self, start: np.ndarray, gt: ActionSequence) -> bool:
        """Whether the game, started at ``start`` (C2W), executes ``gt`` step by step without a wall stopping it and
        ends within :data:`REACHED_M` of ``gt``'s replay (the goal a task defines by it)."""
        eng = self._started()
        try:
            eng.start(start)
        except ValueError:
            return False
        for step in gt.steps:
            ex = eng.execute(step.as_delta(gt.sizes))
            if ex.blocked or eng.finished:
                return False
        goal = gt.to_poses(start)[-1]
        T = eng.pose()
        return (float(np.linalg.norm(T[:3, 3] - goal[:3, 3])) <= REACHED_M
                and float(geometry.rotation_error(T, goal)) <= math.radians(0.5))

    def sample_task(self, rng, *, sizes: StepSizes, cap: int = 10, n_steps=(1, 3), variant: str = "reach",
                    max_tries: int = 200):
        """A random task the game executes (see the module docstring)."""
        if variant != "reach":
            raise ValueError(f"GameNav tasks are 'reach' tasks, got variant {variant!r}")
        starts = self.walk_starts()
        for _ in range(max_tries):
            start = starts[int(rng.integers(len(starts)))]
            k = int(rng.integers(n_steps[0], n_steps[1] + 1))
            signed = sample_signed_counts(rng, k, GAME_AXIS_WEIGHTS, GAME_MAX_COUNTS, cap)
            gt = ActionSequence.from_signed_counts(signed, sizes, cap=cap)
            goal = gt.to_poses(start)[-1]
            if np.linalg.norm(goal[:3, 3] - start[:3, 3]) < 2 * sizes.translation:
                continue
            if not self.execute_ground_truth(start, gt):
                continue
            scene = game_scene(self.scene.wad_path, self.scene.map, start, monsters=self.scene.monsters)
            digest = hashlib.sha1(np.round(np.stack([start, goal]), 9).tobytes()).hexdigest()[:10]
            return Task(id=f"nav-game-{self.scene.map}-{digest}", kind="nav", source="game", start_pose=start,
                        goal_pose=goal, gt=gt, sizes=gt.sizes, answer_format="stepped", scene=scene,
                        tags={"variant": "reach", "n_steps": k, "map": self.scene.map},
                        instruction="Move the camera from the start view to the goal view.")
        raise RuntimeError(f"no random task the game executes found in {self.scene.map} after {max_tries} tries")
