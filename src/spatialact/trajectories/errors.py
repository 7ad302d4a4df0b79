"""The one error every trajectory reader raises, :class:`TrajectoryError`, and how its one-line message is built.

:func:`fail` makes the message ``<file>: field '<name>'[, frame <i>]: <problem>``; :func:`describe_value` says in a
few bounded words what a field held instead of what it needs. Kept apart from :mod:`.trajectory` so that the frame
decoder (:mod:`.video`), which the ``Trajectory`` type uses, raises the same error without importing it.
"""

from __future__ import annotations

import numpy as np

from ..jsonline import input_problem

__all__ = ["TrajectoryError", "fail", "describe_value", "check_regular"]


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read; the message is one line: file, field, frame index, problem."""


def _where(path, field_name: str, frame: int | None = None) -> str:
    at = f", frame {frame}" if frame is not None else ""
    p = str(path)
    if "\n" in p or "\r" in p:
        p = repr(p)
    return f"{p}: field '{field_name}'{at}"


def fail(path, field_name: str, problem, frame: int | None = None) -> TrajectoryError:
    """Build the one-line error every reader raises: ``<file>: field '<name>'[, frame <i>]: <problem>``.

    ``problem`` may be an exception (a library's message); its whitespace, newlines included, is collapsed."""
    text = " ".join(str(problem).split()) or type(problem).__name__
    return TrajectoryError(f"{_where(path, field_name, frame)}: {text}")


def check_regular(path, field_name: str = "(file)", frame: int | None = None) -> bool:
    """Whether the file ``path`` of a recording (its meta.json, poses, a video, a depth frame) is there: True for a
    regular file (or a link to one), False when nothing is there (the caller says "missing" its own way); anything
    else raises the one-line :class:`TrajectoryError` saying what it is — ``is a FIFO (named pipe), not a regular
    file`` (reading would wait for a writer for ever), ``is a character device, ...`` (``/dev/zero`` never ends), a
    folder, a socket — found before anything opens it (``jsonline.input_problem``)."""
    why = input_problem(path)
    if why == "no such file":
        return False
    if why is not None:
        raise fail(path, field_name, why, frame)
    return True


def describe_value(v) -> str:
    """A short description of a value that was not what a field needs (for error messages; bounded length)."""
    if v is None:
        return "null"
    if isinstance(v, (bool, np.bool_)):
        return f"the boolean {bool(v)}"
    if isinstance(v, (int, float, np.integer, np.floating)):  # a float as written (351.0 is not the whole number 351)
        return f"the number {v!s}" if isinstance(v, (float, np.floating)) else f"the number {int(v)}"
    if isinstance(v, (str, bytes, np.str_, np.bytes_)):
        t = v if isinstance(v, str) else bytes(v).decode("utf-8", "replace")
        return f"the text {t[:40]!r}" + ("..." if len(t) > 40 else "")
    if isinstance(v, dict):
        return f"an object with {len(v)} key{'' if len(v) == 1 else 's'}"
    if isinstance(v, (list, tuple)):
        return f"a list of {len(v)}"
    if isinstance(v, np.ndarray):
        return f"an array of shape {v.shape} ({v.dtype})"
    return f"a value of type {type(v).__name__}"
