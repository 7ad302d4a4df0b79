"""``spatialact/CameraNav-v0``: move a free camera from a start view to a goal view in a 3-D scene.

**World.** :class:`~spatialact.envs.free_camera.FreeCameraWorld`: a camera in a procedural room (default), a mesh file
(``scene={"generator": "mesh", "mesh": path}``) or a camera path's replay scene. The controlled frame is the camera
itself: pose (4, 4) C2W, metres, world +Z up, OpenCV axes (+X right, +Y down, +Z forward). One step moves it by the
step's body-frame Δ: ``T ← T @ Δ``, translate then rotate — the same product as ``ActionSequence.to_poses``, so
executing a sequence whose path is clear reaches its poses exactly.

**Walls** (``collisions=True``, the default; a keyword of ``make_env`` and ``gym.make``). The camera is a sphere of
radius 0.10 m centred on it (the near plane's corner is 0.026 m from the centre, so no view ever looks through a
surface). Walls, floor, ceiling and furniture — every collision shape of the scene — stop it: a step whose
translation would take the sphere into one stops on its way, free of contact and within 1 cm of it, and still turns
by its whole rotation; ``info["blocked"]`` is True for that step (False otherwise and after ``reset``). A camera that
starts inside a body (a hand-made task) is not held by that body. ``collisions=False`` moves the camera through
everything (the behaviour before walls; ``info["blocked"]`` always False). ``env.unwrapped.world.blocks_motion``
says whether walls are on (an evaluation then records ``blocked`` per executed step).
:func:`spatialact.envs.collision_problem` checks that a task's ground-truth path is clear (the task builders drop
tasks whose path is not).

**Observation** (``Dict``): ``rgb`` (H, W, 3) uint8, the view from the current pose; ``goal_rgb``, the view from the
goal pose (rendered once per episode); ``depth`` (H, W) float32 metres when ``depth=True``; ``recorded_rgb`` with
``observation="both"`` (replayed camera paths with frames).

**Actions** (``action_mode``): ``discrete`` ``Discrete(13)`` (0 Stay, 1–12 one unit of one primitive), ``step``
``MultiDiscrete([2·cap+1]*6 + [3])`` (signed counts per primitive; the gripper element is ignored), ``continuous``
``Box(7)`` (one vector-format step); see :mod:`spatialact.envs.base`.

**Reward, termination.** The decrease of ``position_error / 0.2 m + rotation_error / 10°`` plus 10 on success (within
0.20 m / 10° of the goal, by default); ``terminated`` on success when ``terminate_on_success``, ``truncated`` after
``max_steps``.

**Reset.** ``reset(options={"task": task})`` rebuilds the task's scene (when it differs) and puts the camera at
``start_pose``; without a task it draws a random reachable goal sharing at least ``min_overlap`` (world option,
0.3) of the start view, its ground-truth path clear of the scene (with walls on).
"""

from __future__ import annotations

from .base import SpatialActEnv
from .free_camera import FreeCameraWorld

__all__ = ["CameraNavEnv"]


class CameraNavEnv(SpatialActEnv):
    """Camera navigation; see the module docstring and :class:`~spatialact.envs.base.SpatialActEnv`."""

    kind = "nav"
    n_discrete = 13
    world_class = FreeCameraWorld
