"""The prompt of a generated question (after SpatialScore's evaluation prompts, appendix D.3): the question, its images
in order, the options of one rotation (CircularEval) and how to answer — a letter in parentheses, or one number.

Rotation ``r`` of options ``[o_0, …, o_{n−1}]`` shows ``o_r, o_{r+1}, …, o_{r−1}`` as A, B, …; the correct letter
moves with it (:func:`rotate_options`, :func:`rotated_answer`). Images travel as base64 PNG data URLs of the files'
own bytes. Nothing else about the record (poses, depth, the answer) is sent.
"""

from __future__ import annotations

import base64
from pathlib import Path

from .record import option_letters

__all__ = ["QUESTION_PROMPT_VERSION", "QUESTION_SYSTEM_PROMPT", "rotate_options", "rotated_answer", "n_rotations",
           "question_prompt", "UNIT_NAMES"]

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


def _data_url(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f"image {path}: cannot be read ({e.strerror or e})") from None
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


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
