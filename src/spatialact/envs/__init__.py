"""Gymnasium environments over PyBullet scenes (docs/environments.md) and the worlds they run in; importing this package
registers the environments.

* ``spatialact/CameraNav-v0`` — :class:`CameraNavEnv`, a free camera in a procedural room or a mesh scene, stopped
  by walls and furniture (``collisions=False``: it passes through them);
* ``spatialact/GripperManip-v0`` — :class:`GripperManipEnv`, a Franka Panda at a table;
* ``spatialact/HandManip-v0`` — :class:`HandManipEnv`, a floating hand proxy at a table;
* ``spatialact/GameNav-v0`` — :class:`GameNavEnv`, the player's camera in a Doom level (ViZDoom; game tasks).

``make_env(kind, ...)`` builds one through ``gymnasium.make`` (so it is wrapped as gymnasium wraps every env:
order enforcing and the passive checker); use ``env.unwrapped`` for ``apply_step``, ``pose``, ``render_view``, ...
and ``env.unwrapped.world`` for its :class:`~spatialact.envs.world.World`. ``wrap=False`` returns the raw
environment. :func:`collision_problem` (``task`` → a one-line reason or None) says whether a navigation task's
ground-truth path and straight start→goal segment are clear of its scene for the camera sphere. This module only
hands out its modules' names (:mod:`.registry`, :mod:`.executor`, :mod:`.replay_world`, :mod:`.replay_compare`,
:mod:`.vector`); the task generators live above, in :mod:`spatialact.taskgen`.
"""

from __future__ import annotations

from .executor import ExecutionResult, execute_sequence
from .registry import ENV_IDS, KIND_TO_ID, make_env
from .replay_compare import ReplayResult, replay_trajectory
from .replay_world import check_droid_reachable, replay_scene_for

__all__ = ["make_env", "execute_sequence", "ExecutionResult", "ENV_IDS", "KIND_TO_ID",
           "CameraNavEnv", "GripperManipEnv", "HandManipEnv", "GameNavEnv", "replay_trajectory", "ReplayResult",
           "check_droid_reachable", "replay_scene_for", "make_vector_env", "collision_problem"]

def __getattr__(name):
    # lazy class access without importing every environment up front
    if name == "CameraNavEnv":
        from .camera_nav import CameraNavEnv
        return CameraNavEnv
    if name == "GripperManipEnv":
        from .gripper_manip import GripperManipEnv
        return GripperManipEnv
    if name == "HandManipEnv":
        from .hand_manip import HandManipEnv
        return HandManipEnv
    if name == "GameNavEnv":
        from .game_nav import GameNavEnv
        return GameNavEnv
    if name == "collision_problem":  # builds scenes: PyBullet loads on first use
        from .collision import collision_problem
        return collision_problem
    if name == "make_vector_env":  # K environments in one process, observations rendered in one call
        from .vector import make_vector_env
        return make_vector_env
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
