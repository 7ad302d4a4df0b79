"""``spatialact/GripperManip-v0``: move a Franka Panda's gripper to a goal pose, or move objects, at a table.

**World.** :class:`~spatialact.envs.panda_world.PandaWorld`: pybullet_data's Panda with a parallel gripper at a table
(or in a DROID replay scene). The controlled frame is the end-effector: PyBullet's ``panda_grasptarget`` link
(between the fingertips, 0.105 m past the hand flange). Its axes already follow the OpenCV convention the action space
uses: **+Z points out of the gripper** (the approach direction), +Y runs along the finger travel, +X = Y × Z. Poses are
C2W (4, 4), metres, world +Z up; the robot base stands on the table at (0, 0, table height).

Each step composes the commanded pose exactly (``T_cmd ← T_cmd @ Δ``) and drives the arm there by damped-least-
squares inverse kinematics (PyBullet's, with joint limits and a rest posture, refined until the measured pose is
within 0.1 mm / 0.05°) through interpolated waypoints; the arm is positioned kinematically and held by its
position motors while the physics of the objects runs. ``info["pose"]`` is the *measured* end-effector pose;
``info`` adds ``commanded_pose``, ``held_object`` and ``objects`` (name → centre).

**Observation.** ``rgb``: an exterior camera looking at the workspace; ``goal_rgb``: the same camera with the arm at
the goal (and the task's object where its success test wants it); ``depth`` with ``depth=True``;
``wrist_camera=True`` (world option) adds ``wrist_rgb``.

**Actions.** As CameraNav, with the gripper: ``Discrete(15)`` (13 open, 14 close), the ``step`` mode's gripper
element (0 open, 1 close, 2 keep), the ``continuous`` mode's ``g``; see :mod:`spatialact.envs.base`.

**Tasks.** Reach a goal pose (success within 0.05 m / 10°), or pick and place / push a cube (success from the
object's state). Reward and termination as in :mod:`spatialact.envs.base`.
"""

from __future__ import annotations

from .base import SpatialActEnv
from .panda_world import PandaWorld

__all__ = ["GripperManipEnv"]


class GripperManipEnv(SpatialActEnv):
    """Franka Panda manipulation; see the module docstring."""

    kind = "manip"
    n_discrete = 15
    world_class = PandaWorld
