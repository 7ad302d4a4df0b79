"""The one on-disk cache root of spatialact: ``$SPATIALACT_CACHE`` if set, else ``<temp dir>/spatialact-<uid>``.

Everything cached there can be rebuilt (task-file verdicts, procedural textures and meshes, model replies);
deleting the folder is always safe. Each user gets a folder of its own, so the default lies in the shared temporary
folder without mixing users' files; readers that trust what they find check ownership themselves
(``spatialact.tasks.io``).

A cache entry is read by :func:`read_entry` only when it is a regular file of at most :data:`MAX_ENTRY_BYTES`
(16 MiB): a FIFO there (opening it would wait for a writer for ever), a device or a link to one (``/dev/zero`` never
ends), a socket, a folder or a larger file is a miss — rebuilt or asked again, never read — and said once per
process on standard error (one line however many entries are bad). :func:`write_entry` writes one atomically (a
fresh temporary file renamed over the entry: whatever node sat there is replaced, never written through) and gives up
quietly where it cannot: a cache that cannot be written is no error.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["cache_root", "cache_dir", "trusted", "read_entry", "write_entry", "MAX_ENTRY_BYTES", "SAID"]

#: The largest cache entry read back, in bytes: twice the most a model reply may bring
#: (``agents.wire.MAX_REPLY_BYTES``, 8 MiB) and far above what any entry holds; a larger file is a miss.
MAX_ENTRY_BYTES = 16 << 20

#: What this process has said once on standard error about the cache; clear it to hear it again.
SAID: set = set()


def cache_root() -> Path:
    """``$SPATIALACT_CACHE`` (a folder path, ``~`` expanded), else ``<temp dir>/spatialact-<uid>``; not created."""
    root = os.environ.get("SPATIALACT_CACHE")
    if not root:
        uid = os.getuid() if hasattr(os, "getuid") else "user"
        root = os.path.join(tempfile.gettempdir(), f"spatialact-{uid}")
    return Path(root).expanduser()


def cache_dir(name: str, create: bool = True) -> Path:
    """The cache folder ``<cache root>/<name>`` (created, private to the user, when ``create``)."""
    d = cache_root() / name
    if create:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def trusted(path: Path) -> bool:
    """Whether a cache file may be believed: it and its folder belong to this user and others cannot write them
    (the default root lies in a shared temporary folder, where another user could plant a file)."""
    if not hasattr(os, "getuid"):
        return True
    for q in (path.parent, path):
        st = q.stat()
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
    return True


def _say_once(path, why: str) -> None:
    if "entry" not in SAID:
        SAID.add("entry")
        print(f"spatialact: cache entry {path} {why}: read as a miss, never opened (so is any other cache entry that "
              f"is not a regular file of at most {MAX_ENTRY_BYTES >> 20} MiB; said once)", file=sys.stderr)


def _why_not(st: os.stat_result, limit: int) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file (a FIFO, a device, a socket or a folder)"
    if st.st_size > limit:
        return f"is larger than {limit:,} bytes"
    return None


def read_entry(path: str | os.PathLike, limit: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The bytes of the cache file ``path``, or None for a miss: absent or unreadable; not a regular file (a FIFO, a
    device or a link to one, a socket, a folder) or longer than ``limit`` bytes (these two said once on standard
    error, :data:`SAID`). What ``path`` names is looked at before it is opened, opened without waiting (a FIFO
    put there in between does not block), looked at again, and at most ``limit`` + 1 bytes are read."""
    try:
        why = _why_not(os.stat(path), limit)
    except OSError:
        return None
    if why:
        _say_once(path, why)
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        why = _why_not(os.fstat(fd), limit)
        if why:
            _say_once(path, why)
            return None
        try:
            data = f.read(limit + 1)
        except OSError:
            return None
    if len(data) > limit:  # grew after the look
        _say_once(path, f"is larger than {limit:,} bytes")
        return None
    return data


def write_entry(path: str | os.PathLike, data: bytes, limit: int = MAX_ENTRY_BYTES) -> bool:
    """Write the cache entry ``path`` atomically (a fresh temporary file in its folder, renamed over it; missing
    folders made, private to the user); False, nothing written, when it cannot be (a file where a folder should be,
    no space, no permission) or when ``data`` is longer than ``limit`` (it would be read as a miss). The temporary
    file's name is drawn by ``tempfile.mkstemp`` (random, created exclusively), never made of the process id alone:
    the threads of ``eval --concurrency`` and worker processes that write the same entry at once each write their
    own file, and the last rename wins with a whole entry."""
    path = Path(path)
    if len(data) > limit:
        return False
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False
