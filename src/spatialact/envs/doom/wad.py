"""WAD files: where the bundled Freedoom IWADs are, which maps a WAD holds, and its SHA-256 (provenance).

A WAD is a 12-byte header (``IWAD`` or ``PWAD``, the lump count, the directory offset) and a directory of 16-byte
entries (offset, size, 8-byte name). A map is a marker lump (``MAP01``, ``E1M1``, ...) followed by its ``THINGS``
lump. Only the header and the directory are read, so a damaged or hostile file costs at most its directory.
"""

from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

__all__ = ["WadError", "BUNDLED_WADS", "DEFAULT_WAD", "DEFAULT_MAP", "resolve_wad", "wad_maps", "wad_sha256",
           "check_map", "wad_kind", "map_lines", "map_things", "ZOMBIEMAN", "THING_NOT_SINGLE"]

BUNDLED_WADS = ("freedoom1.wad", "freedoom2.wad")
DEFAULT_WAD = "freedoom2.wad"
DEFAULT_MAP = "MAP01"
# Directories above this many entries are not a real WAD (Freedoom 2 has 3 610 lumps).
MAX_LUMPS = 1_000_000

#: Doom's thing type of a Zombieman (the first monster of Freedoom 2 MAP01), and the thing flag "not in single player".
ZOMBIEMAN, THING_NOT_SINGLE = 3004, 16

_SHA_CACHE: dict[tuple, str] = {}


class WadError(ValueError):
    """A WAD that cannot be used: missing, not a WAD, or without the requested map (one line, names the file)."""


def _bundled_dir() -> Path | None:
    try:
        import importlib.util

        spec = importlib.util.find_spec("vizdoom")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    return Path(spec.origin).parent


def resolve_wad(wad: str | os.PathLike | None) -> Path:
    """The WAD file for ``wad``: a path to a file, or the name of a WAD bundled with vizdoom (``freedoom1.wad``,
    ``freedoom2.wad``; default ``freedoom2.wad``). Raises :class:`WadError` naming what is missing."""
    name = DEFAULT_WAD if wad is None else str(wad)
    p = Path(name).expanduser()
    if p.is_file():
        return p.resolve()
    if p.exists():
        raise WadError(f"{p}: is not a file (a WAD file is expected)")
    if p.name == name and name.lower() in BUNDLED_WADS:
        d = _bundled_dir()
        if d is not None and (d / name.lower()).is_file():
            return (d / name.lower()).resolve()
        raise WadError(f"{name}: the bundled Freedoom WADs come with vizdoom, which is not installed "
                       "(pip install 'spatialact[game]')")
    raise WadError(f"{name}: no such WAD file (give a path, or one of {', '.join(BUNDLED_WADS)})")


def _directory(path: Path, entries: bool = False):
    try:
        with open(path, "rb") as f:
            head = f.read(12)
            if len(head) < 12:
                raise WadError(f"{path}: not a WAD file (shorter than its 12-byte header)")
            ident, n, off = struct.unpack("<4sii", head)
            if ident not in (b"IWAD", b"PWAD"):
                raise WadError(f"{path}: not a WAD file (starts with {ident!r}, not IWAD or PWAD)")
            size = os.fstat(f.fileno()).st_size
            if not (0 <= n <= MAX_LUMPS) or off < 12 or off + 16 * n > size:
                raise WadError(f"{path}: damaged WAD (directory of {n} lumps at offset {off} in a file of {size} "
                               "bytes)")
            f.seek(off)
            raw = f.read(16 * n)
    except OSError as e:
        raise WadError(f"{path}: cannot read ({e.strerror or e})") from None
    names = [raw[16 * i + 8:16 * i + 16].split(b"\0", 1)[0].decode("latin-1").upper() for i in range(n)]
    if entries:
        where = [struct.unpack("<ii", raw[16 * i:16 * i + 8]) for i in range(n)]
        return ident.decode(), names, where, size
    return ident.decode(), names


def wad_maps(path: str | os.PathLike) -> list[str]:
    """The map names of a WAD (``MAP01``, ``E1M1``, ...) in directory order: marker lumps followed by ``THINGS``."""
    _, names = _directory(Path(path))
    return [names[i] for i in range(len(names) - 1) if names[i + 1] == "THINGS"]


def wad_kind(path: str | os.PathLike) -> str:
    """``IWAD`` (a whole game) or ``PWAD`` (an add-on that needs an IWAD)."""
    return _directory(Path(path))[0]


def check_map(path: str | os.PathLike, name: str) -> str:
    """``name`` upper-cased when the WAD at ``path`` is an IWAD holding that map; else :class:`WadError` in one
    line listing the maps there are."""
    path = Path(path)
    kind, _ = _directory(path)
    if kind != "IWAD":
        raise WadError(f"{path}: a PWAD (an add-on); give an IWAD such as {DEFAULT_WAD}")
    maps = wad_maps(path)
    m = str(name).strip().upper()
    if m not in maps:
        shown = ", ".join(maps[:40]) + (" ..." if len(maps) > 40 else "")
        raise WadError(f"{path.name}: no map {name!r} (maps: {shown or 'none'})")
    return m


def wad_sha256(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a file, cached per path, size and modification time."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


def _lump(path: Path, offset: int, size: int, total: int, name: str) -> bytes:
    if offset < 0 or size < 0 or offset + size > total:
        raise WadError(f"{path}: damaged WAD (lump {name} outside the file)")
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(size)


def _map_lumps(p: Path, name: str, wanted: tuple, span: int) -> tuple[str, dict]:
    """The map's marker name and the bytes of the first of each ``wanted`` lump among the ``span`` entries after
    the marker (a missing map is a :class:`WadError`)."""
    _, names, where, total = _directory(p, entries=True)
    m = str(name).strip().upper()
    if m not in names:
        raise WadError(f"{p.name}: no map {name!r}")
    i = names.index(m)
    lumps = {}
    for j in range(i + 1, min(len(names), i + 1 + span)):
        if names[j] in wanted and names[j] not in lumps:
            lumps[names[j]] = _lump(p, where[j][0], where[j][1], total, names[j])
    return m, lumps


def map_lines(path: str | os.PathLike, name: str):
    """The line segments of a Doom-format map, in map units (1/32 m; x east, y north): ``segments`` (M, 4)
    float64 as ``x1, y1, x2, y2``, ``one_sided`` (M,) bool (a solid wall) and ``impassable`` (M,) bool (the
    block-everything flag). Read from the ``VERTEXES`` and ``LINEDEFS`` lumps after the map's marker."""
    import numpy as np

    p = Path(path)
    m, lumps = _map_lumps(p, name, ("VERTEXES", "LINEDEFS"), 11)
    if set(lumps) != {"VERTEXES", "LINEDEFS"} or len(lumps["LINEDEFS"]) % 14 or len(lumps["VERTEXES"]) % 4:
        raise WadError(f"{p.name}: map {m} is not in the Doom format (VERTEXES and 14-byte LINEDEFS)")
    v = np.frombuffer(lumps["VERTEXES"], dtype="<i2").reshape(-1, 2).astype(np.float64)
    ld = np.frombuffer(lumps["LINEDEFS"], dtype="<u2").reshape(-1, 7).astype(np.int64)
    if len(ld) and ld[:, :2].max() >= len(v):
        raise WadError(f"{p.name}: map {m} has a line with a vertex that does not exist")
    seg = np.concatenate([v[ld[:, 0]], v[ld[:, 1]]], axis=1)
    return seg, ld[:, 6] == 0xFFFF, (ld[:, 2] & 1).astype(bool)


def map_things(path: str | os.PathLike, name: str):
    """The things (player starts, monsters, items, decorations) of a Doom-format map as an (N, 5) int64 array:
    ``x, y`` (map units, 1/32 m; x east, y north), ``angle`` (degrees, counter-clockwise from east), ``type`` (e.g.
    :data:`ZOMBIEMAN`) and ``flags`` (1, 2, 4: skill levels; 8: ambush; 16: not in single player). Read from the
    ``THINGS`` lump after the map's marker."""
    import numpy as np

    p = Path(path)
    m, lumps = _map_lumps(p, name, ("THINGS",), 1)
    if "THINGS" not in lumps:
        raise WadError(f"{p.name}: map {m} is not in the Doom format (no THINGS lump after its marker)")
    raw = lumps["THINGS"]
    if len(raw) % 10:
        raise WadError(f"{p.name}: map {m} is not in the Doom format (10-byte THINGS)")
    return np.frombuffer(raw, dtype="<i2").reshape(-1, 5).astype(np.int64)
