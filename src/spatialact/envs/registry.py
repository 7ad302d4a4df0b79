"""The environments' ids, their Gymnasium registration and :func:`make_env` (importing this module registers them).

* ``spatialact/CameraNav-v0`` — :class:`~spatialact.envs.camera_nav.CameraNavEnv` (kind ``nav``);
* ``spatialact/GripperManip-v0`` — :class:`~spatialact.envs.gripper_manip.GripperManipEnv` (kind ``manip``);
* ``spatialact/HandManip-v0`` — :class:`~spatialact.envs.hand_manip.HandManipEnv` (kind ``hand``);
* ``spatialact/GameNav-v0`` — :class:`~spatialact.envs.game_nav.GameNavEnv` (kind ``nav`` in a Doom level: game
  tasks, ``source: "game"``, whose scene is ``{"type": "game", ...}``: their world, ``GameWorld``, names it, and
  :func:`make_env` routes them there by :func:`env_id_for`).

Registration names the classes by entry point (``module:Class``), so nothing here imports an environment until one
is made.

:data:`WORLDS` maps the key a task's typed scene names (``task.scene.world``: :mod:`spatialact.tasks.scene`) to the
:class:`~spatialact.envs.world.World` class that runs it, by import path too; :func:`world_class` imports it, and
:func:`register_world` adds one (a new kind of scene: docs/architecture.md, "Add a world").
"""

from __future__ import annotations

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

__all__ = ["make_env", "env_class", "KIND_TO_ID", "ENV_IDS", "ENTRY_POINTS", "GAME_NAV_ID", "GAME_ENTRY_POINT",
           "BACKENDS", "KIND_NAMES", "env_id_for", "WORLDS", "world_class", "register_world"]

KIND_TO_ID = {"nav": "spatialact/CameraNav-v0", "manip": "spatialact/GripperManip-v0",
              "hand": "spatialact/HandManip-v0"}
#: The game's navigation environment (kind ``nav``): game tasks run there.
GAME_NAV_ID = "spatialact/GameNav-v0"
ENV_IDS = tuple(KIND_TO_ID.values()) + (GAME_NAV_ID,)
#: kind -> the environment class's entry point (``module:Class``)
ENTRY_POINTS = {"nav": "spatialact.envs.camera_nav:CameraNavEnv",
                "manip": "spatialact.envs.gripper_manip:GripperManipEnv",
                "hand": "spatialact.envs.hand_manip:HandManipEnv"}
GAME_ENTRY_POINT = "spatialact.envs.game_nav:GameNavEnv"
#: ``make_env(backend=...)``: the PyBullet environments (game tasks go to the game), habitat-sim, the game.
BACKENDS = ("pybullet", "habitat", "game")

for _id, _entry in [(KIND_TO_ID[k], ENTRY_POINTS[k]) for k in KIND_TO_ID] + [(GAME_NAV_ID, GAME_ENTRY_POINT)]:
    if _id not in gym.registry:
        gym.register(id=_id, entry_point=_entry)


#: scene's world key (``Scene.world``) -> the World class, as ``module:Class`` (imported by :func:`world_class`)
WORLDS: dict[str, str] = {
    "pybullet": "spatialact.envs.pybullet_world:PyBulletWorld",  # any PyBullet scene (replay scenes: by source)
    "free_camera": "spatialact.envs.free_camera:FreeCameraWorld",  # procedural rooms, mesh files
    "tabletop": "spatialact.envs.tabletop:TabletopWorld",  # procedural tabletops (Panda or hand)
    "game": "spatialact.envs.game_world:GameWorld",  # game levels
}


def register_world(key: str, world) -> None:
    """Make the scene key ``key`` name ``world``: a :class:`~spatialact.envs.world.World` subclass or its import
    path ``"module:Class"``."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"a world key is a non-empty string, got {key!r}")
    WORLDS[key] = world


def world_class(scene):
    """The World class that runs ``scene`` (a task's typed scene, its key ``scene.world``, or the key itself),
    imported on first use. An unknown key raises a one-line ValueError; a world whose packages are missing raises
    ImportError."""
    key = scene if isinstance(scene, str) else getattr(scene, "world", None)
    target = WORLDS.get(key) if isinstance(key, str) else None
    if target is None:
        raise ValueError(f"scene names the world {key!r}, which is not one of {', '.join(WORLDS)}")
    if not isinstance(target, str):
        return target
    import importlib

    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


#: a task kind's name in messages
KIND_NAMES = {"nav": "navigation", "manip": "manipulation", "hand": "hand"}


def env_id_for(kind: str, scene=None) -> str:
    """The Gymnasium id of the environment that runs tasks of ``kind`` whose scene is ``scene`` (a task's typed
    scene, a scene dict, a world key of :data:`WORLDS`, or None). The world the scene names says it
    (:attr:`World.environment <spatialact.envs.world.World.environment>`, e.g. GameNav for a game level); a world
    that names none (the PyBullet worlds), or no scene, gives the environment of the kind (:data:`KIND_TO_ID`).
    A world with an environment of its own runs its own kind only: another kind is a one-line ValueError."""
    if kind not in KIND_TO_ID:
        raise ValueError(f"kind must be one of {tuple(KIND_TO_ID)}, got {kind!r}")
    if isinstance(scene, dict):
        from ..tasks.scene import parse_scene

        scene = parse_scene(scene)
    if scene is None:
        return KIND_TO_ID[kind]
    world = world_class(scene)
    if world.environment is None:
        return KIND_TO_ID[kind]
    if world.kind != kind:
        key = scene if isinstance(scene, str) else scene.world
        raise ValueError(f"the {key} world runs {KIND_NAMES.get(world.kind, world.kind)} tasks only, not {kind!r}")
    return world.environment


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
             height: int | None = None, seed: int | None = None, backend: str = "pybullet", wrap: bool = True,
             render_quality: str | None = None, collisions: bool = True, **kw):
    """An environment for a task kind (``nav``, ``manip``, ``hand``).

    ``backend="pybullet"`` (default): the environment the task's scene (or a fixed ``scene``) names through its
    world (:func:`env_id_for`: CameraNav, GripperManip or HandManip by kind for the PyBullet worlds, GameNav for a
    game level; a new world with an environment of its own is routed here without a change to this function),
    ``"habitat"`` (CameraNav only; needs habitat-sim) or ``"game"`` (GameNav, a Doom level; ``wad=``, ``map=``,
    ``monsters=`` go to its world). ``seed`` seeds the first reset (the env is not reset here). ``height``
    defaults to 128 (GameNav: 120); ``width`` to 128, or for a task with a replay scene to ``height`` times the
    recorded aspect ratio (GameNav: 4:3). Other keywords go to the environment (``render_mode``, ``max_steps``,
    ``terminate_on_success``, ``depth``, ``scene``, ``fov_deg``, ``sizes``, ``cap``, ``observation`` (``sim``,
    ``recorded``, ``both``: replayed tasks), ...) or, when the environment does not take them, to its world
    (``min_overlap`` for CameraNav, ``wrist_camera`` for the tabletop environments). ``render_quality``:
    ``"default"`` or ``"high"`` (4× multisampling), how the gl renderer draws a PyBullet world (the env keyword
    reaches the world; tiny and egl draw the same either way; the game and habitat draw their own and ignore it);
    None: :func:`~spatialact.envs.rendering.default_render_quality`. ``collisions`` (True): whether walls, floor,
    ceiling and furniture stop CameraNav's camera (a sphere of radius 0.10 m; ``info["blocked"]``) or it moves
    through them (False); it reaches CameraNav in PyBullet only — the tabletop robots, the game and habitat-sim move
    as their simulators decide and ignore it (``gym.make("spatialact/CameraNav-v0", collisions=False)`` works too).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {backend!r}")
    from .rendering import check_render_quality, default_render_quality

    render_quality = check_render_quality(render_quality or default_render_quality())
    kwargs = dict(task=task, action_mode=action_mode, renderer=renderer, width=width, **kw)
    if height is not None:  # else the environment's own default
        kwargs["height"] = height
    if backend == "habitat":
        if kind != "nav":
            raise ValueError(f"the habitat backend runs navigation tasks only, not {kind!r}")
        from .habitat_backend import HabitatCameraNavEnv

        env = HabitatCameraNavEnv(**kwargs)
        if wrap:
            env = gym.wrappers.OrderEnforcing(env)
    else:
        if backend == "game":
            scene = "game"
        else:  # the task's scene, or a fixed one; a fixed scene that is no object names no world (the env refuses it)
            scene = getattr(task, "scene", None) or kw.get("scene")
            scene = scene if isinstance(scene, dict) else None
        env_id = env_id_for(kind, scene)
        if env_id in KIND_TO_ID.values():  # the PyBullet environments' own options
            kwargs["render_quality"] = render_quality
            if kind == "nav":
                kwargs["collisions"] = collisions
        env = gym.make(env_id, **kwargs) if wrap else load_env_creator(gym.spec(env_id).entry_point)(**kwargs)
    if seed is not None:
        env.unwrapped.np_random = gym.utils.seeding.np_random(int(seed))[0]
    return env
