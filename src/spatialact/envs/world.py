"""The World protocol: what every world an environment runs in provides (docs/environments.md, "Worlds").

An environment (:class:`~spatialact.envs.base.SpatialActEnv`) is the Gymnasium side of an episode: spaces, action
modes, reward, termination, ``info``, task handling. The place it runs in — the scene, the controlled body and how
it moves, the cameras and their images, object state, random tasks — is its *world*: an instance of a
:class:`World` subclass, made by the environment's ``world_class``. The environment calls nothing else, so a new
world (a game engine, another simulator) plugs in as a new world class and a new environment file naming it.

Frames and units, for every world: poses are C2W (4, 4) float64 matrices in metres (radians for angles), world +Z up,
camera axes OpenCV (+X right, +Y down, +Z forward). The controlled frame moves in its own body frame: one step's
motion is a rigid Δ (4, 4), ``T_next = T @ Δ`` where nothing stops it. Images: RGB (H, W, 3) uint8, depth (H, W)
float32 metres along the optical axis, segmentation (H, W) int32 body ids (−1 background).

The episode protocol, as the environment drives it:

1. :meth:`World.load_scene` (scene spec of the task, or a random one) — reused when unchanged;
2. :meth:`World.configure_task` (checks the task against the world; a replayed task's recorded camera);
3. :meth:`World.goal_view` (rendered once per episode), then :meth:`World.set_start`;
4. per step: :meth:`World.move` (says whether it was blocked), :meth:`World.set_gripper` when the step sets it,
   then :meth:`World.observe`; :attr:`World.pose` for the errors, :meth:`World.object_success` for object tasks.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

__all__ = ["World", "OBSERVATION_MODES"]

#: What an environment's ``rgb`` shows of a replayed task: rendered (``sim``), the recording's frame nearest the
#: current pose (``recorded``), or both (``rgb`` rendered, ``recorded_rgb`` recorded).
OBSERVATION_MODES = ("sim", "recorded", "both")


class World(ABC):
    """Base class of every world; subclasses implement the abstract members and override the others as needed.

    Class attributes: ``kind`` (the task kind it runs: ``nav``, ``manip``, ``hand``), ``has_gripper`` (whether a
    step's gripper element acts), ``default_generator`` (the scene generator of ``reset()`` without a task),
    ``renders_any_pose`` (False for a world that can only render from its body's current pose, e.g. a game whose
    engine draws the player's view: :meth:`render_views` then refuses other poses), ``habitat_stands_in`` (whether
    ``--env habitat`` runs its tasks in habitat-sim instead).

    Attributes: ``camera`` (the :class:`~spatialact.envs.rendering.CameraSpec` in use — a replayed task's recorded
    camera resized to the observation size, else ``base_camera``), ``base_camera`` (the environment's camera),
    ``scene`` (what the loaded scene offers, with ``.spec`` the scene spec it was built from; None before
    :meth:`load_scene`), ``task`` (the task of :meth:`configure_task`, None before).
    """

    kind: ClassVar[str] = "nav"
    has_gripper: ClassVar[bool] = False
    default_generator: ClassVar[str] = "room"
    renders_any_pose: ClassVar[bool] = True
    #: Whether ``--env habitat`` runs this world's tasks in habitat-sim instead (CameraNav's scenes: the PyBullet
    #: worlds); the pre-run check then refuses what habitat-sim cannot run before asking :meth:`check_task`.
    habitat_stands_in: ClassVar[bool] = False
    #: The Gymnasium id of the environment that runs this world's tasks (``spatialact.envs.registry.make_env`` asks
    #: it through ``env_id_for``): None for the PyBullet worlds, whose tasks run in the environment of their kind
    #: (CameraNav, GripperManip, HandManip); a world with an environment of its own (the game: GameNav) names it
    #: and runs tasks of its ``kind`` only.
    environment: ClassVar[str | None] = None

    def __init__(self, camera):
        self.base_camera = camera
        self.camera = camera
        self.scene = None
        self.task = None

    @classmethod
    def scene_aspect(cls, scene) -> float | None:
        """Width / height of the images a task's ``scene`` was recorded at (a replayed trajectory's camera), or None
        when the scene sets none. The environment sizes its images by it before the world exists."""
        return None

    # ----- scene and task ------------------------------------------------------------------------------------------
    @abstractmethod
    def load_scene(self, spec: dict, where: str = "scene") -> None:
        """Build the scene a spec describes; when it is the scene already loaded, only put movable things back where
        the spec places them. Refusals are one-line ValueErrors starting ``<where>: <field>:``."""

    @classmethod
    def check_task(cls, task, cfg) -> str | None:
        """Why ``task`` cannot run in this world under the run's configuration ``cfg``, or None: the pre-run check
        (``spatialact.evaluation.episode.check_runnable``) asks it of the world its scene names
        (``task.scene.world``, a key of ``spatialact.envs.registry.WORLDS``) for every task before a run writes
        anything, so a task that would fail in every episode is refused once, in one line naming the task and the
        field (``task 'x': scene.mesh ...``) or the option (``--env ...``). ``cfg`` is the run's
        :class:`~spatialact.evaluation.episode.EpisodeConfig` (``env``: the simulator asked for, ``mode``,
        ``variant``, ...). Check what can be checked without starting the world: the packages it needs, the files
        the scene names, the values its builder reads. The default refuses nothing."""
        return None

    @classmethod
    def replays_recording(cls, scene) -> bool:
        """Whether a scene spec replays a recording (then :attr:`recording` is set for its tasks)."""
        return False

    @classmethod
    def check_scene(cls, spec) -> dict:
        """A scene spec checked, with its defaults filled in (one-line ValueError naming the field); the environment
        checks a fixed ``scene=`` with it when it is made."""
        return dict(spec)

    def configure_task(self, task, observation: str = "sim") -> None:
        """Per-task configuration before its episode, in the loaded scene: check the task against the world (one-line
        ValueError naming the task and the field), take its camera. ``observation`` (:data:`OBSERVATION_MODES`):
        ``recorded`` and ``both`` show the recording's frames, so a recording without frames is refused. The default
        keeps the base camera."""
        self.task = task
        self.camera = self.base_camera

    # ----- the controlled body ---------------------------------------------------------------------------------------
    @abstractmethod
    def set_start(self, task) -> None:
        """Put the controlled body at ``task.start_pose`` (C2W), the gripper open, held objects released."""

    @abstractmethod
    def move(self, delta: np.ndarray) -> bool:
        """Move the controlled body by one step's body-frame Δ (4, 4, metres): ``T ← T @ Δ`` where nothing stops it.
        Returns whether the motion was blocked (a wall stopped it short); False for kinematic worlds."""

    def set_gripper(self, g: int) -> None:
        """Set the gripper: 0 open / release, 1 close / grab. Worlds without a gripper ignore it."""

    @property
    def gripper(self) -> int:
        """The gripper state now (0 open, 1 closed); 0 in worlds without a gripper."""
        return 0

    @property
    @abstractmethod
    def pose(self) -> np.ndarray:
        """C2W pose (4, 4) of the controlled frame (camera, end effector, wrist) as it is now (measured)."""

    @property
    def camera_pose(self) -> np.ndarray:
        """C2W pose of the observing camera, the one :meth:`observe` renders from; the controlled frame itself by
        default (a camera that is the body)."""
        return self.pose

    @property
    def goal_camera_pose(self) -> np.ndarray:
        """C2W pose of the camera :meth:`goal_view` renders from; the task's goal pose by default."""
        return np.asarray(self.task.goal_pose, dtype=np.float64).copy()

    # ----- images ------------------------------------------------------------------------------------------------------
    @abstractmethod
    def render_views(self, poses, depth: bool = False, segmentation: bool = False) -> tuple:
        """K views of the scene as it is now, with :attr:`camera`: C2W poses (K, 4, 4) → (rgb (K, H, W, 3) uint8,
        depth (K, H, W) float32 metres or None, segmentation (K, H, W) int32 or None). A world that cannot render
        arbitrary poses (``renders_any_pose`` False) raises ValueError for a pose other than its body's."""

    def observe(self, depth: bool = False) -> tuple:
        """The current observing view: (rgb (H, W, 3) uint8, depth (H, W) float32 metres or None)."""
        rgb, d, _ = self.render_views([self.camera_pose], depth=depth)
        return rgb[0], None if d is None else d[0]

    def goal_view(self) -> np.ndarray:
        """RGB (H, W, 3) uint8 of the configured task's goal, from :attr:`goal_camera_pose`."""
        return self.render_views([self.goal_camera_pose])[0][0]

    # ----- success, observation extras, info -----------------------------------------------------------------------
    def object_success(self, test: dict) -> bool:
        """Whether the object-state success test of the configured task (``task.success["object_state"]``) holds."""
        raise ValueError(f"{type(self).__name__} has no object-state success tests (task {self.task.id!r})")

    def extra_observation_spaces(self) -> dict:
        """Observation spaces the world adds to ``rgb`` / ``goal_rgb`` / ``depth`` (e.g. ``wrist_rgb``)."""
        return {}

    def extra_observations(self) -> dict:
        """The values of :meth:`extra_observation_spaces` now."""
        return {}

    def extra_info(self) -> dict:
        """Entries the world adds to the environment's ``info`` (e.g. ``commanded_pose``, ``held_object``)."""
        return {}

    # ----- tasks ---------------------------------------------------------------------------------------------------
    @abstractmethod
    def sample_task(self, rng: np.random.Generator, *, sizes, cap: int = 10, n_steps=(1, 3),
                    variant: str = "reach"):
        """A random reachable task in the loaded scene (``reset()`` without a task, the procedural builders): start,
        ground truth of whole unit steps (``sizes``, at most ``cap`` units a primitive), goal its replay."""

    @property
    def recording(self):
        """The recording of the configured task when it replays one (:class:`.replay_world.TaskRecording`:
        recorded frames, the frame nearest a pose, the recorded gripper at the start), else None."""
        return None

    @property
    @abstractmethod
    def gl_renderer(self) -> str:
        """The name of the renderer that draws the images (``info["renderer"]``)."""

    def close(self) -> None:
        """Release what the world holds (simulator client, renderer, game process)."""
