"""Game trajectories: a folder recorded in a Doom level (``spatialact game record``), format version 1.

Layout (one episode a folder, in the manner of a LeRobot dataset; docs/trajectories.md):

* ``meta.json`` — ``format`` ("spatialact-game"), ``version`` (1), ``source`` ("game"), ``frames`` N, ``fps``
  (35: one frame a game tic), ``image`` {``width``, ``height``}, ``intrinsics`` (3, 3) pixels (fy = 1.2·fx: Doom's
  pixels are not square), ``wad`` {``name``, ``sha256``}, ``map``, ``engine`` {``name``, ``version``},
  ``units`` (1 map unit = 1/32 m), ``depth`` {``scale_m``, ``offset_m``, ``quantisation_m``, ``far_level``},
  ``rgb`` {``codec``, ``pix_fmt``, ``crf``, ``options`` (the encoder's)}, ``explorer`` (seed, seconds, speed);
* ``poses.npz`` — ``c2w`` (N, 4, 4) float64 camera-to-world, metres, world +Z up (the map's x east, y north),
  OpenCV camera axes; ``timestamps`` (N,) s (game tic / 35); ``tics`` (N,) game tics since the episode started;
  ``actions`` (N, 5) the inputs of the tic that led to each frame (forward, side, turn°, look°, up; row 0 zeros);
* ``rgb.mp4`` — frame i at time i / fps (H.264, 4:4:4 chroma);
* ``depth/NNNNNN.png`` — frame i's 8-bit depth buffer as it came from the game: metres = ``offset_m + level ×
  scale_m`` (the middle of the level; one level is ``quantisation_m`` ≈ 0.22 m; ``far_level`` 255 means at least
  that far).

:func:`read_game` validates and returns a :class:`Trajectory` (source ``game``, kind ``nav``); :func:`read_depth`
gives depth in metres; :class:`GameTrajectoryWriter` writes the folder (atomically: a partial folder is renamed into
place only when complete; it then gets the mode a plain ``mkdir`` gives, 0o777 less the umask). A partial folder is named ``.<name>.partial-<pid>-<random>`` and holds a lock
(``.lock``, ``flock``) while its writer lives; a writer killed on the way leaves it behind, and the next writer in the
same folder removes it (:func:`remove_stale_partials`: its process is gone and no one holds its lock).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np

from ..outputs import OutputError
from .errors import check_regular, describe_value, fail
from .generic import read_npz_arrays
from .trajectory import (FrameRef, Trajectory, as_numbers, check_fps, check_intrinsics, check_poses, check_timestamps,
                         read_json_file)

__all__ = ["read_game", "read_depth", "read_game_arrays", "GameTrajectoryWriter", "is_game_folder", "FORMAT",
           "VERSION", "META_FILE", "POSES_FILE", "RGB_FILE", "DEPTH_DIR", "remove_stale_partials",
           "check_video_size"]

FORMAT = "spatialact-game"
VERSION = 1
META_FILE = "meta.json"
POSES_FILE = "poses.npz"
RGB_FILE = "rgb.mp4"
DEPTH_DIR = "depth"
MAX_SIDE = 8192
N_ACTIONS = 5
GAME_TICRATE = 35.0  # Doom's tics per second: timestamps are tics / 35
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PARTIAL = re.compile(r"\..+\.partial-([0-9]{1,10})-[A-Za-z0-9_]{1,32}")  # .<name>.partial-<pid>-<random>
_LOCK = ".lock"
# x264's options, pinned so that the same frames give the same bytes. One thread: x264's output depends on its
# thread count. No macroblock tree (``mbtree=0``): with B-frames and x264's AVX-512 code, the tree's result depends
# on memory x264 never wrote, so the same frames encoded twice in one process (or after other allocations) gave different files whose
# frames decoded up to 22-48 levels apart. Shown with glibc's MALLOC_PERTURB_ (which fills new heap memory): with
# the tree every fill value gave other bytes, without it one file for every value, the same with x264 restricted to
# AVX2. The cost at 320x240, CRF 18: 17-26 % more bytes (10 s of MAP01: 5.3 KB a frame instead of 4.5), 0.3 dB
# better PSNR, no measurable change in recording speed (docs/game.md, "The explorer and recording").
X264_OPTIONS = {"preset": "veryfast", "threads": "1", "mbtree": "0"}


def is_game_folder(path) -> bool:
    """Whether ``path`` is a folder with a ``meta.json`` (or is that ``meta.json``)."""
    p = Path(path)
    return (p.is_dir() and (p / META_FILE).is_file()) or (p.is_file() and p.name == META_FILE)


def _root(path) -> Path:
    p = Path(path)
    return p.parent if p.is_file() and p.name == META_FILE else p


def depth_frame_name(i: int) -> str:
    return f"{int(i):06d}.png"


# ----- reading ---------------------------------------------------------------------------------------------
def _text(meta: dict, key: str, where) -> str:
    v = meta.get(key)
    if not isinstance(v, str) or not v:
        raise fail(where, key, f"expected text, got {describe_value(v)}")
    return v


def _obj(meta: dict, key: str, where) -> dict:
    v = meta.get(key)
    if not isinstance(v, dict):
        raise fail(where, key, f"expected an object, got {describe_value(v)}")
    return v


def _number(d: dict, key: str, where, field: str, *, positive: bool = False) -> float:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or (positive and v <= 0):
        need = "a positive number" if positive else "a finite number"
        raise fail(where, field, f"expected {need}, got {describe_value(v)}")
    return float(v)


def _whole(d: dict, key: str, where, field: str, lo: int, hi: int) -> int:
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise fail(where, field, f"expected a whole number from {lo} to {hi:,}, got {describe_value(v)}")
    return int(v)


def _read_meta(root: Path) -> dict:
    where = root / META_FILE
    if not check_regular(where):  # a FIFO or a device there is said as such, never opened
        raise fail(root, META_FILE, "missing (a game trajectory folder has meta.json, poses.npz, rgb.mp4 and "
                                    "depth/)")
    meta = read_json_file(where)
    if not isinstance(meta, dict):
        raise fail(where, "(file)", f"expected a JSON object, got {describe_value(meta)}")
    if meta.get("format") != FORMAT:
        raise fail(where, "format", f"expected {FORMAT!r}, got {describe_value(meta.get('format'))}")
    version = meta.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        raise fail(where, "version", f"expected a whole number, got {describe_value(version)}")
    if version != VERSION:
        newer = " (written by a newer spatialact)" if version > VERSION else ""
        raise fail(where, "version", f"version {version}{newer}; this reader reads version {VERSION}")
    if meta.get("source") != "game":
        raise fail(where, "source", f"expected 'game', got {describe_value(meta.get('source'))}")
    return meta


def _check_meta(root: Path, meta: dict) -> dict:
    """The validated fields of ``meta.json`` used by the reader."""
    where = root / META_FILE
    out = {"frames": _whole(meta, "frames", where, "frames", 1, 10 ** 8),
           "fps": check_fps(meta.get("fps"), where, "fps")}
    image = _obj(meta, "image", where)
    out["width"] = _whole(image, "width", where, "image.width", 1, MAX_SIDE)
    out["height"] = _whole(image, "height", where, "image.height", 1, MAX_SIDE)
    out["K"] = check_intrinsics(meta.get("intrinsics"), where, "intrinsics")
    wad = _obj(meta, "wad", where)
    out["wad"] = _text(wad, "name", where)
    sha = wad.get("sha256")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise fail(where, "wad.sha256", f"expected 64 lower-case hex digits, got {describe_value(sha)}")
    out["wad_sha256"] = sha
    out["map"] = _text(meta, "map", where)
    engine = _obj(meta, "engine", where)
    out["engine"] = _text(engine, "name", where)
    out["engine_version"] = _text(engine, "version", where)
    depth = _obj(meta, "depth", where)
    out["depth"] = {"scale_m": _number(depth, "scale_m", where, "depth.scale_m", positive=True),
                    "offset_m": _number(depth, "offset_m", where, "depth.offset_m"),
                    "quantisation_m": _number(depth, "quantisation_m", where, "depth.quantisation_m",
                                              positive=True),
                    "far_level": _whole(depth, "far_level", where, "depth.far_level", 1, 255)}
    return out


def _load_npz(path: Path) -> dict:
    if not check_regular(path):  # a link to /dev/zero is "a character device, not a regular file", not missing
        raise fail(path, "(file)", "missing")
    return read_npz_arrays(path)


def read_game_arrays(path) -> dict:
    """The validated arrays of ``poses.npz``: ``c2w`` (N, 4, 4), ``timestamps`` (N,), ``tics`` (N,) int64,
    ``actions`` (N, 5) float64. ``path``: the folder (or its ``meta.json``)."""
    root = _root(path)
    meta = _check_meta(root, _read_meta(root))
    return _arrays(root, meta["frames"])


def _arrays(root: Path, n: int) -> dict:
    where = root / POSES_FILE
    d = _load_npz(where)
    for key in ("c2w", "timestamps", "tics", "actions"):
        if key not in d:
            raise fail(where, key, f"missing (keys present: {', '.join(sorted(d)) or 'none'})")
    c2w = check_poses(d["c2w"], where, "c2w")
    if len(c2w) != n:
        raise fail(where, "c2w", f"{len(c2w)} poses, but meta.json says {n} frames")
    t = check_timestamps(d["timestamps"], n, where)
    tics = as_numbers(d["tics"], where, "tics")
    if tics.shape != (n,):
        raise fail(where, "tics", f"expected shape ({n},), got {tics.shape}")
    bad = ~(np.isfinite(tics) & (tics == np.round(tics)) & (tics >= 0))
    if bad.any():
        raise fail(where, "tics", "expected whole numbers >= 0", int(np.argmax(bad)))
    actions = as_numbers(d["actions"], where, "actions")
    if actions.shape != (n, N_ACTIONS):
        raise fail(where, "actions", f"expected shape ({n}, {N_ACTIONS}), got {actions.shape}")
    bad = ~np.isfinite(actions).all(axis=1)
    if bad.any():
        raise fail(where, "actions", "not finite (NaN or inf)", int(np.argmax(bad)))
    return {"c2w": c2w, "timestamps": t, "tics": tics.astype(np.int64), "actions": actions}


def check_video_size(root, width: int, height: int) -> None:
    """Refuse a recording whose ``meta.json`` ``image`` size is not its video's frame size (read from the
    container, nothing decoded): one line naming meta.json's field and both sizes. Every consumer of a game
    recording (``tasks from-trajectory``, ``replay``, ``questions build``) reads it through :func:`read_game`."""
    from .video import video_info

    info = video_info(str(Path(root) / RGB_FILE))
    w, h = int(info["width"]), int(info["height"])
    if (w, h) != (int(width), int(height)):
        field = "image.width" if w != int(width) else "image.height"
        raise fail(Path(root) / META_FILE, field, f"image is {width}x{height} pixels, but {RGB_FILE}'s frames are "
                                                  f"{w}x{h}")


def read_game(path, *, fps: float | None = None, **_) -> Trajectory:
    """A game trajectory folder (or its ``meta.json``) as a :class:`Trajectory`: C2W (N, 4, 4) float64 metres,
    world +Z up, OpenCV camera axes; frames from ``rgb.mp4``; intrinsics; ``meta``: ``source`` "game", ``kind``
    "nav", ``wad``, ``wad_sha256``, ``map``, ``engine``, ``engine_version``, ``format_version``, ``image_size``,
    ``depth`` (how :func:`read_depth` turns levels into metres). Every field is checked; errors are one line naming
    the file, the field and the frame."""
    root = _root(path)
    raw = _read_meta(root)
    meta = _check_meta(root, raw)
    n = meta["frames"]
    arrays = _arrays(root, n)
    video = root / RGB_FILE
    if not check_regular(video, "video"):
        raise fail(video, "video", "missing")
    check_video_size(root, meta["width"], meta["height"])
    depth_dir = root / DEPTH_DIR
    if not depth_dir.is_dir():
        raise fail(depth_dir, "depth", "missing folder")
    with os.scandir(depth_dir) as entries:  # each frame a regular file: a FIFO would block its reader for ever
        have = {e.name: e for e in entries}
    for i in range(n):
        e = have.get(depth_frame_name(i))
        if e is None:
            raise fail(depth_dir / depth_frame_name(i), "depth", "missing", i)
        if not e.is_file() and not check_regular(e.path, "depth", i):  # a link to a regular file is one
            raise fail(depth_dir / depth_frame_name(i), "depth", "missing", i)
    rate = meta["fps"]
    if fps is not None:
        rate = check_fps(fps, root, "fps (option)")
    images = tuple(FrameRef(str(video), i / meta["fps"]) for i in range(n))
    out_meta = {"source": "game", "path": str(root), "kind": "nav", "metric": True, "entity": "camera",
                "wad": meta["wad"], "wad_sha256": meta["wad_sha256"], "map": meta["map"],
                "engine": meta["engine"], "engine_version": meta["engine_version"], "format_version": VERSION,
                "image_size": [meta["width"], meta["height"]], "pixel_aspect": float(meta["K"][1, 1] /
                                                                                    meta["K"][0, 0]),
                "depth": dict(meta["depth"], path=str(depth_dir), available=True), "recorded_fps": meta["fps"]}
    if isinstance(raw.get("explorer"), dict):
        out_meta["explorer"] = raw["explorer"]
    t = arrays["timestamps"] if fps is None else arrays["timestamps"] * (meta["fps"] / rate)
    return Trajectory(arrays["c2w"], t, rate, intrinsics=meta["K"], images=images, meta=out_meta)


def read_depth(traj: Trajectory, indices: Sequence[int]) -> list[np.ndarray]:
    """Depth (H, W) float32 in metres of frames ``indices`` of a game trajectory: ``offset_m + level × scale_m``
    of the stored 8-bit level (±``quantisation_m``/2; ``far_level`` means at least that far). A missing or damaged
    PNG raises a one-line TrajectoryError naming it and the frame."""
    from PIL import Image

    info = traj.meta.get("depth")
    if traj.meta.get("source") != "game" or not isinstance(info, dict):
        raise fail(traj.meta.get("path", "<trajectory>"), "depth", "not a game trajectory (no stored depth)")
    rate = float(traj.meta.get("recorded_fps", traj.fps))
    size = traj.meta.get("image_size")
    out = []
    for i in indices:
        k = int(i)
        # Frame k's depth file is numbered as its video frame (a selection keeps the frame references).
        ref = traj.images[k] if traj.images is not None else None
        src = int(round(ref.time * rate)) if ref is not None and ref.time is not None else k
        p = Path(info["path"]) / depth_frame_name(src)
        if not check_regular(p, "depth", k):  # a FIFO or a device: refused, never opened
            raise fail(p, "depth", "missing file", k)
        try:
            with Image.open(p) as im:
                mode = im.mode
                levels = np.asarray(im)
        except FileNotFoundError:
            raise fail(p, "depth", "missing file", k) from None
        except (OSError, ValueError, Image.DecompressionBombError) as e:
            raise fail(p, "depth", f"cannot decode ({e or type(e).__name__})", k) from None
        if mode != "L":
            raise fail(p, "depth", f"expected an 8-bit grey PNG, got mode {mode}", k)
        if size is not None and levels.shape != (size[1], size[0]):
            raise fail(p, "depth", f"expected {size[0]}x{size[1]} pixels, got {levels.shape[1]}x{levels.shape[0]}",
                       k)
        out.append((np.float32(info["offset_m"]) + levels.astype(np.float32) * np.float32(info["scale_m"])))
    return out


# ----- writing ---------------------------------------------------------------------------------------------
def _umask() -> int:
    """The process's umask (read from /proc where it can be, so that it is never changed, even for a moment)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):  # another user's process, or a number the system refuses
        return pid > 0
    return True


def _lock_held(folder: Path) -> bool:
    """Whether a process holds the ``flock`` of ``folder/.lock`` (False when there is no lock file)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: only the process id is looked at
        return False
    try:
        fd = os.open(folder / _LOCK, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def remove_stale_partials(folder) -> list[Path]:
    """Remove, in ``folder``, the partial game trajectory folders that writers killed on the way left behind:
    folders (not links) named ``.<name>.partial-<pid>-<random>`` whose process ``pid`` no longer exists and whose
    ``.lock`` no process holds (a live writer, here or on another machine sharing the folder, keeps both). Returns
    what was removed; what cannot be removed is left."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        m = _PARTIAL.fullmatch(e.name)
        if m is None or not e.is_dir(follow_symlinks=False) or int(m.group(1)) == os.getpid():
            continue
        p = Path(e.path)
        if _alive(int(m.group(1))) or _lock_held(p):
            continue
        shutil.rmtree(p, ignore_errors=True)
        if not os.path.lexists(p):
            removed.append(p)
    return removed


class GameTrajectoryWriter:
    """Writes a game trajectory folder frame by frame; the folder appears at ``out`` only when :meth:`close`
    succeeds (it is built in a hidden sibling folder and renamed). ``out`` must not exist or be an empty folder.

    ``meta``: the provenance fields (``wad``, ``map``, ``engine``, ``explorer``, ...); ``intrinsics`` (3, 3)
    pixels; ``depth``: ``scale_m``, ``offset_m``, ``quantisation_m``, ``far_level``. Use as a context manager:
    an exception removes the partial folder."""

    def __init__(self, out, *, fps: float, width: int, height: int, intrinsics, depth: dict, meta: dict,
                 crf: int = 18):
        self.out = Path(out)
        # A link to a folder is followed (the link stays): the folder is built beside its target and renamed there.
        self._target = Path(os.path.realpath(self.out))
        self.fps, self.width, self.height = float(fps), int(width), int(height)
        self.K = np.asarray(intrinsics, dtype=np.float64)
        self.depth = dict(depth)
        self.meta = dict(meta)
        self.crf = int(crf)
        parent = self._target.parent
        parent.mkdir(parents=True, exist_ok=True)
        remove_stale_partials(parent)  # what writers killed here before left behind
        self._tmp = Path(tempfile.mkdtemp(prefix=f".{self._target.name}.partial-{os.getpid()}-", dir=parent))
        self._lock = self._hold_lock()
        (self._tmp / DEPTH_DIR).mkdir()
        self._poses: list[np.ndarray] = []
        self._tics: list[int] = []
        self._actions: list[tuple] = []
        self._container = None
        self._stream = None
        self._codec = None
        self._options: dict = {}

    def _hold_lock(self):
        """The open ``.lock`` of the partial folder, ``flock``-ed while this writer lives (None where there is no
        flock): how :func:`remove_stale_partials` tells a live writer from a dead one beyond the process id."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            return None
        fd = os.open(self._tmp / _LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    def _drop_lock(self) -> None:
        if getattr(self, "_lock", None) is not None:
            os.close(self._lock)
            self._lock = None

    def _open_video(self):
        import av
        from fractions import Fraction

        self._container = av.open(str(self._tmp / RGB_FILE), "w", format="mp4")
        rate = Fraction(self.fps).limit_denominator(1000)
        try:
            s = self._container.add_stream("libx264", rate=rate)
            s.pix_fmt = "yuv444p"
            self._options = dict(X264_OPTIONS, crf=str(self.crf))
            self._codec = "libx264"
        except (av.FFmpegError, ValueError):  # a PyAV build without x264
            s = self._container.add_stream("mpeg4", rate=rate)
            s.pix_fmt = "yuv420p"
            self._options = {"qscale": "2", "threads": "1"}
            self._codec = "mpeg4"
        s.options = dict(self._options)
        s.width, s.height = self.width, self.height
        s.thread_count = 1
        self._stream = s

    def add(self, rgb: np.ndarray, depth_levels: np.ndarray, pose: np.ndarray, tic: int, action) -> None:
        """One frame: RGB (H, W, 3) uint8, raw depth levels (H, W) uint8, C2W (4, 4) metres, game tic, inputs."""
        import av
        from PIL import Image

        if self._stream is None:
            self._open_video()
        i = len(self._poses)
        frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb, dtype=np.uint8), format="rgb24")
        frame.pts = i
        for packet in self._stream.encode(frame):
            self._container.mux(packet)
        Image.fromarray(np.ascontiguousarray(depth_levels, dtype=np.uint8), mode="L").save(
            self._tmp / DEPTH_DIR / depth_frame_name(i), format="PNG")
        self._poses.append(np.asarray(pose, dtype=np.float64))
        self._tics.append(int(tic))
        self._actions.append(tuple(float(a) for a in action))

    def __len__(self) -> int:
        return len(self._poses)

    def close(self) -> Path:
        """Finish the video, write ``poses.npz`` and ``meta.json``, and move the folder to ``out``."""
        if not self._poses:
            raise ValueError("a game trajectory needs at least one frame")
        for packet in self._stream.encode():
            self._container.mux(packet)
        self._container.close()
        tics = np.asarray(self._tics, dtype=np.int64)
        np.savez_compressed(self._tmp / POSES_FILE, c2w=np.stack(self._poses), timestamps=(tics - tics[0]) / GAME_TICRATE,
                            tics=tics, actions=np.asarray(self._actions, dtype=np.float64))
        meta = {"format": FORMAT, "version": VERSION, "source": "game", "frames": len(self._poses),
                "fps": self.fps, "image": {"width": self.width, "height": self.height},
                "intrinsics": self.K.tolist(), **self.meta,
                "depth": dict(self.depth, encoding="8-bit grey PNG, one a frame: depth/NNNNNN.png",
                              metres="offset_m + level * scale_m (perpendicular distance to the camera plane)"),
                "rgb": {"file": RGB_FILE, "codec": self._codec, "pix_fmt": self._stream.pix_fmt, "crf": self.crf,
                        "options": self._options},
                "files": {"poses": POSES_FILE, "rgb": RGB_FILE, "depth": DEPTH_DIR + "/"}}
        (self._tmp / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        target = self._target
        if os.path.isdir(target) and not os.path.islink(target):
            target.rmdir()  # empty (checked by the caller); rmdir refuses otherwise
        elif os.path.lexists(target):  # a file, FIFO or device put there meanwhile: never replaced
            raise OutputError(f"{self.out}: is not a folder; the game trajectory is not written over it")
        if self._lock is not None:
            os.unlink(self._tmp / _LOCK)  # not part of the trajectory; still held through its open descriptor
        os.chmod(self._tmp, 0o777 & ~_umask())  # mkdtemp made it 0o700: the folder gets what a plain mkdir gives
        os.replace(self._tmp, target)
        self._drop_lock()
        return self.out

    def abort(self) -> None:
        """Remove the partial folder."""
        if self._container is not None:
            try:
                self._container.close()
            except Exception:  # the encoder may already be in a failed state
                pass
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._drop_lock()

    def __enter__(self) -> "GameTrajectoryWriter":
        return self

    def __exit__(self, exc_type, *_) -> None:
        if exc_type is not None:
            self.abort()
