"""Readers for plain pose files: generic ``.npz`` / ``.json``, TUM, KITTI and RealEstate10K.

Frames and conversions (docs/conventions.md, docs/trajectories.md):

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

import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from .. import geometry
from ..jsonline import input_problem
from .errors import check_regular, describe_value, fail
from .trajectory import (FrameRef, Trajectory, as_numbers, check_fps, check_intrinsics, check_poses, check_timestamps,
                         fps_from_timestamps, read_json_file, read_text_file)

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
            fps = check_fps(fps_from_timestamps(t, default), path, "timestamps")
        return t, float(fps), False
    fps = float(fps) if fps is not None else default
    return np.arange(n) / fps, fps, fps_arg is None and fps_file is None


def _text(value, path, field_name: str) -> str:
    """One string from a JSON string or an ``.npz`` 0-d / one-element text array."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "US" and value.size == 1:
        value = value.reshape(-1)[0]
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "replace")
    if not isinstance(value, str):
        raise fail(path, field_name, f"expected text, got {describe_value(value)}")
    return str(value)


def _from_mapping(path: Path, d, fps) -> Trajectory:
    """A trajectory from the generic keys; every value is checked before use (JSON values may be anything)."""
    keys = set(d.keys())
    if "c2w" not in keys:
        raise fail(path, "c2w", f"missing (keys present: {', '.join(sorted(map(str, keys))[:20]) or 'none'})")
    poses = check_poses(d["c2w"], path, "c2w")
    n = len(poses)

    def get(k):
        return d[k] if k in keys and d[k] is not None else None

    fps_file = None if get("fps") is None else check_fps(d["fps"], path, "fps")
    t, fps, assumed = _times_fps(path, n, get("timestamps"), fps_file, fps, DEFAULT_FPS)
    gripper = None if get("gripper") is None else as_numbers(d["gripper"], path, "gripper", allow_bool=True)
    if gripper is not None and gripper.shape != (n,):
        raise fail(path, "gripper", f"expected shape ({n},), got {gripper.shape}")
    K = None if get("intrinsics") is None else check_intrinsics(d["intrinsics"], path, "intrinsics")
    images = None
    if get("images") is not None:
        raw = d["images"]
        if isinstance(raw, np.ndarray) and raw.dtype.kind in "US":
            names = [str(x) for x in raw.reshape(-1)]
        elif isinstance(raw, list):
            names = raw
        else:
            raise fail(path, "images", f"expected a list of {n} image paths, got {describe_value(raw)}")
        if len(names) != n:
            raise fail(path, "images", f"expected {n} image paths, got {len(names)}")
        for i, p in enumerate(names):
            if not isinstance(p, str) or not p:
                raise fail(path, "images", f"expected an image path, got {describe_value(p)}", i)
        images = tuple(FrameRef(str(p if os.path.isabs(p) else path.parent / p)) for p in names)
    cams = None
    if get("camera_poses") is not None:
        cams = check_poses(d["camera_poses"], path, "camera_poses")
        if len(cams) != n:
            raise fail(path, "camera_poses", f"expected {n} poses (as c2w), got {len(cams)}")
    instr = None if get("instruction") is None else _text(d["instruction"], path, "instruction")
    meta = {"source": "generic", "path": str(path), "metric": True}
    if assumed:
        meta["fps_assumed"] = True
    return Trajectory(poses, t, fps, gripper, K, images, cams, None, instr, meta)


def read_npz(path, *, fps=None, **_) -> Trajectory:
    """Generic ``.npz``: key ``c2w`` (N, 4, 4) plus the optional keys of the module docstring."""
    path = Path(path)
    return _from_mapping(path, read_npz_arrays(path, "with the key 'c2w'"), fps)


def read_npz_arrays(path, expected: str = "") -> dict:
    """Every array of the ``.npz`` archive at ``path`` (no pickles), read in full; an unreadable archive or member is
    one :class:`TrajectoryError` naming the file and the key. ``expected``: what the archive should hold, said when
    the file is a single ``.npy`` array instead."""
    path = Path(path)
    d = {}
    check_regular(path)  # a FIFO or a device is refused unopened (missing: as open says)
    with open(path, "rb") as fh:  # ours to close, also when NumPy's zip reader gives up half way
        try:
            z = np.load(fh, allow_pickle=False)
        except (OSError, ValueError, EOFError, RuntimeError, zipfile.BadZipFile) as e:  # empty, truncated, not a zip
            raise fail(path, "(file)", f"not a readable .npz archive ({e or type(e).__name__})") from None
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise fail(path, "(file)", f"a single .npy array, not an .npz archive{' ' + expected if expected else ''}")
        with z:
            for k in z.files:
                try:
                    d[k] = z[k]
                except (OSError, ValueError, EOFError, RuntimeError, zipfile.BadZipFile, zlib.error,
                        NotImplementedError) as e:
                    # a truncated or damaged member (flag bits flipped to "encrypted", an unknown compression)
                    raise fail(path, k, f"cannot read this array ({e or type(e).__name__})") from None
    return d


def read_json(path, *, fps=None, **_) -> Trajectory:
    """Generic ``.json``: an object with key ``c2w`` (N×4×4 nested lists) plus the optional keys."""
    path = Path(path)
    d = read_json_file(path)
    if not isinstance(d, dict):
        raise fail(path, "(file)", f"expected a JSON object with the key 'c2w', got {describe_value(d)}")
    return _from_mapping(path, d, fps)


def _numeric_lines(path: Path, comment: str = "#"):
    rows = []
    text = read_text_file(path)
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
    """Guess ``tum`` / ``kitti`` / ``realestate10k`` from the first data line of a text file (None for anything
    but a regular file: a FIFO or a device is never opened)."""
    if input_problem(path) is not None:
        return None
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
