"""``load_trajectory``: one entry point for every format, guessed from the file when not given."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import fail
from .trajectory import Trajectory, check_fps

__all__ = ["load_trajectory", "guess_format", "FORMATS"]

FORMATS = ("npz", "json", "tum", "kitti", "realestate10k", "droid", "egodex", "game")


def guess_format(path) -> str:
    """The format of ``path`` from its name and, for text files, its first data line.

    A directory (or an ``info.json``) with ``meta/info.json`` is a LeRobot dataset (DROID); a directory with a
    ``meta.json`` (or that ``meta.json``) is a game trajectory (``spatialact game record``); ``.hdf5`` / ``.h5`` is
    EgoDex; ``.npz`` and other ``.json`` files are the generic layout; text files are sniffed (8 numbers a line:
    TUM, 12: KITTI, a URL or 19 numbers: RealEstate10K).
    """
    p = Path(path)
    if p.is_dir():  # whatever sits at the file that names the layout: the reader says if it is no regular file
        if os.path.lexists(p / "meta" / "info.json"):
            return "droid"
        if os.path.lexists(p / "meta.json"):
            return "game"
        raise fail(p, "meta/info.json", "missing (a directory is read as a LeRobot dataset, or as a game trajectory "
                                        "when it has meta.json; this is not a LeRobot dataset)")
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    suffix = p.suffix.lower()
    if suffix == ".json" and p.name == "info.json" and p.parent.name == "meta":
        return "droid"
    if p.name == "meta.json" and (p.parent / "poses.npz").exists():
        return "game"
    if suffix in (".hdf5", ".h5"):
        return "egodex"
    if suffix == ".npz":
        return "npz"
    if suffix == ".json":
        return "json"
    if suffix == ".tum":
        return "tum"
    from .generic import sniff_text_format

    fmt = sniff_text_format(p)
    if fmt is None:
        raise fail(p, "(file)", f"cannot tell the trajectory format; pass format= one of {', '.join(FORMATS)}")
    return fmt


def load_trajectory(path: str | os.PathLike, format: str | None = None, *, episode: int | None = None,
                    entity: str | None = None, fps: float | None = None, **options) -> Trajectory:
    """Read a trajectory file (docs/trajectories.md) into a :class:`Trajectory` (C2W float64 poses, world +Z up,
    metres).

    ``format``: one of :data:`FORMATS`, guessed when None. ``episode``: which episode of a LeRobot (DROID) dataset
    (default: the first). ``entity``: what moves (EgoDex: ``camera``, ``rightHand`` (default), ``leftHand``;
    DROID: ``end_effector``). ``fps`` overrides the file's rate. ``options``: reader-specific, e.g. DROID's
    ``camera="exterior_1_left"`` (which video and extrinsics to attach).
    Raises :class:`TrajectoryError` (a ValueError), one line naming the file, the field and the frame;
    :class:`FileNotFoundError` when ``path`` does not exist.
    """
    if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
        # a character device (/dev/zero), a FIFO or a socket: never read (a reader would hold it whole in memory)
        raise fail(path, "(file)", "not a regular file or folder (a device, a pipe or a socket); name a trajectory "
                                   "file or folder")
    fmt = (format or guess_format(path)).lower()
    if fmt in ("re10k", "realestate"):
        fmt = "realestate10k"
    if fmt == "lerobot":
        fmt = "droid"
    if fmt not in FORMATS:
        raise ValueError(f"unknown trajectory format {format!r} (expected one of {', '.join(FORMATS)})")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or directory")
    if fmt in ("npz", "json", "tum", "kitti", "realestate10k", "game") and entity not in (None, "camera"):
        raise fail(path, "entity", f"{fmt} trajectories have one moving camera; entity {entity!r} is not available")
    if fps is not None:
        fps = check_fps(fps, path, "fps (option)")
    if fmt == "npz":
        from .generic import read_npz as reader
    elif fmt == "json":
        from .generic import read_json as reader
    elif fmt == "tum":
        from .generic import read_tum as reader
    elif fmt == "kitti":
        from .generic import read_kitti as reader
    elif fmt == "realestate10k":
        from .generic import read_realestate10k as reader
    elif fmt == "droid":
        from .droid import read_droid as reader
    elif fmt == "game":
        from .game import read_game as reader
    else:
        from .egodex import read_egodex as reader
    try:
        traj = reader(path, episode=episode, entity=entity, fps=fps, **options)
    except FileNotFoundError:  # names the missing file (a DROID data file, an EgoDex video, ...)
        raise
    except (OSError, EOFError) as e:  # a file the operating system will not hand over (permissions, a folder, ...)
        raise fail(path, "(file)", f"cannot read ({getattr(e, 'strerror', None) or e or type(e).__name__})") from None
    except MemoryError:
        raise fail(path, "(file)", "too large to read into memory") from None
    if fmt in ("npz", "json", "tum", "kitti", "realestate10k") and "kind" not in traj.meta:
        traj.meta["kind"] = "nav"
    return traj
