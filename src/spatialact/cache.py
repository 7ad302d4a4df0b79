"""The one on-disk cache root of spatialact: ``$SPATIALACT_CACHE`` if set, else ``<temp dir>/spatialact-<uid>``.

Everything cached there can be rebuilt (task-file verdicts, procedural textures and meshes); deleting the folder is
always safe. Each user gets a folder of its own, so the default lies in the shared temporary folder without mixing
users' files; readers that trust what they find check ownership themselves (``spatialact.tasks.io``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["cache_root", "cache_dir", "trusted"]


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
