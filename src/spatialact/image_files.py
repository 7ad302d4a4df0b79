"""The image files a task or question file names: one size limit and one way to check and read them.

A task's ``start_image``, ``goal_image`` and ``example.start_image``, and a question's ``images[].path``, are
files a user (or a downloaded suite) supplies. Read carelessly they end in a traceback: a PNG that claims
20 000 × 20 000 pixels in a few kilobytes (a decompression bomb: Pillow's ``DecompressionBombError``, or 1.2 GB
allocated), a PNG cut off after its header, a text file. Here they are one-line problems, found before a run
starts:

* :data:`MAX_IMAGE_PIXELS` — 64 megapixels (width × height, e.g. 8000 × 8000): the largest image read. Larger is
  refused from the header alone, before any pixel is decoded (whatever ``PIL.Image.MAX_IMAGE_PIXELS`` says);
* :func:`image_file_problem` — why a file is no usable image (no such file, not a regular file, not an image,
  over the size limit, or — with ``decode`` — pixel data that does not decode), or None; the decode is done once
  per file version (path, size, modification time);
* :func:`image_size_problem` — the size limit alone (for a reader that checks the rest its own way);
* :func:`read_image_rgb` — the image as an (H, W, 3) uint8 RGB array, or :class:`ImageFileError`;
* :func:`array_sha256` — the SHA-256 of an image's pixels (a frozen suite pins its rendered images with it).

Messages name the file but not the task or field: the caller prefixes ``task 'x': start_image``.
"""

from __future__ import annotations

import os
import stat
import warnings
from functools import lru_cache

import numpy as np

__all__ = ["MAX_IMAGE_PIXELS", "ImageFileError", "image_file_problem", "image_size_problem", "read_image_rgb",
           "array_sha256"]

#: The largest image (width × height, pixels) read from a file a task or question names: 64 megapixels.
MAX_IMAGE_PIXELS = 64_000_000


class ImageFileError(ValueError):
    """An image file that cannot be used; the message is one line naming the file."""


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:120] if lines else e.__class__.__name__


def _too_large(w: int, h: int) -> str:
    return (f"{w}×{h} pixels is {_OVER} of {MAX_IMAGE_PIXELS // 1_000_000} megapixels "
            f"(spatialact.image_files.MAX_IMAGE_PIXELS)")


_OVER = "over the image size limit"


def _open(path: str):
    """``PIL.Image.open`` with Pillow's own bomb check turned into our limit: (image, None) or (None, problem)."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        return None, "reading images needs Pillow (pip install 'spatialact[sim]')"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(path)
    except Image.DecompressionBombError as e:  # over Pillow's own (larger) limit: refused by the header too
        return None, f"{_OVER} of {MAX_IMAGE_PIXELS // 1_000_000} megapixels ({_first_line(e)})"
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, EOFError) as e:
        return None, f"not an image Pillow can read ({_first_line(e)})"
    w, h = im.size
    if w * h > MAX_IMAGE_PIXELS:
        im.close()
        return None, _too_large(w, h)
    return im, None


def _decode(im) -> str | None:
    try:
        im.load()  # every pixel: a file cut off or damaged after its header fails here
    except Exception as e:  # noqa: BLE001 - any decoder failure (OSError, zlib, struct, …) is a broken file
        return f"cannot be decoded ({_first_line(e)})"
    return None


@lru_cache(maxsize=4096)
def _problem_of_version(path: str, size: int, mtime_ns: int, decode: bool) -> str | None:
    im, problem = _open(path)
    if problem is None:
        with im:
            problem = _decode(im) if decode else None
    return problem


def image_file_problem(path, *, decode: bool = True) -> str | None:
    """Why ``path`` is no usable image file (one line, without the path), or None. Checks that it is a regular file
    (not a folder, a FIFO or a device), that Pillow can read its header, that it holds at most
    :data:`MAX_IMAGE_PIXELS` pixels and, with ``decode`` (default), that its pixel data decodes — the decode is done
    once per path, size and modification time."""
    p = os.fspath(path)
    try:
        st = os.stat(p)
    except OSError:
        return "no such file"
    if not stat.S_ISREG(st.st_mode):
        return "not a file" if stat.S_ISDIR(st.st_mode) else "not a regular file"
    return _problem_of_version(p, st.st_size, st.st_mtime_ns, bool(decode))


def image_size_problem(path) -> str | None:
    """Why ``path`` is over :data:`MAX_IMAGE_PIXELS` (read from its header), or None — also None when it is no
    readable image at all, which :func:`image_file_problem` says."""
    problem = image_file_problem(path, decode=False)
    return problem if problem is not None and _OVER in problem else None


def read_image_rgb(path) -> np.ndarray:
    """The image file ``path`` as an (H, W, 3) uint8 RGB array. A file that is missing, not an image, over
    :data:`MAX_IMAGE_PIXELS` or damaged raises :class:`ImageFileError` (``"<path>: <problem>"``)."""
    p = os.fspath(path)
    problem = image_file_problem(p, decode=False)
    if problem is None:
        im, problem = _open(p)
        if problem is None:
            with im:
                problem = _decode(im)
                if problem is None:
                    return np.asarray(im.convert("RGB"))
    raise ImageFileError(f"{p}: {problem}")


def array_sha256(rgb) -> str:
    """The SHA-256 (hex) of an image's pixels: of ``np.ascontiguousarray(rgb, np.uint8).tobytes()``, the (H, W, 3)
    uint8 RGB bytes in row-major order (the shape is not hashed). A frozen suite's tasks pin their start and goal
    images with it (``meta["image_sha256"]``); an episode compares what it rendered (``images_match``)."""
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(rgb, np.uint8).tobytes()).hexdigest()
