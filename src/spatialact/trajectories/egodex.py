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
(``geometry.opengl_to_opencv``). A wrist is given the hand frame of docs/conventions.md, built from joint *positions* so
that it does not depend on ARKit's per-joint axis conventions: origin at the wrist, +Z from the wrist toward the
middle-finger knuckle, +Y out of the palm (the normal of the wrist–index-knuckle–little-knuckle triangle, on the palm
side for each hand), X = Y × Z. The grip is the thumb-tip to index-tip distance with hysteresis: closed below 2 cm, open
above 4 cm, unchanged in between (starting closed when the first distance is under 3 cm).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .. import geometry
from .errors import TrajectoryError, check_regular, describe_value, fail
from .trajectory import FrameRef, Trajectory, as_numbers, check_intrinsics, check_poses

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
    """Hand frames (docs/conventions.md) (T, 4, 4) from joint positions (T, 3) each (same world).

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


def _read(f, name: str, path, *, required: bool = True):
    """The array stored at ``name`` (None when absent and not required); a group, a broken link, an empty or
    unreadable dataset fails in one line naming it."""
    import h5py

    try:
        obj = f.get(name)
    except (KeyError, TypeError, ValueError, OSError, RuntimeError) as e:  # a damaged object header
        raise fail(path, name, f"cannot open ({e or type(e).__name__})") from None
    if obj is None:
        if not required:
            return None
        try:
            dangling = name in f
        except (KeyError, TypeError, ValueError, OSError, RuntimeError):
            dangling = False
        raise fail(path, name, "missing" + (" (a link to nothing)" if dangling else ""))
    if not isinstance(obj, h5py.Dataset):
        raise fail(path, name, f"expected a dataset, got a {type(obj).__name__.lower()}")
    try:
        arr = obj[()]
    except (OSError, TypeError, ValueError, RuntimeError) as e:  # truncated data, a type NumPy cannot hold
        raise fail(path, name, f"cannot read ({e or type(e).__name__})") from None
    if isinstance(arr, h5py.Empty):
        raise fail(path, name, "empty dataset (no data)")
    return arr


def _dataset(f, name: str, path, n: int | None):
    poses = check_poses(_read(f, name, path), path, name)
    if n is not None and len(poses) != n:
        raise fail(path, name, f"expected {n} frames (as transforms/camera), got {len(poses)}")
    return poses


def _attr(v):
    """A file attribute as a JSON-able value (text decoded, arrays as lists, anything else as text)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, np.ndarray):
        v = [_attr(x) for x in v.tolist()] if v.dtype.kind in "OS" else v.tolist()
    elif isinstance(v, np.generic):
        v = v.item()
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError):
        return str(v)
    return v


def _attrs(f, path) -> dict:
    out = {}
    for k in f.attrs.keys():
        try:
            out[k] = _attr(f.attrs[k])
        except (OSError, TypeError, ValueError, RuntimeError) as e:  # an attribute type h5py cannot read
            raise fail(path, f"{k} (attribute)", f"cannot read ({e or type(e).__name__})") from None
    return out


def _read_episode(f, path, entity: str):
    """(n, poses, K, attrs, gripper, camera_poses, confidence) of one open EgoDex file (see read_egodex)."""
    cam_raw = _dataset(f, "transforms/camera", path, None)
    n = len(cam_raw)
    camera = geometry.yup_to_zup(geometry.opengl_to_opencv(cam_raw))
    K = _read(f, "camera/intrinsic", path, required=False)
    if K is not None:
        K = check_intrinsics(K, path, "camera/intrinsic")
    attrs = _attrs(f, path)
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
        conf = _read(f, cname, path, required=False)
        if conf is not None:
            conf = as_numbers(conf, path, cname).reshape(-1)
            if conf.shape != (n,):
                raise fail(path, cname, f"expected shape ({n},), got {conf.shape}")
            bad = ~np.isfinite(conf)
            if bad.any():
                raise fail(path, cname, "not finite", int(np.argmax(bad)))
    return n, poses, K, attrs, gripper, cams, conf


def read_egodex(path, *, entity: str | None = None, fps: float | None = None, episode=None, **_) -> Trajectory:
    """One EgoDex episode as a :class:`Trajectory` of ``entity``: ``rightHand`` (default), ``leftHand`` or
    ``camera``. Hands carry the grip (``gripper``), their confidence and the head camera as ``camera_poses``."""
    import h5py

    path = Path(path)
    entity = entity or "rightHand"
    if entity not in ENTITIES:
        raise fail(path, "entity", f"EgoDex entity must be one of {', '.join(ENTITIES)}, got {entity!r}")
    check_regular(path)  # a FIFO or a device: refused, never opened (missing: as the reader says)
    try:
        f = h5py.File(path, "r")
    except (OSError, ValueError) as e:
        raise fail(path, "(file)", f"not a readable HDF5 file ({e or type(e).__name__})") from None
    try:
        with f:
            n, poses, K, attrs, gripper, cams, conf = _read_episode(f, path, entity)
    except TrajectoryError:
        raise
    except (OSError, RuntimeError, KeyError) as e:  # h5py's low-level errors in a damaged file, outside _read
        raise fail(path, "(file)", f"damaged HDF5 file ({type(e).__name__}: {e})") from None
    rate = float(fps) if fps is not None else EGODEX_FPS
    t = np.arange(n) / rate
    video = path.with_suffix(".mp4")
    images = tuple(FrameRef(str(video), float(ti)) for ti in t) if video.is_file() else None
    desc = attrs.get("llm_description")
    if isinstance(desc, list) and len(desc) == 1:
        desc = desc[0]
    if desc is not None and not isinstance(desc, str):
        raise fail(path, "llm_description (attribute)", f"expected text, got {describe_value(desc)}")
    meta = {"source": "egodex", "path": str(path), "entity": entity, "kind": "nav" if entity == "camera" else "hand",
            "metric": True, "world": "ARKit world turned to +Z up", "attrs": attrs}
    return Trajectory(poses, t, rate, gripper, K, images, cams, conf, str(desc) if desc else None, meta)
