"""``spatialact/HandManip-v0``: move a floating hand to a goal pose, or grab and move objects, at a table.

**World.** :class:`~spatialact.envs.hand_world.HandWorld`: a hand proxy with 6-DoF wrist motion at a table (or in an
EgoDex replay scene). The controlled frame is the wrist, in EgoDex's hand convention (docs/conventions.md): **+Z from
the wrist toward the middle-finger knuckle, +Y out of the palm**, X = Y × Z; poses are C2W (4, 4), metres, world +Z up.
Push / Pull are Dolly In / Out of the hand (along +Z), Grab / Release the gripper states 1 / 0 (the fingers curl
toward the palm, +Y). The hand is placed kinematically — exactly at the commanded pose — and it pushes dynamic objects
it moves into; a grab carries the object whose centre lies in front of the palm.

**Observation.** ``rgb``: the tabletop's exterior camera (an EgoDex replay: the recorded head camera at keyframe
min(k, K) after k steps); ``goal_rgb``: the same camera at the goal; ``depth`` with ``depth=True``;
``wrist_camera=True`` (world option) adds ``wrist_rgb``. ``info`` adds ``commanded_pose``, ``held_object``,
``objects``.

**Actions.** As GripperManip (``Discrete(15)``, the gripper element / ``g`` grab and release); see
:mod:`spatialact.envs.base`.

**Tasks.** Reach a goal pose (success within 0.05 m / 10°), or grab and move a cube (success from the object's
state). Reward and termination as in :mod:`spatialact.envs.base`.
"""

from __future__ import annotations

from .base import SpatialActEnv
from .hand_world import HandWorld

__all__ = ["HandManipEnv"]


class HandManipEnv(SpatialActEnv):
    """Floating hand manipulation; see the module docstring."""

    kind = "hand"
    n_discrete = 15
    world_class = HandWorld
