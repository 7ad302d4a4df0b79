"""The one ``Trajectory`` value every reader returns, and the checks every reader runs.

A trajectory is N frames of one moving body (a camera, an end effector, a wrist):

* ``poses`` (N, 4, 4) float64 camera-to-world (C2W) poses, metres, world +Z up where the source says which way is
  up, body axes OpenCV's (+X right, +Y down, +Z forward) or, for EgoDex wrists, the hand frame of SPEC §2;
* ``timestamps`` (N,) float64 seconds, strictly increasing; ``fps`` frames per second;
* ``gripper`` (N,) int8 (0 open, 1 closed / gripping) or None;
* ``intrinsics`` (3, 3) pinhole K in pixels (or normalised by image size, see ``meta["intrinsics_normalized"]``)
  or None;
* ``images`` one :class:`FrameRef` per frame (a video file and a time in it, or an image file) or None;
* ``camera_poses`` (N, 4, 4) C2W poses of the camera that observes the body (DROID's exterior camera, EgoDex's
  head camera) in the same world, or None;
* ``confidence`` (N,) float64 tracking confidence or None;
* ``instruction`` the task description, ``meta`` a JSON-able dict (``source``, ``path``, ``metric``, ...).

Readers fail with :class:`TrajectoryError`, one line naming the file, the field and the frame index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from .. import geometry

__all__ = ["Trajectory", "TrajectoryError", "FrameRef", "check_poses", "check_timestamps", "project_rotations",
           "ORTHO_TOL"]

# Largest accepted max|RᵀR − I| + |det R − 1|. float32 storage gives ~1e-7; anything near 1e-3 is a broken file.
ORTHO_TOL = 1e-3


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read; the message is one line: file, field, frame index, problem."""


def _where(path, field_name: str, frame: int | None = None) -> str:
    at = f", frame {frame}" if frame is not None else ""
    return f"{path}: field '{field_name}'{at}"


def fail(path, field_name: str, problem: str, frame: int | None = None) -> TrajectoryError:
    """Build the one-line error every reader raises."""
    return TrajectoryError(f"{_where(path, field_name, frame)}: {problem}")


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
    P = np.asarray(poses)
    if P.ndim != 3 or P.shape[1:] != (4, 4):
        raise fail(path, field_name, f"expected shape (N, 4, 4), got {P.shape}")
    if len(P) == 0:
        raise fail(path, field_name, "no frames")
    if not np.issubdtype(P.dtype, np.number):
        raise fail(path, field_name, f"expected numbers, got dtype {P.dtype}")
    P = P.astype(np.float64)
    bad = ~np.isfinite(P).all(axis=(1, 2))
    if bad.any():
        raise fail(path, field_name, "not finite (NaN or inf)", int(np.argmax(bad)))
    if rows:
        bad = np.abs(P[:, 3] - np.array([0.0, 0.0, 0.0, 1.0])).max(axis=1) > 1e-6
        if bad.any():
            raise fail(path, field_name, f"last row must be [0, 0, 0, 1], got {P[int(np.argmax(bad)), 3].tolist()}",
                       int(np.argmax(bad)))
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
    """Validate (N,) timestamps in seconds: finite and strictly increasing."""
    t = np.asarray(t)
    if t.ndim == 2 and t.shape[1] == 1:
        t = t[:, 0]
    if t.shape != (n,):
        raise fail(path, field_name, f"expected shape ({n},), got {t.shape}")
    t = t.astype(np.float64)
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
        if not (isinstance(self.fps, (int, float, np.floating, np.integer)) and math.isfinite(self.fps)
                and self.fps > 0):
            raise fail(src, "fps", f"must be a positive number, got {self.fps!r}")
        object.__setattr__(self, "poses", _frozen(poses))
        object.__setattr__(self, "timestamps", _frozen(t))
        object.__setattr__(self, "fps", float(self.fps))
        if self.gripper is not None:
            g = np.asarray(self.gripper)
            if g.shape != (n,):
                raise fail(src, "gripper", f"expected shape ({n},), got {g.shape}")
            bad = ~np.isin(g, (0, 1))
            if bad.any():
                raise fail(src, "gripper", f"must be 0 or 1, got {g[int(np.argmax(bad))]!r}", int(np.argmax(bad)))
            object.__setattr__(self, "gripper", _frozen(g.astype(np.int8)))
        if self.intrinsics is not None:
            K = np.asarray(self.intrinsics, dtype=np.float64)
            if K.shape != (3, 3) or not np.isfinite(K).all():
                raise fail(src, "intrinsics", f"expected a finite (3, 3) matrix, got shape {K.shape}")
            object.__setattr__(self, "intrinsics", _frozen(K))
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
            c = np.asarray(self.confidence, dtype=np.float64).reshape(-1)
            if c.shape != (n,):
                raise fail(src, "confidence", f"expected shape ({n},), got {c.shape}")
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
        return replace(
            self, poses=self.poses[idx], timestamps=t,
            gripper=None if self.gripper is None else self.gripper[idx],
            images=None if self.images is None else tuple(self.images[i] for i in idx),
            camera_poses=None if self.camera_poses is None else self.camera_poses[idx],
            confidence=None if self.confidence is None else self.confidence[idx],
            meta=dict(self.meta, frames=[int(idx[0]), int(idx[-1])]),
        )

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
        from .video import read_frames

        return read_frames([self.images[int(i)] for i in indices])

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
