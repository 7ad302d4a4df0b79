"""Gymnasium environments over PyBullet scenes (SPEC §6); importing this package registers them.

* ``spatialact/CameraNav-v0`` — :class:`CameraNavEnv`, a free camera in a procedural room or a mesh scene;
* ``spatialact/GripperManip-v0`` — :class:`GripperManipEnv`, a Franka Panda at a table;
* ``spatialact/HandManip-v0`` — :class:`HandManipEnv`, a floating hand proxy at a table.

``make_env(kind, ...)`` builds one through ``gymnasium.make`` (so it is wrapped as gymnasium wraps every env:
order enforcing and the passive checker); use ``env.unwrapped`` for ``apply_step``, ``pose``, ``render_view``, ...
``wrap=False`` returns the raw environment.
"""

from __future__ import annotations

import gymnasium as gym

from .executor import ExecutionResult, execute_sequence
from .procedural import ladder_tasks, procedural_tasks, viewpoint_pairs
from .replay import attach_replay_scenes, check_droid_reachable, replay_scene_for
from .replay_run import ReplayResult, replay_trajectory

__all__ = ["make_env", "execute_sequence", "ExecutionResult", "procedural_tasks", "ladder_tasks", "viewpoint_pairs",
           "ENV_IDS", "KIND_TO_ID",
           "CameraNavEnv", "GripperManipEnv", "HandManipEnv", "replay_trajectory", "ReplayResult",
           "check_droid_reachable", "replay_scene_for", "attach_replay_scenes", "make_vector_env"]

KIND_TO_ID = {"nav": "spatialact/CameraNav-v0", "manip": "spatialact/GripperManip-v0",
              "hand": "spatialact/HandManip-v0"}
ENV_IDS = tuple(KIND_TO_ID.values())
_ENTRY = {"nav": "spatialact.envs.camera_nav:CameraNavEnv",
          "manip": "spatialact.envs.gripper_manip:GripperManipEnv",
          "hand": "spatialact.envs.hand_manip:HandManipEnv"}

for _kind, _id in KIND_TO_ID.items():
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=_ENTRY[_kind])


def make_env(kind: str, *, task=None, action_mode: str = "step", renderer: str = "tiny", width: int | None = None,
             height: int = 128, seed: int | None = None, backend: str = "pybullet", wrap: bool = True, **kw):
    """An environment for a task kind (``nav``, ``manip``, ``hand``).

    ``backend="pybullet"`` (default) or ``"habitat"`` (CameraNav only; needs habitat-sim). ``seed`` seeds the first
    reset (the env is not reset here). ``width`` defaults to 128, or for a task with a replay scene to ``height``
    times the recorded aspect ratio. Other keywords go to the environment (``render_mode``, ``max_steps``,
    ``terminate_on_success``, ``depth``, ``scene``, ``fov_deg``, ``sizes``, ``cap``, ``observation`` (``sim``,
    ``recorded``, ``both``: replayed tasks), ...).
    """
    if kind not in KIND_TO_ID:
        raise ValueError(f"kind must be one of {tuple(KIND_TO_ID)}, got {kind!r}")
    kwargs = dict(task=task, action_mode=action_mode, renderer=renderer, width=width, height=height, **kw)
    if backend == "habitat":
        if kind != "nav":
            raise ValueError(f"the habitat backend runs navigation tasks only, not {kind!r}")
        from .habitat_backend import HabitatCameraNavEnv

        env = HabitatCameraNavEnv(**kwargs)
        if wrap:
            env = gym.wrappers.OrderEnforcing(env)
    elif backend == "pybullet":
        env = gym.make(KIND_TO_ID[kind], **kwargs) if wrap else _raw(kind, **kwargs)
    else:
        raise ValueError(f"backend must be 'pybullet' or 'habitat', got {backend!r}")
    if seed is not None:
        env.unwrapped._np_random, _ = gym.utils.seeding.np_random(int(seed))
    return env


def _raw(kind, **kwargs):
    if kind == "nav":
        from .camera_nav import CameraNavEnv as cls
    elif kind == "manip":
        from .gripper_manip import GripperManipEnv as cls
    else:
        from .hand_manip import HandManipEnv as cls
    return cls(**kwargs)


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
