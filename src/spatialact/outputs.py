"""Where outputs go: the one rule for every file or folder a command writes, and the writers that follow it.

The rule, for a path an option names (``--out``):

- absent, or a regular file this process may write: **replaced atomically** — written to a temporary file in the
  same folder, flushed and fsynced, then renamed over it (a reader sees the old file or the new one, never a part;
  an error leaves the old one as it was and no temporary behind). Missing folders above it are made; an existing
  file keeps its permission bits.
- ``-``, where a command writes a single file: **standard output**.
- a character device (``/dev/null``, a terminal): **written through**, never replaced.
- a symbolic link: **followed**; the file it names is replaced atomically by the same rule and the link stays. A
  dangling link (one naming a path that does not exist), as the path or a folder above it, is followed too: the
  file or folder it names is created there (with the folders above it) and the link stays — in every command, for
  a file and for an output folder alike (:func:`make_folder`; a command writing into a folder calls it before the
  first file, never a plain ``mkdir``, which refuses a dangling link as "exists").
- **refused**, in one line naming the option, before any work (:class:`OutputError`): a named pipe (FIFO: writing
  would wait for a reader that may never come), a socket, a block device, a folder where a file is wanted, a file
  where a folder is wanted, a path under a file, a read-only file or folder (no write permission bit at all, or
  not writable by this process — root too is refused a file marked read-only), a folder this process may not
  write in, a link that cannot be followed (a loop).

:func:`check_output` applies the rule to a path (commands call it on every output option before they start);
:func:`check_output_beside` to a file written with a folder of images beside it (refused a character device, up
front, as it would be standard output: the images would have nowhere to go);
:class:`OutputFile` / :func:`open_output` write one file by it, :func:`write_text` and :func:`write_bytes` in one
call, :func:`output_path` gives a temporary path to a writer that takes a file name (Pillow, PyAV, another
module's writer) and moves the result into place by the rule, and :func:`make_folder` makes an output folder.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator

__all__ = ["OutputError", "STDOUT", "check_output", "check_output_beside", "OutputFile", "open_output", "write_text", "write_bytes",
           "output_path", "make_folder", "folder_for_work"]

#: The path that names standard output (where a command writes a single file).
STDOUT = "-"


class OutputError(ValueError):
    """An output path the rule refuses; the message is one line naming the option and the path."""


def _label(path, option: str | None) -> str:
    return f"{option} {path}" if option else str(path)


def _read_only(st: os.stat_result, path: str) -> bool:
    """No write permission bit at all (root would write it anyway: the mark is respected), or not writable here."""
    return not (st.st_mode & 0o222) or not os.access(path, os.W_OK)


def _resolve(p: str, label: str) -> tuple[str, os.stat_result | None]:
    """The path the output really is (a symbolic link followed) and its status, None when it does not exist."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:  # links on the way to it followed: a dangling one's target is what gets made
        return os.path.realpath(p), None
    except NotADirectoryError:
        return p, None  # a path under a file: said by _check_parents
    except OSError as e:
        raise OutputError(f"{label}: cannot be examined ({e.strerror or e})") from None
    if not stat.S_ISLNK(st.st_mode):
        return p, st
    try:
        real = os.path.realpath(p, strict=True)
    except FileNotFoundError:  # a dangling link: its target is created
        return os.path.realpath(p), None
    except OSError as e:
        raise OutputError(f"{label}: is a symbolic link that cannot be followed ({e.strerror or e})") from None
    return real, os.stat(real)


def _check_parents(real: str, label: str) -> None:
    """The nearest existing folder above ``real`` must be a folder this process may write in."""
    for parent in Path(os.path.abspath(real)).parents:
        try:
            st = os.stat(parent)
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue  # a file further up: found when the walk reaches it
        except OSError as e:
            raise OutputError(f"{label}: folder {parent} cannot be examined ({e.strerror or e})") from None
        if not stat.S_ISDIR(st.st_mode):
            raise OutputError(f"{label}: {parent} is a file, not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"{label}: folder {parent} is not writable")
        return


_NODE_NAMES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"))


def _target(path, option: str | None, kind: str, stdout: bool) -> tuple[str, str | None]:
    """Apply the rule: (how, where) with how ``stdout`` | ``device`` | ``file`` | ``folder`` and where the real
    path (a link followed); raises :class:`OutputError` for what the rule refuses."""
    if kind not in ("file", "folder"):
        raise ValueError(f"kind must be 'file' or 'folder', got {kind!r}")
    p = os.fspath(path)
    label = _label(p, option)
    if p == STDOUT:
        if kind == "file" and stdout:
            return "stdout", None
        why = "a folder is wanted" if kind == "folder" else "this output is more than one file"
        raise OutputError(f"{label}: standard output cannot be used here ({why}); name a {kind}")
    if not p:
        raise OutputError(f"{_label('(empty)', option)}: no path given; name a {kind}")
    real, st = _resolve(p, label)
    link = f" (a link to {real})" if real != p and st is not None else ""
    if st is None:
        _check_parents(real, label)
        return kind, real
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        if kind == "file":
            raise OutputError(f"{label}: is a folder{link}; name a file")
        if _read_only(st, real):
            raise OutputError(f"{label}: folder{link} is read-only; name a folder that can be written")
        return "folder", real
    if kind == "folder":
        what = "a file" if stat.S_ISREG(mode) else next((n for f, n in _NODE_NAMES if f(mode)), "not a folder")
        raise OutputError(f"{label}: is {what}{link}; name a folder")
    if stat.S_ISREG(mode):
        if _read_only(st, real):
            raise OutputError(f"{label}: is read-only{link}; not replaced (make it writable or name another file)")
        _check_parents(real, label)
        return "file", real
    if stat.S_ISCHR(mode):
        if not os.access(real, os.W_OK):
            raise OutputError(f"{label}: character device{link} is not writable")
        return "device", real
    what = next((n for f, n in _NODE_NAMES if f(mode)), "not a regular file")
    raise OutputError(f"{label}: is {what}{link}, not a regular file; name a file"
                      + (", a character device or -" if stdout else " or a character device"))


def check_output(path, option: str | None = "--out", kind: str = "file", *, stdout: bool = False) -> Path:
    """``path`` as a Path when the rule lets it be written as a ``kind`` (``"file"`` or ``"folder"``); else
    :class:`OutputError` (a ValueError), one line naming ``option`` and the path. ``stdout``: ``-`` names standard
    output (only where a single file is written). Nothing is created; call it before any work."""
    _target(path, option, kind, stdout)
    return Path(path)


def check_output_beside(path, folder, option: str | None = "--out") -> Path:
    """``path`` as a Path when a command may write it as a file **with a companion folder** ``folder`` beside it
    (a question or task file and its images): the file rule without standard output, a character device refused
    too (the file would be written through, but its folder has no place beside a device; a file that names
    images nowhere to be found is no output), then ``folder`` by the folder rule. :class:`OutputError`, one line
    naming ``option``, otherwise; nothing is created; call it before any work."""
    how, real = _target(path, option, "file", False)
    if how == "device":
        raise OutputError(f"{_label(path, option)}: is a character device; this command also writes a folder of "
                          f"images beside its file ({Path(folder).name}/), which a device has no place for: name a "
                          f"regular file")
    _target(folder, f"{_label(path, option)}: image folder", "folder", False)
    return Path(path)


def make_folder(path, option: str | None = "--out") -> Path:
    """Make the output folder ``path`` (and the folders above it) by the rule — a link to a folder is followed;
    returns ``path`` as a Path."""
    how, real = _target(path, option, "folder", False)
    try:
        os.makedirs(real, exist_ok=True)
    except OSError as e:
        raise OutputError(f"{_label(path, option)}: cannot be made ({e.strerror or e})") from None
    return Path(path)


@contextmanager
def folder_for_work(path, option: str | None = "--out"):
    """Make the output folder ``path`` by the rule (:func:`make_folder`) for the block that fills it; if the block
    raises (a refusal found after the folder was made: a task the run cannot run, nothing to build), the folders it
    made and left empty are removed again, so a refused command leaves nothing behind. Yields ``path`` as a Path."""
    how, real = _target(path, option, "folder", False)
    made, q = [], os.path.abspath(real)
    while q and not os.path.lexists(q):  # the folders that do not exist yet, deepest first
        made.append(q)
        parent = os.path.dirname(q)
        q = "" if parent == q else parent
    out = make_folder(path, option)
    try:
        yield out
    except BaseException:
        for folder in made:  # deepest first; a folder with anything in it stays
            try:
                os.rmdir(folder)
            except OSError:
                break
        raise


def _temporary_name(real: str, keep_suffix: bool) -> str:
    """A fresh name beside ``real``: hidden, unique, ending in ``.tmp`` (or keeping the file's suffix, for writers
    that choose their format by it)."""
    folder, name = os.path.split(real)
    token = secrets.token_hex(4)
    if keep_suffix:
        stem, suffix = os.path.splitext(name)
        return os.path.join(folder, f".{stem}.{token}.tmp{suffix}")
    return os.path.join(folder, f".{name}.{token}.tmp")


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _replace(tmp: str, real: str, label: str) -> None:
    """Rename ``tmp`` over ``real`` if ``real`` is still absent or a regular file (a node put there meanwhile is
    not replaced: the temporary is removed and the refusal raised)."""
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        os.unlink(tmp)
        raise OutputError(f"{label}: is no longer a regular file; not replaced")
    os.replace(tmp, real)
    _fsync_folder(os.path.dirname(real))


def _keep_mode(tmp_fd_or_path, real: str) -> None:
    """Give the temporary the permission bits (and, where allowed, the owner) of the file it replaces."""
    try:
        st = os.stat(real)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        return
    os.chmod(tmp_fd_or_path, stat.S_IMODE(st.st_mode))
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(tmp_fd_or_path, st.st_uid, st.st_gid)
        except OSError:
            pass


class _Unclosable:
    """Standard output lent to a writer: closing it only flushes."""

    def __init__(self, f):
        self._f = f

    def __getattr__(self, name):
        return getattr(self._f, name)

    def close(self) -> None:
        self._f.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class OutputFile:
    """One output file written by the rule (see the module): :meth:`open` returns the file object to write to (a
    temporary beside the target, the device itself, or standard output), :meth:`commit` puts the result in place
    (flush, fsync, rename), :meth:`discard` drops it (the target left as it was). As a context manager: opened on
    entry, committed when the block ends, discarded when it raises.

    ``binary``: bytes instead of text; ``encoding``, ``errors``, ``newline``: as :func:`open`'s. ``stdout``:
    ``-`` names standard output. The rule is applied again at :meth:`open` (and before the rename), so a refusal
    is raised even when :func:`check_output` was not called."""

    def __init__(self, path, option: str | None = None, *, stdout: bool = False, binary: bool = False,
                 encoding: str = "utf-8", errors: str = "strict", newline: str | None = None):
        self.path, self.option, self.stdout = path, option, stdout
        self.binary, self.encoding, self.errors, self.newline = binary, encoding, errors, newline
        self._how: str | None = None
        self._real: str | None = None
        self._tmp: str | None = None
        self._f = None

    def _wrap(self, raw) -> IO:
        if self.binary:
            return raw
        import io

        return io.TextIOWrapper(raw, encoding=self.encoding, errors=self.errors, newline=self.newline)

    def open(self) -> IO:
        if self._f is not None:
            return self._f
        self._how, self._real = _target(self.path, self.option, "file", self.stdout)
        if self._how == "stdout":
            sys.stdout.flush()
            self._f = _Unclosable(sys.stdout.buffer if self.binary else sys.stdout)
            return self._f
        if self._how == "device":
            self._f = self._wrap(open(self._real, "ab"))
            return self._f
        os.makedirs(os.path.dirname(os.path.abspath(self._real)), exist_ok=True)
        tmp = _temporary_name(self._real, keep_suffix=False)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        self._tmp = tmp
        try:
            _keep_mode(fd, self._real)
            self._f = self._wrap(os.fdopen(fd, "wb"))
        except BaseException:
            os.close(fd)
            self.discard()
            raise
        return self._f

    def commit(self) -> Path:
        """Put what was written in place; returns the path as given."""
        f = self.open()
        if self._how == "stdout":
            f.flush()
        elif self._how == "device":
            f.flush()
            f.close()
        else:
            try:
                f.flush()
                os.fsync(f.fileno())
                f.close()
                _replace(self._tmp, self._real, _label(self.path, self.option))
            except BaseException:
                self.discard()
                raise
            self._tmp = None
        self._f = None
        return Path(self.path)

    def discard(self) -> None:
        """Drop what was written: the temporary is removed, the target left as it was."""
        f, self._f = self._f, None
        if f is not None and self._how != "stdout":
            try:
                f.close()
            except OSError:
                pass
        if self._tmp is not None:
            try:
                os.unlink(self._tmp)
            except FileNotFoundError:
                pass
            self._tmp = None

    def __enter__(self) -> IO:
        return self.open()

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()


def open_output(path, option: str | None = None, *, stdout: bool = False, binary: bool = False,
                encoding: str = "utf-8", errors: str = "strict", newline: str | None = None) -> OutputFile:
    """``with open_output(path) as f: f.write(...)``: one file written by the rule (:class:`OutputFile`)."""
    return OutputFile(path, option, stdout=stdout, binary=binary, encoding=encoding, errors=errors, newline=newline)


def write_text(path, text: str, option: str | None = None, *, stdout: bool = False, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` by the rule; returns ``path`` as a Path."""
    with open_output(path, option, stdout=stdout, encoding=encoding) as f:
        f.write(text)
    return Path(path)


def write_bytes(path, data: bytes, option: str | None = None, *, stdout: bool = False) -> Path:
    """Write ``data`` to ``path`` by the rule; returns ``path`` as a Path."""
    with open_output(path, option, stdout=stdout, binary=True) as f:
        f.write(data)
    return Path(path)


@contextmanager
def output_path(path, option: str | None = None, *, stdout: bool = False) -> Iterator[Path]:
    """A path for a writer that takes a file name (Pillow's ``save``, PyAV, another module's writer): a fresh name
    beside the target, keeping its suffix (writers choose the format by it); when the block ends without an
    error the file written there is fsynced and renamed over the target by the rule. For a character device or
    standard output the name lies in a private temporary folder and the bytes are copied through. On an error, or
    when the writer wrote nothing, the target is left as it was and nothing stays behind."""
    how, real = _target(path, option, "file", stdout)
    label = _label(path, option)
    scratch = None
    if how == "file":
        os.makedirs(os.path.dirname(os.path.abspath(real)), exist_ok=True)
        tmp = _temporary_name(real, keep_suffix=True)
    else:
        scratch = tempfile.mkdtemp(prefix=".spatialact-out-")
        tmp = os.path.join(scratch, os.path.basename(os.fspath(path)) if how == "device" else "output")
    try:
        yield Path(tmp)
        if not os.path.lexists(tmp):
            return
        st = os.lstat(tmp)
        if not stat.S_ISREG(st.st_mode):
            raise OutputError(f"{label}: the writer left no regular file")
        if how == "file":
            _keep_mode(tmp, real)
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
            _replace(tmp, real, label)
        else:
            with open(tmp, "rb") as src, OutputFile(path, option, stdout=stdout, binary=True) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
        elif os.path.lexists(tmp):
            os.unlink(tmp)
