"""Frame decoding: mp4 (or any container FFmpeg reads) with PyAV, still images with Pillow.

Times are seconds from the start of the file. A frame is matched to the request whose time it covers: the last
decoded frame whose presentation time is at or before the requested time plus half a frame period, so a request
that falls exactly on a frame boundary gets that frame even when the container rounds its timestamps. A request more
than one frame period past the last frame, or before the first, is an error (the video is shorter than the
trajectory), not a repeated frame.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from .errors import TrajectoryError, check_regular, fail

__all__ = ["read_frames", "video_info", "write_png"]


def video_info(path: str) -> dict:
    """Frame count, rate, width and height of the first video stream (from the container; no full decode)."""
    import av

    if not check_regular(path, "video"):  # a FIFO or a device: refused, never opened
        raise fail(path, "video", "missing file")
    try:
        with av.open(str(path)) as c:
            if not c.streams.video:
                raise fail(path, "video", "no video stream in the file")
            s = c.streams.video[0]
            rate = float(s.average_rate) if s.average_rate else None
            return {"frames": int(s.frames), "fps": rate, "width": s.codec_context.width,
                    "height": s.codec_context.height}
    except TrajectoryError:
        raise
    except (OSError, ValueError, av.FFmpegError) as e:
        raise fail(path, "video", f"cannot open ({e or type(e).__name__})") from None


def _decode_at(path: str, times: Sequence[float], labels: Sequence[int]) -> list[np.ndarray]:
    import av

    order = np.argsort(times)
    want = np.asarray(times, dtype=np.float64)[order]
    out: list[np.ndarray | None] = [None] * len(want)
    with av.open(str(path)) as c:
        if not c.streams.video:
            raise fail(path, "video", "no video stream in the file", labels[order[0]])
        s = c.streams.video[0]
        rate = float(s.average_rate) if s.average_rate else 30.0
        half = 0.5 / rate
        tb = float(s.time_base)
        start = max(0.0, want[0] - 1.0)
        if start > 0:
            # Seek lands on the keyframe before `start`; decoding forward from there is exact.
            c.seek(int(start / tb), stream=s, backward=True, any_frame=False)
        k, last, last_t, first_t = 0, None, None, None
        for frame in c.decode(s):
            t = (frame.pts if frame.pts is not None else 0) * tb
            first_t = t if first_t is None else first_t
            while k < len(want) and t > want[k] + half:
                if last is None:
                    break
                out[k] = last
                k += 1
            if k >= len(want):
                break
            last, last_t = frame.to_ndarray(format="rgb24"), t
        while k < len(want) and last is not None:
            # Past the last decoded frame: it covers one frame period (plus the half-period matching slack).
            if want[k] > last_t + 1.0 / rate + half:
                raise fail(path, "video", f"time {want[k]:.4g} s is past the last frame ({last_t:.4g} s); the video "
                                          "is shorter than the trajectory", labels[order[k]])
            out[k] = last
            k += 1
    for dst, o in enumerate(out):
        if o is None:
            where = f"the first frame decoded is at {first_t:.4g} s" if first_t is not None else "no frame decoded"
            raise fail(path, "video", f"no frame at time {want[dst]:.4g} s ({where})", labels[order[dst]])
    result: list[np.ndarray] = [None] * len(want)  # type: ignore[list-item]
    for dst, src in enumerate(order):
        result[src] = out[dst]
    return result


def read_frames(refs, frames: Sequence[int] | None = None) -> list[np.ndarray]:
    """RGB (H, W, 3) uint8 images for a list of :class:`FrameRef` (each video file is opened once).

    ``frames``: the trajectory frame index of each reference, named in errors (default: the position in ``refs``).
    A missing, unreadable or too short file raises :class:`TrajectoryError` naming the file, the field (``video``
    or ``image``) and the frame.
    """
    import av
    from PIL import Image

    labels = list(range(len(refs))) if frames is None else [int(i) for i in frames]
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(refs):
        groups[r.path].append(i)
    out: list[np.ndarray] = [None] * len(refs)  # type: ignore[list-item]
    for path, idx in groups.items():
        still = refs[idx[0]].time is None
        field = "image" if still else "video"
        if not check_regular(path, field, labels[idx[0]]):  # a FIFO or a device: refused, never opened
            raise fail(path, field, "missing file", labels[idx[0]])
        try:
            if still:
                with Image.open(path) as im:
                    img = np.asarray(im.convert("RGB"))
                for i in idx:
                    out[i] = img
                continue
            imgs = _decode_at(path, [refs[i].time for i in idx], [labels[i] for i in idx])
        except TrajectoryError:
            raise
        except FileNotFoundError:
            raise fail(path, field, "missing file", labels[idx[0]]) from None
        except (OSError, ValueError, EOFError, IndexError, av.FFmpegError, Image.DecompressionBombError) as e:
            raise fail(path, field, f"cannot decode ({e or type(e).__name__})", labels[idx[0]]) from None
        for i, img in zip(idx, imgs):
            out[i] = img
    return out


def write_png(path, rgb: np.ndarray) -> str:
    """Write an (H, W, 3) uint8 image as PNG; returns the path."""
    from PIL import Image

    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(str(path), format="PNG")
    return str(path)
