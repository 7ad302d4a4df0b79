"""WAD files: where the bundled Freedoom IWADs are, which maps a WAD holds, its SHA-256 (provenance), its map data
checked before the engine sees it, and a map's lines, sides, sectors and things.

A WAD is a 12-byte header (``IWAD`` or ``PWAD``, the lump count, the directory offset) and a directory of 16-byte
entries (offset, size, 8-byte name). A map is a marker lump (``MAP01``, ``E1M1``, ...) followed by its lumps:
``THINGS``, ``LINEDEFS``, ``SIDEDEFS``, ``VERTEXES``, ``SEGS``, ``SSECTORS``, ``NODES``, ``SECTORS``, ``REJECT``,
``BLOCKMAP`` (and ``BEHAVIOR`` in the Hexen format). Listing maps reads only the header and the directory, so a
damaged or hostile file costs at most its directory; :func:`check_wad` reads a map's five data lumps and checks
what the game engine trusts (a damaged one crashes it): every lump inside the file, whole records, and every index
between the records in range.
"""

from __future__ import annotations

import hashlib
import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WadError", "BUNDLED_WADS", "DEFAULT_WAD", "DEFAULT_MAP", "MAX_LUMPS", "RECORD_BYTES", "HEXEN_RECORD_BYTES",
           "MAP_LUMPS", "NO_SIDE", "ML_BLOCKING", "MapLevel", "resolve_wad", "wad_maps", "wad_sha256", "check_map",
           "check_wad", "wad_kind", "map_lines", "map_level", "map_things", "ZOMBIEMAN", "THING_NOT_SINGLE"]

BUNDLED_WADS = ("freedoom1.wad", "freedoom2.wad")
DEFAULT_WAD = "freedoom2.wad"
DEFAULT_MAP = "MAP01"
#: Directories above this many entries are refused (Freedoom 2 has 3 610 lumps; the directory is 16 bytes an entry).
MAX_LUMPS = 1_000_000
#: Bytes of one record of a map's data lumps in the Doom format, and in the Hexen format (a map with ``BEHAVIOR``).
RECORD_BYTES = {"THINGS": 10, "LINEDEFS": 14, "SIDEDEFS": 30, "VERTEXES": 4, "SECTORS": 26}
HEXEN_RECORD_BYTES = {**RECORD_BYTES, "THINGS": 20, "LINEDEFS": 16}
#: The lumps that may follow a map's marker (the map's lumps are the run of these names after it).
MAP_LUMPS = ("THINGS", "LINEDEFS", "SIDEDEFS", "VERTEXES", "SEGS", "SSECTORS", "NODES", "SECTORS", "REJECT",
             "BLOCKMAP", "BEHAVIOR", "SCRIPTS")
#: A line's side index meaning "no side" (a one-sided line has no back side); the line flag "blocks everything".
NO_SIDE, ML_BLOCKING = 0xFFFF, 1

#: Doom's thing type of a Zombieman (the first monster of Freedoom 2 MAP01), and the thing flag "not in single player".
ZOMBIEMAN, THING_NOT_SINGLE = 3004, 16

_SHA_CACHE: dict[tuple, str] = {}
_CHECKED: dict[tuple, bool] = {}


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
            if n > MAX_LUMPS:
                raise WadError(f"{path}: {n:,} directory entries, over the directory limit of {MAX_LUMPS:,} "
                               "(spatialact.envs.doom.wad.MAX_LUMPS)")
            if n < 0 or off < 12 or off + 16 * n > size:
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


def _map_run(names: list, i: int) -> dict:
    """Directory index of each lump of the map whose marker is entry ``i``: the run of :data:`MAP_LUMPS` names after
    it (the first of each)."""
    run: dict = {}
    for j in range(i + 1, len(names)):
        if names[j] not in MAP_LUMPS or names[j] in run:
            break
        run[names[j]] = j
    return run


def _marker(p: Path, names: list, name) -> tuple[str, int]:
    """The map's name upper-cased and its marker's directory index: the last entry of that name followed by
    ``THINGS`` (the engine takes the last)."""
    m = str(name).strip().upper()
    found = [i for i in range(len(names) - 1) if names[i] == m and names[i + 1] == "THINGS"]
    if not found:
        raise WadError(f"{p.name}: no map {name!r}")
    return m, found[-1]


def _check_directory(p: Path, names: list, where: list, total: int) -> None:
    """Every lump's offset and size inside the file (one-line :class:`WadError` naming the lump and its map)."""
    import numpy as np

    w = np.asarray(where, dtype=np.int64).reshape(-1, 2)
    bad = (w[:, 0] < 0) | (w[:, 1] < 0) | (w[:, 0] + w[:, 1] > total)
    if not bad.any():
        return
    j = int(np.argmax(bad))
    off, size = (int(v) for v in w[j])
    what = (f"a negative size ({size})" if size < 0 else f"a negative offset ({off})" if off < 0 else
            f"{size:,} bytes at offset {off:,}, past the end of the file ({total:,} bytes)")
    owner = next((names[k] for k in range(j - 1, max(-1, j - 1 - len(MAP_LUMPS)), -1)
                  if names[k] not in MAP_LUMPS and j in _map_run(names, k).values()), None)
    in_map = f"map {owner}, " if owner else ""
    raise WadError(f"{p}: damaged WAD: {in_map}lump {names[j] or '(no name)'} (directory entry {j}) has {what}")


def _read_map(p: Path, name) -> tuple[str, bool, dict]:
    """(map name, Hexen format, {lump: bytes}) of the map's five data lumps, each checked to lie inside the file and
    to hold whole records."""
    _, names, where, total = _directory(p, entries=True)
    m, i = _marker(p, names, name)
    run = _map_run(names, i)
    hexen = "BEHAVIOR" in run
    sizes = HEXEN_RECORD_BYTES if hexen else RECORD_BYTES
    lumps = {}
    with open(p, "rb") as f:
        for lump, rec in sizes.items():
            if lump not in run:
                raise WadError(f"{p}: damaged WAD: map {m} has no {lump} lump after its marker")
            off, size = where[run[lump]]
            if off < 0 or size < 0 or off + size > total:
                _check_directory(p, names, where, total)
            if size % rec:
                raise WadError(f"{p}: damaged WAD: map {m}, lump {lump}: {size:,} bytes is not a whole number of "
                               f"{rec}-byte records")
            f.seek(off)
            lumps[lump] = f.read(size)
    return m, hexen, lumps


@dataclass(frozen=True)
class MapLevel:
    """A map's geometry as the game reads it, in map units (1/32 m; x east, y north, heights up).

    ``vertices`` (V, 2) float64; ``lines`` (L, 2) int64 vertex indices (from, to); ``flags`` (L,) int64 line flags
    (:data:`ML_BLOCKING` = blocks everything); ``front`` / ``back`` (L,) int64 the sector on the right / left of
    from → to (``back`` -1: a one-sided line, a solid wall); ``floor`` / ``ceiling`` (S,) float64 sector heights;
    ``things`` (N, 5) int64 as :func:`map_things`."""

    name: str
    vertices: object
    lines: object
    flags: object
    front: object
    back: object
    floor: object
    ceiling: object
    things: object

    @property
    def segments(self):
        """(L, 4) float64 ``x1, y1, x2, y2`` of every line."""
        import numpy as np

        return np.concatenate([self.vertices[self.lines[:, 0]], self.vertices[self.lines[:, 1]]], axis=1)


def _decode(p: Path, m: str, hexen: bool, lumps: dict) -> MapLevel:
    """The map's records decoded, every index between them checked (one-line :class:`WadError`)."""
    import numpy as np

    for lump in RECORD_BYTES:
        if lump != "THINGS" and not lumps[lump]:
            raise WadError(f"{p}: damaged WAD: map {m}, lump {lump}: empty")
    v = np.frombuffer(lumps["VERTEXES"], dtype="<i2").reshape(-1, 2).astype(np.float64)
    if hexen:
        ld = np.frombuffer(lumps["LINEDEFS"], dtype=np.dtype([("v", "<u2", 2), ("flags", "<u2"), ("x", "u1", 6),
                                                               ("side", "<u2", 2)]))
        lines, flags, sides = ld["v"].astype(np.int64), ld["flags"].astype(np.int64), ld["side"].astype(np.int64)
        th = np.frombuffer(lumps["THINGS"], dtype="<i2").reshape(-1, 10)[:, [1, 2, 4, 5, 6]].astype(np.int64)
    else:
        ld = np.frombuffer(lumps["LINEDEFS"], dtype="<u2").reshape(-1, 7).astype(np.int64)
        lines, flags, sides = ld[:, :2], ld[:, 2], ld[:, 5:7]
        th = np.frombuffer(lumps["THINGS"], dtype="<i2").reshape(-1, 5).astype(np.int64)
    side_sector = np.frombuffer(lumps["SIDEDEFS"], dtype="<u2").reshape(-1, 15)[:, 14].astype(np.int64)
    sec = np.frombuffer(lumps["SECTORS"], dtype="<i2").reshape(-1, 13)[:, :2].astype(np.float64)
    n_v, n_s, n_sec = len(v), len(side_sector), len(sec)
    front_bad = (sides[:, 0] >= n_s) & (sides[:, 0] != NO_SIDE)
    back_bad = (sides[:, 1] >= n_s) & (sides[:, 1] != NO_SIDE)
    checks = (("LINEDEFS", lines.max(axis=1) >= n_v, lines.max(axis=1), "vertex", "VERTEXES", n_v),
              ("LINEDEFS", front_bad, sides[:, 0], "front side", "SIDEDEFS", n_s),
              ("LINEDEFS", back_bad, sides[:, 1], "back side", "SIDEDEFS", n_s),
              ("SIDEDEFS", side_sector >= n_sec, side_sector, "sector", "SECTORS", n_sec))
    for lump, bad, value, what, other, n in checks:
        if bad.any():
            k = int(np.argmax(bad))
            more = f" (and {int(bad.sum()) - 1} more)" if bad.sum() > 1 else ""
            raise WadError(f"{p}: damaged WAD: map {m}, lump {lump}: record {k} names {what} {int(value[k])}, and "
                           f"{other} holds {n} (0 to {n - 1}){more}")
    if (sides[:, 0] == NO_SIDE).any():
        k = int(np.argmax(sides[:, 0] == NO_SIDE))
        raise WadError(f"{p}: damaged WAD: map {m}, lump LINEDEFS: record {k} has no front side")
    if not (th[:, 3] == 1).any():
        raise WadError(f"{p}: damaged WAD: map {m}, lump THINGS: no player 1 start (thing type 1)")
    back = np.where(sides[:, 1] == NO_SIDE, -1, side_sector[np.minimum(sides[:, 1], n_s - 1)])
    return MapLevel(name=m, vertices=v, lines=lines, flags=flags, front=side_sector[sides[:, 0]], back=back,
                    floor=sec[:, 0].copy(), ceiling=sec[:, 1].copy(), things=th)


def map_level(path: str | os.PathLike, name: str) -> MapLevel:
    """A map's vertices, lines (with their sides' sectors), sector heights and things (:class:`MapLevel`, map
    units), read from its ``THINGS``, ``LINEDEFS``, ``SIDEDEFS``, ``VERTEXES`` and ``SECTORS`` lumps (the Doom or
    the Hexen format) and checked as :func:`check_wad` checks them."""
    p = Path(path)
    return _decode(p, *_read_map(p, name))


def check_wad(path: str | os.PathLike, maps=None) -> None:
    """Refuse, in one line naming the file, the map, the lump and what is wrong (:class:`WadError`), a WAD the game
    engine would crash on: a directory over :data:`MAX_LUMPS` entries, a lump whose offset or size is negative or
    runs past the end of the file, and for each map of ``maps`` (default: every map of the WAD) a missing data
    lump, one that is not a whole number of records (:data:`RECORD_BYTES`: THINGS 10, LINEDEFS 14, SIDEDEFS 30,
    VERTEXES 4, SECTORS 26 bytes; Hexen format THINGS 20, LINEDEFS 16), an empty one, a line whose vertex or side
    does not exist or that has no front side, a side whose sector does not exist, no player 1 start. Cached per
    file (path, size, modification time) and maps."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as e:
        raise WadError(f"{p}: cannot read ({e.strerror or e})") from None
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns,
           None if maps is None else tuple(str(m).strip().upper() for m in maps))
    if key in _CHECKED:
        return
    _, names, where, total = _directory(p, entries=True)
    _check_directory(p, names, where, total)
    for m in ([names[i] for i in range(len(names) - 1) if names[i + 1] == "THINGS"] if maps is None else maps):
        _decode(p, *_read_map(p, m))
    _CHECKED[key] = True


def map_lines(path: str | os.PathLike, name: str):
    """The line segments of a map, in map units (1/32 m; x east, y north): ``segments`` (M, 4) float64 as ``x1,
    y1, x2, y2``, ``one_sided`` (M,) bool (a solid wall) and ``impassable`` (M,) bool (the block-everything flag).
    Read by :func:`map_level`."""
    level = map_level(path, name)
    return level.segments, level.back < 0, (level.flags & ML_BLOCKING).astype(bool)


def map_things(path: str | os.PathLike, name: str):
    """The things (player starts, monsters, items, decorations) of a map as an (N, 5) int64 array: ``x, y`` (map
    units, 1/32 m; x east, y north), ``angle`` (degrees, counter-clockwise from east), ``type`` (e.g.
    :data:`ZOMBIEMAN`) and ``flags`` (1, 2, 4: skill levels; 8: ambush; 16: not in single player). Read by
    :func:`map_level`."""
    return map_level(path, name).things
