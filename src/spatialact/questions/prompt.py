"""The prompt of a generated question (after SpatialScore's evaluation prompts, appendix D.3): the question, its images
in order, the options of one rotation (CircularEval) and how to answer — a letter in parentheses, or one number.

Rotation ``r`` of options ``[o_0, …, o_{n−1}]`` shows ``o_r, o_{r+1}, …, o_{r−1}`` as A, B, …; the correct letter
moves with it (:func:`rotate_options`, :func:`rotated_answer`). Images travel as base64 PNG data URLs: a well-formed
PNG file's own bytes, another image format decoded and re-encoded as PNG; any other file is refused
(:func:`image_png_bytes`), so a question file cannot make the prompt carry an arbitrary file. Nothing else about the
record (poses, depth, the answer) is sent.
"""

from __future__ import annotations

import base64
import io
import zlib
from pathlib import Path

import numpy as np

from .io import option_letters

__all__ = ["QUESTION_PROMPT_VERSION", "QUESTION_SYSTEM_PROMPT", "rotate_options", "rotated_answer", "n_rotations",
           "question_prompt", "image_png_bytes", "UNIT_NAMES"]

# Bump when the template text changes: it is part of every question record's provenance.
QUESTION_PROMPT_VERSION = "spatialact-questions-v1"
QUESTION_SYSTEM_PROMPT = ("You are an expert in visual geometry and spatial reasoning. You look at images and answer "
                          "questions about the cameras and the scene exactly in the requested format.")
UNIT_NAMES = {"m": "metres", "deg": "degrees", "px": "pixels"}


def n_rotations(q: dict) -> int:
    """How many rotations CircularEval asks: the number of options (1 for a numeric question)."""
    return len(q["options"]) if q.get("options") else 1


def _check_rotation(q: dict, rotation: int) -> int:
    r = int(rotation)
    if not 0 <= r < n_rotations(q):
        raise ValueError(f"question {q.get('id')!r}: rotation {rotation} is not in 0..{n_rotations(q) - 1}")
    return r


def rotate_options(options: list, rotation: int) -> list:
    """``options`` rotated left by ``rotation``: the option shown as A is ``options[rotation]``."""
    r = int(rotation) % max(1, len(options))
    return list(options[r:]) + list(options[:r])


def rotated_answer(q: dict, rotation: int = 0):
    """The correct answer under ``rotation``: the letter where the stored answer's option is shown (numeric
    questions: the number)."""
    r = _check_rotation(q, rotation)
    if q["format"] == "numeric":
        return q["answer"]
    n = len(q["options"])
    k = option_letters(n).index(q["answer"])
    return option_letters(n)[(k - r) % n]


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _png_problem(data: bytes) -> str | None:
    """Why ``data`` is not a well-formed PNG (signature, an IHDR first, every chunk's CRC, an IDAT, IEND at the
    very end), or None. Pure Python and linear in the size: prompting needs no imaging library for PNGs."""
    if not data.startswith(_PNG_SIGNATURE):
        return "no PNG signature"
    pos, seen, n = len(_PNG_SIGNATURE), [], len(data)
    while pos < n:
        if pos + 12 > n:
            return "truncated chunk"
        length = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        end = pos + 12 + length
        if length > 0x7FFFFFFF or end > n:
            return "truncated chunk"
        if zlib.crc32(data[pos + 4:pos + 8 + length]) != int.from_bytes(data[end - 4:end], "big"):
            return f"bad CRC in chunk {kind!r}"
        seen.append(kind)
        pos = end
        if kind == b"IEND":
            break
    if not seen or seen[0] != b"IHDR":
        return "no IHDR chunk first"
    if b"IDAT" not in seen:
        return "no image data"
    if seen[-1] != b"IEND" or pos != n:
        return "no IEND chunk at the end"
    return None


def image_png_bytes(path: str) -> bytes:
    """The PNG bytes sent for the image file ``path``: a well-formed PNG's own bytes; another image format decoded
    and re-encoded as PNG (needs Pillow). Anything else — a text file, a truncated or forged PNG — raises a one-line
    ValueError naming the file, so a question file cannot make a prompt carry an arbitrary file."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"image {path}: cannot be read ({e.strerror or e})") from None
    why = _png_problem(data)
    if why is None:
        return data
    if data.startswith(_PNG_SIGNATURE):
        raise ValueError(f"image {path}: not an image file (a broken PNG: {why})")
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise ValueError(f"image {path}: not a PNG image file (other formats need Pillow to be re-encoded)") \
            from None
    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()  # decodes every pixel: a truncated or forged file fails here, not at the endpoint
            from ..agents.images import png_bytes

            return png_bytes(np.asarray(im.convert("RGB")))
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as e:
        raise ValueError(f"image {path}: not an image file PIL can decode ({str(e).splitlines()[0][:80]})") \
            from None


def _data_url(path: str) -> str:
    return "data:image/png;base64," + base64.b64encode(image_png_bytes(path)).decode("ascii")


def question_prompt(q: dict, rotation: int = 0) -> list[dict]:
    """The chat-completions ``messages`` of question ``q`` under option ``rotation``."""
    r = _check_rotation(q, rotation)
    content: list[dict] = [{"type": "text", "text": "Question: " + q["question"]}]
    for k, im in enumerate(q["images"], 1):
        role = f" ({im['role']})" if im.get("role") else ""
        content.append({"type": "text", "text": f"Image {k}{role}:"})
        content.append({"type": "image_url", "image_url": {"url": _data_url(im["path"])}})
    if q["format"] == "numeric":
        unit = UNIT_NAMES.get(q.get("unit"), q.get("unit") or "")
        content.append({"type": "text", "text": f"Answer with a single number in {unit}, for example: 1.5"})
    else:
        opts = rotate_options(q["options"], r)
        letters = option_letters(len(opts))
        listing = "\n".join(f"({letters[i]}) {o}" for i, o in enumerate(opts))
        choices = ", ".join(f"({c})" for c in letters)
        content.append({"type": "text", "text": f"Options:\n{listing}\n\nSelect the correct option from {choices}. "
                                                "Respond only with the letter and its parentheses, for example: (A)"})
    return [{"role": "system", "content": QUESTION_SYSTEM_PROMPT}, {"role": "user", "content": content}]
