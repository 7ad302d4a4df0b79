"""Replay scenes: the worlds in which trajectory tasks run closed-loop (docs/environments.md).

A replay scene (the ``scene`` of a task, docs/tasks.md "Replay scenes") references a recorded trajectory — path,
format, episode, entity, keyframes — never per-frame arrays. :func:`build_replay_world` builds its world in a
:class:`~spatialact.envs.rendering.BulletBackend`; the environments call it from ``reset`` and keep a
:class:`BuiltReplay` for the observing camera and the recorded frames. Frames, per source:

* ``droid`` (GripperManip): the world *is* DROID's robot-base frame (+Z up, metres); the simulated Panda's base
  stands at its origin. Task poses are DROID end-effector poses (the Franka flange, "the wrist site of the robot",
  droid-dataset/droid#2) and the environment reports its pose in that frame: the simulated grasp frame
  (``panda_grasptarget``) is ``T_ee @ DROID_TOOL_OFFSET`` — R_z(−45°) and 0.105 m along +Z, exactly the Panda's
  flange-to-grasp-target transform, so the simulated flange is where DROID recorded it. The exterior camera is
  ``camera_extrinsics.<camera>`` (camera-to-base, OpenCV axes); intrinsics from the scene or
  :func:`droid_default_intrinsics` (a ZED 2 at 16:9, 70° vertical field of view). A table top lies
  ``DROID_TABLE_CLEARANCE`` below the episode's lowest simulated grasp point (:func:`droid_table_height`).
* ``egodex`` (HandManip): the ARKit world turned to +Z up (as the reader does); the hand follows the extracted
  wrist frame; at agent step k the observing camera is the recorded head camera at keyframe min(k, K); an
  optional table top (``table_height``, :func:`egodex_table_height`: ``EGODEX_TABLE_CLEARANCE`` below the lowest
  point of the hand proxy over the episode).
* ``camera_path`` (CameraNav): a mesh scene the user names, or a procedural room box (``room``: centre, size, up)
  enclosing the task's start–goal segment with a margin (:func:`room_for_segment`).
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np

from .. import geometry
from .camera import CameraSpec
from .rendering import BulletBackend
from .scenes import SceneBuilder, SceneInfo, build_scene, light_for
from .textures import texture_path

__all__ = ["DROID_TOOL_OFFSET", "DROID_TABLE_CLEARANCE", "EGODEX_TABLE_CLEARANCE", "ZED2_IMAGE_SIZE",
           "ZED2_VFOV_DEG", "ROOM_MARGIN", "ROOM_BELOW", "ROOM_ABOVE", "RECORDED_POSITION_SCALE",
           "RECORDED_ROTATION_SCALE", "BuiltReplay", "TaskRecording", "is_replay_scene", "replay_kind",
           "load_scene_trajectory", "clear_trajectory_cache", "build_replay_world", "droid_default_intrinsics",
           "droid_table_height", "egodex_table_height", "hand_points", "room_for_segment", "segment_up",
           "check_droid_reachable", "droid_joint_positions", "replay_scene_for", "replay_camera_spec",
           "prime_trajectory_cache", "scene_aspect"]

# DROID end-effector (Franka flange) -> the simulated grasp frame (pybullet_data panda.urdf: panda_hand_joint
# rpy 0 0 −π/4, then panda_grasptarget_hand 0.105 m along +Z).
DROID_TOOL_OFFSET = geometry.make_pose(geometry.rot_z(-math.pi / 4), [0.0, 0.0, 0.105])
DROID_TABLE_CLEARANCE = 0.03   # m: table top below the episode's lowest simulated grasp point
EGODEX_TABLE_CLEARANCE = 0.03  # m: table top below the lowest point of the hand proxy (wrist to fingertips)
ZED2_IMAGE_SIZE = (1280, 720)  # DROID stores no intrinsics: a ZED 2 at 16:9 ...
ZED2_VFOV_DEG = 70.0           # ... with about 70° vertical field of view (square pixels, centred)
EGODEX_IMAGE_SIZE = (1920, 1080)  # the EgoDex video (camera/intrinsic is in its pixels)
ROOM_MARGIN = 1.5  # m: horizontal margin of a procedural replay room around the start–goal segment
ROOM_BELOW = 1.4   # m: floor this far below the segment's lowest camera position (along up)
ROOM_ABOVE = 1.0   # m: ceiling this far above its highest
RECORDED_POSITION_SCALE = 0.2                    # "recorded" observation: nearest frame by pos/0.2 m ...
RECORDED_ROTATION_SCALE = math.radians(10.0)     # ... + rot/10°
_POSE_TOL = (1e-3, 1e-3)  # m, rad: a task's start/goal must be the trajectory's poses at its first/last keyframe
_HAND_POINTS = np.array([[0, 0, 0], [0, 0, 0.1], [0, 0, 0.17], [0.04, 0, 0.1], [-0.04, 0, 0.1],
                         [0.045, 0.03, 0.06]], dtype=np.float64)  # hand-frame points of the proxy (m)
_SOURCES = {"droid": "manip", "egodex": "hand", "camera_path": "nav"}
_CAMERA_PATH_FORMATS = ("npz", "json", "tum", "kitti", "realestate10k", "egodex")


def is_replay_scene(scene) -> bool:
    """Whether a task's ``scene`` is a replay scene (``{"type": "replay", ...}``)."""
    return isinstance(scene, dict) and scene.get("type") == "replay"


def replay_kind(scene: dict) -> str:
    """The task kind a replay scene runs in: droid → manip, egodex → hand, camera_path → nav."""
    return _SOURCES.get(scene.get("source"), "?")


def _bad(where: str, field_: str, msg: str) -> ValueError:
    return ValueError(f"{where}: {field_}: {msg}")


# ----- trajectories (cached per process) -------------------------------------------------------------------------
_TRAJ_CACHE: OrderedDict = OrderedDict()
_TRAJ_CACHE_SIZE = 8


def _load_options(scene: dict) -> dict:
    src = scene.get("source")
    opts = {"format": scene.get("format"), "episode": scene.get("episode"), "entity": scene.get("entity"),
            "fps": scene.get("fps")}
    if src == "droid":
        cam = (scene.get("camera") or {}).get("name")
        if cam and cam not in ("exterior_1_left", "exterior_image_1_left"):
            opts["camera"] = cam  # the reader's default otherwise (a dataset without videos has no video key)
        if opts["entity"] is None:
            opts["entity"] = None
    return opts


def _cache_key(path: str, opts: dict):
    try:
        st = os.stat(path)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = None
    return (os.path.abspath(path), tuple(sorted((k, str(v)) for k, v in opts.items())), stamp)


def load_scene_trajectory(scene: dict, where: str = "scene"):
    """The trajectory a replay scene references (``load_trajectory`` with its format, episode, entity, fps),
    cached per process (keyed by path, options, modification time and size). Errors are one line naming
    ``<where>: scene.trajectory``."""
    from ..trajectories import load_trajectory

    path = scene.get("trajectory")
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise _bad(where, "scene.trajectory", f"a replay scene needs the trajectory's path, got {path!r}")
    path = str(path)
    opts = _load_options(scene)
    key = _cache_key(path, opts)
    if key in _TRAJ_CACHE:
        _TRAJ_CACHE.move_to_end(key)
        return _TRAJ_CACHE[key]
    kw = {k: v for k, v in opts.items() if v is not None and k != "format"}
    try:
        traj = load_trajectory(path, opts["format"], **kw)
    except FileNotFoundError as e:
        raise _bad(where, "scene.trajectory", str(e).strip().splitlines()[0]) from None
    except ValueError as e:
        raise _bad(where, "scene.trajectory", (str(e).strip().splitlines() or ["unreadable"])[0]) from None
    _TRAJ_CACHE[key] = traj
    while len(_TRAJ_CACHE) > _TRAJ_CACHE_SIZE:
        _TRAJ_CACHE.popitem(last=False)
    return traj


def prime_trajectory_cache(scene: dict, traj) -> None:
    """Make :func:`load_scene_trajectory` return ``traj`` for this scene (``replay_trajectory`` has it loaded)."""
    _TRAJ_CACHE[_cache_key(str(scene["trajectory"]), _load_options(scene))] = traj
    while len(_TRAJ_CACHE) > _TRAJ_CACHE_SIZE:
        _TRAJ_CACHE.popitem(last=False)


def clear_trajectory_cache() -> None:
    _TRAJ_CACHE.clear()


# ----- rules the task builder and the environments share --------------------------------------------------------
def droid_default_intrinsics(width: int = ZED2_IMAGE_SIZE[0], height: int = ZED2_IMAGE_SIZE[1]) -> dict:
    """DROID stores no intrinsics: a ZED 2 at 16:9 with a 70° vertical field of view, square pixels, principal
    point at the image centre ((W − 1)/2, (H − 1)/2), in pixels of a ``width`` × ``height`` image."""
    f = (height / 2.0) / math.tan(math.radians(ZED2_VFOV_DEG) / 2.0)
    return {"fx": f, "fy": f, "cx": (width - 1) / 2.0, "cy": (height - 1) / 2.0}


def droid_table_height(poses_ee: np.ndarray) -> float:
    """z (robot-base frame, m) of the table top for a DROID episode: ``DROID_TABLE_CLEARANCE`` below the lowest
    simulated grasp point (``T_ee @ DROID_TOOL_OFFSET``) over the episode's end-effector poses (N, 4, 4)."""
    grasp = np.asarray(poses_ee, dtype=np.float64) @ DROID_TOOL_OFFSET
    return float(grasp[:, 2, 3].min() - DROID_TABLE_CLEARANCE)


def hand_points(poses_hand: np.ndarray) -> np.ndarray:
    """World points (N, P, 3) of the hand proxy (wrist, knuckles, fingertips, thumb) at hand poses (N, 4, 4)."""
    P = np.asarray(poses_hand, dtype=np.float64)
    return np.einsum("nij,pj->npi", P[:, :3, :3], _HAND_POINTS) + P[:, None, :3, 3]


def egodex_table_height(poses_hand: np.ndarray) -> float:
    """z (m, +Z-up world) of the table top for an EgoDex episode: ``EGODEX_TABLE_CLEARANCE`` below the lowest point
    of the hand proxy (wrist to fingertips) over the episode's wrist poses (N, 4, 4)."""
    return float(hand_points(poses_hand)[..., 2].min() - EGODEX_TABLE_CLEARANCE)


_UP_AXES = {"+x": (1, 0, 0), "-x": (-1, 0, 0), "+y": (0, 1, 0), "-y": (0, -1, 0), "+z": (0, 0, 1), "-z": (0, 0, -1)}


def _up_vector(up) -> np.ndarray:
    if isinstance(up, str):
        if up not in _UP_AXES:
            raise ValueError(f"up must be one of {', '.join(_UP_AXES)} or a vector, got {up!r}")
        return np.array(_UP_AXES[up], dtype=np.float64)
    u = np.asarray(up, dtype=np.float64).reshape(-1)
    if u.shape != (3,) or not np.all(np.isfinite(u)) or np.linalg.norm(u) < 1e-9:
        raise ValueError(f"up must be an axis label or a non-zero 3-vector, got {up!r}")
    return u / np.linalg.norm(u)


def _room_rotation(up) -> np.ndarray:
    """Room axes (3, 3) as columns: x, y horizontal, z = up; x is world +X made horizontal (world +Y when +X is
    nearly vertical) — fixed by ``up`` alone, so a room is fully given by centre, size and up."""
    u = _up_vector(up)
    e = np.array([1.0, 0.0, 0.0]) if abs(u[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = e - (e @ u) * u
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(u, x), u], axis=1)


def segment_up(traj, frames=None):
    """The up direction for a camera path: ``"+z"`` where the source knows it (KITTI, EgoDex: the readers turn
    their worlds to +Z up), else the mean camera up (−Y of the OpenCV camera) over ``frames`` (a unit 3-vector)."""
    src = str(traj.meta.get("source", ""))
    if src in ("kitti", "egodex", "droid"):
        return "+z"
    P = traj.poses if frames is None else traj.poses[np.asarray(frames)]
    m = -P[:, :3, 1].mean(axis=0)
    if np.linalg.norm(m) < 1e-6:
        return "+z"
    return [float(v) for v in m / np.linalg.norm(m)]


def room_for_segment(positions: np.ndarray, up="+z") -> dict:
    """A procedural room box ``{"center", "size", "up"}`` enclosing camera positions (N, 3) — the task's start–goal
    segment, never the whole path — with ``ROOM_MARGIN`` around them horizontally, the floor ``ROOM_BELOW`` under
    the lowest and the ceiling ``ROOM_ABOVE`` over the highest (along ``up``). Size is along the room axes
    (:func:`_room_rotation`)."""
    X = np.atleast_2d(np.asarray(positions, dtype=np.float64))
    R = _room_rotation(up)
    local = X @ R
    lo, hi = local.min(axis=0), local.max(axis=0)
    lo = lo - np.array([ROOM_MARGIN, ROOM_MARGIN, ROOM_BELOW])
    hi = hi + np.array([ROOM_MARGIN, ROOM_MARGIN, ROOM_ABOVE])
    center = R @ ((lo + hi) / 2)
    return {"center": [float(v) for v in center], "size": [float(v) for v in (hi - lo)],
            "up": up if isinstance(up, str) else [float(v) for v in up]}


# ----- DROID reachability (for the task builder) -----------------------------------------------------------------
_PANDA = None


def droid_joint_positions(traj) -> np.ndarray | None:
    """(N, 7) recorded ``observation.state.joint_position`` of a DROID trajectory (radians), or None when the data
    file has no such column (or not one row per frame)."""
    data, ep = traj.meta.get("data_file"), traj.meta.get("episode")
    if not data or traj.meta.get("source") != "droid":
        return None
    try:
        import pyarrow.parquet as pq

        cols = pq.read_schema(data).names
        name = "observation.state.joint_position"
        if name not in cols:
            return None
        want = [name] + [c for c in ("episode_index", "index") if c in cols]
        tb = pq.read_table(data, columns=want).to_pydict()
        rows = list(range(len(tb[name])))
        if "episode_index" in tb and ep is not None:
            rows = [i for i in rows if int(tb["episode_index"][i]) == int(ep)]
        if "index" in tb:
            rows.sort(key=lambda i: int(tb["index"][i]))
        q = np.asarray([tb[name][i] for i in rows], dtype=np.float64)
    except Exception:  # noqa: BLE001 - a seed is a convenience: without it IK starts from the home posture
        return None
    if q.shape != (len(traj), 7) or not np.all(np.isfinite(q)):
        return None
    return q


def check_droid_reachable(poses_ee, joint_seeds=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Whether the simulated Panda (base at the origin of DROID's robot-base frame) reaches DROID end-effector
    poses (N, 4, 4) (base frame, flange, as recorded): the grasp frame ``T @ DROID_TOOL_OFFSET`` solved by IK
    (seeded from ``joint_seeds`` (N, 7) when given, e.g. :func:`droid_joint_positions`, retried from the home
    posture) to within ``REACH_TOLERANCE`` (2 mm, 1°). Returns (ok (N,) bool, position errors (N,) m, rotation
    errors (N,) rad). The builder skips pairs whose start or goal is not reachable; nothing is clamped."""
    from .panda import PandaArm, REACH_TOLERANCE

    global _PANDA
    if _PANDA is None:
        world = BulletBackend("tiny")
        _PANDA = PandaArm(world, np.eye(4))
    P = np.asarray(poses_ee, dtype=np.float64).reshape(-1, 4, 4)
    seeds = None if joint_seeds is None else np.asarray(joint_seeds, dtype=np.float64).reshape(-1, 7)
    pe = np.zeros(len(P))
    re = np.zeros(len(P))
    for i, T in enumerate(P):
        pe[i], re[i] = _PANDA.reach(T @ DROID_TOOL_OFFSET, None if seeds is None else seeds[i])
    return (pe <= REACH_TOLERANCE[0]) & (re <= REACH_TOLERANCE[1]), pe, re


# ----- what an environment keeps ---------------------------------------------------------------------------------
@dataclass
class BuiltReplay:
    """A replay scene once built into a PyBullet world (not a :class:`~spatialact.envs.world.World`: the world that
    runs it is a :class:`~spatialact.envs.pybullet_world.PyBulletWorld`, which keeps one): the trajectory, the
    observing camera, recorded frames on demand.

    ``camera``: the recorded camera (intrinsics in pixels of the recorded ``image_size``) or None (CameraNav renders
    with its own camera); ``fixed_camera``: a static C2W observing camera (DROID's exterior camera) or None;
    ``camera_poses``: per-frame observing cameras (EgoDex head camera) or None; ``joint_seeds`` (N, 7) or None.
    """

    scene: dict
    source: str
    trajectory: object
    camera: CameraSpec | None = None
    fixed_camera: np.ndarray | None = None
    camera_poses: np.ndarray | None = None
    joint_seeds: np.ndarray | None = None
    tool: np.ndarray = field(default_factory=lambda: np.eye(4))
    room: tuple | None = None  # (centre, R, size) of a procedural room
    _frames: OrderedDict = field(default_factory=OrderedDict)

    def check_task(self, task, where: str) -> np.ndarray:
        """The task's keyframes (checked against the trajectory), after checking that start and goal poses are the
        trajectory's poses at the first and last keyframe. One-line ValueErrors name the task and the field."""
        kf = task.scene.get("keyframes")
        if (not isinstance(kf, (list, tuple)) or len(kf) < 2
                or not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in kf)):
            raise _bad(where, "scene.keyframes", f"need ≥ 2 frame indices, got {kf!r}")
        kf = np.asarray(kf, dtype=np.int64)
        n = len(self.trajectory)
        if np.any(np.diff(kf) <= 0) or kf[0] < 0:
            raise _bad(where, "scene.keyframes", "must be non-negative and strictly increasing")
        if kf[-1] >= n:
            raise _bad(where, "scene.keyframes", f"frame {int(kf[-1])} is past the trajectory's last frame ({n - 1})")
        P = self.trajectory.poses
        for name, T, k in (("start_pose", task.start_pose, kf[0]), ("goal_pose", task.goal_pose, kf[-1])):
            dp = float(np.linalg.norm(T[:3, 3] - P[k, :3, 3]))
            dr = float(geometry.rotation_error(T, P[k]))
            if dp > _POSE_TOL[0] or dr > _POSE_TOL[1]:
                raise _bad(where, name, f"is not the trajectory's pose at frame {int(k)} (off by {dp:.3g} m, "
                                        f"{math.degrees(dr):.3g}°); replay tasks start and end on recorded poses, "
                                        "in the trajectory's frame")
        if self.room is not None:
            c, R, size = self.room
            for name, T in (("start_pose", task.start_pose), ("goal_pose", task.goal_pose)):
                local = R.T @ (T[:3, 3] - c)
                if np.any(np.abs(local) > size / 2):
                    raise _bad(where, name, "lies outside the replay room (scene.room); size the room with "
                                            "spatialact.envs.replay_world.room_for_segment")
        return kf

    def observing_camera(self, keyframes: np.ndarray, step: int) -> np.ndarray | None:
        """C2W pose of the observing camera at agent step ``step`` (EgoDex: the head camera at keyframe
        min(step, K)); None for CameraNav (the camera is the controlled frame)."""
        if self.fixed_camera is not None:
            return self.fixed_camera.copy()
        if self.camera_poses is not None:
            K = len(keyframes) - 1
            return self.camera_poses[int(keyframes[min(max(step, 0), K)])].copy()
        return None

    def has_frames(self) -> bool:
        return self.trajectory.images is not None

    def nearest_recorded(self, pose: np.ndarray, keyframes: np.ndarray) -> tuple[int, float]:
        """(frame, distance) of the recorded frame of the task's segment (keyframes[0] … keyframes[-1]) whose pose
        is nearest ``pose`` by ``‖Δp‖/0.2 m + angle/10°``."""
        idx = np.arange(int(keyframes[0]), int(keyframes[-1]) + 1)
        P = self.trajectory.poses[idx]
        d = (np.linalg.norm(P[:, :3, 3] - pose[:3, 3], axis=1) / RECORDED_POSITION_SCALE
             + geometry.geodesic_angle(P[:, :3, :3], pose[:3, :3]) / RECORDED_ROTATION_SCALE)
        j = int(np.argmin(d))
        return int(idx[j]), float(d[j])

    def recorded_frame(self, i: int, width: int, height: int) -> np.ndarray:
        """Recorded frame ``i`` resized to ``width`` × ``height`` (RGB uint8); a small cache per world."""
        key = (int(i), int(width), int(height))
        if key in self._frames:
            self._frames.move_to_end(key)
            return self._frames[key].copy()
        rgb = self.trajectory.frame(int(i))
        if rgb is None:
            raise ValueError(f"scene.trajectory: {self.scene.get('trajectory')}: no recorded frames")
        if rgb.shape[:2] != (height, width):
            from PIL import Image

            rgb = np.asarray(Image.fromarray(rgb).resize((int(width), int(height)), Image.BILINEAR))
        self._frames[key] = rgb
        while len(self._frames) > 64:
            self._frames.popitem(last=False)
        return rgb.copy()


@dataclass(frozen=True)
class TaskRecording:
    """The recording a replayed task runs on (:attr:`World.recording <spatialact.envs.world.World.recording>`): its
    replay world and keyframes (frame indices, first = start, last = goal)."""

    replay: BuiltReplay
    keyframes: np.ndarray

    @property
    def goal_frame(self) -> int:
        """The recorded frame of the goal (the last keyframe)."""
        return int(self.keyframes[-1])

    @property
    def path(self):
        """The recorded trajectory's path (the scene's ``trajectory``)."""
        return self.replay.scene.get("trajectory")

    def has_frames(self) -> bool:
        return self.replay.has_frames()

    def nearest(self, pose: np.ndarray) -> tuple[int, float]:
        """(frame, distance) of the recorded frame of the task's segment nearest C2W ``pose`` (see
        :meth:`BuiltReplay.nearest_recorded`)."""
        return self.replay.nearest_recorded(pose, self.keyframes)

    def frame(self, i: int, width: int, height: int) -> np.ndarray:
        """Recorded frame ``i`` as RGB (height, width, 3) uint8."""
        return self.replay.recorded_frame(i, width, height)

    def start_gripper(self) -> int | None:
        """The recorded gripper state (0 open, 1 closed) at the start keyframe, or None when none was recorded."""
        g = self.replay.trajectory.gripper
        return None if g is None else int(g[int(self.keyframes[0])])


def replay_camera_spec(scene: dict, default_K=None, default_size=None) -> CameraSpec | None:
    """The recorded camera of a replay scene (pixels of its ``image_size``): ``scene.camera.intrinsics`` when given;
    else ``default_K`` (a trajectory's K) at ``default_size``; else for DROID :func:`droid_default_intrinsics`.
    An intrinsics dict without ``image_size`` is taken to have its principal point at the image centre."""
    cam = scene.get("camera") or {}
    size = cam.get("image_size")
    intr = cam.get("intrinsics")
    if intr is not None:
        if size is None:
            size = (max(1, int(round(2 * (intr["cx"] + 0.5)))), max(1, int(round(2 * (intr["cy"] + 0.5)))))
        return CameraSpec.from_intrinsics(size[0], size[1], intr["fx"], intr["fy"], intr["cx"], intr["cy"],
                                          near=0.02, far=20.0)
    if default_K is not None:
        w, h = size or default_size
        K = np.asarray(default_K, dtype=np.float64)
        if size is not None and default_size is not None and tuple(size) != tuple(default_size):
            base = CameraSpec.from_K(K, *default_size)
            return base.resized(*size)
        return CameraSpec.from_K(K, w, h)
    if scene.get("source") == "droid":
        w, h = size or ZED2_IMAGE_SIZE
        return CameraSpec.from_intrinsics(w, h, **droid_default_intrinsics(w, h))
    return None


def scene_aspect(scene: dict) -> float | None:
    """Width / height of the recorded images of a replay scene, from the scene alone (None when unknown)."""
    cam = scene.get("camera") or {}
    if cam.get("image_size"):
        w, h = cam["image_size"]
        return w / h
    if scene.get("source") == "droid":
        return ZED2_IMAGE_SIZE[0] / ZED2_IMAGE_SIZE[1]
    if scene.get("source") == "egodex":
        return EGODEX_IMAGE_SIZE[0] / EGODEX_IMAGE_SIZE[1]
    return None


# ----- building ---------------------------------------------------------------------------------------------------
def _floor_and_table(b: SceneBuilder, lo_xy, hi_xy, table_z: float | None, floor_z: float, seed: int) -> dict:
    bodies = {}
    c = (np.asarray(lo_xy) + np.asarray(hi_xy)) / 2
    bodies["floor"] = b.box([4.0, 4.0, 0.05], [c[0], c[1], floor_z - 0.05],
                            texture=texture_path("tiles", (0.62, 0.6, 0.56), seed % 7), tile=1.2)
    if table_z is not None:
        half = np.maximum((np.asarray(hi_xy) - np.asarray(lo_xy)) / 2, 0.2)
        bodies["table"] = b.box([half[0], half[1], 0.02], [c[0], c[1], table_z - 0.02],
                                texture=texture_path("wood", (0.62, 0.45, 0.28), 4), tile=0.35)
    return bodies


def _xyz_euler_pose(v, where: str, field_: str) -> np.ndarray:
    a = np.asarray(v, dtype=np.float64).reshape(-1) if isinstance(v, (list, tuple, np.ndarray)) else None
    if a is None or a.shape != (6,) or not np.all(np.isfinite(a)):
        raise _bad(where, field_, f"expected x, y, z (m) and extrinsic 'xyz' Euler angles (rad), got {v!r}")
    return geometry.pose_from_droid(a)


def build_replay_world(world: BulletBackend, scene: dict, kind: str, where: str = "scene") -> tuple[SceneInfo,
                                                                                                    BuiltReplay]:
    """Build a replay scene into an empty world; returns the :class:`SceneInfo` and the :class:`BuiltReplay`.
    ``kind``: the environment's task kind. Refuses (ValueError, one line ``<where>: scene.<field>: ...``) what
    cannot be built."""
    src = scene.get("source")
    if src not in _SOURCES:
        raise _bad(where, "scene.source", f"must be one of {', '.join(_SOURCES)}, got {src!r}")
    if src == "egodex" and scene.get("entity") == "camera":
        raise _bad(where, "scene.entity", "EgoDex's head camera is a camera path: use source 'camera_path' with "
                                          "format 'egodex' and entity 'camera'")
    want = _SOURCES[src]
    if kind != want:
        raise _bad(where, "scene.source", f"a {src!r} replay scene runs {want!r} tasks, not {kind!r}")
    traj = load_scene_trajectory(scene, where)
    seed = 0
    b = SceneBuilder(world, np.random.default_rng([seed, 5]))
    if src == "droid":
        return _build_droid(world, b, scene, traj, where)
    if src == "egodex":
        return _build_egodex(world, b, scene, traj, where)
    return _build_camera_path(world, b, scene, traj, where)


def _build_droid(world, b, scene, traj, where):
    base = scene.get("robot_base")
    if base is not None and np.any(np.abs(np.asarray(base, dtype=np.float64)) > 1e-9):
        raise _bad(where, "scene.robot_base", "only zeros are supported: DROID's poses are in the robot-base frame, "
                                              "which is the replay world")
    cam = scene.get("camera")
    if not isinstance(cam, dict) or "extrinsics" not in cam:
        raise _bad(where, "scene.camera", "a DROID replay scene needs camera.extrinsics (camera_extrinsics.<name>)")
    ext = _xyz_euler_pose(cam["extrinsics"], where, "scene.camera.extrinsics")
    tz = scene.get("table_height")
    if isinstance(tz, bool) or not isinstance(tz, (int, float)) or not math.isfinite(tz):
        raise _bad(where, "scene.table_height", f"expected the table top's z in metres, got {tz!r}")
    grasp = traj.poses @ DROID_TOOL_OFFSET
    lo = grasp[:, :2, 3].min(axis=0) - 0.25
    hi = grasp[:, :2, 3].max(axis=0) + 0.25
    bodies = _floor_and_table(b, lo, hi, float(tz), float(tz) - 0.75, 0)
    workspace = np.array([[lo[0], hi[0]], [lo[1], hi[1]], [float(tz), float(grasp[:, 2, 3].max()) + 0.1]])
    info = SceneInfo(spec=scene, bodies=bodies, table_z=float(tz), workspace=workspace, exterior_camera=ext,
                     light=light_for(0), robot_base=np.eye(4))
    rw = BuiltReplay(scene=scene, source="droid", trajectory=traj, camera=replay_camera_spec(scene),
                     fixed_camera=ext, joint_seeds=droid_joint_positions(traj), tool=DROID_TOOL_OFFSET.copy())
    return info, rw


def _build_egodex(world, b, scene, traj, where):
    if traj.camera_poses is None:
        raise _bad(where, "scene.trajectory", "the EgoDex episode has no head camera (transforms/camera)")
    cam = replay_camera_spec(scene, traj.intrinsics, EGODEX_IMAGE_SIZE)
    if cam is None:
        raise _bad(where, "scene.camera.intrinsics", "the episode has no camera/intrinsic; give the head camera's "
                                                     "intrinsics in the scene")
    tz = scene.get("table_height")
    if tz is not None and (isinstance(tz, bool) or not isinstance(tz, (int, float)) or not math.isfinite(tz)):
        raise _bad(where, "scene.table_height", f"expected the table top's z in metres or null, got {tz!r}")
    pts = hand_points(traj.poses).reshape(-1, 3)
    lo, hi = pts[:, :2].min(axis=0) - 0.25, pts[:, :2].max(axis=0) + 0.25
    floor_z = (float(tz) if tz is not None else float(pts[:, 2].min())) - 0.75
    bodies = _floor_and_table(b, lo, hi, None if tz is None else float(tz), floor_z, 1)
    info = SceneInfo(spec=scene, bodies=bodies, table_z=None if tz is None else float(tz),
                     workspace=np.array([[lo[0], hi[0]], [lo[1], hi[1]], [floor_z, float(pts[:, 2].max())]]),
                     exterior_camera=traj.camera_poses[0].copy(), light=light_for(1))
    rw = BuiltReplay(scene=scene, source="egodex", trajectory=traj, camera=cam, camera_poses=traj.camera_poses)
    return info, rw


def _build_camera_path(world, b, scene, traj, where):
    fmt = scene.get("format")
    if fmt not in _CAMERA_PATH_FORMATS:
        raise _bad(where, "scene.format", f"a camera-path replay scene reads {', '.join(_CAMERA_PATH_FORMATS)}, "
                                          f"got {fmt!r}")
    mesh, room = scene.get("mesh"), scene.get("room")
    if (mesh is None) == (room is None):
        raise _bad(where, "scene", "a camera-path replay scene has either a 'mesh' path or a procedural 'room' box")
    if mesh is not None:
        info = build_scene(world, {"generator": "mesh", "mesh": mesh})
        info.spec = scene
        return info, BuiltReplay(scene=scene, source="camera_path", trajectory=traj)
    if not isinstance(room, dict) or not {"center", "size", "up"} <= set(room):
        raise _bad(where, "scene.room", f"expected {{center, size, up}}, got {room!r}")
    try:
        R = _room_rotation(room["up"])
        c = np.asarray(room["center"], dtype=np.float64).reshape(3)
        size = np.asarray(room["size"], dtype=np.float64).reshape(3)
    except (ValueError, TypeError) as e:
        raise _bad(where, "scene.room", str(e)) from None
    if not (np.all(np.isfinite(c)) and np.all(np.isfinite(size)) and np.all(size > 0) and np.all(size <= 1000)):
        raise _bad(where, "scene.room", "center must be finite and size in (0, 1000] m")
    bodies = _build_room_box(b, c, R, size)
    half = size / 2
    info = SceneInfo(spec=scene, bodies=bodies, light=light_for(2),
                     nav_box=np.stack([c - np.abs(R) @ half, c + np.abs(R) @ half], axis=1))
    return info, BuiltReplay(scene=scene, source="camera_path", trajectory=traj, room=(c, R, size))


def _build_room_box(b: SceneBuilder, c: np.ndarray, R: np.ndarray, size: np.ndarray) -> dict:
    """Floor, ceiling and four walls (textured, each wall its own pattern and hue) of the box centred at ``c``
    with axes ``R`` (columns; z = up) and ``size`` along them; 5 cm thick, outside the box."""
    q = geometry.matrix_to_quat(R)
    hx, hy, hz = size / 2
    t = 0.05
    parts = {
        "floor": ([hx + t, hy + t, t], [0, 0, -hz - t], texture_path("wood", (0.55, 0.37, 0.20), 0), 1.0),
        "ceiling": ([hx + t, hy + t, t], [0, 0, hz + t], texture_path("tiles", (0.82, 0.82, 0.78), 0), 2.4),
        "wall_px": ([t, hy + t, hz], [hx + t, 0, 0], texture_path("wallpaper", (0.62, 0.75, 0.85), 1), 0.8),
        "wall_nx": ([t, hy + t, hz], [-hx - t, 0, 0], texture_path("stripes", (0.78, 0.62, 0.60), 2), 0.8),
        "wall_py": ([hx + t, t, hz], [0, hy + t, 0], texture_path("wallpaper", (0.66, 0.80, 0.62), 3), 0.8),
        "wall_ny": ([hx + t, t, hz], [0, -hy - t, 0], texture_path("stripes", (0.85, 0.72, 0.50), 4), 0.8),
    }
    bodies = {}
    for name, (half, local, tex, tile) in parts.items():
        bodies[name] = b.box(half, c + R @ np.asarray(local, dtype=np.float64), texture=tex, tile=tile,
                             orientation=q)
    return bodies


# ----- a scene for a trajectory (what the task builder writes) ----------------------------------------------------
def replay_scene_for(traj, keyframes, *, mesh: str | None = None, extrinsics=None, table: bool = True,
                     start_goal=None) -> dict:
    """The replay scene of a task on ``traj`` over ``keyframes`` (frame indices: start, step boundaries, goal), in
    the shape of docs/tasks.md: DROID (``extrinsics`` overrides ``camera_extrinsics.<camera>``, x y z + Euler),
    EgoDex hands (``table``: write :func:`egodex_table_height`, else no table), camera paths (``mesh``, or a room
    from :func:`room_for_segment` over the frames ``keyframes[0] … keyframes[-1]``). The trajectory path is
    ``traj.meta["path"]`` (the builder rewrites it relative to the task file when saving)."""
    kf = [int(k) for k in keyframes]
    src = traj.meta.get("source")
    path = str(traj.meta.get("path"))
    common = {"type": "replay", "trajectory": path, "keyframes": kf}
    if src == "droid":
        if extrinsics is None:
            if traj.camera_poses is None:
                raise ValueError(f"{path}: field 'camera_extrinsics': the episode has no exterior camera extrinsics; "
                                 "give them (--extrinsics FILE)")
            extrinsics = geometry.pose_to_droid(traj.camera_poses[kf[0]])
        return {**common, "source": "droid", "format": "droid", "episode": int(traj.meta.get("episode") or 0),
                "entity": "end_effector",
                "camera": {"name": str(traj.meta.get("camera") or "exterior_1_left"),
                           "extrinsics": [float(v) for v in np.asarray(extrinsics, dtype=np.float64).reshape(6)]},
                "table_height": droid_table_height(traj.poses), "fps": float(traj.fps)}
    if src == "egodex" and traj.meta.get("entity") != "camera":
        out = {**common, "source": "egodex", "format": "egodex", "entity": traj.meta.get("entity"),
               "world": "arkit_y_up_to_z_up", "camera": {"name": "head"}, "fps": float(traj.fps)}
        if table:
            out["table_height"] = egodex_table_height(traj.poses)
        return out
    fmt = src if src in _CAMERA_PATH_FORMATS else ("json" if path.lower().endswith(".json") else "npz")
    out = {**common, "source": "camera_path", "format": fmt, "fps": float(traj.fps)}
    if src == "egodex":
        out["entity"] = "camera"
    if mesh is not None:
        out["mesh"] = str(mesh)
    else:
        frames = np.arange(kf[0], kf[-1] + 1)
        out["room"] = room_for_segment(traj.poses[frames, :3, 3], segment_up(traj, frames))
    return out

