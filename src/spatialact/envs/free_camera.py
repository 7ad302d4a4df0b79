"""A free camera that walls, floor, ceiling and furniture stop, in a 3-D scene: the world of CameraNav.

Scenes: a procedural room (default), a mesh file (``{"generator": "mesh", "mesh": path}``), or a camera path's
replay scene (the recorded camera path in a mesh or a room box around the task's segment). The controlled frame is
the camera itself: pose (4, 4) C2W, metres, world +Z up, OpenCV axes (+X right, +Y down, +Z forward). One step moves
it by the step's body-frame Δ: ``T ← T @ Δ`` — the same product as ``ActionSequence.to_poses``, so executing a
sequence whose path is clear reaches its poses exactly. The observing camera is the controlled one; the goal view is
rendered from the goal pose.

Walls (``collisions=True``, the default): the camera is a sphere of radius 0.10 m
(:data:`~spatialact.envs.collision.CAMERA_RADIUS`). A step translates, then rotates; its translation is swept
(:class:`~spatialact.envs.collision.SphereSweep`) and, when the sphere would enter a collision shape, the camera
stops on the segment free of contact and within 1 cm of it, and still turns by the step's whole rotation:
:meth:`FreeCameraWorld.move` returns True (``info["blocked"]``). ``blocks_motion`` is True then, so an evaluation
records ``blocked`` per executed step. ``collisions=False``: the camera moves kinematically through everything (the
behaviour before walls).

Random tasks (:meth:`FreeCameraWorld.sample_task`): a start inside the room's navigable box, out of furniture and
looking at something (:meth:`~FreeCameraWorld.view_ok`), a ground truth of 1–3 random whole-unit steps, every pose
on the way inside the room with the horizon in view (:meth:`~FreeCameraWorld.pose_ok`), with walls on the
ground-truth path and the straight start→goal segment clear of the scene for the camera sphere
(:meth:`~FreeCameraWorld.path_problem`; a draft that is not is dropped and counted in ``collision_drops``), and the
goal sharing at least ``min_overlap`` of the view with the start both ways
(:func:`~spatialact.envs.views.view_overlap`).
"""

from __future__ import annotations

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, StepSizes
from .camera import CameraSpec, look_at
from .collision import SphereSweep, path_problem
from .pybullet_world import PyBulletWorld
from .rendering import BulletBackend
from .sampling import sample_signed_counts
from .views import view_overlap

__all__ = ["FreeCameraWorld"]

# Which axes random ground truths move (truck, pedestal, dolly, tilt, pan, roll), and their largest counts: rotations
# are kept moderate so that start and goal views share landmarks.
_AXIS_WEIGHTS = (1.0, 0.5, 1.2, 0.35, 1.2, 0.2)
_MAX_COUNTS = (10, 6, 10, 4, 6, 3)


class FreeCameraWorld(PyBulletWorld):
    """A free camera in a PyBullet scene; see the module docstring. ``min_overlap``: the least view overlap of a
    random task's start and goal (0.3). ``collisions``: whether the scene stops the camera sphere (True) or the
    camera moves through it (False). ``collision_drops``: random-task drafts dropped because their path was not
    clear (counted since the world was made; the task builders report it)."""

    kind = "nav"
    has_gripper = False
    default_generator = "room"

    def __init__(self, camera, renderer: str = "tiny", min_overlap: float = 0.3, collisions: bool = True):
        super().__init__(camera, renderer)
        self.min_overlap = float(min_overlap)
        if not isinstance(collisions, (bool, np.bool_)):
            raise ValueError(f"collisions must be True or False, got {collisions!r}")
        self.collisions = bool(collisions)
        self.collision_drops = 0
        self._pose = np.eye(4)
        self._sweep: SphereSweep | None = None

    @property
    def blocks_motion(self) -> bool:
        """Whether a step can be stopped short (walls on, in a PyBullet scene: a subclass drawing through another
        simulator, habitat-sim, has no walls): an evaluation then records ``blocked`` per step."""
        return self.collisions and isinstance(self.backend, BulletBackend)

    @property
    def probes(self) -> tuple[int, ...]:
        """Body ids of the walls' probe spheres in the loaded scene (never drawn; empty without walls)."""
        return tuple(self._sweep.probes) if self._sweep is not None else ()

    def populate_scene(self) -> None:
        # the probe spheres of the walls: made after every rebuild (a rebuild removes every body)
        self._sweep = SphereSweep(self.p, self.client) if self.collisions else None

    # ----- the camera ----------------------------------------------------------------------------------------------
    @property
    def pose(self) -> np.ndarray:
        return self._pose.copy()

    def set_start(self, task) -> None:
        self._pose = task.start_pose.copy()
        self.step_count = 0

    def move(self, delta: np.ndarray) -> bool:
        """``T ← T @ Δ``; with walls, the translation stops within 1 cm of the first contact of the camera sphere
        (the rotation is kept whole) and the return value says so."""
        target = self._pose @ delta
        blocked = False
        if self._sweep is not None:
            a, b = self._pose[:3, 3], target[:3, 3]
            t, body = self._sweep.sweep(a, b)
            if body is not None:
                target[:3, 3] = a + t * (b - a)
                blocked = True
        self._pose = target
        self.step_count += 1
        return blocked

    def path_problem(self, poses, goal=None) -> str | None:
        """Why a camera path (C2W poses (K+1, 4, 4), start first) is not clear of the loaded scene for the camera
        sphere — the start inside geometry, a step's segment or the straight segment from the start to ``goal``
        (default the path's end) entering it — or None; always None with ``collisions=False``. A problem counts in
        :attr:`collision_drops` (the builders drop such drafts)."""
        if self._sweep is None:
            return None
        names = {b: n for n, b in self.scene.bodies.items()}
        why = path_problem(self._sweep, poses, names, goal=goal)
        if why is not None:
            self.collision_drops += 1
        return why

    # ----- random tasks --------------------------------------------------------------------------------------------
    def random_start(self, rng) -> np.ndarray | None:
        """A random start in the loaded room (C2W): the eye in the navigable box at 1.0–1.7 m and out of furniture,
        looking horizontally in a random direction, then turned about its own x axis by −0.35…0.05 rad; None when
        the eye is in furniture or the view is not clear (:meth:`view_ok`): draw again."""
        box = self.scene.nav_box
        eye = np.array([rng.uniform(*box[0]), rng.uniform(*box[1]), rng.uniform(max(box[2][0], 1.0),
                                                                                  min(box[2][1], 1.7))])
        if self.scene.inside_obstacle(eye, 0.25):
            return None
        yaw = rng.uniform(-np.pi, np.pi)
        T = look_at(eye, eye + np.array([np.cos(yaw), np.sin(yaw), 0.0]))
        T = T @ geometry.make_pose(geometry.rot_x(rng.uniform(-0.35, 0.05)), np.zeros(3))
        return T if self.view_ok(T) else None

    def view_ok(self, T) -> bool:
        """Not inside or against something: nearest surface ≥ 0.3 m, median ≥ 1.5 m (a small depth render)."""
        _, d, _ = self.render(T, CameraSpec(16, 16, self.camera.fov_deg), depth=True)
        return float(d.min()) >= 0.3 and float(np.median(d)) >= 1.5

    def pose_ok(self, T, margin=0.15) -> bool:
        """Inside the room's navigable box (± ``margin`` m), the optical axis within ±50° of horizontal and the roll
        within ±35° (the horizon stays in view)."""
        box = self.scene.nav_box
        x = T[:3, 3]
        if np.any(x < box[:, 0] - margin) or np.any(x > box[:, 1] + margin):
            return False
        z_axis, x_axis = T[:3, 2], T[:3, 0]
        return abs(z_axis[2]) <= np.sin(np.radians(50)) and abs(x_axis[2]) <= np.sin(np.radians(35))

    def reachable_goal(self, start: np.ndarray, gt: ActionSequence) -> tuple[np.ndarray, float] | None:
        """Where ``gt`` leads from ``start`` (OpenCV camera-to-world (4, 4), metres) in the current scene, as
        ``(goal pose, view overlap)`` — the overlap the smaller of start-in-goal and goal-in-start — or None when
        the goal is within two translation units of the start, a pose on the way leaves the room or tilts the
        horizon out of view, the goal lies in an obstacle, the path is not clear for the camera sphere (walls on:
        :meth:`path_problem`) or the goal looks at a blank view."""
        poses = gt.to_poses(start)
        goal = poses[-1]
        if np.linalg.norm(goal[:3, 3] - start[:3, 3]) < 2 * gt.sizes.translation:
            return None
        if not all(self.pose_ok(T) for T in poses) or self.scene.inside_obstacle(goal[:3, 3], 0.15):
            return None
        if self.path_problem(poses) is not None:
            return None
        if not self.view_ok(goal):
            return None
        return goal, min(view_overlap(self, start, goal), view_overlap(self, goal, start))

    def sample_task(self, rng, *, sizes: StepSizes, cap: int = 10, n_steps=(1, 3), variant: str = "reach",
                    max_tries: int = 400):
        """A random reachable goal in the loaded scene (see the module docstring)."""
        if variant != "reach":
            raise ValueError(f"CameraNav tasks are 'reach' tasks, got variant {variant!r}")
        for _ in range(max_tries):
            start = self.random_start(rng)
            if start is None:
                continue
            k = int(rng.integers(n_steps[0], n_steps[1] + 1))
            signed = sample_signed_counts(rng, k, _AXIS_WEIGHTS, _MAX_COUNTS, cap)
            gt = ActionSequence.from_signed_counts(signed, sizes, cap=cap)
            reached = self.reachable_goal(start, gt)
            if reached is None or reached[1] < self.min_overlap:
                continue
            goal, overlap = reached
            # Tags are categories a report breaks scores down by; the exact overlap goes to meta.
            tags = {"variant": "reach", "n_steps": k, "view_overlap": "high" if overlap >= 0.6 else "low",
                    "layout": self.scene.spec.get("params", {}).get("layout", self.scene.spec["generator"])}
            task = self.make_task(start, goal, gt, tags,
                                  instruction="Move the camera from the start view to the goal view.")
            return task.with_(meta={**task.meta, "view_overlap": round(float(overlap), 3)})
        raise RuntimeError(f"no valid navigation goal found in scene {self.scene.spec} after {max_tries} tries")
