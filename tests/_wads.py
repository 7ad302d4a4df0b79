"""Tiny Doom-format WADs made by hand for the tests (docs/game.md): rooms as sectors, lines with their sides, a
player start; and damaged copies of a WAD (a lump's bytes or its directory entry changed).

Units are map units (1/32 m; x east, y north). A line's front side is on the right of from → to, so a room's
outline is listed clockwise (seen with y north) to face inwards.
"""

from __future__ import annotations

import struct
from pathlib import Path

ML_BLOCKING, ML_TWOSIDED = 1, 4
NO_SIDE = 0xFFFF
MAP_ORDER = ("THINGS", "LINEDEFS", "SIDEDEFS", "VERTEXES", "SEGS", "SSECTORS", "NODES", "SECTORS", "REJECT",
             "BLOCKMAP")


class MapData:
    """A map under construction: vertices, lines (with one or two sides, each naming a sector), sectors, things."""

    def __init__(self):
        self.vertices: list[tuple[int, int]] = []
        self.lines: list[tuple[int, int, int, int, int]] = []   # v1, v2, flags, front side, back side
        self.sides: list[int] = []                               # the sector of each side
        self.sectors: list[tuple[int, int]] = []                 # floor, ceiling
        self.things: list[tuple[int, int, int, int, int]] = [] # x, y, angle, type, flags

    def vertex(self, x, y) -> int:
        self.vertices.append((int(x), int(y)))
        return len(self.vertices) - 1

    def sector(self, floor: int, ceiling: int) -> int:
        self.sectors.append((int(floor), int(ceiling)))
        return len(self.sectors) - 1

    def line(self, a, b, front: int, back: int | None = None, flags: int = 0) -> int:
        """A line from point ``a`` to point ``b`` with its front side in sector ``front`` (on its right) and, for a
        two-sided line, its back side in sector ``back``."""
        v1, v2 = self.vertex(*a), self.vertex(*b)
        self.sides.append(front)
        f = len(self.sides) - 1
        bk = NO_SIDE
        if back is not None:
            self.sides.append(back)
            bk = len(self.sides) - 1
            flags |= ML_TWOSIDED
        self.lines.append((v1, v2, flags, f, bk))
        return len(self.lines) - 1

    def room(self, x0, y0, x1, y1, sector: int, skip=()) -> None:
        """The one-sided outline of the rectangle [x0, x1] × [y0, y1] facing in (edges named in ``skip``:
        ``west``, ``north``, ``east``, ``south`` are left out)."""
        edges = {"west": ((x0, y0), (x0, y1)), "north": ((x0, y1), (x1, y1)), "east": ((x1, y1), (x1, y0)),
                 "south": ((x1, y0), (x0, y0))}
        for name, (a, b) in edges.items():
            if name not in skip:
                self.line(a, b, sector)

    def player(self, x, y, angle: int = 0) -> None:
        self.things.append((int(x), int(y), int(angle), 1, 7))

    def lumps(self) -> dict[str, bytes]:
        return {
            "THINGS": b"".join(struct.pack("<5h", *t) for t in self.things),
            "LINEDEFS": b"".join(struct.pack("<7H", v1, v2, fl, 0, 0, f, b) for v1, v2, fl, f, b in self.lines),
            "SIDEDEFS": b"".join(struct.pack("<2h8s8s8sH", 0, 0, b"-", b"-", b"STARTAN2", s) for s in self.sides),
            "VERTEXES": b"".join(struct.pack("<2h", *v) for v in self.vertices),
            "SEGS": b"", "SSECTORS": b"", "NODES": b"",
            "SECTORS": b"".join(struct.pack("<2h8s8s3h", f, c, b"FLAT1", b"FLAT1", 160, 0, 0)
                                for f, c in self.sectors),
            "REJECT": b"", "BLOCKMAP": b""}


def write_wad(path, maps: dict, ident: bytes = b"IWAD") -> Path:
    """Write a WAD holding ``maps`` ({name: MapData or {lump: bytes}}), each as its marker and its ten lumps."""
    data, directory = bytearray(), []
    for name, m in maps.items():
        lumps = m.lumps() if isinstance(m, MapData) else m
        directory.append((12 + len(data), 0, name))
        for lump in MAP_ORDER:
            raw = lumps.get(lump, b"")
            directory.append((12 + len(data), len(raw), lump))
            data += raw
    head = struct.pack("<4sii", ident, len(directory), 12 + len(data))
    table = b"".join(struct.pack("<ii8s", off, size, name.encode()) for off, size, name in directory)
    p = Path(path)
    p.write_bytes(head + bytes(data) + table)
    return p


def directory(data: bytes) -> list[tuple[int, int, str, int]]:
    """(offset, size, name, position of the entry in the file) of each directory entry of a WAD's bytes."""
    _, n, off = struct.unpack_from("<4sii", data, 0)
    out = []
    for i in range(n):
        o, s, name = struct.unpack_from("<ii8s", data, off + 16 * i)
        out.append((o, s, name.split(b"\0", 1)[0].decode("latin-1"), off + 16 * i))
    return out


def map_lump(data: bytes, map_name: str, lump: str) -> tuple[int, int, int]:
    """(offset, size, entry position) of ``lump`` of map ``map_name`` in a WAD's bytes."""
    entries = directory(data)
    i = max(k for k, e in enumerate(entries) if e[2] == map_name)
    for o, s, name, at in entries[i + 1:i + 12]:
        if name == lump:
            return o, s, at
    raise KeyError(f"{map_name} has no {lump}")
