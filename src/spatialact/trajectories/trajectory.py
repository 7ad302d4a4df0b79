"""The one ``Trajectory`` value every reader returns, and the checks every reader runs.

A trajectory is N frames of one moving body (a camera, an end effector, a wrist):

* ``poses`` (N, 4, 4) float64 camera-to-world (C2W) poses, metres, world +Z up where the source says which way is
  up, body axes OpenCV's (+X right, +Y down, +Z forward) or, for EgoDex wrists, the hand frame of docs/conventions.md;
* ``timestamps`` (N,) float64 seconds, strictly increasing; ``fps`` frames per second;
* ``gripper`` (N,) int8 (0 open, 1 closed / gripping) or None;
* ``intrinsics`` (3, 3) pinhole K in pixels (or normalised by image size, see ``meta["intrinsics_normalized"]``)
  or None;
* ``images`` one :class:`FrameRef` per frame (a video file and a time in it, or an image file) or None;
* ``camera_poses`` (N, 4, 4) C2W poses of the camera that observes the body (DROID's exterior camera, EgoDex's
  head camera) in the same world, or None;
* ``confidence`` (N,) float64 tracking confidence or None;
* ``instruction`` the task description, ``meta`` a JSON-able dict (``source``, ``path``, ``metric``, ...).

Readers fail with :class:`TrajectoryError`, one line naming the file, the field and the frame index. The checks
every reader shares live here: :func:`as_numbers` (a rectangular array of real numbers, not text, null or bool),
:func:`check_poses`, :func:`check_timestamps`, :func:`check_fps` (0 < fps ≤ :data:`MAX_FPS`) and
:func:`check_intrinsics`. A field that names the whole file rather than one key is written ``(file)``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import geometry
from ..jsonline import TooDeep, check_depth
from .errors import check_regular, describe_value, fail
from .video import read_frames

__all__ = ["Trajectory", "FrameRef", "check_poses", "check_timestamps", "check_fps",
           "check_intrinsics", "as_numbers", "read_json_file", "read_text_file",
           "project_rotations", "ORTHO_TOL", "MAX_FPS", "MAX_COORDINATE"]

# Largest accepted max|RᵀR − I| + |det R − 1|. float32 storage gives ~1e-7; anything near 1e-3 is a broken file.
ORTHO_TOL = 1e-3
# Highest accepted frame rate: far above any camera or tracker; a larger number is a period, or microseconds.
MAX_FPS = 10_000.0
# Largest accepted |coordinate| of a position, metres (or the file's unit): 10⁶ km. Beyond it, squared distances
# overflow float64 downstream; no trajectory a reader supports comes near.
MAX_COORDINATE = 1e9


_DTYPE_WORDS = {"U": "text", "S": "bytes", "O": "null, text or rows of unequal length", "b": "booleans",
                "c": "complex numbers", "V": "records", "M": "dates", "m": "time spans"}


def _first_bad_row(value) -> tuple[int, str] | None:
    """The first frame (index along the first axis) of nested lists that is not numbers of frame 0's shape."""
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) == 0:
        return None
    shape = None
    for i, row in enumerate(value):
        try:
            r = np.asarray(row)
        except (ValueError, TypeError, OverflowError):
            return i, "rows of unequal length"
        if r.dtype.kind not in "iuf":
            return i, (f"expected numbers, got {describe_value(r.item())}" if r.ndim == 0 else
                       f"expected numbers, got {_DTYPE_WORDS.get(r.dtype.kind, str(r.dtype))}")
        if shape is None:
            shape = r.shape
        elif r.shape != shape:
            return i, f"shape {r.shape} differs from frame 0's {shape}"
    return None


def as_numbers(value, path, field_name: str, *, allow_bool: bool = False, framed: bool = True) -> np.ndarray:
    """``value`` as a float64 array of real numbers, refusing text, null, booleans (unless ``allow_bool``) and
    ragged nested lists with one line naming the field and, where the value has frames (a first axis), the first
    bad frame (``framed=False``: the first axis is not frames, e.g. the rows of a matrix). Text is never parsed as
    numbers."""
    try:
        a = np.asarray(value)
    except (ValueError, TypeError, OverflowError):  # ragged nested lists (NumPy ≥ 1.24), unconvertible objects
        a = None
    if a is not None and (a.dtype.kind in "iuf" or (allow_bool and a.dtype.kind == "b")):
        return a.astype(np.float64)
    if a is not None and a.ndim == 0:
        raise fail(path, field_name, f"expected numbers, got {describe_value(a.item())}")
    if a is None or a.dtype.kind in "OUS":
        bad = _first_bad_row(value)
        if bad is not None:
            if framed:
                raise fail(path, field_name, bad[1], bad[0])
            raise fail(path, field_name, f"row {bad[0]}: {bad[1]}")
    kind = a.dtype.kind if a is not None else "O"
    raise fail(path, field_name, f"expected numbers, got {_DTYPE_WORDS.get(kind, kind)}"
               + (f" (shape {a.shape})" if a is not None else ""))


def check_fps(value, path, field_name: str = "fps") -> float:
    """A frame rate: one finite number with 0 < fps ≤ :data:`MAX_FPS` (a one-element list or array is accepted)."""
    v = value
    if isinstance(v, np.ndarray):
        if v.size != 1:
            raise fail(path, field_name, f"expected one number, got an array of shape {v.shape}")
        v = v.reshape(-1)[0]
    elif isinstance(v, (list, tuple)):
        if len(v) != 1:
            raise fail(path, field_name, f"expected one number, got {describe_value(v)}")
        v = v[0]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise fail(path, field_name, f"expected a number of frames per second, got {describe_value(v)}")
    try:
        f = float(v)
    except OverflowError:  # an integer with hundreds of digits
        f = math.inf
    if not (math.isfinite(f) and f > 0):
        raise fail(path, field_name, f"must be a positive number of frames per second, got {f:g}")
    if f > MAX_FPS:
        raise fail(path, field_name, f"{f:g} frames per second is above {MAX_FPS:g} (a period, or microseconds?)")
    return f


def check_intrinsics(K, path, field_name: str = "intrinsics") -> np.ndarray:
    """A pinhole K (3, 3) float64: finite, positive focal lengths K[0, 0] and K[1, 1]."""
    K = as_numbers(K, path, field_name, framed=False)
    if K.shape != (3, 3):
        raise fail(path, field_name, f"expected a (3, 3) matrix, got shape {K.shape}")
    if not np.isfinite(K).all():
        raise fail(path, field_name, "not finite (NaN or inf)")
    if not (K[0, 0] > 0 and K[1, 1] > 0):
        raise fail(path, field_name, f"focal lengths must be positive, got fx {K[0, 0]:g}, fy {K[1, 1]:g}")
    return K


def read_text_file(path, field_name: str = "(file)") -> str:
    """A UTF-8 text file's contents (a leading BOM dropped); unreadable or not UTF-8 fails in one line, and so does
    anything but a regular file (a FIFO, a device, a folder: :func:`~.errors.check_regular`), unopened."""
    check_regular(path, field_name)
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise fail(path, field_name, f"cannot read ({e.strerror or e})") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise fail(path, field_name, f"not UTF-8 text (byte 0x{raw[e.start]:02x} at offset {e.start})") from None


def read_json_file(path, field_name: str = "(file)"):
    """Parse a JSON file; a file that cannot be read, is not UTF-8, is not JSON or is nested deeper than
    ``jsonline.MAX_JSON_DEPTH`` (measured before decoding) fails in one line naming ``field_name``."""
    text = read_text_file(path, field_name)
    try:
        check_depth(text)
        return json.loads(text)
    except TooDeep as e:
        raise fail(path, field_name, e) from None
    except json.JSONDecodeError as e:
        raise fail(path, field_name, f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:
        raise fail(path, field_name, "not valid JSON (nested too deeply)") from None
    except ValueError as e:  # an integer with more digits than Python converts
        raise fail(path, field_name, f"not valid JSON ({e})") from None


def project_rotations(R: np.ndarray) -> np.ndarray:
    """The nearest proper rotations (SVD) to near-orthonormal (..., 3, 3) matrices, so that float32 noise in a
    file does not leak into geodesic angles downstream."""
    U, _, Vt = np.linalg.svd(R)
    d = np.sign(np.linalg.det(U @ Vt))
    U[..., :, 2] *= d[..., None]
    return U @ Vt


def check_poses(poses, path, field_name: str, *, rows: bool = True) -> np.ndarray:
    """Validate C2W poses (N, 4, 4): shape, finiteness, last row, orthonormal rotations.

    Returns float64 poses with rotations projected onto SO(3) and the last row exactly [0, 0, 0, 1].
    Raises :class:`TrajectoryError` naming the first bad frame.
    """
    P = as_numbers(poses, path, field_name)
    if P.ndim != 3 or P.shape[1:] != (4, 4):
        raise fail(path, field_name, f"expected shape (N, 4, 4), got {P.shape}")
    if len(P) == 0:
        raise fail(path, field_name, "no frames")
    bad = ~np.isfinite(P).all(axis=(1, 2))
    if bad.any():
        raise fail(path, field_name, "not finite (NaN or inf)", int(np.argmax(bad)))
    bad = np.abs(P[:, :3, 3]).max(axis=1) > MAX_COORDINATE
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(path, field_name, f"position ({', '.join(f'{x:.6g}' for x in P[i, :3, 3])}) is beyond "
                                     f"±{MAX_COORDINATE:g}", i)
    if rows:
        bad = np.abs(P[:, 3] - np.array([0.0, 0.0, 0.0, 1.0])).max(axis=1) > 1e-6
        if bad.any():
            raise fail(path, field_name, f"last row must be [0, 0, 0, 1], got {P[int(np.argmax(bad)), 3].tolist()}",
                       int(np.argmax(bad)))
    # A rotation's entries lie in [−1, 1]; larger ones are refused before RᵀR could overflow.
    big = np.abs(P[:, :3, :3]).max(axis=(1, 2)) > 1.0 + ORTHO_TOL
    if big.any():
        i = int(np.argmax(big))
        raise fail(path, field_name, f"rotation is not orthonormal (entry {np.abs(P[i, :3, :3]).max():.3g} > 1)", i)
    err = geometry.orthonormality_error(P[:, :3, :3])
    bad = ~(err <= ORTHO_TOL)
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(path, field_name, f"rotation is not orthonormal (error {err[i]:.3g})", i)
    out = P.copy()
    # Project only what float storage bent, so exact input stays bit-exact (and re-selecting frames is idempotent).
    fix = err > 1e-12
    if fix.any():
        out[fix, :3, :3] = project_rotations(P[fix, :3, :3])
    out[:, 3] = [0.0, 0.0, 0.0, 1.0]
    return out


def check_timestamps(t, n: int, path, field_name: str = "timestamps") -> np.ndarray:
    """Validate (N,) timestamps in seconds: numbers, finite and strictly increasing."""
    t = as_numbers(t, path, field_name)
    if t.ndim == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.shape != (n,):
        raise fail(path, field_name, f"expected shape ({n},), got {t.shape}")
    bad = ~np.isfinite(t)
    if bad.any():
        raise fail(path, field_name, "not finite", int(np.argmax(bad)))
    if n > 1:
        dt = np.diff(t)
        bad = dt <= 0
        if bad.any():
            raise fail(path, field_name, "not strictly increasing", int(np.argmax(bad)) + 1)
    return t


def fps_from_timestamps(t: np.ndarray, default: float) -> float:
    """Frames per second from the median frame interval (robust to dropped frames)."""
    if len(t) < 2:
        return float(default)
    return float(1.0 / np.median(np.diff(t)))


@dataclass(frozen=True)
class FrameRef:
    """Where one frame's image lives: a video file and a time in it (seconds), or an image file (time None)."""

    path: str
    time: float | None = None

    def to_dict(self) -> dict:
        return {"path": self.path, "time": self.time}


def _frozen(a: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return None
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Trajectory:
    """N frames of one moving body; see the module docstring for every field's frame and unit. Immutable."""

    poses: np.ndarray
    timestamps: np.ndarray
    fps: float
    gripper: np.ndarray | None = None
    intrinsics: np.ndarray | None = None
    images: tuple[FrameRef, ...] | None = None
    camera_poses: np.ndarray | None = None
    confidence: np.ndarray | None = None
    instruction: str | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        src = self.meta.get("path", "<trajectory>")
        poses = check_poses(self.poses, src, "poses")
        n = len(poses)
        t = check_timestamps(self.timestamps, n, src)
        fps = check_fps(self.fps, src)
        object.__setattr__(self, "poses", _frozen(poses))
        object.__setattr__(self, "timestamps", _frozen(t))
        object.__setattr__(self, "fps", fps)
        if self.gripper is not None:
            g = as_numbers(self.gripper, src, "gripper", allow_bool=True)
            if g.shape != (n,):
                raise fail(src, "gripper", f"expected shape ({n},), got {g.shape}")
            bad = ~np.isin(g, (0, 1))
            if bad.any():
                raise fail(src, "gripper", f"must be 0 or 1, got {g[int(np.argmax(bad))]:g}", int(np.argmax(bad)))
            object.__setattr__(self, "gripper", _frozen(g.astype(np.int8)))
        if self.intrinsics is not None:
            object.__setattr__(self, "intrinsics", _frozen(check_intrinsics(self.intrinsics, src)))
        if self.images is not None:
            imgs = tuple(self.images)
            if len(imgs) != n:
                raise fail(src, "images", f"expected {n} frame references, got {len(imgs)}")
            object.__setattr__(self, "images", imgs)
        if self.camera_poses is not None:
            C = check_poses(self.camera_poses, src, "camera_poses")
            if len(C) != n:
                raise fail(src, "camera_poses", f"expected {n} poses, got {len(C)}")
            object.__setattr__(self, "camera_poses", _frozen(C))
        if self.confidence is not None:
            c = as_numbers(self.confidence, src, "confidence").reshape(-1)
            if c.shape != (n,):
                raise fail(src, "confidence", f"expected shape ({n},), got {c.shape}")
            bad = ~np.isfinite(c)
            if bad.any():
                raise fail(src, "confidence", "not finite", int(np.argmax(bad)))
            object.__setattr__(self, "confidence", _frozen(c))
        object.__setattr__(self, "meta", dict(self.meta))

    # ----- views ----------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.poses)

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) positions in metres (world frame)."""
        return self.poses[:, :3, 3]

    @property
    def duration(self) -> float:
        return float(self.timestamps[-1] - self.timestamps[0])

    @property
    def metric(self) -> bool:
        """False when the source's scale is unknown (RealEstate10K)."""
        return bool(self.meta.get("metric", True))

    @property
    def has_frames(self) -> bool:
        """True when every frame has an image reference whose file exists."""
        import os

        return self.images is not None and all(os.path.exists(r.path) for r in {r.path: r for r in
                                                                                    self.images}.values())

    def select(self, indices: Sequence[int] | slice) -> "Trajectory":
        """The frames at ``indices`` (any order; timestamps are re-based so they stay increasing)."""
        idx = np.arange(len(self))[indices] if isinstance(indices, slice) else np.asarray(indices, dtype=np.int64)
        if idx.ndim != 1 or len(idx) == 0:
            raise ValueError("select needs a non-empty 1-D list of frame indices")
        t = self.timestamps[idx]
        if len(idx) > 1 and not np.all(np.diff(t) > 0):
            # Reversed or shuffled order (an example sequence played backwards): time runs on at the source rate.
            t = t[0] + np.arange(len(idx)) / self.fps
        # Rows of checked arrays are checked: the subset is built without validating again (task building
        # selects two sub-trajectories per task; validating each was a quarter of its time).
        return self._checked_copy(
            poses=self.poses[idx], timestamps=t,
            gripper=None if self.gripper is None else self.gripper[idx],
            images=None if self.images is None else tuple(self.images[i] for i in idx),
            camera_poses=None if self.camera_poses is None else self.camera_poses[idx],
            confidence=None if self.confidence is None else self.confidence[idx],
            meta=dict(self.meta, frames=[int(idx[0]), int(idx[-1])]),
        )

    def without_gripper(self) -> "Trajectory":
        """The same frames with no gripper states (a navigation task's view of a robot or hand recording)."""
        return self if self.gripper is None else self._checked_copy(gripper=None)

    def _checked_copy(self, **changes) -> "Trajectory":
        """A copy with ``changes``: arrays taken from this (validated) trajectory, so not validated again.
        Fields keep the invariants ``__post_init__`` establishes (frozen float64 poses, int8 gripper, ...)."""
        new = object.__new__(Trajectory)
        for f in fields(self):
            v = changes.get(f.name, getattr(self, f.name))
            if isinstance(v, np.ndarray) and v.flags.writeable:
                v.setflags(write=False)  # a fresh array (a fancy-indexed subset): frozen in place
            object.__setattr__(new, f.name, v)
        return new

    def __getitem__(self, k) -> "Trajectory":
        if isinstance(k, (int, np.integer)):
            k = [int(k)]
        return self.select(k)

    def frame(self, i: int) -> np.ndarray | None:
        """The RGB image (H, W, 3) uint8 of frame ``i``, decoded with PyAV or read with Pillow; None if none."""
        out = self.frames([i])
        return None if out is None else out[0]

    def frames(self, indices: Sequence[int]) -> list[np.ndarray] | None:
        """RGB images of several frames (decoding each video once); None when the trajectory has no images."""
        if self.images is None:
            return None
        indices = [int(i) for i in indices]
        return read_frames([self.images[i] for i in indices], frames=indices)

    def describe(self) -> dict[str, Any]:
        """A JSON-able summary: frames, duration, path length, what is present."""
        steps = np.linalg.norm(np.diff(self.positions, axis=0), axis=1) if len(self) > 1 else np.zeros(0)
        return {
            "frames": len(self), "fps": self.fps, "duration_s": self.duration,
            "path_length_m": float(steps.sum()), "gripper": self.gripper is not None,
            "intrinsics": self.intrinsics is not None, "images": self.images is not None,
            "camera_poses": self.camera_poses is not None, "instruction": self.instruction,
            "meta": self.meta,
        }

    def __repr__(self) -> str:
        return (f"Trajectory({len(self)} frames, {self.fps:g} fps, source={self.meta.get('source')!r}, "
                f"gripper={'yes' if self.gripper is not None else 'no'}, "
                f"images={'yes' if self.images is not None else 'no'})")
