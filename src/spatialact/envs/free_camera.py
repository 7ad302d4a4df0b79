"""A free camera moved kinematically (no collisions) through a 3-D scene: the world of CameraNav.

Scenes: a procedural room (default), a mesh file (``{"generator": "mesh", "mesh": path}``), or a camera path's
replay scene (the recorded camera path in a mesh or a room box around the task's segment). The controlled frame is
the camera itself: pose (4, 4) C2W, metres, world +Z up, OpenCV axes (+X right, +Y down, +Z forward). One step moves
it by the step's body-frame Δ: ``T ← T @ Δ`` — the same product as ``ActionSequence.to_poses``, so executing a
sequence reaches its poses exactly; nothing blocks it. The observing camera is the controlled one; the goal view is
rendered from the goal pose.

Random tasks (:meth:`FreeCameraWorld.sample_task`): a start inside the room's navigable box, out of furniture and
looking at something (:meth:`~FreeCameraWorld.view_ok`), a ground truth of 1–3 random whole-unit steps, every pose
on the way inside the room with the horizon in view (:meth:`~FreeCameraWorld.pose_ok`), and the goal sharing at least
``min_overlap`` of the view with the start both ways (:func:`~spatialact.envs.views.view_overlap`).
"""

from __future__ import annotations

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, StepSizes
from .pybullet_world import PyBulletWorld
from .rendering import CameraSpec
from .sampling import sample_signed_counts
from .scenes import look_at
from .views import view_overlap

__all__ = ["FreeCameraWorld"]

# Which axes random ground truths move (truck, pedestal, dolly, tilt, pan, roll), and their largest counts: rotations
# are kept moderate so that start and goal views share landmarks.
_AXIS_WEIGHTS = (1.0, 0.5, 1.2, 0.35, 1.2, 0.2)
_MAX_COUNTS = (10, 6, 10, 4, 6, 3)


class FreeCameraWorld(PyBulletWorld):
    """A free camera in a PyBullet scene; see the module docstring. ``min_overlap``: the least view overlap of a
    random task's start and goal (0.3)."""

    kind = "nav"
    has_gripper = False
    default_generator = "room"

    def __init__(self, camera, renderer: str = "tiny", min_overlap: float = 0.3):
        super().__init__(camera, renderer)
        self.min_overlap = float(min_overlap)
        self._pose = np.eye(4)

    # ----- the camera ----------------------------------------------------------------------------------------------
    @property
    def pose(self) -> np.ndarray:
        return self._pose.copy()

    def set_start(self, task) -> None:
        self._pose = task.start_pose.copy()
        self.step_count = 0

    def move(self, delta: np.ndarray) -> bool:
        self._pose = self._pose @ delta
        self.step_count += 1
        return False

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
        horizon out of view, the goal lies in an obstacle or looks at a blank view."""
        poses = gt.to_poses(start)
        goal = poses[-1]
        if np.linalg.norm(goal[:3, 3] - start[:3, 3]) < 2 * gt.sizes.translation:
            return None
        if not all(self.pose_ok(T) for T in poses) or self.scene.inside_obstacle(goal[:3, 3], 0.15):
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
