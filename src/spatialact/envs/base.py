"""The Gymnasium side every environment shares: spaces, action modes, reward, termination, ``info``, task handling
and the recorded-observation mode, over a :class:`~spatialact.envs.world.World` (``self.world``).

An environment is this class and one world: a subclass sets ``kind``, ``n_discrete`` and ``world_class`` (the hook,
declared below) and nothing else; everything about the place it runs in — scene, controlled body, cameras, object
state, random tasks — is the world's (:mod:`spatialact.envs.world`). A new world (a game engine) plugs in as a new
environment file naming its world class.

Frames and units: poses are (4, 4) float64 C2W matrices in metres, world +Z up; the controlled frame (camera,
end-effector, hand) moves in its own body frame, ``T_next = T @ Δ`` (docs/conventions.md) unless the world stops it
(``info["blocked"]``).

Action modes (docs/environments.md):

* ``discrete``: ``Discrete(13)`` (CameraNav) or ``Discrete(15)``: 0 Stay, 1–12 one unit of one motion primitive in
  ``MOTION_PRIMITIVES`` order (1 Truck Right, 2 Truck Left, 3 Pedestal Down, 4 Pedestal Up, 5 Dolly In,
  6 Dolly Out, 7 Tilt Up, 8 Tilt Down, 9 Pan Right, 10 Pan Left, 11 Roll CCW, 12 Roll CW), 13 open / release,
  14 close / grab;
* ``step``: ``MultiDiscrete([2·cap+1]*6 + [3])``: signed counts ``a[i] − cap`` for truck, pedestal, dolly, tilt, pan,
  roll, and a gripper element (0 open, 1 close, 2 keep; ignored by worlds without a gripper);
* ``continuous``: ``Box(7)``, one vector-format step ``[dx, dy, dz, d_roll, d_pitch, d_yaw, g]`` bounded by
  cap × unit (metres, radians); ``g > 0.5`` closes, ``0 ≤ g ≤ 0.5`` opens, ``g < 0`` keeps the gripper.

Reward: the decrease of ``φ = pos_err / 0.2 m + rot_err / 10°`` plus 10 on the step that succeeds.

Renderers (``renderer=``, passed to the world): ``tiny``, ``egl``, ``gl`` (the project's OpenGL renderer) or ``auto``
(gl when it starts, else tiny); see :mod:`spatialact.envs.rendering`. With gl, every environment of a process draws
through one shared renderer, :meth:`SpatialActEnv.render_views` renders K views in one call, and
:class:`spatialact.envs.vector.BatchedVectorEnv` renders the observations of all its environments in one call per
step.

Replayed tasks (a task whose scene replays a recording, :attr:`World.recording
<spatialact.envs.world.World.recording>`): ``observation`` picks what ``rgb`` shows — ``"sim"`` (rendered, the
default), ``"recorded"`` (the recorded frame nearest the current pose, resized) or ``"both"`` (``rgb`` rendered and
``recorded_rgb`` recorded).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from .. import geometry
from ..action_space import Step, StepSizes
from ..action_space.primitives import N_MOTION
from ..tasks import Task
from .camera import CameraSpec
from .world import OBSERVATION_MODES, World

__all__ = ["SpatialActEnv", "ACTION_MODES", "SUCCESS_BONUS", "POSITION_SCALE", "ROTATION_SCALE"]

ACTION_MODES = ("discrete", "step", "continuous")
SUCCESS_BONUS = 10.0
POSITION_SCALE = 0.2  # metres: the reward's position unit
ROTATION_SCALE = math.radians(10.0)


class SpatialActEnv(gym.Env):
    """Base class of the environments; see the module docstring.

    A subclass sets ``kind`` (the task kind it runs, its world's), ``n_discrete`` (13 without a gripper, 15 with
    one) and ``world_class``; it may override :meth:`make_world`. Keywords the environment does not take go to the
    world (``min_overlap``, ``wrist_camera``, a game's level, ...).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    kind = "nav"
    n_discrete = 13
    #: The hook a subclass fills: the :class:`~spatialact.envs.world.World` subclass this environment runs in.
    world_class: type[World] | None = None

    def __init__(self, task: Task | None = None, action_mode: str = "step", renderer: str = "tiny",
                 width: int | None = None, height: int = 128, render_mode: str | None = None, max_steps: int = 20,
                 terminate_on_success: bool = True, depth: bool = False, scene: dict | None = None,
                 fov_deg: float = 60.0, sizes: StepSizes | None = None, cap: int = 10,
                 n_steps: tuple[int, int] = (1, 3), observation: str = "sim", **world_options):
        if observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {OBSERVATION_MODES}, got {observation!r}")
        if width is None:  # a replayed task renders at its recorded aspect ratio; 128 × 128 otherwise
            aspect = self.world_class.scene_aspect(task.scene) if task is not None else None
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
        self.observation_mode = observation
        self._fixed_task = task
        self._fixed_scene = self.world_class.check_scene(scene) if scene is not None else None
        camera = CameraSpec(int(width), int(height), float(fov_deg))

        self.world = self.make_world(renderer, camera, **world_options)
        if self.world.kind != self.kind:
            raise TypeError(f"{type(self).__name__} runs {self.kind!r} tasks; its world "
                            f"{type(self.world).__name__} runs {self.world.kind!r}")
        self.action_space = self._make_action_space()
        obs = {"rgb": spaces.Box(0, 255, (camera.height, camera.width, 3), np.uint8),
               "goal_rgb": spaces.Box(0, 255, (camera.height, camera.width, 3), np.uint8)}
        if self.use_depth:
            obs["depth"] = spaces.Box(0.0, np.float32(camera.far), (camera.height, camera.width), np.float32)
        if observation == "both":
            obs["recorded_rgb"] = spaces.Box(0, 255, (camera.height, camera.width, 3), np.uint8)
        obs.update(self.world.extra_observation_spaces())
        self.observation_space = spaces.Dict(obs)

        #: set by BatchedVectorEnv around ``step()``: the step leaves rendering its observation to the vector env,
        #: which hands it back through :meth:`observe` (``rendered=``)
        self.defer_observation = False
        self.task: Task | None = None
        self.sizes = self.default_sizes
        self.blocked = False  # whether the world stopped the last step's motion short
        self._steps = 0
        self._goal_rgb_cache = None
        #: the observation of the last ``reset`` / ``step`` / ``apply_step`` (None when it was not rendered)
        self.last_observation = None
        self._phi = 0.0
        self._recorded = None  # (frame, distance) of the last recorded observation

    def make_world(self, renderer: str, camera: CameraSpec, **options) -> World:
        """The world this environment runs in: ``world_class(camera, renderer=renderer, **options)``. ``camera`` is
        the observation camera (``width`` × ``height``, ``fov_deg``); ``options`` the keywords the environment did
        not take. Called once, from ``__init__``."""
        return self.world_class(camera, renderer=renderer, **options)

    # ----- what the world holds -----------------------------------------------------------------------------------
    @property
    def camera(self) -> CameraSpec:
        """The camera the observations are rendered with (a replayed task's recorded camera, resized)."""
        return self.world.camera

    @property
    def scene(self):
        """What the loaded scene offers (:class:`~spatialact.envs.scenes.SceneInfo` for the PyBullet worlds)."""
        return self.world.scene

    @property
    def pose(self) -> np.ndarray:
        """C2W pose (4, 4) of the controlled frame now (measured)."""
        return self.world.pose

    @property
    def gripper(self) -> int:
        """The gripper state now: 0 open, 1 closed (0 without a gripper)."""
        return self.world.gripper

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
            if not self.world.has_gripper:
                g = None
            return Step.from_signed((a[:6] - self.cap).tolist(), gripper=g)
        a = np.clip(np.asarray(action, dtype=np.float64).reshape(7), self.action_space.low, self.action_space.high)
        dx, dy, dz, roll, pitch, yaw, gv = a
        g = None if gv < 0 or not self.world.has_gripper else int(gv > 0.5)
        return Step.from_motion((dx, dy, dz, pitch, yaw, roll), gripper=g)

    # ----- task ---------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        options = options or {}
        task = options.get("task", self._fixed_task)
        if isinstance(task, dict):  # a task record (one JSON line of a task file)
            from ..tasks import validate_task_dict

            problems = validate_task_dict(task)
            if problems:
                raise ValueError(f"options['task'] is not a valid task record: {'; '.join(problems)}")
            task = Task.from_dict(task)
        world = self.world
        if task is not None:
            if not isinstance(task, Task):
                raise TypeError(f"options['task'] must be a spatialact Task or task record, got {type(task).__name__}")
            if task.kind != self.kind:
                raise ValueError(f"task {task.id!r} is a {task.kind!r} task; this environment runs {self.kind!r}")
            spec = task.scene or self._fixed_scene or {"generator": world.default_generator, "seed": 0}
            if self.observation_mode != "sim" and not world.replays_recording(spec):
                raise ValueError(f"task {task.id}: observation {self.observation_mode!r} shows recorded frames and "
                                 "needs a replay scene (scene.type 'replay'); this task's scene has none")
            world.load_scene(spec, where=f"task {task.id}")
        else:
            if self._fixed_scene is not None:
                spec = self._fixed_scene
            elif seed is not None or world.scene is None:
                # a new scene only when seeded (or the first time): reset() without a seed keeps the scene and draws
                # a new goal in it, which keeps training fast
                spec = {"generator": world.default_generator, "seed": int(self.np_random.integers(2 ** 31 - 1))}
            else:
                spec = world.scene.spec
            if (world.scene is not None and world.replays_recording(world.scene.spec)) or world.replays_recording(spec):
                raise ValueError("reset() without a task cannot draw random goals in a replay scene; pass "
                                 "options={'task': task}")
            world.load_scene(spec)
            task = world.sample_task(self.np_random, sizes=self.default_sizes, cap=self.cap,
                                     n_steps=self.n_steps_range)
        self._start(task)
        return self.last_observation, self.current_info()

    def _start(self, task: Task) -> None:
        self.task = task
        self.sizes = task.sizes
        self._steps = 0
        self.blocked = False
        self._recorded = None
        self.world.configure_task(task, self.observation_mode)
        self._goal_rgb_cache = self._goal_observation()  # rendered once per episode
        self.world.set_start(task)
        rec = self.world.recording
        if rec is not None and self.world.has_gripper:
            g0 = rec.start_gripper()
            if g0:  # the recorded gripper state at the start frame
                self.world.set_gripper(g0)
        self.last_observation = self.observe()
        self._phi = self._potential()

    def _goal_observation(self) -> np.ndarray:
        rec = self.world.recording
        if rec is not None and self.observation_mode == "recorded":
            return rec.frame(rec.goal_frame, self.camera.width, self.camera.height)
        return self.world.goal_view()

    # ----- stepping -----------------------------------------------------------------------------------------------
    def _execute(self, step: Step, sizes: StepSizes) -> None:
        """Execute one whole Step: its rigid motion (translate then rotate, one Δ), then its gripper state."""
        self.blocked = bool(self.world.move(step.as_delta(sizes)))
        if step.gripper is not None and self.world.has_gripper:
            self.world.set_gripper(int(step.gripper))

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

    # ----- observation, info, reward ------------------------------------------------------------------------------
    def observe(self, rendered: tuple | None = None) -> dict:
        """The observation now; ``rendered``: (rgb, depth or None) of :attr:`camera_pose` already rendered (by a
        batched vector env), used instead of rendering here."""
        rec = self.world.recording
        mode = self.observation_mode if rec is not None else "sim"
        if mode == "recorded" and not self.use_depth:
            rgb = depth = None
        elif rendered is not None:
            rgb, depth = rendered
        else:
            rgb, depth = self.world.observe(depth=self.use_depth)
        if mode != "sim":
            frame, dist = rec.nearest(self.world.pose)
            self._recorded = (frame, dist)
            recorded = rec.frame(frame, self.camera.width, self.camera.height)
            if mode == "recorded":
                rgb = recorded
        obs = {"rgb": rgb, "goal_rgb": self._goal_rgb_cache.copy()}
        if mode == "both":
            obs["recorded_rgb"] = recorded
        elif self.observation_mode == "both":  # the space has the key: a non-replay task cannot get here (refused)
            obs["recorded_rgb"] = np.zeros_like(rgb)
        if self.use_depth:
            obs["depth"] = np.minimum(depth, np.float32(self.camera.far))
        obs.update(self.world.extra_observations())
        return obs

    def errors(self) -> tuple[float, float]:
        """(position error m, rotation error rad) of the controlled frame against the goal pose."""
        T, G = self.pose, self.goal_pose
        return float(np.linalg.norm(T[:3, 3] - G[:3, 3])), float(geometry.rotation_error(T, G))

    def _potential(self) -> float:
        pe, re = self.errors()
        return pe / POSITION_SCALE + re / ROTATION_SCALE

    def is_success(self) -> bool:
        """Position and rotation errors within ``task.success``, or its object-state test when it has one."""
        succ = self.task.success
        if succ.get("object_state"):
            return bool(self.world.object_success(succ["object_state"]))
        pe, re = self.errors()
        return pe <= succ["position"] and re <= succ["rotation"]

    def current_info(self) -> dict:
        """The ``info`` dict now: ``pose``, ``goal_pose``, ``position_error`` (m), ``rotation_error`` (rad),
        ``success``, ``renderer``, ``step_index``, ``gripper``, ``task_id``, ``blocked`` (whether the world stopped
        the last step's motion short; False at reset), ``recorded_frame`` / ``recorded_distance`` (recorded
        observations), and what the world adds (:meth:`World.extra_info <spatialact.envs.world.World.extra_info>`)."""
        pe, re = self.errors()
        info = {"pose": self.pose.copy(), "goal_pose": self.goal_pose.copy(), "position_error": pe,
                "rotation_error": re, "success": self.is_success(), "renderer": self.world.gl_renderer,
                "step_index": self._steps, "gripper": self.gripper, "task_id": self.task.id if self.task else None,
                "blocked": self.blocked}
        if self._recorded is not None:
            info["recorded_frame"], info["recorded_distance"] = self._recorded
        info.update(self.world.extra_info())
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
        return self.world.camera_pose

    @property
    def goal_camera_pose(self) -> np.ndarray:
        """C2W pose of the camera ``goal_rgb`` is rendered from (the goal pose in CameraNav; the observing camera at
        the last keyframe in a replay)."""
        return self.world.goal_camera_pose

    def observation_depth(self) -> np.ndarray:
        """Depth (H, W) float32, metres along the optical axis, of the current ``rgb`` observation's view: the same
        camera (:attr:`camera_pose`), intrinsics and scene state, clipped at the far plane like ``obs["depth"]``.
        For agents of an environment made without ``depth=True``."""
        return np.minimum(self.world.observe(depth=True)[1], np.float32(self.camera.far))

    def render_view(self, T) -> np.ndarray:
        """RGB (H, W, 3) uint8 from C2W pose ``T`` in the current scene (state as it is now)."""
        return self.world.render_views([T])[0][0]

    def render_depth(self, T) -> np.ndarray:
        """Depth (H, W) float32, metres along the optical axis, from C2W pose ``T``."""
        return self.world.render_views([T], depth=True)[1][0]

    def render_views(self, poses, depth: bool = False, segmentation: bool = False):
        """K views of the current scene in one call (with gl, one pass; other renderers render them in turn):
        C2W poses (K, 4, 4) → rgb (K, H, W, 3) uint8, or (rgb, depth (K, H, W) float32 metres or None,
        seg (K, H, W) int32 or None) when ``depth`` or ``segmentation``. Many goal views, candidate poses, ..."""
        rgb, d, s = self.world.render_views(poses, depth=depth, segmentation=segmentation)
        return (rgb, d, s) if depth or segmentation else rgb

    def render_segmentation(self, T) -> np.ndarray:
        """Body ids (H, W) int32 seen from C2W pose ``T``; −1 is background."""
        return self.world.render_views([T], segmentation=True)[2][0]

    def render(self):
        if self.render_mode != "rgb_array":
            return None
        if self.last_observation is None:
            return np.zeros((self.camera.height, self.camera.width, 3), np.uint8)
        return self.last_observation["rgb"]

    def close(self):
        if getattr(self, "world", None) is not None:
            self.world.close()
