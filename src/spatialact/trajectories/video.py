"""Frame decoding: mp4 (or any container FFmpeg reads) with PyAV, still images with Pillow.

Times are seconds from the start of the file. A frame is matched to the request whose time it covers: the last
decoded frame whose presentation time is at or before the requested time plus half a frame period, so a request
that falls exactly on a frame boundary gets that frame even when the container rounds its timestamps.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

__all__ = ["read_frames", "video_info", "write_png"]


def video_info(path: str) -> dict:
    """Frame count, rate, width and height of the first video stream (from the container; no full decode)."""
    import av

    with av.open(str(path)) as c:
        s = c.streams.video[0]
        rate = float(s.average_rate) if s.average_rate else None
        return {"frames": int(s.frames), "fps": rate, "width": s.codec_context.width,
                "height": s.codec_context.height}


def _decode_at(path: str, times: Sequence[float]) -> list[np.ndarray]:
    import av

    order = np.argsort(times)
    want = np.asarray(times, dtype=np.float64)[order]
    out: list[np.ndarray | None] = [None] * len(want)
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        rate = float(s.average_rate) if s.average_rate else 30.0
        half = 0.5 / rate
        tb = float(s.time_base)
        start = max(0.0, want[0] - 1.0)
        if start > 0:
            # Seek lands on the keyframe before `start`; decoding forward from there is exact.
            c.seek(int(start / tb), stream=s, backward=True, any_frame=False)
        k, last = 0, None
        for frame in c.decode(s):
            t = (frame.pts if frame.pts is not None else 0) * tb
            while k < len(want) and t > want[k] + half:
                if last is None:
                    break
                out[k] = last
                k += 1
            if k >= len(want):
                break
            last = frame.to_ndarray(format="rgb24")
        while k < len(want) and last is not None:
            out[k] = last
            k += 1
    if any(o is None for o in out):
        raise ValueError(f"{path}: could not decode frames at times {list(times)}")
    result: list[np.ndarray] = [None] * len(want)  # type: ignore[list-item]
    for dst, src in enumerate(order):
        result[src] = out[dst]
    return result


def read_frames(refs) -> list[np.ndarray]:
    """RGB (H, W, 3) uint8 images for a list of :class:`FrameRef` (each video file is opened once)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(refs):
        groups[r.path].append(i)
    out: list[np.ndarray] = [None] * len(refs)  # type: ignore[list-item]
    for path, idx in groups.items():
        if refs[idx[0]].time is None:
            from PIL import Image

            img = np.asarray(Image.open(path).convert("RGB"))
            for i in idx:
                out[i] = img
            continue
        imgs = _decode_at(path, [refs[i].time for i in idx])
        for i, img in zip(idx, imgs):
            out[i] = img
    return out


def write_png(path, rgb: np.ndarray) -> str:
    """Write an (H, W, 3) uint8 image as PNG; returns the path."""
    from PIL import Image

    Image.fromarray(np.ascontiguousarray(rgb, dtype=np.uint8)).save(str(path), format="PNG")
    return str(path)
