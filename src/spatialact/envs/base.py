"""The machinery the three environments share: spaces, action modes, reward, termination, info, task handling.

Frames and units: poses are (4, 4) float64 C2W matrices in metres, world +Z up; the controlled frame (camera,
end-effector, hand) moves in its own body frame, ``T_next = T @ Δ`` (SPEC §2–3).

Action modes (SPEC §6):

* ``discrete``: ``Discrete(13)`` (CameraNav) or ``Discrete(15)``: 0 Stay, 1–12 one unit of one motion primitive in
  ``MOTION_PRIMITIVES`` order (1 Truck Right, 2 Truck Left, 3 Pedestal Down, 4 Pedestal Up, 5 Dolly In,
  6 Dolly Out, 7 Tilt Up, 8 Tilt Down, 9 Pan Right, 10 Pan Left, 11 Roll CCW, 12 Roll CW), 13 open / release,
  14 close / grab;
* ``step``: ``MultiDiscrete([2·cap+1]*6 + [3])``: signed counts ``a[i] − cap`` for truck, pedestal, dolly, tilt, pan,
  roll, and a gripper element (0 open, 1 close, 2 keep; CameraNav ignores it);
* ``continuous``: ``Box(7)``, one vector-format step ``[dx, dy, dz, d_roll, d_pitch, d_yaw, g]`` bounded by
  cap × unit (metres, radians); ``g > 0.5`` closes, ``0 ≤ g ≤ 0.5`` opens, ``g < 0`` keeps the gripper.

Reward: the decrease of ``φ = pos_err / 0.2 m + rot_err / 10°`` plus 10 on the step that succeeds.

Renderers (``renderer=``): ``tiny``, ``egl``, ``gl`` (the project's OpenGL renderer) or ``auto`` (gl when it starts,
else tiny); see :mod:`spatialact.envs.rendering`. With gl, every environment of a process draws through one shared
renderer, :meth:`SpatialActEnv.render_views` renders K views in one call, and :class:`spatialact.envs.vector.
BatchedVectorEnv` renders the observations of all its environments in one call per step.

Replay scenes (a task whose ``scene`` is ``{"type": "replay", ...}``, :mod:`spatialact.envs.replay`): the world is
built from the recorded trajectory; ``observation`` picks what ``rgb`` shows — ``"sim"`` (rendered, the default),
``"recorded"`` (the recorded frame nearest the current pose, resized) or ``"both"`` (``rgb`` rendered and
``recorded_rgb`` recorded).
"""

from __future__ import annotations

import hashlib
import json
import math

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .. import geometry
from ..action_space import ActionSequence, Step, StepSizes
from ..action_space.primitives import N_MOTION
from ..tasks import Task
from . import replay
from .rendering import BulletWorld, CameraSpec
from .scenes import SceneInfo, build_scene, normalise_scene_spec

__all__ = ["SpatialActEnv", "ACTION_MODES", "SUCCESS_BONUS", "POSITION_SCALE", "ROTATION_SCALE"]

ACTION_MODES = ("discrete", "step", "continuous")
SUCCESS_BONUS = 10.0
POSITION_SCALE = 0.2  # metres: the reward's position unit
ROTATION_SCALE = math.radians(10.0)


class SpatialActEnv(gym.Env):
    """Base class; subclasses set ``kind``, ``n_discrete``, ``default_generator`` and implement the helpers
    ``_populate_scene``, ``_set_start``, ``_move`` (one body-frame Δ), ``_set_gripper``, ``_observe_rgb``,
    ``_goal_rgb``, ``pose`` and ``sample_task``."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    kind = "nav"
    n_discrete = 13
    default_generator = "room"

    def __init__(self, task: Task | None = None, action_mode: str = "step", renderer: str = "tiny",
                 width: int | None = None, height: int = 128, render_mode: str | None = None, max_steps: int = 20,
                 terminate_on_success: bool = True, depth: bool = False, scene: dict | None = None,
                 fov_deg: float = 60.0, sizes: StepSizes | None = None, cap: int = 10,
                 n_steps: tuple[int, int] = (1, 3), observation: str = "sim"):
        if observation not in replay.OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {replay.OBSERVATION_MODES}, got {observation!r}")
        if width is None:  # a replayed task renders at its recorded aspect ratio; 128 × 128 otherwise
            aspect = replay.scene_aspect(task.scene) if task is not None and replay.is_replay_scene(task.scene) \
                else None
            width = int(round(int(height) * aspect)) if aspect else 128
        if action_mode not in ACTION_MODES:
            raise ValueError(f"action_mode must be one of {ACTION_MODES}, got {action_mode!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        if task is not None and task.kind != self.kind:
            raise ValueError(f"task {task.id!r} is a {task.kind!r} task; this environment runs {self.kind!r} tasks")
        self.action_mode = action_mode
        self.render_mode = render_mode
        self.max_steps = int(max_steps)
        self.terminate_on_success = bool(terminate_on_success)
        self.use_depth = bool(depth)
        self.cap = int(cap)
        self.n_steps_range = tuple(n_steps)
        self.default_sizes = sizes or StepSizes.for_kind(self.kind)
        self.camera = CameraSpec(int(width), int(height), float(fov_deg))
        self._base_camera = self.camera  # replayed tasks swap in their recorded camera (same image size)
        self.observation_mode = observation
        self._fixed_task = task
        self._fixed_scene = normalise_scene_spec(scene) if scene is not None else None

        self.action_space = self._make_action_space()
        obs = {"rgb": spaces.Box(0, 255, (self.camera.height, self.camera.width, 3), np.uint8),
               "goal_rgb": spaces.Box(0, 255, (self.camera.height, self.camera.width, 3), np.uint8)}
        if self.use_depth:
            obs["depth"] = spaces.Box(0.0, np.float32(self.camera.far), (self.camera.height, self.camera.width),
                                      np.float32)
        if observation == "both":
            obs["recorded_rgb"] = spaces.Box(0, 255, (self.camera.height, self.camera.width, 3), np.uint8)
        obs.update(self._extra_observation_spaces())
        self.observation_space = spaces.Dict(obs)

        self.world = self._make_world(renderer)  # EGL (if asked) loads here, before any body exists
        self.defer_observation = False  # set by BatchedVectorEnv: step() leaves rendering to it
        self.scene: SceneInfo | None = None
        self._scene_key = None
        self.task: Task | None = None
        self.sizes = self.default_sizes
        self.gripper = 0
        self._steps = 0
        self._goal_rgb_cache = None
        self.last_observation = None
        self._phi = 0.0
        self.replay: replay.ReplayWorld | None = None  # the replay world of the current scene, if it is one
        self._keyframes = None  # the replayed task's keyframes
        self._replay_step = 0  # whole steps executed this episode (the EgoDex camera follows it)
        self._recorded = None  # (frame, distance) of the last recorded observation

    def _make_world(self, renderer: str):
        return BulletWorld(renderer)

    # ----- spaces -------------------------------------------------------------------------------------
    def _make_action_space(self):
        if self.action_mode == "discrete":
            return spaces.Discrete(self.n_discrete)
        if self.action_mode == "step":
            return spaces.MultiDiscrete([2 * self.cap + 1] * 6 + [3])
        u = self.default_sizes
        hi_m = self.cap * np.array([u.translation] * 3 + [u.rotation] * 3)
        lo = np.concatenate([-hi_m, [-1.0]]).astype(np.float32)
        hi = np.concatenate([hi_m, [1.0]]).astype(np.float32)
        return spaces.Box(lo, hi, dtype=np.float32)

    def _extra_observation_spaces(self) -> dict:
        return {}

    def action_to_step(self, action) -> Step:
        """Translate one action of the current mode into a :class:`Step` (counts, or a motion for continuous)."""
        if self.action_mode == "discrete":
            a = int(np.asarray(action).reshape(()))
            if not 0 <= a < self.n_discrete:
                raise ValueError(f"discrete action must be in [0, {self.n_discrete}), got {a}")
            if a == 0:
                return Step.stay()
            if a <= N_MOTION:
                c = [0] * N_MOTION
                c[a - 1] = 1
                return Step(counts=tuple(c))
            return Step.stay(gripper=0 if a == 13 else 1)
        if self.action_mode == "step":
            raw = np.asarray(action).reshape(7)
            a = raw.astype(np.int64)
            if not (np.array_equal(a, raw) and (a[:6] >= 0).all() and (a[:6] <= 2 * self.cap).all()
                    and 0 <= a[6] <= 2):
                raise ValueError(f"step action must be 7 whole numbers, six in [0, {2 * self.cap}] (count + cap) and "
                                 f"a gripper in {{0, 1, 2}}, got {raw.tolist()}")
            g = {0: 0, 1: 1, 2: None}[int(a[6])]
            if self.kind == "nav":
                g = None
            return Step.from_signed((a[:6] - self.cap).tolist(), gripper=g)
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(7), self.action_space.low, self.action_space.high)
        dx, dy, dz, roll, pitch, yaw, gv = a
        g = None if gv < 0 or self.kind == "nav" else int(gv > 0.5)
        return Step.from_motion((dx, dy, dz, pitch, yaw, roll), gripper=g)

    # ----- scene and task -----------------------------------------------------------------------------
    def _ensure_scene(self, spec: dict, where: str = "scene") -> None:
        if replay.is_replay_scene(spec):
            # keyframes (and fps-free facts of one task) do not change the world: tasks on one trajectory share it
            key = json.dumps({k: v for k, v in spec.items() if k != "keyframes"}, sort_keys=True, default=str)
            if key == self._scene_key:
                self._reset_scene_state()
                return
            self.world.reset_world()
            self._scene_key = None
            self.scene, self.replay = replay.build_replay_world(self.world, spec, self.kind, where)
        else:
            spec = normalise_scene_spec(spec)
            key = json.dumps(spec, sort_keys=True)
            if key == self._scene_key:
                self._reset_scene_state()
                return
            self.world.reset_world()
            self._scene_key = None
            self.scene, self.replay = build_scene(self.world, spec), None
        self._populate_scene()
        self._scene_key = key

    def _populate_scene(self) -> None:
        """Add what the environment itself owns (robot, hand) to a freshly built scene."""

    def _reset_scene_state(self) -> None:
        """Put movable things back where the scene spec places them (scene reused across resets)."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        task = options.get("task", self._fixed_task)
        if isinstance(task, dict):  # a task record (one JSON line of a task file)
            from ..tasks import validate_record

            problems = validate_record(task)
            if problems:
                raise ValueError(f"options['task'] is not a valid task record: {'; '.join(problems)}")
            task = Task.from_record(task)
        if task is not None:
            if not isinstance(task, Task):
                raise TypeError(f"options['task'] must be a spatialact Task or task record, got {type(task).__name__}")
            if task.kind != self.kind:
                raise ValueError(f"task {task.id!r} is a {task.kind!r} task; this environment runs {self.kind!r}")
            spec = task.scene or self._fixed_scene or {"generator": self.default_generator, "seed": 0}
            if self.observation_mode != "sim" and not replay.is_replay_scene(spec):
                raise ValueError(f"task {task.id}: observation {self.observation_mode!r} shows recorded frames and "
                                 "needs a replay scene (scene.type 'replay'); this task's scene has none")
            self._ensure_scene(spec, where=f"task {task.id}")
        else:
            if self._fixed_scene is not None:
                spec = self._fixed_scene
            elif seed is not None or self.scene is None:
                # a new scene only when seeded (or the first time): reset() without a seed keeps the scene and draws
                # a new goal in it, which keeps training fast
                spec = {"generator": self.default_generator, "seed": int(self.np_random.integers(2 ** 31 - 1))}
            else:
                spec = self.scene.spec
            if self.replay is not None or replay.is_replay_scene(spec):
                raise ValueError("reset() without a task cannot draw random goals in a replay scene; pass "
                                 "options={'task': task}")
            self._ensure_scene(spec)
            task = self.sample_task(self.np_random, n_steps=self.n_steps_range)
        self._start(task)
        return self.last_observation, self.current_info()

    def _start(self, task: Task) -> None:
        self.task = task
        self.sizes = task.sizes
        self._steps = 0
        self._replay_step = 0
        self.gripper = 0
        self._recorded = None
        self._configure_replay(task)
        self._goal_rgb_cache = self._goal_observation()  # rendered once per episode
        self._set_start(task)
        if self.replay is not None and self.replay.trajectory.gripper is not None and self.kind != "nav":
            g0 = int(self.replay.trajectory.gripper[int(self._keyframes[0])])
            if g0:  # the recorded gripper state at the start frame
                self._set_gripper(g0)
                self.gripper = g0
        self.last_observation = self.observe()
        self._phi = self._potential()

    def _configure_replay(self, task: Task) -> None:
        """Per task in a replay world: check the task against the trajectory (one-line ValueError naming the task
        and the field), take its keyframes and the recorded camera (resized to the observation size)."""
        if self.replay is None:
            self._keyframes = None
            self.camera = self._base_camera
            return
        where = f"task {task.id}"
        self._keyframes = self.replay.check_task(task, where)
        if self.observation_mode != "sim" and not self.replay.has_frames():
            raise ValueError(f"{where}: scene.trajectory: observation {self.observation_mode!r} needs recorded "
                             f"frames and {self.replay.scene.get('trajectory')} has none (no video or images)")
        cam = self.replay.camera
        self.camera = self._base_camera if cam is None else cam.resized(self._base_camera.width,
                                                                         self._base_camera.height)

    def _goal_observation(self) -> np.ndarray:
        if self.replay is not None and self.observation_mode == "recorded":
            return self.replay.recorded_frame(int(self._keyframes[-1]), self.camera.width, self.camera.height)
        return self._goal_rgb()

    # ----- stepping -----------------------------------------------------------------------------------
    def _execute(self, step: Step, sizes: StepSizes) -> None:
        """Execute one whole Step: its rigid motion (translate then rotate, one Δ), then its gripper state."""
        self._move(step.as_delta(sizes))
        if step.gripper is not None and self.kind != "nav":
            self._set_gripper(int(step.gripper))
            self.gripper = int(step.gripper)
        self._replay_step += 1

    def step(self, action):
        if self.task is None:
            raise RuntimeError("call reset() before step()")
        self._execute(self.action_to_step(action), self.sizes)
        self._steps += 1
        # a batched vector env renders the observation of all its environments in one call afterwards
        self.last_observation = None if self.defer_observation else self.observe()
        info = self.current_info()
        phi = self._potential()
        reward = float(self._phi - phi) + (SUCCESS_BONUS if info["success"] else 0.0)
        self._phi = phi
        terminated = bool(info["success"] and self.terminate_on_success)
        truncated = bool(self._steps >= self.max_steps and not terminated)
        return self.last_observation, reward, terminated, truncated, info

    def apply_step(self, step: Step, sizes: StepSizes | None = None, observe: bool = True):
        """Execute one whole Step with the given unit sizes, whatever the action mode; not counted toward
        ``max_steps``. Returns (obs, info); ``observe=False`` skips rendering and returns (None, info)."""
        if self.task is None:
            raise RuntimeError("call reset() before apply_step()")
        if not isinstance(step, Step):
            raise TypeError(f"apply_step takes a spatialact Step, got {type(step).__name__}")
        self._execute(step, sizes or self.sizes)
        self.last_observation = self.observe() if observe else None
        self._phi = self._potential()
        return self.last_observation, self.current_info()

    # ----- observation, info, reward ------------------------------------------------------------------
    def observe(self, rendered: tuple | None = None) -> dict:
        """The observation now; ``rendered``: (rgb, depth or None) of :attr:`camera_pose` already rendered (by a
        batched vector env), used instead of rendering here."""
        mode = self.observation_mode if self.replay is not None else "sim"
        if mode == "recorded" and not self.use_depth:
            rgb = depth = None
        elif rendered is not None:
            rgb, depth = rendered
        else:
            rgb, depth = self._observe_rgb()
        if mode != "sim":
            frame, dist = self.replay.nearest_recorded(self.pose, self._keyframes)
            self._recorded = (frame, dist)
            rec = self.replay.recorded_frame(frame, self.camera.width, self.camera.height)
            if mode == "recorded":
                rgb = rec
        obs = {"rgb": rgb, "goal_rgb": self._goal_rgb_cache.copy()}
        if mode == "both":
            obs["recorded_rgb"] = rec
        elif self.observation_mode == "both":  # the space has the key: a non-replay task cannot get here (refused)
            obs["recorded_rgb"] = np.zeros_like(rgb)
        if self.use_depth:
            obs["depth"] = np.minimum(depth, np.float32(self.camera.far))
        obs.update(self._extra_observations())
        return obs

    def _extra_observations(self) -> dict:
        return {}

    def errors(self) -> tuple[float, float]:
        """(position error m, rotation error rad) of the controlled frame against the goal pose."""
        T, G = self.pose, self.goal_pose
        return float(np.linalg.norm(T[:3, 3] - G[:3, 3])), float(geometry.rotation_error(T, G))

    def _potential(self) -> float:
        pe, re = self.errors()
        return pe / POSITION_SCALE + re / ROTATION_SCALE

    def is_success(self) -> bool:
        succ = self.task.success
        if succ.get("object_state"):
            return bool(self._object_success(succ["object_state"]))
        pe, re = self.errors()
        return pe <= succ["position"] and re <= succ["rotation"]

    def _object_success(self, test: dict) -> bool:
        raise ValueError(f"{type(self).__name__} has no object-state success tests (task {self.task.id!r})")

    def current_info(self) -> dict:
        pe, re = self.errors()
        info = {"pose": self.pose.copy(), "goal_pose": self.goal_pose.copy(), "position_error": pe,
                "rotation_error": re, "success": self.is_success(), "renderer": self.world.gl_renderer,
                "step_index": self._steps, "gripper": self.gripper, "task_id": self.task.id if self.task else None}
        if self._recorded is not None:
            info["recorded_frame"], info["recorded_distance"] = self._recorded
        return info

    @property
    def goal_pose(self) -> np.ndarray:
        return self.task.goal_pose.copy()

    @property
    def intrinsics(self) -> np.ndarray:
        """Pinhole K (3, 3) in pixels of every camera of this environment."""
        return self.camera.K

    @property
    def camera_pose(self) -> np.ndarray:
        """C2W pose (4, 4) of the camera the ``rgb`` observation — and ``depth`` — is rendered from: the controlled
        camera itself in CameraNav, the static exterior camera in GripperManip / HandManip (not the end effector
        or wrist, whose pose is ``pose``; in an EgoDex replay the recorded head camera at keyframe min(k, K) after
        k steps). Its intrinsics are :attr:`intrinsics`."""
        return self.pose

    @property
    def goal_camera_pose(self) -> np.ndarray:
        """C2W pose of the camera ``goal_rgb`` is rendered from (the goal pose in CameraNav; the observing camera at
        the last keyframe in a replay)."""
        return self.task.goal_pose.copy() if self.kind == "nav" else self._observing_camera(final=True)

    def _observing_camera(self, final: bool = False) -> np.ndarray:
        if self.replay is not None:
            step = len(self._keyframes) - 1 if final else self._replay_step
            T = self.replay.observing_camera(self._keyframes, step)
            if T is not None:
                return T
        return np.asarray(self.scene.exterior_camera, dtype=np.float64).copy()

    def observation_depth(self) -> np.ndarray:
        """Depth (H, W) float32, metres along the optical axis, of the current ``rgb`` observation's view: the same
        camera (:attr:`camera_pose`), intrinsics and scene state, clipped at the far plane like ``obs["depth"]``.
        For agents of an environment made without ``depth=True``."""
        return np.minimum(self.render_depth(self.camera_pose), np.float32(self.camera.far))

    def render_view(self, T) -> np.ndarray:
        """RGB (H, W, 3) uint8 from C2W pose ``T`` in the current scene (state as it is now)."""
        return self.world.render(np.asarray(T, dtype=np.float64), self.camera, depth=False)[0]

    def render_depth(self, T) -> np.ndarray:
        """Depth (H, W) float32, metres along the optical axis, from C2W pose ``T``."""
        return self.world.render(np.asarray(T, dtype=np.float64), self.camera, depth=True)[1]

    def render_views(self, poses, depth: bool = False, segmentation: bool = False):
        """K views of the current scene in one call (with gl, one pass; other renderers render them in turn):
        C2W poses (K, 4, 4) → rgb (K, H, W, 3) uint8, or (rgb, depth (K, H, W) float32 metres or None,
        seg (K, H, W) int32 or None) when ``depth`` or ``segmentation``. Many goal views, candidate poses, ..."""
        rgb, d, s = self.world.render_batch([np.asarray(T, dtype=np.float64) for T in poses], self.camera,
                                            depth=depth, segmentation=segmentation)
        return (rgb, d, s) if depth or segmentation else rgb

    def render_segmentation(self, T) -> np.ndarray:
        """Body ids (H, W) int32 seen from C2W pose ``T``; −1 is background."""
        return self.world.render(np.asarray(T, dtype=np.float64), self.camera, depth=False, segmentation=True)[2]

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if self.last_observation is None:
            return np.zeros((self.camera.height, self.camera.width, 3), np.uint8)
        return self.last_observation["rgb"]

    def close(self):
        if getattr(self, "world", None) is not None:
            self.world.close()

    # ----- task sampling helpers shared by subclasses ---------------------------------------------------
    def _make_task(self, start, goal, gt: ActionSequence, tags: dict, success=None, scene=None, task_id=None,
                   instruction=None) -> Task:
        scene = scene or self.scene.spec
        if task_id is None:  # content-addressed, so the same sampling gives the same id in every process
            digest = hashlib.sha1(np.round(np.stack([start, goal]), 9).tobytes()).hexdigest()[:10]
            task_id = f"{self.kind}-{scene['generator']}{scene['seed']}-{digest}"
        tid = task_id
        kw = {"success": success} if success else {}
        return Task(id=tid, kind=self.kind, source="procedural", start_pose=start, goal_pose=goal, gt=gt,
                    sizes=gt.sizes, answer_format="stepped", scene=scene, tags=tags, instruction=instruction, **kw)
