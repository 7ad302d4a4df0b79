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

Inputs are regular files: :func:`check_input` looks at what a path names before anything opens it, and refuses a
FIFO (opening one waits for a writer that may never come), a device (``/dev/zero`` never ends), a socket or a folder
in one line naming the path and what it is; :func:`open_input` (every reader of task, answer and question files)
applies it, then opens without blocking and checks again what it opened.

Nesting: no JSON value an input holds may nest arrays and objects deeper than :data:`MAX_JSON_DEPTH` (256) levels.
:func:`check_depth` measures a line in linear time before any decoder sees it (the standard parser recurses once a
level and ends in a RecursionError long before 100,000 levels; msgspec likewise); :func:`fast_loads` applies it to
every line it decodes.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Any, Callable, Iterator

__all__ = ["fast_loads", "open_input", "check_input", "input_problem", "node_kind", "check_depth", "json_depth",
           "TooDeep", "stored_path", "strict_json", "read_bounded", "iter_lines", "LongLine", "LineTooLong",
           "MAX_LINE_BYTES", "MAX_SKIP_BYTES", "MAX_JSON_DEPTH"]

#: The longest line an input file may have, in bytes, its line end not counted (task, answer and question files).
MAX_LINE_BYTES = 16 << 20
#: The most bytes of one over-long line :func:`iter_lines` skips looking for its end before it gives up.
MAX_SKIP_BYTES = 1 << 30
#: The deepest nesting of arrays and objects a JSON value in an input may have (task, answer and question files,
#: run results, a recording's meta.json): far beyond any file spatialact writes (a task nests 6 levels), far below
#: where a recursive decoder fails (about 1000 levels for Python's json and for msgspec).
MAX_JSON_DEPTH = 256
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


class TooDeep(ValueError):
    """A JSON value nested deeper than the limit (:func:`check_depth`); the message says so and names the limit."""

    def __init__(self, limit: int):
        super().__init__(f"nested deeper than {limit} levels (jsonline.MAX_JSON_DEPTH: the most a JSON input may "
                         "nest)")
        self.limit = limit


_STEP = None  # int8 by byte: +1 for [ and {, -1 for ] and }, else 0 (made on first use: NumPy loads lazily)


def json_depth(raw: bytes | str) -> int:
    """How deep arrays and objects nest in the JSON text ``raw`` (0 for a scalar, 1 for ``[1, 2]``), brackets
    inside strings not counted; linear time, in C-level string operations and a few NumPy passes.

    Escapes are taken out first (pairs of backslashes, then a backslash before a quote), so every quote left opens
    or closes a string: a byte is outside strings where the count of quotes before it is even. Text that is not
    JSON gets a number too: up to where a decoder stops reading it, it is measured as the decoder reads it, so the
    number is never less than the depth a decoder reaches."""
    global _STEP
    import numpy as np

    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    if not raw:
        return 0
    if _STEP is None:
        step = np.zeros(256, dtype=np.int8)
        step[list(b"[{")] = 1
        step[list(b"]}")] = -1
        _STEP = step
    a = np.frombuffer(raw, dtype=np.uint8)
    steps = _STEP[a]
    steps[(np.cumsum(a == 0x22, dtype=np.int32) & 1).astype(bool)] = 0  # inside a string (or its opening quote)
    return max(0, int(np.cumsum(steps, dtype=np.int32).max()))


def check_depth(raw: bytes | str, limit: int | None = None) -> None:
    """Raise :class:`TooDeep` when the JSON text ``raw`` (one line of a JSON Lines file, or a whole JSON file) nests
    deeper than ``limit`` levels (default :data:`MAX_JSON_DEPTH`). A text with no more opening brackets than the
    limit cannot nest deeper: two counts in C decide nearly every line; only others are measured
    (:func:`json_depth`, linear time)."""
    limit = MAX_JSON_DEPTH if limit is None else limit
    if raw.count("[" if isinstance(raw, str) else b"[") + raw.count("{" if isinstance(raw, str) else b"{") <= limit:
        return
    if json_depth(raw) > limit:
        raise TooDeep(limit)


def node_kind(mode: int) -> str:
    """What a file's ``st_mode`` says it is, in words: ``a regular file``, ``a folder``, ``a FIFO (named pipe)``,
    ``a character device``, ``a block device``, ``a socket``, ``a symbolic link``."""
    for test, name in ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"  # pragma: no cover - a kind of node POSIX does not name


def _article(kind: str) -> str:
    return "an" if kind[:1] in "aeiou" else "a"


def _not_regular(path, kind: str, mode: int) -> str:
    if stat.S_ISDIR(mode):
        return f"{path}: is a folder, not {_article(kind)} {kind}"
    return (f"{path}: is {node_kind(mode)}, not a regular file ({_article(kind)} {kind} is read from a regular file "
            "only)")


def _examine(path) -> tuple[os.stat_result | None, str | None]:
    """(status, None) for a regular file (a link to one), (None, None) when nothing is there, else (status or None,
    what is wrong)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as e:  # a link loop, a folder above it that may not be searched
        return None, f"cannot be read ({e.strerror or e})"
    if not stat.S_ISREG(st.st_mode):
        return st, f"is {node_kind(st.st_mode)}, not a regular file"
    return st, None


def input_problem(path: str | os.PathLike) -> str | None:
    """Why the input ``path`` cannot be read as a file, in a few words, found without opening it (a symbolic link is
    followed): ``no such file``, ``is a folder, not a regular file``, ``is a FIFO (named pipe), not a regular
    file``, ``is a character device, not a regular file``, ... , ``cannot be read (<reason>)``; None for a regular
    file. The readers that name a field (trajectories) build their one line on it."""
    st, why = _examine(path)
    if st is None and why is None:
        return "no such file"
    return why


def check_input(path: str | os.PathLike, kind: str, error: type[Exception] = FileNotFoundError) -> os.stat_result:
    """The status of the input file ``path`` (a task, answer, question or trajectory file: ``kind`` names it), found
    before anything opens it; a symbolic link is followed. Anything but a regular file raises ``error`` with one
    line naming the path and what it is: ``no such <kind>``, ``is a folder, not a <kind>``, ``is a FIFO (named
    pipe), not a regular file (...)`` — a FIFO would make the reader wait for a writer for ever, a device such as
    ``/dev/zero`` never ends — ``is a character device``, ``is a block device``, ``is a socket``, or ``cannot be
    read (<reason>)``."""
    st, why = _examine(path)
    if st is None:
        raise error(f"{path}: {why}" if why else f"{path}: no such {kind}")
    if why:
        raise error(_not_regular(path, kind, st.st_mode))
    return st


_DIGITS_AS_ONES = bytes(0x31 if 0x30 <= i <= 0x39 else 0x30 for i in range(256))
_NINETEEN_DIGITS = b"1" * 19


def fast_loads(standard: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """A ``loads(raw: bytes)`` that gives what ``standard`` gives (the caller's own rules: encoding, NaN, errors),
    through orjson where that is the same answer; ``standard`` itself when orjson is not installed. Either way a
    line nested deeper than :data:`MAX_JSON_DEPTH` raises :class:`TooDeep` (a ValueError) before it is decoded."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a core dependency
        def checked(raw: bytes):
            check_depth(raw)
            return standard(raw)

        return checked

    def loads(raw: bytes):
        check_depth(raw)  # TooDeep (a ValueError) before any decoder recurses
        if _NINETEEN_DIGITS in raw.translate(_DIGITS_AS_ONES):
            return standard(raw)
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return standard(raw)

    return loads


def open_input(path: str | os.PathLike, kind: str, error: type[Exception] = FileNotFoundError) -> IO[bytes]:
    """Open an input file (a task, question or answers file: ``kind`` names it) for binary reading. Only a regular
    file (or a link to one) is opened: :func:`check_input` looks first, then the file is opened without waiting (a
    FIFO put there in between does not block) and what was opened is checked again. What cannot be read raises
    ``error`` with one line naming the path — ``no such <kind>``, ``is a folder, not a <kind>``, ``is a FIFO (named
    pipe), not a regular file (...)``, ``is a character device, ...``, ``cannot be read (<reason>)`` — the messages
    every reader gives."""
    check_input(path, kind, error)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise error(f"{path}: no such {kind}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not {_article(kind)} {kind}") from None
    except OSError as e:
        raise error(f"{path}: cannot be read ({e.strerror or e})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):  # replaced between the look and the open
        os.close(fd)
        raise error(_not_regular(path, kind, st.st_mode))
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


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
