"""EgoDex: one ``.hdf5`` + one ``.mp4`` per episode, 30 Hz (Apple's egocentric dexterous-manipulation dataset).

HDF5 layout read here (float32 unless noted):

* ``transforms/camera`` (T, 4, 4): the head camera's C2W pose in the ARKit world (+Y up), ARKit camera axes
  (+X right, +Y up, −Z forward);
* ``transforms/<joint>`` (T, 4, 4): every tracked joint in the same world, e.g. ``rightHand`` / ``leftHand`` (wrists),
  ``rightMiddleFingerKnuckle``, ``rightIndexFingerKnuckle``, ``rightLittleFingerKnuckle``, ``rightThumbTip``,
  ``rightIndexFingerTip`` (and the ``left…`` twins);
* ``confidences/<joint>`` (T,): ARKit tracking confidence per joint;
* ``camera/intrinsic`` (3, 3): pinhole K in pixels of the 1920×1080 video;
* file attributes: ``llm_description`` (the task in words; the instruction), ``llm_description2`` for reversible
  tasks, ``llm_type``, ``task``, ... (kept in ``meta["attrs"]``).

Conversions: the world is turned to +Z up (R_x(+90°), ``geometry.yup_to_zup``) and the camera to OpenCV axes
(``geometry.opengl_to_opencv``). A wrist is given the SPEC §2 hand frame, built from joint *positions* so that it does
not depend on ARKit's per-joint axis conventions: origin at the wrist, +Z from the wrist toward the middle-finger
knuckle, +Y out of the palm (the normal of the wrist–index-knuckle–little-knuckle triangle, on the palm side for
each hand), X = Y × Z. The grip is the thumb-tip to index-tip distance with hysteresis: closed below 2 cm, open
above 4 cm, unchanged in between (starting closed when the first distance is under 3 cm).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import geometry
from .trajectory import FrameRef, Trajectory, TrajectoryError, check_poses, fail

__all__ = ["read_egodex", "grip_from_distance", "hand_frame", "ENTITIES", "GRIP_CLOSE_BELOW", "GRIP_OPEN_ABOVE"]

EGODEX_FPS = 30.0
ENTITIES = ("camera", "rightHand", "leftHand")
GRIP_CLOSE_BELOW = 0.02
GRIP_OPEN_ABOVE = 0.04


def grip_from_distance(d: np.ndarray, close_below: float = GRIP_CLOSE_BELOW,
                       open_above: float = GRIP_OPEN_ABOVE) -> np.ndarray:
    """Grip states (T,) int8 from thumb-to-index distances (T,) metres, with hysteresis, vectorised.

    A frame below ``close_below`` closes, above ``open_above`` opens, anything between keeps the last state: the
    state at frame i is set by the last frame ≤ i outside the dead band (a running maximum over event indices).
    """
    d = np.asarray(d, dtype=np.float64)
    n = len(d)
    if n == 0:
        return np.zeros(0, dtype=np.int8)
    event = np.zeros(n, dtype=np.int8)
    event[d < close_below] = 1
    event[d > open_above] = -1
    last = np.maximum.accumulate(np.where(event != 0, np.arange(n), -1))
    initial = np.int8(1 if d[0] < (close_below + open_above) / 2 else 0)
    return np.where(last >= 0, (event[np.maximum(last, 0)] == 1).astype(np.int8), initial).astype(np.int8)


def hand_frame(wrist: np.ndarray, middle: np.ndarray, index: np.ndarray, little: np.ndarray, side: str,
               path="<hand>", field_name: str = "transforms") -> np.ndarray:
    """SPEC §2 hand frames (T, 4, 4) from joint positions (T, 3) each (same world).

    +Z wrist → middle knuckle; +Y out of the palm: ``(index − wrist) × (little − wrist)`` for the right hand and
    the opposite for the left (mirror images); X = Y × Z. Raises :class:`TrajectoryError` on a degenerate hand.
    """
    z = middle - wrist
    nz = np.linalg.norm(z, axis=1)
    s = 1.0 if side == "right" else -1.0
    y = s * np.cross(index - wrist, little - wrist)
    y = y - (y * z).sum(1, keepdims=True) * z / np.maximum(nz, 1e-12)[:, None] ** 2
    ny = np.linalg.norm(y, axis=1)
    bad = (nz < 1e-6) | (ny < 1e-9)
    if bad.any():
        raise fail(path, field_name, f"degenerate {side} hand (knuckles on the wrist or in a line)",
                   int(np.argmax(bad)))
    Z = z / nz[:, None]
    Y = y / ny[:, None]
    X = np.cross(Y, Z)
    return geometry.make_pose(np.stack([X, Y, Z], axis=-1), wrist)


def _dataset(f, name: str, path, n: int | None):
    if name not in f:
        raise fail(path, name, "missing")
    arr = np.asarray(f[name][()])
    poses = check_poses(arr, path, name)
    if n is not None and len(poses) != n:
        raise fail(path, name, f"expected {n} frames (as transforms/camera), got {len(poses)}")
    return poses


def _attr(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def read_egodex(path, *, entity: str | None = None, fps: float | None = None, episode=None, **_) -> Trajectory:
    """One EgoDex episode as a :class:`Trajectory` of ``entity``: ``rightHand`` (default), ``leftHand`` or
    ``camera``. Hands carry the grip (``gripper``), their confidence and the head camera as ``camera_poses``."""
    import h5py

    path = Path(path)
    entity = entity or "rightHand"
    if entity not in ENTITIES:
        raise ValueError(f"EgoDex entity must be one of {', '.join(ENTITIES)}, got {entity!r}")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise TrajectoryError(f"{path}: not a readable HDF5 file ({e})") from None
    with f:
        cam_raw = _dataset(f, "transforms/camera", path, None)
        n = len(cam_raw)
        camera = geometry.yup_to_zup(geometry.opengl_to_opencv(cam_raw))
        K = None
        if "camera/intrinsic" in f:
            K = np.asarray(f["camera/intrinsic"][()], dtype=np.float64)
            if K.shape != (3, 3) or not np.isfinite(K).all() or K[0, 0] <= 0 or K[1, 1] <= 0:
                raise fail(path, "camera/intrinsic", f"expected a finite (3, 3) K with positive focal lengths, "
                                                     f"got shape {K.shape}")
        attrs = {k: _attr(v) for k, v in f.attrs.items()}
        gripper = conf = cams = None
        if entity == "camera":
            poses = camera
        else:
            side = "right" if entity == "rightHand" else "left"
            pos = {}
            for j in (entity, f"{side}MiddleFingerKnuckle", f"{side}IndexFingerKnuckle", f"{side}LittleFingerKnuckle",
                      f"{side}ThumbTip", f"{side}IndexFingerTip"):
                pos[j] = geometry.yup_to_zup(_dataset(f, f"transforms/{j}", path, n))[:, :3, 3]
            poses = hand_frame(pos[entity], pos[f"{side}MiddleFingerKnuckle"], pos[f"{side}IndexFingerKnuckle"],
                               pos[f"{side}LittleFingerKnuckle"], side, path, f"transforms/{entity}")
            gripper = grip_from_distance(np.linalg.norm(pos[f"{side}ThumbTip"] - pos[f"{side}IndexFingerTip"],
                                                        axis=1))
            cams = camera
            cname = f"confidences/{entity}"
            if cname in f:
                conf = np.asarray(f[cname][()], dtype=np.float64).reshape(-1)
                if conf.shape != (n,):
                    raise fail(path, cname, f"expected shape ({n},), got {conf.shape}")
                bad = ~np.isfinite(conf)
                if bad.any():
                    raise fail(path, cname, "not finite", int(np.argmax(bad)))
    rate = float(fps) if fps is not None else EGODEX_FPS
    t = np.arange(n) / rate
    video = path.with_suffix(".mp4")
    images = tuple(FrameRef(str(video), float(ti)) for ti in t) if video.is_file() else None
    desc = attrs.get("llm_description")
    meta = {"source": "egodex", "path": str(path), "entity": entity, "kind": "nav" if entity == "camera" else "hand",
            "metric": True, "world": "ARKit world turned to +Z up", "attrs": attrs}
    return Trajectory(poses, t, rate, gripper, K, images, cams, conf, str(desc) if desc else None, meta)
