"""Gymnasium environments over PyBullet scenes (SPEC §6); importing this package registers them.

* ``spatialact/CameraNav-v0`` — :class:`CameraNavEnv`, a free camera in a procedural room or a mesh scene;
* ``spatialact/GripperManip-v0`` — :class:`GripperManipEnv`, a Franka Panda at a table;
* ``spatialact/HandManip-v0`` — :class:`HandManipEnv`, a floating hand proxy at a table.

``make_env(kind, ...)`` builds one through ``gymnasium.make`` (so it is wrapped as gymnasium wraps every env:
order enforcing and the passive checker); use ``env.unwrapped`` for ``apply_step``, ``pose``, ``render_view``, ...
``wrap=False`` returns the raw environment.
"""

from __future__ import annotations

from .executor import ExecutionResult, execute_sequence
from .procedural import ladder_tasks, procedural_tasks, viewpoint_pairs
from .registry import ENV_IDS, KIND_TO_ID, make_env
from .replay import attach_replay_scenes, check_droid_reachable, replay_scene_for
from .replay_run import ReplayResult, replay_trajectory

__all__ = ["make_env", "execute_sequence", "ExecutionResult", "procedural_tasks", "ladder_tasks", "viewpoint_pairs",
           "ENV_IDS", "KIND_TO_ID",
           "CameraNavEnv", "GripperManipEnv", "HandManipEnv", "replay_trajectory", "ReplayResult",
           "check_droid_reachable", "replay_scene_for", "attach_replay_scenes", "make_vector_env"]


def __getattr__(name):  # lazy class access without importing every environment up front
    if name == "CameraNavEnv":
        from .camera_nav import CameraNavEnv
        return CameraNavEnv
    if name == "GripperManipEnv":
        from .gripper_manip import GripperManipEnv
        return GripperManipEnv
    if name == "HandManipEnv":
        from .hand_manip import HandManipEnv
        return HandManipEnv
    if name == "make_vector_env":  # K environments in one process, observations rendered in one call
        from .vector import make_vector_env
        return make_vector_env
    raise AttributeError(name)
