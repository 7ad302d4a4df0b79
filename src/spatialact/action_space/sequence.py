"""Unit step sizes, ``Step`` and ``ActionSequence``: immutable values that turn words into rigid motions.

A step is either integer counts per primitive (the paper's key presses) or a continuous motion (the vector
answer format), plus a gripper state. Its rigid motion, in the body frame of the pose it starts from
(OpenCV axes, metres and radians), is ``Δ = [R_y(pan) R_x(tilt) R_z(roll) | t]``: translate, then rotate.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from .. import geometry
from .primitives import MOTION_PRIMITIVES, N_MOTION, Primitive, lookup_primitive

__all__ = ["StepSizes", "Step", "ActionSequence", "DEFAULT_CAP", "mirror", "MIRROR", "install_json_reader"]

DEFAULT_CAP = 10

# Conjugation by M = diag(−1, 1, 1, 1) mirrors left and right (FlipEval).
MIRROR = np.diag([-1.0, 1.0, 1.0, 1.0])
# Its effect on a motion vector (tx, ty, tz, tilt, pan, roll): truck, pan and roll change sign.
_MIRROR_SIGNS = np.array([-1.0, 1.0, 1.0, 1.0, -1.0, -1.0])
# ...and on the count columns: swap the + and − primitive of the truck, pan and roll axes.
_MIRROR_COLUMNS = np.arange(N_MOTION).reshape(6, 2)
_MIRROR_COLUMNS[[0, 4, 5]] = _MIRROR_COLUMNS[[0, 4, 5], ::-1]
_MIRROR_COLUMNS = _MIRROR_COLUMNS.reshape(-1)

# Reading an answer into a sequence is the job of action_space.parsing, the module above this one (it builds steps
# and sequences from text). It installs its strict reader here when the package is imported, so that
# ActionSequence.from_json works while this module never imports the parser.
_json_reader: Callable | None = None


def install_json_reader(reader: Callable) -> None:
    """Set what :meth:`ActionSequence.from_json` delegates to: ``reader(obj, sizes, cap) -> ActionSequence``,
    strict (raising ``ParseError``); called once by :mod:`spatialact.action_space.parsing`."""
    global _json_reader
    _json_reader = reader


@dataclass(frozen=True)
class StepSizes:
    """The magnitude of one unit step: ``translation`` in metres, ``rotation`` in radians."""

    translation: float = 0.0626
    rotation: float = 0.0725

    def __post_init__(self) -> None:
        for name in ("translation", "rotation"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"StepSizes.{name} must be a positive finite number, got {v!r}")
        object.__setattr__(self, "translation", float(self.translation))
        object.__setattr__(self, "rotation", float(self.rotation))

    @classmethod
    def navigation(cls) -> "StepSizes":
        """The paper's navigation example: 0.0626 m and 0.0725 rad per step."""
        return cls(0.0626, 0.0725)

    @classmethod
    def manipulation(cls) -> "StepSizes":
        """Manipulation and hand tasks: 0.02 m and 5° (0.0873 rad) per step."""
        return cls(0.02, math.radians(5.0))

    @classmethod
    def for_kind(cls, kind: str) -> "StepSizes":
        """Default sizes for a task kind: ``nav`` → navigation, ``manip`` / ``hand`` → manipulation."""
        if kind == "nav":
            return cls.navigation()
        if kind in ("manip", "hand"):
            return cls.manipulation()
        raise ValueError(f"unknown task kind {kind!r} (expected nav, manip or hand)")

    def units(self) -> np.ndarray:
        """The unit of each motion axis (truck, pedestal, dolly, tilt, pan, roll) as a (6,) array."""
        t, r = self.translation, self.rotation
        return np.array([t, t, t, r, r, r])

    def to_dict(self) -> dict:
        return {"translation": self.translation, "rotation": self.rotation}

    @classmethod
    def from_dict(cls, d: Mapping) -> "StepSizes":
        return cls(float(d["translation"]), float(d["rotation"]))


def _as_int(x, what: str) -> int:
    # int(2.7) would silently be 2: a count must be a whole number (2.0 and numpy integers are fine).
    try:
        i = int(x)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be integers, got {x!r}") from None
    if i != x:
        raise ValueError(f"{what} must be integers, got {x!r}")
    return i


def _check_gripper(g) -> int | None:
    if g is None:
        return None
    if isinstance(g, (bool, np.bool_)) or g not in (0, 1):
        raise ValueError(f"gripper must be None, 0 (open) or 1 (closed), got {g!r}")
    return int(g)


@dataclass(frozen=True)
class Step:
    """One step of an action sequence (immutable).

    Exactly one of ``counts`` and ``motion`` is set:

    * ``counts``: 12 non-negative integers, one per motion primitive in :data:`MOTION_PRIMITIVES` order
      (opposite primitives may both be present; the rigid motion uses their difference);
    * ``motion``: a continuous body-frame motion ``(tx, ty, tz, tilt, pan, roll)`` in metres and radians.

    ``gripper`` is None (not stated), 0 (open) or 1 (closed). Build steps with the ``from_*`` constructors.
    """

    counts: tuple[int, ...] | None = None
    motion: tuple[float, ...] | None = None
    gripper: int | None = None

    def __post_init__(self) -> None:
        if (self.counts is None) == (self.motion is None):
            raise ValueError("a Step has either counts or a motion, not both and not neither")
        if self.counts is not None:
            c = self.counts
            # the common case (a tuple of plain non-negative ints, as the parser and the task loader give) is checked
            # in C; anything else (numpy integers, integral floats, bools) goes through _as_int
            if not (type(c) is tuple and len(c) == N_MOTION and all(type(x) is int for x in c)):
                c = tuple(_as_int(x, "Step.counts") for x in c)
            if len(c) != N_MOTION or min(c, default=-1) < 0:
                raise ValueError(f"Step.counts must be {N_MOTION} non-negative integers, got {self.counts!r}")
            object.__setattr__(self, "counts", c)
        else:
            m = tuple(float(x) for x in self.motion)
            if len(m) != 6 or not all(math.isfinite(x) for x in m):
                raise ValueError(f"Step.motion must be 6 finite numbers, got {self.motion!r}")
            object.__setattr__(self, "motion", m)
        object.__setattr__(self, "gripper", _check_gripper(self.gripper))

    # ----- constructors -------------------------------------------------------------------------------
    @classmethod
    def stay(cls, gripper: int | None = None) -> "Step":
        """A step that does not move (the gripper may still change)."""
        return cls(counts=(0,) * N_MOTION, gripper=gripper)

    @classmethod
    def from_counts(cls, counts: Mapping[Primitive | str, int] | Sequence[int] | None = None,
                    gripper: int | None = None) -> "Step":
        """From a mapping ``{primitive or name: count}`` or a sequence of 12 counts in MOTION_PRIMITIVES order.

        Push / Pull count as Dolly In / Out; Stay contributes nothing.
        """
        if counts is None:
            return cls.stay(gripper)
        if isinstance(counts, Mapping):
            c = [0] * N_MOTION
            for key, n in counts.items():
                p = key if isinstance(key, Primitive) else lookup_primitive(key)
                if p is None:
                    raise ValueError(f"unknown primitive {key!r}")
                spec = p.spec
                if spec.motion_as is not None:
                    p = spec.motion_as
                if p not in MOTION_PRIMITIVES:
                    if p is Primitive.STAY:
                        continue
                    raise ValueError(f"{p} is a gripper gesture, not a motion; pass gripper= instead")
                c[MOTION_PRIMITIVES.index(p)] += _as_int(n, "Step.from_counts counts")
            return cls(counts=tuple(c), gripper=gripper)
        return cls(counts=tuple(counts), gripper=gripper)

    @classmethod
    def from_signed(cls, signed: Sequence[int], gripper: int | None = None) -> "Step":
        """From 6 signed counts (truck, pedestal, dolly, tilt, pan, roll): +3 truck = Truck Right ×3."""
        s = list(signed)
        if not all(type(x) is int for x in s):  # plain ints (what extraction gives) need no conversion
            s = [_as_int(x, "signed counts") for x in s]
        if len(s) != 6:
            raise ValueError(f"expected 6 signed counts, got {len(s)}")
        c = [0] * N_MOTION
        for axis, n in enumerate(s):
            c[2 * axis + (0 if n >= 0 else 1)] = abs(n)
        return cls(counts=tuple(c), gripper=gripper)

    @classmethod
    def from_motion(cls, motion: Sequence[float], gripper: int | None = None) -> "Step":
        """From a continuous motion ``(tx, ty, tz, tilt, pan, roll)`` (metres, radians, body frame)."""
        return cls(motion=tuple(motion), gripper=gripper)

    @classmethod
    def from_vector(cls, vector: Sequence[float]) -> "Step":
        """From the vector answer format ``[dx, dy, dz, d_roll, d_pitch, d_yaw(, gripper)]``.

        roll is about +Z, pitch about +X, yaw about +Y (metres, radians); a 7th element is the gripper (0/1).
        """
        v = [float(x) for x in vector]
        if len(v) not in (6, 7):
            raise ValueError(f"a vector step has 6 or 7 components, got {len(v)}")
        dx, dy, dz, roll, pitch, yaw = v[:6]
        g = None if len(v) == 6 else int(v[6])
        return cls(motion=(dx, dy, dz, pitch, yaw, roll), gripper=g)

    # ----- views --------------------------------------------------------------------------------------
    @property
    def is_vector(self) -> bool:
        return self.motion is not None

    def signed_counts(self) -> np.ndarray:
        """Net signed counts per axis (truck, pedestal, dolly, tilt, pan, roll), shape (6,); counts steps only."""
        if self.counts is None:
            raise ValueError("a vector step has no counts")
        c = np.asarray(self.counts).reshape(6, 2)
        return c[:, 0] - c[:, 1]

    def as_motion(self, sizes: StepSizes) -> np.ndarray:
        """The body-frame motion ``(tx, ty, tz, tilt, pan, roll)`` in metres and radians, shape (6,)."""
        if self.motion is not None:
            return np.asarray(self.motion, dtype=np.float64)
        return self.signed_counts() * sizes.units()

    def as_delta(self, sizes: StepSizes) -> np.ndarray:
        """The rigid motion Δ (4, 4) in the frame of the pose the step starts from."""
        return geometry.motion_to_delta(self.as_motion(sizes))

    def as_vector(self, sizes: StepSizes) -> list[float]:
        """The vector answer format ``[dx, dy, dz, d_roll, d_pitch, d_yaw]`` (+ gripper when set)."""
        tx, ty, tz, tilt, pan, roll = (float(x) for x in self.as_motion(sizes))
        v = [tx, ty, tz, roll, tilt, pan]
        return v + ([float(self.gripper)] if self.gripper is not None else [])

    def as_actions(self) -> list[tuple[Primitive, int]]:
        """Non-zero (primitive, count) pairs in table order; counts steps only."""
        if self.counts is None:
            raise ValueError("a vector step has no counts")
        return [(p, n) for p, n in zip(MOTION_PRIMITIVES, self.counts) if n]

    def is_stay(self) -> bool:
        """True when the step does not move (its gripper may change)."""
        if self.counts is not None:
            return not any(self.signed_counts())
        return not any(self.motion)

    def with_gripper(self, gripper: int | None) -> "Step":
        return replace(self, gripper=gripper)

    def mirrored(self) -> "Step":
        """Left and right swapped (Truck, Pan, Roll), see :func:`mirror`."""
        if self.counts is not None:
            return replace(self, counts=tuple(np.asarray(self.counts)[_MIRROR_COLUMNS].tolist()))
        return replace(self, motion=tuple((np.asarray(self.motion) * _MIRROR_SIGNS).tolist()))

    def __repr__(self) -> str:
        g = "" if self.gripper is None else f", gripper={self.gripper}"
        if self.counts is not None:
            acts = ", ".join(f"{p.value}×{n}" for p, n in self.as_actions()) or "Stay"
            return f"Step({acts}{g})"
        return "Step(motion=[" + ", ".join(f"{x:.4g}" for x in self.motion) + f"]{g})"


def _resolve_grippers(steps: Iterable[Step]) -> tuple[Step, ...]:
    # The gripper state persists: a step that does not state it keeps the previous one.
    out, state = [], None
    for s in steps:
        if not isinstance(s, Step):
            raise TypeError(f"ActionSequence steps must be Step objects, got {type(s).__name__}")
        if s.gripper is None and state is not None:
            s = s.with_gripper(state)
        state = s.gripper
        out.append(s)
    return tuple(out)


@dataclass(frozen=True)
class ActionSequence:
    """An ordered list of steps plus the unit step sizes (immutable, like scipy's ``Rotation`` for N rotations).

    Gripper states are resolved on construction: a step that does not state one keeps the previous state
    (None until first set), so ``steps[k].gripper`` is the state during step k.
    """

    steps: tuple[Step, ...] = ()
    sizes: StepSizes = field(default_factory=StepSizes)
    cap: int = DEFAULT_CAP

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", _resolve_grippers(self.steps))
        if not isinstance(self.sizes, StepSizes):
            raise TypeError("ActionSequence.sizes must be a StepSizes")

    # ----- constructors -------------------------------------------------------------------------------
    @classmethod
    def from_motions(cls, motions, sizes: StepSizes | None = None, gripper=None,
                     cap: int = DEFAULT_CAP) -> "ActionSequence":
        """From continuous body-frame motions (K, 6) ``(tx, ty, tz, tilt, pan, roll)``; ``gripper`` (K,) or None."""
        m = np.asarray(motions, dtype=np.float64).reshape(-1, 6)
        g = [None] * len(m) if gripper is None else [None if x is None or x < 0 else int(x) for x in gripper]
        return cls(tuple(Step.from_motion(row, gr) for row, gr in zip(m, g)), sizes or StepSizes(), cap)

    @classmethod
    def from_deltas(cls, deltas, sizes: StepSizes | None = None, gripper=None,
                    cap: int = DEFAULT_CAP) -> "ActionSequence":
        """From body-frame rigid motions Δ (K, 4, 4), as continuous steps."""
        return cls.from_motions(geometry.delta_to_motion(deltas), sizes, gripper, cap)

    @classmethod
    def from_signed_counts(cls, signed, sizes: StepSizes | None = None, gripper=None,
                           cap: int = DEFAULT_CAP) -> "ActionSequence":
        """From signed counts (K, 6) per axis (truck, pedestal, dolly, tilt, pan, roll)."""
        s = np.asarray(signed).reshape(-1, 6)
        if not np.issubdtype(s.dtype, np.integer):
            if not np.all(s == np.round(s)):
                raise ValueError("signed counts must be integers")
            s = s.astype(np.int64)
        g = [None] * len(s) if gripper is None else [None if x is None or x < 0 else int(x) for x in gripper]
        return cls(tuple(Step.from_signed(row, gr) for row, gr in zip(s, g)), sizes or StepSizes(), cap)

    @classmethod
    def from_json(cls, obj, sizes: StepSizes | None = None, cap: int = DEFAULT_CAP) -> "ActionSequence":
        """From a JSON object (or its text) in any answer format, parsed strictly (raises ``ParseError``) by
        :func:`spatialact.action_space.parsing.sequence_from_json`."""
        return _json_reader(obj, sizes, cap)

    # ----- container protocol -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return replace(self, steps=self.steps[k])
        return self.steps[k]

    def __add__(self, other: "ActionSequence") -> "ActionSequence":
        if not isinstance(other, ActionSequence):
            return NotImplemented
        return replace(self, steps=self.steps + other.steps)

    # ----- views --------------------------------------------------------------------------------------
    def as_motions(self) -> np.ndarray:
        """Body-frame motions (K, 6) ``(tx, ty, tz, tilt, pan, roll)``, metres and radians, float64."""
        if not self.steps:
            return np.zeros((0, 6))
        return np.stack([s.as_motion(self.sizes) for s in self.steps])

    def grippers(self) -> np.ndarray:
        """Gripper state per step (K,) int: 0 open, 1 closed, −1 not stated."""
        return np.array([-1 if s.gripper is None else s.gripper for s in self.steps], dtype=np.int64)

    def to_deltas(self) -> np.ndarray:
        """Per-step rigid motions Δ (K, 4, 4), float64, each in the frame of the pose its step starts from."""
        return geometry.motion_to_delta(self.as_motions())

    def to_poses(self, T0=None) -> np.ndarray:
        """The poses reached (K+1, 4, 4): ``poses[0] = T0`` (C2W, identity by default), ``poses[k+1] = poses[k] @ Δ_k``."""
        T0 = np.eye(4) if T0 is None else geometry.as_pose(T0)
        if T0.shape != (4, 4):
            raise ValueError(f"T0 must be a single (4, 4) pose, got {T0.shape}")
        deltas = self.to_deltas()
        poses = np.empty((len(deltas) + 1, 4, 4))
        poses[0] = T0
        for k, d in enumerate(deltas):
            poses[k + 1] = poses[k] @ d
        return poses

    def net_delta(self) -> np.ndarray:
        """All steps composed: the body-frame motion (4, 4) from the first pose to the last."""
        return self.to_poses()[-1]

    @property
    def has_vectors(self) -> bool:
        return any(s.is_vector for s in self.steps)

    def mirrored(self) -> "ActionSequence":
        return replace(self, steps=tuple(s.mirrored() for s in self.steps))

    def with_sizes(self, sizes: StepSizes) -> "ActionSequence":
        return replace(self, sizes=sizes)

    # ----- JSON out -----------------------------------------------------------------------------------
    def to_json(self, format: str = "stepped", names: str = "name") -> dict | list:
        """A JSON-able object in one of the answer formats: ``flat`` (one step), ``stepped`` or ``vector``.

        ``names="name"`` writes "Dolly In", ``names="symbol"`` writes "W". Counts steps only for ``flat`` and
        ``stepped``; any step can be written as ``vector``.
        """
        if names not in ("name", "symbol"):
            raise ValueError(f"names must be 'name' or 'symbol', got {names!r}")
        if format == "vector":
            return {f"step_{k + 1}": s.as_vector(self.sizes) for k, s in enumerate(self.steps)}
        if format not in ("flat", "stepped"):
            raise ValueError(f"unknown answer format {format!r} (expected flat, stepped or vector)")
        if self.has_vectors:
            raise ValueError(f"continuous (vector) steps cannot be written in the {format} format")

        def step_obj(s: Step) -> dict:
            acts = s.as_actions() or [(Primitive.STAY, 1)]
            d = {"actions": [p.value if names == "name" else p.symbol for p, _ in acts],
                 "step_nums": [int(n) for _, n in acts]}
            if s.gripper is not None:
                d["gripper"] = s.gripper
            return d

        if format == "flat":
            if len(self.steps) != 1:
                raise ValueError(f"the flat format holds exactly one step, this sequence has {len(self.steps)}")
            return step_obj(self.steps[0])
        return {f"step_{k + 1}": step_obj(s) for k, s in enumerate(self.steps)}

    def to_text(self, format: str = "stepped", names: str = "name") -> str:
        return json.dumps(self.to_json(format, names), ensure_ascii=False)

    def to_dict(self) -> dict:
        """A lossless JSON-able record: sizes, cap and each step (counts or motion, and gripper)."""
        steps = []
        for s in self.steps:
            d = {"counts": list(s.counts)} if s.counts is not None else {"motion": list(s.motion)}
            d["gripper"] = s.gripper
            steps.append(d)
        return {"sizes": self.sizes.to_dict(), "cap": self.cap, "steps": steps}

    @classmethod
    def from_dict(cls, d: Mapping) -> "ActionSequence":
        """Inverse of :meth:`to_dict`."""
        steps = tuple(Step(counts=tuple(s["counts"]) if s.get("counts") is not None else None,
                           motion=tuple(s["motion"]) if s.get("motion") is not None else None,
                           gripper=s.get("gripper")) for s in d["steps"])
        return cls(steps, StepSizes.from_dict(d["sizes"]), int(d.get("cap", DEFAULT_CAP)))

    def __repr__(self) -> str:
        return (f"ActionSequence({len(self.steps)} steps, sizes=({self.sizes.translation:g} m, "
                f"{self.sizes.rotation:g} rad), [{', '.join(repr(s) for s in self.steps)}])")


def mirror(x):
    """Mirror left and right (FlipEval): conjugation by ``M = diag(−1, 1, 1, 1)``.

    On an ``ActionSequence`` or ``Step`` it swaps Truck Left/Right, Pan Left/Right and Roll CW/CCW and leaves
    the rest; on poses or Δ's (..., 4, 4) it returns ``M @ T @ M``. It is an involution, and
    ``mirror(seq).to_poses(mirror(T0)) == mirror(seq.to_poses(T0))``.
    """
    if isinstance(x, (ActionSequence, Step)):
        return x.mirrored()
    return MIRROR @ geometry.as_pose(x) @ MIRROR

