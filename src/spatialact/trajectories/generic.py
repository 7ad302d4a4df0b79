"""Readers for plain pose files: generic ``.npz`` / ``.json``, TUM, KITTI and RealEstate10K.

Frames and conversions (SPEC §2, §5.1):

* ``.npz`` / ``.json``: key ``c2w`` (N, 4, 4) C2W poses, already in spatialact's frames (world +Z up, OpenCV body
  axes); optional ``timestamps`` (N,) s, ``fps``, ``gripper`` (N,) 0/1, ``intrinsics`` (3, 3), ``instruction``,
  ``images`` (N,) image file paths (relative to the file), ``camera_poses`` (N, 4, 4).
* TUM: one line per frame ``t tx ty tz qx qy qz qw`` (C2W, quaternion scalar-last), ``#`` comments. The world is the
  motion-capture frame; no up axis is assumed, so poses are kept as written.
* KITTI odometry: 12 numbers a line, the row-major 3×4 C2W of camera 0 in the frame of the first camera
  (+Y down, +Z forward). The camera is mounted level, so the world is turned to +Z up with R_x(−90°)
  (old −Y becomes +Z). No timestamps: 10 fps unless given.
* RealEstate10K: a URL line, then ``timestamp_us fx fy cx cy 0 0`` + 12 numbers of the row-major 3×4
  world-to-camera matrix per frame; intrinsics are normalised by the image size; the scale is not metric
  (``meta["metric"] = False``) and the world's up axis is unknown (kept as written).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .. import geometry
from .trajectory import FrameRef, Trajectory, TrajectoryError, check_poses, check_timestamps, fail, \
    fps_from_timestamps

__all__ = ["read_npz", "read_json", "read_tum", "read_kitti", "read_realestate10k", "sniff_text_format"]

DEFAULT_FPS = 30.0
KITTI_FPS = 10.0
# KITTI's world is camera 0 at t = 0 (+Y down); R_x(−90°) turns it to +Z up.
YDOWN_TO_ZUP = geometry.YUP_TO_ZUP.T.copy()


def _times_fps(path, n: int, timestamps, fps_file, fps_arg, default: float):
    fps = fps_arg if fps_arg is not None else fps_file
    if timestamps is not None:
        t = check_timestamps(timestamps, n, path)
        if fps is None:
            fps = fps_from_timestamps(t, default)
        return t, float(fps), False
    fps = float(fps) if fps is not None else default
    return np.arange(n) / fps, fps, fps_arg is None and fps_file is None


def _from_mapping(path: Path, d, fps) -> Trajectory:
    keys = set(d.keys())
    if "c2w" not in keys:
        raise fail(path, "c2w", f"missing (keys present: {sorted(keys)})")
    poses = check_poses(np.asarray(d["c2w"], dtype=np.float64) if not isinstance(d["c2w"], np.ndarray)
                        else d["c2w"], path, "c2w")
    n = len(poses)
    fps_file = None
    if "fps" in keys and d["fps"] is not None:
        fps_file = float(np.asarray(d["fps"]).reshape(-1)[0])
    t, fps, assumed = _times_fps(path, n, d["timestamps"] if "timestamps" in keys and d["timestamps"] is not None
                                 else None, fps_file, fps, DEFAULT_FPS)
    gripper = None
    if "gripper" in keys and d["gripper"] is not None:
        g = np.asarray(d["gripper"])
        if g.shape != (n,):
            raise fail(path, "gripper", f"expected shape ({n},), got {g.shape}")
        bad = ~np.isin(g, (0, 1))
        if bad.any():
            raise fail(path, "gripper", f"must be 0 or 1, got {g[int(np.argmax(bad))]!r}", int(np.argmax(bad)))
        gripper = g.astype(np.int8)
    K = None
    if "intrinsics" in keys and d["intrinsics"] is not None:
        K = np.asarray(d["intrinsics"], dtype=np.float64)
        if K.shape != (3, 3) or not np.isfinite(K).all():
            raise fail(path, "intrinsics", f"expected a finite (3, 3) matrix, got shape {K.shape}")
    images = None
    if "images" in keys and d["images"] is not None:
        names = [str(x) for x in np.asarray(d["images"]).reshape(-1)]
        if len(names) != n:
            raise fail(path, "images", f"expected {n} image paths, got {len(names)}")
        images = tuple(FrameRef(str(p if os.path.isabs(p) else path.parent / p)) for p in names)
    cams = None
    if "camera_poses" in keys and d["camera_poses"] is not None:
        cams = check_poses(np.asarray(d["camera_poses"], dtype=np.float64), path, "camera_poses")
        if len(cams) != n:
            raise fail(path, "camera_poses", f"expected {n} poses, got {len(cams)}")
    instr = None
    if "instruction" in keys and d["instruction"] is not None:
        instr = str(np.asarray(d["instruction"]).reshape(-1)[0]) if isinstance(d["instruction"], np.ndarray) \
            else str(d["instruction"])
    meta = {"source": "generic", "path": str(path), "metric": True}
    if assumed:
        meta["fps_assumed"] = True
    return Trajectory(poses, t, fps, gripper, K, images, cams, None, instr, meta)


def read_npz(path, *, fps=None, **_) -> Trajectory:
    """Generic ``.npz``: key ``c2w`` (N, 4, 4) plus the optional keys of the module docstring."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise TrajectoryError(f"{path}: not a readable .npz file ({e})") from None
    return _from_mapping(path, d, fps)


def read_json(path, *, fps=None, **_) -> Trajectory:
    """Generic ``.json``: an object with key ``c2w`` (N×4×4 nested lists) plus the optional keys."""
    path = Path(path)
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise TrajectoryError(f"{path}: not a readable JSON file ({e})") from None
    if not isinstance(d, dict):
        raise fail(path, "(record)", f"expected a JSON object, got {type(d).__name__}")
    try:
        if "c2w" in d:
            d["c2w"] = np.asarray(d["c2w"], dtype=np.float64)
    except (ValueError, TypeError):
        raise fail(path, "c2w", "not a rectangular array of numbers") from None
    return _from_mapping(path, d, fps)


def _numeric_lines(path: Path, comment: str = "#"):
    rows = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TrajectoryError(f"{path}: cannot read ({e})") from None
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.split(comment, 1)[0].strip()
        if not s:
            continue
        rows.append((lineno, s))
    return rows


def _parse_rows(path: Path, rows, ncols: int, field_name: str) -> np.ndarray:
    out = np.empty((len(rows), ncols))
    for i, (lineno, s) in enumerate(rows):
        parts = s.replace(",", " ").split()
        if len(parts) != ncols:
            raise fail(path, field_name, f"line {lineno} has {len(parts)} numbers, expected {ncols}", i)
        try:
            out[i] = [float(p) for p in parts]
        except ValueError:
            raise fail(path, field_name, f"line {lineno} is not numeric", i) from None
    if not len(out):
        raise fail(path, field_name, "no frames")
    return out


def read_tum(path, *, fps=None, **_) -> Trajectory:
    """TUM RGB-D trajectory: ``t tx ty tz qx qy qz qw`` per line (C2W)."""
    path = Path(path)
    a = _parse_rows(path, _numeric_lines(path), 8, "t tx ty tz qx qy qz qw")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        raise fail(path, "t tx ty tz qx qy qz qw", "not finite", int(np.argmax(bad)))
    qn = np.linalg.norm(a[:, 4:8], axis=1)
    bad = np.abs(qn - 1.0) > 1e-2
    if bad.any():
        i = int(np.argmax(bad))
        raise fail(path, "qx qy qz qw", f"quaternion is not unit (norm {qn[i]:.4g})", i)
    poses = geometry.pose_from_quat_trans(a[:, 4:8], a[:, 1:4])
    t, fps_, assumed = _times_fps(path, len(a), a[:, 0], None, fps, DEFAULT_FPS)
    return Trajectory(poses, t, fps_, meta={"source": "tum", "path": str(path), "metric": True})


def read_kitti(path, *, fps=None, **_) -> Trajectory:
    """KITTI odometry poses: 12 numbers a line (row-major 3×4 C2W), turned to a +Z-up world."""
    path = Path(path)
    a = _parse_rows(path, _numeric_lines(path), 12, "pose")
    P = np.zeros((len(a), 4, 4))
    P[:, :3, :] = a.reshape(-1, 3, 4)
    P[:, 3, 3] = 1.0
    P = check_poses(P, path, "pose")
    fps_ = float(fps) if fps is not None else KITTI_FPS
    return Trajectory(YDOWN_TO_ZUP @ P, np.arange(len(P)) / fps_, fps_,
                      meta={"source": "kitti", "path": str(path), "metric": True,
                            "world": "first camera, turned to +Z up"})


def read_realestate10k(path, *, fps=None, **_) -> Trajectory:
    """RealEstate10K camera file: URL line, then ``timestamp_us fx fy cx cy 0 0`` + 3×4 W2C per frame."""
    path = Path(path)
    rows = _numeric_lines(path, comment="\x00")
    url = None
    if rows:
        try:
            float(rows[0][1].split()[0])
        except ValueError:
            url = rows[0][1]
            rows = rows[1:]
    a = _parse_rows(path, rows, 19, "timestamp fx fy cx cy k1 k2 w2c")
    bad = ~np.isfinite(a).all(axis=1)
    if bad.any():
        raise fail(path, "timestamp fx fy cx cy k1 k2 w2c", "not finite", int(np.argmax(bad)))
    W = np.zeros((len(a), 4, 4))
    W[:, :3, :] = a[:, 7:19].reshape(-1, 3, 4)
    W[:, 3, 3] = 1.0
    W = check_poses(W, path, "w2c")
    t, fps_, _ = _times_fps(path, len(a), a[:, 0] * 1e-6, None, fps, DEFAULT_FPS)
    fx, fy, cx, cy = a[0, 1:5]
    K = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
    return Trajectory(geometry.w2c_to_c2w(W), t, fps_, intrinsics=K,
                      meta={"source": "realestate10k", "path": str(path), "metric": False,
                            "intrinsics_normalized": True, "url": url})


def sniff_text_format(path) -> str | None:
    """Guess ``tum`` / ``kitti`` / ``realestate10k`` from the first data line of a text file."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                s = line.split("#", 1)[0].strip()
                if not s:
                    continue
                if s.startswith(("http://", "https://")):
                    return "realestate10k"
                n = len(s.replace(",", " ").split())
                return {8: "tum", 12: "kitti", 19: "realestate10k"}.get(n)
    except (OSError, UnicodeDecodeError):
        return None
    return None
