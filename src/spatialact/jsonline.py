"""Reading JSON Lines (task files, answer files): lines of bounded length, and fast decoding of one line.

Every line of an input file is at most :data:`MAX_LINE_BYTES` (16 MiB) long, its line end not counted: a reader
never holds more of one line. :func:`read_bounded` reads a whole file (a task file) and raises :class:`LineTooLong`
as soon as a line passes the limit; :func:`iter_lines` reads one line at a time (an answer file) and gives a
:class:`LongLine` marker for each longer line, whose bytes it skips in bounded memory; a single line of more than
:data:`MAX_SKIP_BYTES` (1 GiB) with no line end — ``/dev/zero`` — ends the reading with :class:`LineTooLong`.

Decoding: orjson where it gives the standard parser's answer, the standard parser everywhere else.

orjson (a light-core dependency) reads a line 2–3× faster than the ``json`` module, but it reads an integer beyond
64 bits as a float (a task id or a count written as a long number must not change). A line with a run of 19 or more
digits therefore goes to the standard parser; a float's repr has at most 17 significant digits, so no float is sent
there. Digits are mapped to ``"1"`` and everything else to ``"0"`` first, so the test is a substring search in C (a
regex would backtrack on every 17-digit float). Whatever orjson refuses (NaN, a BOM, a lone surrogate, 1e400, too
deep a nesting) goes to the standard parser too, which decides — and whose message says more.
"""

from __future__ import annotations

import os
from typing import IO, Any, Callable, Iterator

__all__ = ["fast_loads", "open_input", "stored_path", "strict_json", "read_bounded", "iter_lines", "LongLine",
           "LineTooLong", "MAX_LINE_BYTES", "MAX_SKIP_BYTES"]

#: The longest line an input file may have, in bytes, its line end not counted (task, answer and question files).
MAX_LINE_BYTES = 16 << 20
#: The most bytes of one over-long line :func:`iter_lines` skips looking for its end before it gives up.
MAX_SKIP_BYTES = 1 << 30
_BLOCK = 16 << 20


class LineTooLong(ValueError):
    """A line longer than the limit (:func:`read_bounded`), or one with no end in sight (:func:`iter_lines`).
    ``lineno`` is its 1-based number; the message says ``line N: ...``."""

    def __init__(self, lineno: int, what: str):
        super().__init__(f"line {lineno}: {what}")
        self.lineno = lineno
        self.what = what


class LongLine(bytes):
    """What :func:`iter_lines` gives for a line longer than the limit: an empty ``bytes`` (never blank to a
    reader that asks ``type(raw) is LongLine`` first) carrying the line's length in ``nbytes``."""

    nbytes: int = 0

    def __reduce__(self):  # pickled to worker processes with its length
        return _long_line, (self.nbytes,)


def _long_line(nbytes: int) -> LongLine:
    x = LongLine()
    x.nbytes = nbytes
    return x


def _mib(n: int) -> str:
    return f"{n / (1 << 20):g} MiB"


def read_bounded(f: IO[bytes], limit: int | None = None) -> bytes:
    """All of ``f`` (a whole task or question file), refused with :class:`LineTooLong` as soon as a line is longer
    than ``limit`` bytes (default :data:`MAX_LINE_BYTES`): at most ``limit`` bytes plus one block of such a line are held, whatever the input
    (``/dev/zero``, a pipe, a file of one huge line). Read in blocks no longer than ``limit``, so a line longer
    than the limit always reaches past a block's first or last line end: only those two are measured."""
    limit = MAX_LINE_BYTES if limit is None else limit
    block = max(1, min(_BLOCK, limit))
    parts: list[bytes] = []
    run = 0  # bytes of the current line so far (since the last line end)
    newlines = 0  # line ends before the current line
    while b := f.read(block):
        first = b.find(b"\n")
        if first < 0:
            run += len(b)
        elif run + first > limit:
            run += first
            break
        else:
            newlines += b.count(b"\n")
            run = len(b) - b.rfind(b"\n") - 1
        if run > limit:
            break
        parts.append(b)
    if run > limit:
        raise LineTooLong(newlines + 1, f"longer than {_mib(limit)} (the longest line a file may have)")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def iter_lines(f: IO[bytes], limit: int | None = None) -> Iterator[bytes]:
    """The lines of ``f`` (an answer file), one at a time, without their line end (``\\n``): a line longer than
    ``limit`` bytes (default :data:`MAX_LINE_BYTES`) comes as a :class:`LongLine` (its bytes skipped, never held),
    so a reader can count it as a bad line and go on. A line with no end within :data:`MAX_SKIP_BYTES` raises
    :class:`LineTooLong` (an endless stream of bytes with no line end, e.g. ``/dev/zero``, is no JSON Lines file).
    Read in blocks of 1 MiB, split in C."""
    limit = MAX_LINE_BYTES if limit is None else limit
    read = f.read
    head: list[bytes] = []  # the start of the current line, when it spans blocks
    held = 0  # its length
    skipped = -1  # >= 0: bytes of an over-long current line skipped so far
    lineno = 0
    while b := read(1 << 20):
        if skipped >= 0:
            k = b.find(b"\n")
            if k < 0:
                skipped += len(b)
                if skipped > MAX_SKIP_BYTES:
                    raise LineTooLong(lineno + 1, f"no line end within {_mib(MAX_SKIP_BYTES)}: not a JSON Lines "
                                                  "file")
                continue
            lineno += 1
            yield _long_line(skipped + k)
            skipped = -1
            b = b[k + 1:]
        lines = b.split(b"\n")
        last = lines.pop()  # the part after the block's last line end (a whole block when it has none)
        if lines and head:
            head.append(lines[0])
            lines[0] = b"".join(head)
            head, held = [], 0
        for line in lines:
            lineno += 1
            yield line if len(line) <= limit else _long_line(len(line))
        if held + len(last) > limit:
            skipped, head, held = held + len(last), [], 0
        elif last:
            head.append(last)
            held += len(last)
    if skipped >= 0:
        yield _long_line(skipped)
    elif head:
        yield b"".join(head)


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
