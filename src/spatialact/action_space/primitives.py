"""The primitive table (docs/conventions.md, "Action space"): every action name, symbol and alias the parser
accepts, in one place.

Motions are written as 6-vectors in the body frame (the camera / end-effector frame, OpenCV axes:
+X right, +Y down, +Z forward), in this order::

    AXES = (truck, pedestal, dolly, tilt, pan, roll) = (tx, ty, tz, rx, ry, rz)

metres for the first three, radians for the last three. A primitive moves one axis by ±1 unit.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "AXES",
    "Primitive",
    "PrimitiveSpec",
    "MOTION_PRIMITIVES",
    "PRIMITIVE_TABLE",
    "lookup_primitive",
    "normalise_name",
]

AXES = ("truck", "pedestal", "dolly", "tilt", "pan", "roll")
N_MOTION = 12


class Primitive(str, Enum):
    """Every primitive of the action space; the value is its canonical name (as the paper writes it)."""

    DOLLY_IN = "Dolly In"
    DOLLY_OUT = "Dolly Out"
    TRUCK_RIGHT = "Truck Right"
    TRUCK_LEFT = "Truck Left"
    PEDESTAL_DOWN = "Pedestal Down"
    PEDESTAL_UP = "Pedestal Up"
    PAN_RIGHT = "Pan Right"
    PAN_LEFT = "Pan Left"
    TILT_UP = "Tilt Up"
    TILT_DOWN = "Tilt Down"
    ROLL_CCW = "Roll CCW"
    ROLL_CW = "Roll CW"
    STAY = "Stay"
    PUSH = "Push"
    PULL = "Pull"
    GRAB = "Grab"
    RELEASE = "Release"

    def __str__(self) -> str:  # "Dolly In", not "Primitive.DOLLY_IN", in messages and JSON
        return self.value

    @property
    def spec(self) -> "PrimitiveSpec":
        return PRIMITIVE_TABLE[self]

    @property
    def symbol(self) -> str:
        return PRIMITIVE_TABLE[self].symbol


@dataclass(frozen=True)
class PrimitiveSpec:
    """One row of the table.

    ``axis`` indexes :data:`AXES` (None for Stay and the gripper gestures); ``sign`` is the direction along it.
    ``motion_as`` names the motion primitive a gesture stands for (Push = Dolly In of the hand);
    ``gripper`` is the state a gesture sets (Grab = 1, Release = 0).
    """

    primitive: Primitive
    symbol: str
    aliases: tuple[str, ...]
    axis: int | None = None
    sign: int = 0
    motion_as: Primitive | None = None
    gripper: int | None = None
    description: str = ""


_P = Primitive
_ROWS = (
    PrimitiveSpec(_P.DOLLY_IN, "W", ("dolly_in", "forward", "move forward"), 2, +1, description="move forward (+Z)"),
    PrimitiveSpec(_P.DOLLY_OUT, "S", ("dolly_out", "back", "backward", "move backward"), 2, -1,
                  description="move backward (−Z)"),
    PrimitiveSpec(_P.TRUCK_RIGHT, "D", ("truck_right", "right", "move right"), 0, +1, description="move right (+X)"),
    PrimitiveSpec(_P.TRUCK_LEFT, "A", ("truck_left", "left", "move left"), 0, -1, description="move left (−X)"),
    PrimitiveSpec(_P.PEDESTAL_DOWN, "shift", ("pedestal_down", "Q", "down", "move down"), 1, +1,
                  description="move down (+Y)"),
    PrimitiveSpec(_P.PEDESTAL_UP, "space", ("pedestal_up", "E", "up", "move up"), 1, -1, description="move up (−Y)"),
    PrimitiveSpec(_P.PAN_RIGHT, "→", ("pan_right", "right_arrow", "turn right", "arrow right"), 4, +1,
                  description="positive rotation about +Y"),
    PrimitiveSpec(_P.PAN_LEFT, "←", ("pan_left", "left_arrow", "turn left", "arrow left"), 4, -1,
                  description="negative rotation about +Y"),
    PrimitiveSpec(_P.TILT_UP, "↑", ("tilt_up", "up_arrow", "look up", "arrow up"), 3, +1,
                  description="positive rotation about +X"),
    PrimitiveSpec(_P.TILT_DOWN, "↓", ("tilt_down", "down_arrow", "look down", "arrow down"), 3, -1,
                  description="negative rotation about +X"),
    PrimitiveSpec(_P.ROLL_CCW, "↺", ("roll_ccw", "counterclockwise", "counter-clockwise", "anticlockwise",
                                     "roll counterclockwise"), 5, +1,
                  description="positive rotation about +Z: the image turns counter-clockwise, the right side dips"),
    PrimitiveSpec(_P.ROLL_CW, "↻", ("roll_cw", "clockwise", "roll clockwise"), 5, -1,
                  description="negative rotation about +Z: the image turns clockwise, the left side dips"),
    PrimitiveSpec(_P.STAY, "STOP", ("stay", "none", "stop", "done", "no movement"), description="no movement"),
    PrimitiveSpec(_P.PUSH, "push", (), 2, +1, motion_as=_P.DOLLY_IN, description="push: Dolly In of the hand"),
    PrimitiveSpec(_P.PULL, "pull", (), 2, -1, motion_as=_P.DOLLY_OUT, description="pull: Dolly Out of the hand"),
    PrimitiveSpec(_P.GRAB, "grab", ("grasp", "close"), gripper=1, description="close the gripper / hand"),
    PrimitiveSpec(_P.RELEASE, "release", ("open", "let go"), gripper=0, description="open the gripper / hand"),
)

PRIMITIVE_TABLE: dict[Primitive, PrimitiveSpec] = {row.primitive: row for row in _ROWS}

# The twelve primitives that move one axis, in the column order of a Step's counts:
# (axis 0 +, axis 0 −, axis 1 +, ...), so counts[2*axis] is the positive and counts[2*axis+1] the negative one.
MOTION_PRIMITIVES: tuple[Primitive, ...] = tuple(
    next(r.primitive for r in _ROWS if r.axis == axis and r.sign == sign and r.motion_as is None)
    for axis in range(6)
    for sign in (+1, -1)
)
assert len(MOTION_PRIMITIVES) == N_MOTION


def normalise_name(name: str) -> str:
    """NFKC-normalised (full-width "Ｗ" is "W"), case-folded, without spaces, underscores or hyphens: how names
    and symbols are matched."""
    return re.sub(r"[\s_\-]+", "", unicodedata.normalize("NFKC", name)).casefold()


def _build_lookup() -> dict[str, Primitive]:
    lookup: dict[str, Primitive] = {}
    for row in _ROWS:
        for key in (row.primitive.value, row.primitive.name, row.symbol, *row.aliases):
            k = normalise_name(key)
            if k in lookup and lookup[k] is not row.primitive:
                raise AssertionError(f"alias {key!r} names both {lookup[k]} and {row.primitive}")
            lookup[k] = row.primitive
    return lookup


_LOOKUP = _build_lookup()


def lookup_primitive(name: str) -> Primitive | None:
    """The primitive a name, symbol or alias stands for (case and ``_``/space insensitive), or None."""
    if not isinstance(name, str):
        return None
    return _LOOKUP.get(normalise_name(name))
