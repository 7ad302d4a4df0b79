"""What the PyBullet worlds share: a scene built from its spec into a :class:`~spatialact.envs.rendering.BulletBackend`
(procedural rooms and tabletops, mesh files, replay scenes), rendering through it, replayed tasks' recordings.

:class:`PyBulletWorld` implements the scene, rendering and recording parts of the :class:`~spatialact.envs.world.World`
protocol; its subclasses add the controlled body: :class:`~spatialact.envs.free_camera.FreeCameraWorld` (a free
camera), :class:`~spatialact.envs.tabletop.TabletopWorld` and its :class:`~spatialact.envs.panda_world.PandaWorld` /
:class:`~spatialact.envs.hand_world.HandWorld`. Poses are C2W (4, 4) float64, metres, world +Z up, OpenCV camera
axes. The PyBullet client and the renderer are the world's ``backend`` (``p``, ``client``, ``gl``, ``render``,
``render_batch`` reach it, as :class:`BulletBackend` offers them).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import os
import stat

from typing import ClassVar

import numpy as np

from ..tasks import Task
from .rendering import BulletBackend, check_render_quality, default_render_quality
from .replay_world import (BuiltReplay, TaskRecording, build_replay_world, is_replay_scene,
                           load_scene_trajectory, scene_aspect)
from .scenes import build_scene, normalise_scene_spec
from .world import World

__all__ = ["PyBulletWorld"]


class PyBulletWorld(World):
    """A world whose scene is built from a scene spec in PyBullet (see the module docstring).

    ``backend`` is the :class:`BulletBackend` (``renderer``: ``tiny``, ``egl``, ``gl``, ``auto``); ``replay`` the
    :class:`~spatialact.envs.replay_world.BuiltReplay` of a replay scene, else None; ``scene_key`` identifies the loaded
    scene (a replay scene's keyframes are not part of it: tasks on one trajectory share the world); ``keyframes``
    the configured replayed task's keyframes; ``step_count`` the whole steps moved since the start (an EgoDex
    replay's observing camera follows it). ``render_quality`` (``"default"`` or ``"high"``; None:
    :func:`~spatialact.envs.rendering.default_render_quality`): how the gl renderer draws this world
    (:class:`BulletBackend`); every subclass takes it as a keyword, whether or not its constructor names it
    (:meth:`__init_subclass__`).
    """

    habitat_stands_in: ClassVar[bool] = True

    def __init__(self, camera, renderer: str = "tiny", render_quality: str | None = None):
        super().__init__(camera)
        if render_quality is not None:
            self.render_quality = check_render_quality(render_quality)
        elif not hasattr(self, "render_quality"):
            self.render_quality = default_render_quality()
        self.backend = self.make_backend(renderer)  # EGL (if asked) loads here, before any body exists
        self.replay: BuiltReplay | None = None
        self.scene_key = None
        self.keyframes: np.ndarray | None = None
        self.step_count = 0
        self._recording = None

    def __init_subclass__(cls, **kwargs):
        """A subclass whose constructor does not name ``render_quality`` takes it anyway, as a keyword: it is set on
        the world before that constructor runs (and reaches :meth:`make_backend` through ``super().__init__``), so
        ``make_env(..., render_quality="high")`` reaches every PyBullet world."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or "render_quality" in inspect.signature(init).parameters:
            return

        @functools.wraps(init)
        def __init__(self, *args, render_quality: str | None = None, **kw):
            if render_quality is not None:
                self.render_quality = check_render_quality(render_quality)
            init(self, *args, **kw)

        cls.__init__ = __init__

    def make_backend(self, renderer: str):
        """The simulator client and renderer the world builds its scenes in (at the world's ``render_quality``)."""
        return BulletBackend(renderer, render_quality=self.render_quality)

    @classmethod
    def scene_aspect(cls, scene) -> float | None:
        return scene_aspect(scene) if is_replay_scene(scene) else None

    @classmethod
    def replays_recording(cls, scene) -> bool:
        return is_replay_scene(scene)

    @classmethod
    def check_scene(cls, spec) -> dict:
        return normalise_scene_spec(spec)

    # ----- the backend, as BulletBackend offers it -------------------------------------------------------------------
    @property
    def p(self):
        """The pybullet module the backend's client belongs to."""
        return self.backend.p

    @property
    def client(self) -> int:
        """The backend's PyBullet client id."""
        return self.backend.client

    @property
    def gl(self):
        """The gl renderer's scene of this world (``renderer="gl"``), else None."""
        return getattr(self.backend, "gl", None)

    @property
    def gl_renderer(self) -> str:
        return self.backend.gl_renderer

    @property
    def fallback_reason(self) -> str | None:
        """Why ``renderer="auto"`` renders with tiny (the gl renderer did not start), else None."""
        return getattr(self.backend, "fallback_reason", None)

    def render(self, T_c2w, cam, depth: bool = True, segmentation: bool = False):
        """One view from C2W pose ``T_c2w`` with camera ``cam``: (rgb, depth m or None, seg or None), as
        :meth:`BulletBackend.render`."""
        return self.backend.render(np.asarray(T_c2w, dtype=np.float64), cam, depth=depth, segmentation=segmentation)

    def render_batch(self, poses, cam, depth: bool = True, segmentation: bool = False):
        """K views with camera ``cam``, as :meth:`BulletBackend.render_batch`."""
        return self.backend.render_batch(poses, cam, depth=depth, segmentation=segmentation)

    def render_views(self, poses, depth: bool = False, segmentation: bool = False) -> tuple:
        return self.backend.render_batch([np.asarray(T, dtype=np.float64) for T in poses], self.camera, depth=depth,
                                         segmentation=segmentation)

    def close(self) -> None:
        if getattr(self, "backend", None) is not None:
            self.backend.close()

    # ----- scene ---------------------------------------------------------------------------------------------------
    def load_scene(self, spec: dict, where: str = "scene") -> None:
        if is_replay_scene(spec):
            # keyframes (and fps-free facts of one task) do not change the world: tasks on one trajectory share it
            key = json.dumps({k: v for k, v in spec.items() if k != "keyframes"}, sort_keys=True, default=str)
            if key == self.scene_key:
                self.reset_scene_state()
                return
            self.backend.reset_world()
            self.scene_key = None
            self.scene, self.replay = build_replay_world(self.backend, spec, self.kind, where)
        else:
            spec = normalise_scene_spec(spec)
            key = json.dumps(spec, sort_keys=True)
            if key == self.scene_key:
                self.reset_scene_state()
                return
            self.backend.reset_world()
            self.scene_key = None
            self.scene, self.replay = build_scene(self.backend, spec), None
        self._recording = None
        self.populate_scene()
        self.scene_key = key

    def populate_scene(self) -> None:
        """Add what the world itself owns (robot, hand) to a freshly built scene."""

    def reset_scene_state(self) -> None:
        """Put movable things back where the scene spec places them (the scene reused across tasks)."""

    # ----- task ----------------------------------------------------------------------------------------------------
    @classmethod
    def check_task(cls, task, cfg) -> str | None:
        """The pre-run check of a task whose scene a PyBullet world builds (:meth:`World.check_task`; ``--env
        habitat``'s own refusals come first, :attr:`World.habitat_stands_in`): a replay scene's recording loads
        (PyBullet only); a procedural or mesh scene is one the builder takes (known generator and layout, a mesh file that
        parses, ``params`` it reads). One line naming the task and the field, or the ``--env`` option; or None."""
        tid = f"task {task.id!r}"
        env = cfg.env
        if is_replay_scene(task.scene):
            if env == "habitat":
                return f"{tid}: replay scenes run in PyBullet only (use --env pybullet)"
            problem = _replay_problem(task.scene)
            return f"{tid}: {problem}" if problem else None
        try:
            spec = normalise_scene_spec(task.scene)
        except ValueError as e:
            return f"{tid}: {str(e).splitlines()[0]}"
        problem = (spec.get("mesh") and _mesh_problem(spec["mesh"])) or _scene_params_problem(spec)
        return f"{tid}: {problem}" if problem else None

    def configure_task(self, task, observation: str = "sim") -> None:
        """In a replay world: check the task against the trajectory (one-line ValueError naming the task and the
        field), take its keyframes and the recorded camera (resized to the observation size)."""
        self.task = task
        self.step_count = 0
        if self.replay is None:
            self.keyframes = None
            self._recording = None
            self.camera = self.base_camera
            return
        where = f"task {task.id}"
        self.keyframes = self.replay.check_task(task, where)
        if observation != "sim" and not self.replay.has_frames():
            raise ValueError(f"{where}: scene.trajectory: observation {observation!r} needs recorded frames and "
                             f"{self.replay.scene.get('trajectory')} has none (no video or images)")
        cam = self.replay.camera
        self.camera = self.base_camera if cam is None else cam.resized(self.base_camera.width,
                                                                       self.base_camera.height)
        self._recording = TaskRecording(self.replay, self.keyframes)

    @property
    def recording(self):
        return self._recording

    def make_task(self, start, goal, gt, tags: dict, success=None, scene=None, task_id=None,
                  instruction=None) -> Task:
        """A procedural task record in the loaded scene: start and goal C2W (4, 4), ground truth ``gt`` (its sizes
        are the task's), ``tags``; ``success`` (default: the kind's thresholds), ``scene`` (default: the loaded
        scene's spec). Without ``task_id`` the id is content-addressed (kind, generator, seed and a digest of the
        two poses), so the same sampling gives the same id in every process."""
        scene = scene or self.scene.spec
        if task_id is None:
            digest = hashlib.sha1(np.round(np.stack([start, goal]), 9).tobytes()).hexdigest()[:10]
            task_id = f"{self.kind}-{scene['generator']}{scene['seed']}-{digest}"
        kw = {"success": success} if success else {}
        return Task(id=task_id, kind=self.kind, source="procedural", start_pose=start, goal_pose=goal, gt=gt,
                    sizes=gt.sizes, answer_format="stepped", scene=scene, tags=tags, instruction=instruction, **kw)



def _replay_problem(scene: dict) -> str | None:
    """Why a replay scene's recording cannot be used (``scene.trajectory …``, ``scene.mesh …``), or None: the
    trajectory must be a regular file or a folder, and load as the scene says (the loader the run uses, with its
    per-process cache)."""
    traj = scene.get("trajectory")
    if not traj or not isinstance(traj, (str, os.PathLike)):
        return f"scene.trajectory: a replay scene needs the path of its recording, got {traj!r}"
    try:
        mode = os.stat(traj).st_mode
    except OSError:
        return f"scene.trajectory {traj}: no such file or folder (the replay scene's recording)"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return f"scene.trajectory {traj}: not a regular file or a folder (the replay scene's recording)"
    try:
        load_scene_trajectory(scene, where="scene")
    except (ValueError, OSError) as e:
        msg = " ".join(str(e).split())
        return msg[len("scene: "):] if msg.startswith("scene: ") else f"scene.trajectory {traj}: {msg}"
    mesh = scene.get("mesh")
    if mesh and (problem := _mesh_problem(mesh)):
        return problem
    return None


def _scene_params_problem(spec: dict) -> str | None:
    """Why a procedural or mesh scene's ``params`` would stop the scene builder (the values it reads itself, refused
    here before the run rather than in every episode), or None."""
    params = spec.get("params") or {}
    layout = params.get("layout")
    if spec["generator"] == "room" and layout:
        from .scenes import ROOM_LAYOUTS

        if not isinstance(layout, str) or layout not in ROOM_LAYOUTS:
            return f"scene.params.layout must be one of {', '.join(ROOM_LAYOUTS)}, got {str(layout)[:60]!r}"
    if spec["generator"] == "mesh":
        if "up" in params and params["up"] not in ("y", "z"):
            return f"scene.params.up must be 'y' or 'z', got {str(params['up'])[:60]!r}"
        margin = params.get("margin", 0.3)
        if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not math.isfinite(margin):
            return f"scene.params.margin must be a number of metres, got {str(margin)[:60]!r}"
    return None


_MESHES: dict[tuple, str | None] = {}


def _mesh_problem(path: str) -> str | None:
    """Why the scene file ``path`` cannot be built (one line starting ``scene.mesh:``), or None: the file is parsed
    once here (memoised by path, size and mtime), so a corrupt mesh is refused before the run, not an episode
    failure in it."""
    try:
        st = os.stat(path)
    except OSError:
        return f"scene.mesh {path}: no such file"
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _MESHES:
        from .scenes import load_scene_meshes

        try:
            load_scene_meshes(path)
            _MESHES[key] = None
        except (ValueError, OSError) as e:
            _MESHES[key] = " ".join(str(e).split())
    return _MESHES[key]
