"""A task's scene, typed (docs/tasks.md, "scene"; docs/architecture.md, "Add a world").

A task file writes its scene as an object (or ``null``): a procedural room ``{"generator": "room", "seed", ...}``,
a tabletop ``{"generator": "tabletop", ...}``, a mesh ``{"generator": "mesh", "mesh": path, ...}``, a recording's
replay scene ``{"type": "replay", "trajectory", "keyframes", "source", ...}`` or a game level ``{"type": "game",
"wad", "map", "wad_sha256", "start", ...}``. :func:`parse_scene` reads that object once, when the
:class:`~spatialact.tasks.Task` is made, into one of the frozen types below; ``Task.scene`` is then one of them, or
None for a task without a scene (``scene: null``: scored one-shot only).

Every scene type names the world that runs it by a registry key (:attr:`Scene.world`, a string:
``spatialact.envs.registry.WORLDS`` maps it to the :class:`~spatialact.envs.world.World` class; the tasks layer sits
below the environments and imports none of them). That world owns the scene's pre-run check
(``World.check_task``), so the evaluation asks the world, not the scene's shape.

A scene is also a read-only mapping of exactly its file form (it subclasses ``dict``, every mutating method
refused): the scene builders, JSON writers and ``dict(scene)`` read it as they read the file's object, and
``Scene.to_dict()`` gives back that object key for key and in order, so a task file read and written again does not
change (schema version 2). The typed fields are read from the object without judging it (``int`` seeds, known
generators, existing files are the world's pre-run check and the task validator's business): a field holds what the
file said, or None where the file said nothing.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, fields
from typing import Any, ClassVar

__all__ = ["Scene", "RoomScene", "TabletopScene", "MeshScene", "ReplayScene", "GameScene", "OtherScene",
           "parse_scene", "register_scene_type", "SCENE_TYPES"]


def _copy(v):
    """A deep copy of JSON-shaped data (dicts, lists, scalars; anything else is copied by ``copy.deepcopy``)."""
    if isinstance(v, dict):
        return {k: _copy(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return copy.deepcopy(v)


@functools.cache
def _init_fields(cls) -> tuple:
    return tuple(f.name for f in fields(cls) if f.init)


def _frozen(self, *args, **kwargs):
    raise TypeError(f"a task's scene is frozen ({type(self).__name__}); change a copy: scene.to_dict()")


@dataclass(frozen=True, eq=False, repr=False)
class Scene(dict):
    """Base of the scene types: a frozen dataclass whose fields are read from the scene object, and a read-only
    ``dict`` of that object.

    Class attributes a scene type sets: ``tag`` (``(key, value)``: the object's ``"type"`` or ``"generator"`` value
    that selects the type in :func:`parse_scene`), ``world`` (the registry key of the world that runs it,
    ``spatialact.envs.registry.WORLDS``), ``is_game`` (True for a game level: it runs in the game's environment).
    Equality is the object's (``RoomScene(seed=1) == {"generator": "room", "seed": 1}``)."""

    tag: ClassVar[tuple[str, str] | None] = None
    world: ClassVar[str] = "pybullet"
    is_game: ClassVar[bool] = False

    def __post_init__(self) -> None:
        dict.update(self, self._fields_dict())

    def _fields_dict(self) -> dict:
        """The object of a scene made from its fields: the tag first, then each field that is not None."""
        out = {self.tag[0]: self.tag[1]} if self.tag else {}
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                out[f.name] = _copy(v)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Scene":
        """The scene of a task file's object ``d`` (its keys and their order kept exactly; ``to_dict`` returns
        them)."""
        raw = _copy(dict(d))
        obj = cls(**{name: raw.get(name) for name in _init_fields(cls)})
        dict.clear(obj)
        dict.update(obj, raw)  # the fields and the object share their values (one copy of what was read)
        return obj

    def to_dict(self) -> dict:
        """The scene object of the task file, a new plain dict (deep copy): what ``from_dict`` read."""
        return _copy(dict(self))

    def __reduce__(self):
        return (type(self).from_dict, (self.to_dict(),))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _frozen
    __hash__ = None  # a dict: unhashable


@dataclass(frozen=True, eq=False, repr=False)
class RoomScene(Scene):
    """A procedural room (CameraNav; ``params.layout``, ``params.distractors``, ``params.camera``: docs/tasks.md)."""

    tag: ClassVar = ("generator", "room")
    world: ClassVar[str] = "free_camera"
    seed: Any = None
    params: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class TabletopScene(Scene):
    """A procedural tabletop (GripperManip and HandManip; ``params.objects``, ``params.markers``)."""

    tag: ClassVar = ("generator", "tabletop")
    world: ClassVar[str] = "tabletop"
    seed: Any = None
    params: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class MeshScene(Scene):
    """A scene file (``mesh``: a path; ``params.up``, ``params.margin``), in CameraNav. The object may leave out
    ``"generator"`` when it names a ``mesh``."""

    tag: ClassVar = ("generator", "mesh")
    world: ClassVar[str] = "free_camera"
    mesh: Any = None
    seed: Any = None
    params: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class ReplayScene(Scene):
    """A recording's replay scene (``source``: ``droid`` → GripperManip, ``egodex`` → HandManip, ``camera_path`` →
    CameraNav; ``trajectory`` the recording's path, ``keyframes`` its frame indices; the other keys per source,
    docs/tasks.md). Runs in PyBullet."""

    tag: ClassVar = ("type", "replay")
    world: ClassVar[str] = "pybullet"
    trajectory: Any = None
    keyframes: Any = None
    source: Any = None
    mesh: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class GameScene(Scene):
    """A game level (GameNav, docs/game.md): ``wad`` (a bundled name or a path), ``map``, ``wad_sha256``, ``start``
    (position in map units and yaw in degrees), optionally ``monsters``, and the recording's ``trajectory`` and
    ``keyframes``."""

    tag: ClassVar = ("type", "game")
    world: ClassVar[str] = "game"
    is_game: ClassVar[bool] = True
    wad: Any = None
    map: Any = None
    wad_sha256: Any = None
    start: Any = None
    monsters: Any = None
    trajectory: Any = None
    keyframes: Any = None


@dataclass(frozen=True, eq=False, repr=False)
class OtherScene(Scene):
    """An object none of the types claims (an unknown ``generator`` or ``type``): kept as written, so the PyBullet
    worlds' pre-run check names the field that is wrong, as it did before scenes were typed."""

    world: ClassVar[str] = "pybullet"
    generator: Any = None
    type: Any = None


#: ``(key, value)`` -> scene type: ``("type", "game")``, ``("generator", "room")``, ... (:func:`register_scene_type`)
SCENE_TYPES: dict[tuple[str, str], type[Scene]] = {
    c.tag: c for c in (RoomScene, TabletopScene, MeshScene, ReplayScene, GameScene)}


def register_scene_type(cls: type[Scene]) -> type[Scene]:
    """Make ``parse_scene`` read objects with ``cls.tag`` (e.g. ``("type", "toy")``) as ``cls``; returns ``cls``
    (a decorator). ``cls`` is a frozen dataclass subclassing :class:`Scene` with ``tag`` and ``world`` set."""
    if not (isinstance(cls, type) and issubclass(cls, Scene)) or not cls.tag:
        raise TypeError(f"a scene type subclasses Scene and sets tag = (key, value), got {cls!r}")
    SCENE_TYPES[tuple(cls.tag)] = cls
    return cls


def parse_scene(scene) -> Scene | None:
    """A task's ``scene`` as its type: None stays None, a :class:`Scene` is returned as it is, an object (dict) is
    read by its ``"type"`` (else its ``"generator"``; a mesh path without a generator is a mesh scene) into that
    type, exactly (:meth:`Scene.from_dict`). Anything else (a string, a number) is refused with a ValueError naming
    ``scene``."""
    if scene is None or isinstance(scene, Scene):
        return scene
    if not isinstance(scene, dict):
        raise ValueError(f"scene must be an object like {{'generator': 'room', 'seed': 0}} or null, got "
                         f"{str(scene)[:60]!r}")
    if "type" in scene:
        cls = SCENE_TYPES.get(("type", scene["type"]) if isinstance(scene["type"], str) else None, OtherScene)
    elif isinstance(scene.get("generator"), str):
        cls = SCENE_TYPES.get(("generator", scene["generator"]), OtherScene)
    elif scene.get("generator") is None and scene.get("mesh"):
        cls = MeshScene
    else:
        cls = OtherScene
    return cls.from_dict(scene)
