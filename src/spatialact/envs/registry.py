"""The environments' ids, their Gymnasium registration and :func:`make_env` (importing this module registers them).

* ``spatialact/CameraNav-v0`` — :class:`~spatialact.envs.camera_nav.CameraNavEnv` (kind ``nav``);
* ``spatialact/GripperManip-v0`` — :class:`~spatialact.envs.gripper_manip.GripperManipEnv` (kind ``manip``);
* ``spatialact/HandManip-v0`` — :class:`~spatialact.envs.hand_manip.HandManipEnv` (kind ``hand``).

Registration names the classes by entry point (``module:Class``), so nothing here imports an environment until one
is made.
"""

from __future__ import annotations

import gymnasium as gym

__all__ = ["make_env", "env_class", "KIND_TO_ID", "ENV_IDS", "ENTRY_POINTS"]

KIND_TO_ID = {"nav": "spatialact/CameraNav-v0", "manip": "spatialact/GripperManip-v0",
              "hand": "spatialact/HandManip-v0"}
ENV_IDS = tuple(KIND_TO_ID.values())
#: kind -> the environment class's entry point (``module:Class``)
ENTRY_POINTS = {"nav": "spatialact.envs.camera_nav:CameraNavEnv",
                "manip": "spatialact.envs.gripper_manip:GripperManipEnv",
                "hand": "spatialact.envs.hand_manip:HandManipEnv"}

for _kind, _id in KIND_TO_ID.items():
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=ENTRY_POINTS[_kind])


def env_class(kind: str):
    """The environment class of a task kind (``nav``, ``manip``, ``hand``), imported on first use."""
    if kind == "nav":
        from .camera_nav import CameraNavEnv

        return CameraNavEnv
    if kind == "manip":
        from .gripper_manip import GripperManipEnv

        return GripperManipEnv
    if kind == "hand":
        from .hand_manip import HandManipEnv

        return HandManipEnv
    raise ValueError(f"kind must be one of {tuple(KIND_TO_ID)}, got {kind!r}")


def make_env(kind: str, *, task=None, action_mode: str = "step", renderer: str = "tiny", width: int | None = None,
             height: int = 128, seed: int | None = None, backend: str = "pybullet", wrap: bool = True, **kw):
    """An environment for a task kind (``nav``, ``manip``, ``hand``).

    ``backend="pybullet"`` (default) or ``"habitat"`` (CameraNav only; needs habitat-sim). ``seed`` seeds the first
    reset (the env is not reset here). ``width`` defaults to 128, or for a task with a replay scene to ``height``
    times the recorded aspect ratio. Other keywords go to the environment (``render_mode``, ``max_steps``,
    ``terminate_on_success``, ``depth``, ``scene``, ``fov_deg``, ``sizes``, ``cap``, ``observation`` (``sim``,
    ``recorded``, ``both``: replayed tasks), ...) or, when the environment does not take them, to its world
    (``min_overlap`` for CameraNav, ``wrist_camera`` for the tabletop environments).
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
        env = gym.make(KIND_TO_ID[kind], **kwargs) if wrap else env_class(kind)(**kwargs)
    else:
        raise ValueError(f"backend must be 'pybullet' or 'habitat', got {backend!r}")
    if seed is not None:
        env.unwrapped.np_random = gym.utils.seeding.np_random(int(seed))[0]
    return env
