"""Fast decoding of one JSON line (task files, answer files): orjson where it gives the standard parser's answer,
the standard parser everywhere else.

orjson (a light-core dependency) reads a line 2–3× faster than the ``json`` module, but it reads an integer beyond
64 bits as a float (a task id or a count written as a long number must not change). A line with a run of 19 or more
digits therefore goes to the standard parser; a float's repr has at most 17 significant digits, so no float is sent
there. Digits are mapped to ``"1"`` and everything else to ``"0"`` first, so the test is a substring search in C (a
regex would backtrack on every 17-digit float). Whatever orjson refuses (NaN, a BOM, a lone surrogate, 1e400, too
deep a nesting) goes to the standard parser too, which decides — and whose message says more.
"""

from __future__ import annotations

import os
from typing import IO, Any, Callable

__all__ = ["fast_loads", "open_input", "stored_path", "strict_json"]

_DIGITS_AS_ONES = bytes(0x31 if 0x30 <= i <= 0x39 else 0x30 for i in range(256))
_NINETEEN_DIGITS = b"1" * 19


def fast_loads(standard: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """A ``loads(raw: bytes)`` that gives what ``standard`` gives (the caller's own rules: encoding, NaN, errors),
    through orjson where that is the same answer; ``standard`` itself when orjson is not installed."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a core dependency
        return standard

    def loads(raw: bytes):
        if _NINETEEN_DIGITS in raw.translate(_DIGITS_AS_ONES):
            return standard(raw)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return standard(raw)

    return loads


def open_input(path: str | os.PathLike, kind: str, error: type[Exception] = FileNotFoundError) -> IO[bytes]:
    """Open an input file (a task, question or answers file: ``kind`` names it) for binary reading: a regular file,
    a pipe or a device. What cannot be read raises ``error`` with one line naming the path — ``no such <kind>``,
    ``is a folder, not a <kind>``, ``cannot be read (<reason>)`` — the messages every reader gives."""
    article = "an" if kind[:1] in "aeiou" else "a"
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise error(f"{path}: no such {kind}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not {article} {kind}") from None
    except OSError as e:
        raise error(f"{path}: cannot be read ({e.strerror or e})") from None


def stored_path(p: str | None, base: str | os.PathLike) -> str | None:
    """How a JSONL file in the folder ``base`` stores the path ``p`` of one of its records: relative to ``base`` when
    the file lies under it (the folder moves whole), else absolute. In memory a relative ``p`` is relative to the
    working directory, as every Python path; the loaders resolve stored relative paths against the file's folder."""
    if not p:
        return p
    from pathlib import Path

    full, root = Path(p).resolve(), Path(base).resolve()
    return os.path.relpath(full, root) if full.is_relative_to(root) else str(full)


def strict_json(x: Any) -> Any:
    """``x`` with NaN and ±inf as None and numpy scalars / arrays as plain values (recursively), so that
    ``json.dumps(..., allow_nan=False)`` writes strict JSON: what every ``--json`` output and scores line is."""
    if isinstance(x, float):
        return x if x - x == 0.0 else None
    if isinstance(x, dict):
        return {k: strict_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [strict_json(v) for v in x]
    if type(x).__module__ == "numpy":
        return strict_json(x.tolist()) if hasattr(x, "tolist") else x
    return x
