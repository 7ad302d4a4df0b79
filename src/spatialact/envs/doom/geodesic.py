"""The geodesic start→goal distance in a Doom level: the shortest path the player can walk, as habitat-lab's
geodesic distance on its navigation mesh (the ``d0`` of SPL for game tasks; docs/game.md "Geodesic d0").

The level is the map's own data (:func:`~spatialact.envs.doom.wad.map_level`: lines, their sides' sectors, sector
floor and ceiling heights), in map units (1/32 m; x east, y north), with the level as at the map's start (doors
closed, lifts up). The player is a disc of ``radius`` (16 units, its collision radius) and 56 units tall, and
follows the game's movement rules (``P_CheckPosition`` / ``P_TryMove``): where it stands, the floor is the highest
and the ceiling the lowest of every sector its disc touches; it may not

* come within ``radius`` of a one-sided line (a solid wall) or of a line flagged to block everything;
* step **up** more than 24 units (stepping down any height is allowed: the directed rule of a ledge);
* stand where the opening (ceiling - floor) is under 56 units (a closed door), or go under a ceiling less than 56
  above its feet.

Method: a grid of ``cell`` units (4; larger cells for maps over :data:`MAX_GRID_CELLS` cells) holds each cell
centre's sector (the side facing it of the nearest line to its right, as the game's even-odd sector shapes),
then the floor and ceiling the disc meets and whether a blocking line is within the radius (exact point-to-line
distances, line by line); Dijkstra (``scipy.sparse.csgraph``; 8 neighbours, √2 diagonals, each move checked
against the step and ceiling rules) finds the route, and the route is pulled taut (from the exact start, each
point joined straight to the farthest point of the route it sees: a straight stretch at least ``radius`` from every
blocking line, within 0.25 units, whose cells obey the same rules) to the exact goal. The result is the length of
that polyline: the straight line when it is clear, and otherwise the detour within about a grid cell of the exact
one (a wall end is rounded by the grid). Things (barrels, lamps) are not obstacles: the distance is a lower bound
for them. Cached per map.
"""

from __future__ import annotations

import math
import os
from collections import OrderedDict

import numpy as np

from .engine import PLAYER_RADIUS_UNITS, UNIT_M
from .wad import ML_BLOCKING, map_level, resolve_wad

__all__ = ["geodesic_distance", "geodesic_path", "geodesic_d0", "GRID_UNITS", "MAX_GRID_CELLS", "STEP_UP_UNITS",
           "PLAYER_HEIGHT_UNITS", "CLEARANCE_TOL_UNITS"]

GRID_UNITS = 4.0             # cell side (map units)
MAX_GRID_CELLS = 4_000_000   # a map whose bounding box needs more cells gets cells twice as large, until it fits
STEP_UP_UNITS = 24.0         # the highest step the player walks up
PLAYER_HEIGHT_UNITS = 56.0   # the player's height: the lowest opening it passes
CLEARANCE_TOL_UNITS = 0.25   # a taut stretch may pass this much nearer than the radius to a wall (the engine's stop)
_CACHE: OrderedDict = OrderedDict()
_CACHE_SIZE = 3
_VOID = 1e9
_NEIGHBOURS = ((0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (1, -1), (-1, 1), (-1, -1))


def _point_segment_distance(px, py, x1, y1, x2, y2):
    """Distance from points (px, py) to the segment (x1, y1)-(x2, y2) (arrays broadcast)."""
    dx, dy = x2 - x1, y2 - y1
    n2 = dx * dx + dy * dy
    t = np.where(n2 > 0, ((px - x1) * dx + (py - y1) * dy) / np.where(n2 > 0, n2, 1.0), 0.0)
    t = np.clip(t, 0.0, 1.0)
    return np.hypot(px - (x1 + t * dx), py - (y1 + t * dy))


class _Level:
    """A map rasterised for one radius: sector, floor, ceiling and free cells, the move graph, blocking lines."""

    def __init__(self, level, radius: float):
        seg = level.segments
        self.radius = float(radius)
        lo, hi = seg.reshape(-1, 2, 2).min(axis=(0, 1)), seg.reshape(-1, 2, 2).max(axis=(0, 1))
        cell = GRID_UNITS
        while math.ceil((hi[0] - lo[0]) / cell + 3) * math.ceil((hi[1] - lo[1]) / cell + 3) > MAX_GRID_CELLS:
            cell *= 2.0
        self.cell = cell
        # Cell centres sit 1/8 unit off the whole units, so a row never passes exactly through a vertex.
        self.x0, self.y0 = math.floor(lo[0]) - cell + 0.125, math.floor(lo[1]) - cell + 0.125
        self.nx, self.ny = int(math.ceil((hi[0] - self.x0) / cell)) + 2, int(math.ceil((hi[1] - self.y0) / cell)) + 2
        self.sector = self._sectors(seg, level.front, level.back)
        void = self.sector < 0
        s = np.maximum(self.sector, 0)
        self.floor = np.where(void, _VOID, level.floor[s]).astype(np.float32)  # nothing stands in the void
        self.ceiling = np.where(void, -_VOID, level.ceiling[s]).astype(np.float32)
        blocking = (level.back < 0) | ((level.flags & ML_BLOCKING) != 0)
        near_wall = self._bands(seg, blocking, level)
        self.free = ~void & ~near_wall & (self.ceiling - self.floor >= PLAYER_HEIGHT_UNITS)
        self.walls = seg[blocking]
        self._graph()

    # ----- the raster ------------------------------------------------------------------------------------------
    def centre(self, r, c):
        return self.x0 + (np.asarray(c) + 0.5) * self.cell, self.y0 + (np.asarray(r) + 0.5) * self.cell

    def cell_of(self, x, y):
        return (np.floor((np.asarray(y) - self.y0) / self.cell).astype(np.int64),
                np.floor((np.asarray(x) - self.x0) / self.cell).astype(np.int64))

    def _sectors(self, seg, front, back) -> np.ndarray:
        """Each cell centre's sector (-1 outside the level): the side facing it of the nearest line crossing its
        row to its right."""
        x1, y1, x2, y2 = seg.T
        ylo, yhi = np.minimum(y1, y2), np.maximum(y1, y2)
        xs = self.x0 + (np.arange(self.nx) + 0.5) * self.cell
        out = np.full((self.ny, self.nx), -1, dtype=np.int32)
        for r in range(self.ny):
            y = self.y0 + (r + 0.5) * self.cell
            k = np.nonzero((ylo <= y) & (y < yhi))[0]
            if not k.size:
                continue
            xi = x1[k] + (y - y1[k]) * (x2[k] - x1[k]) / (y2[k] - y1[k])
            order = np.argsort(xi, kind="stable")
            xi, k = xi[order], k[order]
            j = np.searchsorted(xi, xs, side="left")
            inside = j < len(k)
            line = k[j[inside]]
            cross = (x2[line] - x1[line]) * (y - y1[line]) - (y2[line] - y1[line]) * (xs[inside] - x1[line])
            out[r, inside] = np.where(cross < 0, front[line], back[line])  # right of from→to: the front side
        return out

    def _bands(self, seg, blocking, level) -> np.ndarray:
        """Cells within the radius of a blocking line (returned), and the floor / ceiling of every sector the disc
        touches through a two-sided line (folded into :attr:`floor` / :attr:`ceiling`)."""
        r, cell = self.radius, self.cell
        near = np.zeros((self.ny, self.nx), dtype=bool)
        hi_floor = np.maximum(level.floor[level.front], np.where(level.back >= 0, level.floor[level.back], -np.inf))
        lo_ceil = np.minimum(level.ceiling[level.front], np.where(level.back >= 0, level.ceiling[level.back], np.inf))
        for i, (x1, y1, x2, y2) in enumerate(seg):
            c0 = max(0, int((min(x1, x2) - r - self.x0) // cell))
            c1 = min(self.nx, int((max(x1, x2) + r - self.x0) // cell) + 1)
            r0 = max(0, int((min(y1, y2) - r - self.y0) // cell))
            r1 = min(self.ny, int((max(y1, y2) + r - self.y0) // cell) + 1)
            if c0 >= c1 or r0 >= r1:
                continue
            px, py = self.centre(np.arange(r0, r1)[:, None], np.arange(c0, c1)[None, :])
            band = _point_segment_distance(px, py, x1, y1, x2, y2) < r
            if blocking[i]:
                near[r0:r1, c0:c1] |= band
            else:
                f, c = self.floor[r0:r1, c0:c1], self.ceiling[r0:r1, c0:c1]
                f[band] = np.maximum(f[band], hi_floor[i])
                c[band] = np.minimum(c[band], lo_ceil[i])
        return near

    def _graph(self) -> None:
        """The directed move graph between free cells (8 neighbours; a move obeys the step and ceiling rules)."""
        from scipy.sparse import csr_matrix

        ny, nx = self.free.shape
        self.node = np.full((ny, nx), -1, dtype=np.int32)
        self.node[self.free] = np.arange(int(self.free.sum()), dtype=np.int32)
        rows, cols, w = [], [], []
        for dr, dc in _NEIGHBOURS:
            a = (slice(max(0, -dr), ny - max(0, dr)), slice(max(0, -dc), nx - max(0, dc)))
            b = (slice(max(0, dr), ny - max(0, -dr)), slice(max(0, dc), nx - max(0, -dc)))
            ok = (self.free[a] & self.free[b] & (self.floor[b] - self.floor[a] <= STEP_UP_UNITS)
                  & (self.ceiling[b] - self.floor[a] >= PLAYER_HEIGHT_UNITS))
            rows.append(self.node[a][ok])
            cols.append(self.node[b][ok])
            w.append(np.full(int(ok.sum()), self.cell * math.hypot(dr, dc)))
        n = int(self.free.sum())
        self.graph = csr_matrix((np.concatenate(w), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))

    # ----- queries ---------------------------------------------------------------------------------------------
    def clear(self, p, q) -> bool:
        """Whether the player walks the straight stretch p→q: at least the radius (less the tolerance) from every
        blocking line, and through cells that obey the step and ceiling rules."""
        p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
        W, r = self.walls, self.radius
        lo, hi = np.minimum(p, q) - r, np.maximum(p, q) + r
        m = ((np.maximum(W[:, 0], W[:, 2]) >= lo[0]) & (np.minimum(W[:, 0], W[:, 2]) <= hi[0])
             & (np.maximum(W[:, 1], W[:, 3]) >= lo[1]) & (np.minimum(W[:, 1], W[:, 3]) <= hi[1]))
        if m.any():
            x1, y1, x2, y2 = W[m].T
            d = np.minimum.reduce([_point_segment_distance(p[0], p[1], x1, y1, x2, y2),
                                   _point_segment_distance(q[0], q[1], x1, y1, x2, y2),
                                   _point_segment_distance(x1, y1, p[0], p[1], q[0], q[1]),
                                   _point_segment_distance(x2, y2, p[0], p[1], q[0], q[1])])
            o1 = (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1)
            o2 = (x2 - x1) * (q[1] - y1) - (y2 - y1) * (q[0] - x1)
            o3 = (q[0] - p[0]) * (y1 - p[1]) - (q[1] - p[1]) * (x1 - p[0])
            o4 = (q[0] - p[0]) * (y2 - p[1]) - (q[1] - p[1]) * (x2 - p[0])
            if ((o1 * o2 < 0) & (o3 * o4 < 0)).any() or (d < r - CLEARANCE_TOL_UNITS).any():
                return False
        n = int(math.ceil(float(np.hypot(*(q - p))) / (0.5 * self.cell))) + 1
        t = np.linspace(0.0, 1.0, n + 1)
        rr, cc = self.cell_of(p[0] + t * (q[0] - p[0]), p[1] + t * (q[1] - p[1]))
        if rr.min() < 0 or cc.min() < 0 or rr.max() >= self.ny or cc.max() >= self.nx:
            return False
        keep = np.r_[True, (rr[1:] != rr[:-1]) | (cc[1:] != cc[:-1])]
        f, c = self.floor[rr[keep], cc[keep]], self.ceiling[rr[keep], cc[keep]]
        if (c - f < PLAYER_HEIGHT_UNITS).any():
            return False
        return bool(((f[1:] - f[:-1] <= STEP_UP_UNITS) & (c[1:] - f[:-1] >= PLAYER_HEIGHT_UNITS)).all())

    def _anchor(self, xy) -> int:
        """The free cell of a point: its own, else the nearest free one within two cells (-1: none)."""
        r, c = (int(v) for v in self.cell_of(xy[0], xy[1]))
        best, node = math.inf, -1
        for dr in range(-2, 3):
            for dc in range(-2, 3):
                rr, cc = r + dr, c + dc
                if 0 <= rr < self.ny and 0 <= cc < self.nx and self.free[rr, cc]:
                    d = float(np.hypot(*(np.array(self.centre(rr, cc)) - xy)))
                    if d < best:
                        best, node = d, int(self.node[rr, cc])
        return node

    def route(self, start, goal) -> np.ndarray | None:
        """The taut route from ``start`` to ``goal`` (K, 2) map units, both included, or None when the player cannot
        walk from one to the other."""
        from scipy.sparse.csgraph import dijkstra

        start, goal = np.asarray(start, np.float64), np.asarray(goal, np.float64)
        if self.clear(start, goal):
            return np.stack([start, goal])
        a, b = self._anchor(start), self._anchor(goal)
        if a < 0 or b < 0:
            return None
        dist, pred = dijkstra(self.graph, directed=True, indices=a, return_predecessors=True)
        if not math.isfinite(dist[b]):
            return None
        chain = [b]
        while chain[-1] != a:
            chain.append(int(pred[chain[-1]]))
        rows, cols = np.divmod(np.flatnonzero(self.free)[chain[::-1]], self.nx)
        return _taut(self, np.vstack([start, np.column_stack(self.centre(rows, cols)), goal]))


def _taut(level: _Level, route: np.ndarray) -> np.ndarray:
    """The route pulled taut: from each corner, straight to the farthest point of the route in view (the next point
    when none is), until the last point is in view."""
    i, last, corners = 0, len(route) - 1, [route[0]]
    while i < last:
        if level.clear(route[i], route[last]):
            break
        k = i + 1
        while k + 1 < last and level.clear(route[i], route[k + 1]):
            k += 1
        corners.append(route[k])
        i = k
    if i < last:
        corners.append(route[last])
    return np.stack(corners)


def _level(wad_path, map_name: str, radius: float) -> _Level:
    p = resolve_wad(wad_path)
    st = os.stat(p)
    key = (str(p), st.st_size, st.st_mtime_ns, str(map_name).strip().upper(), float(radius))
    if key not in _CACHE:
        _CACHE[key] = _Level(map_level(p, map_name), radius)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    _CACHE.move_to_end(key)
    return _CACHE[key]


def geodesic_path(wad_path, map_name: str, start_xy, goal_xy, radius: float = PLAYER_RADIUS_UNITS):
    """The shortest walkable route of :func:`geodesic_distance` as its corners (K, 2) float64 in map units, from
    ``start_xy`` to ``goal_xy`` (both included), or None when the player cannot walk from one to the other."""
    if not (isinstance(radius, (int, float)) and math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive number of map units, got {radius!r}")
    s, g = np.asarray(start_xy, np.float64).reshape(-1)[:2], np.asarray(goal_xy, np.float64).reshape(-1)[:2]
    if s.shape != (2,) or g.shape != (2,) or not (np.isfinite(s).all() and np.isfinite(g).all()):
        raise ValueError(f"start_xy and goal_xy must be finite (x, y) map units, got {start_xy!r}, {goal_xy!r}")
    return _level(wad_path, map_name, float(radius)).route(s, g)


def geodesic_distance(wad_path, map_name: str, start_xy, goal_xy, radius: float = PLAYER_RADIUS_UNITS) -> float:
    """The shortest walkable start→goal distance in ``map_name`` of the WAD ``wad_path`` (a path, or a bundled
    name such as ``freedoom2.wad``) for a player of ``radius`` (map units, 16 by default), in map units:
    ``start_xy`` and ``goal_xy`` are the player's (x, y) in map units (x east, y north). ``math.inf`` when the
    player cannot walk from one to the other. See the module docstring for the rules and the method; the map's data
    is checked (:func:`~spatialact.envs.doom.wad.map_level`, one-line :class:`~spatialact.envs.doom.wad.WadError`).
    """
    route = geodesic_path(wad_path, map_name, start_xy, goal_xy, radius)
    if route is None:
        return math.inf
    return float(np.hypot(*np.diff(route, axis=0).T).sum())


def geodesic_d0(wad_path, map_name: str, start_pose, goal_pose, radius: float = PLAYER_RADIUS_UNITS) -> float:
    """A game task's ``d0`` in metres (its poses' units): the geodesic distance between the camera positions of
    ``start_pose`` and ``goal_pose`` (C2W (4, 4), metres, world +Z up; the camera is above the player's x, y) on the
    map, combined with their height difference as ``sqrt(geodesic² + Δz²)`` (no walk between them is shorter, and it
    is at least the straight line). ``math.inf`` when the player cannot walk from one to the other."""
    s, g = np.asarray(start_pose, np.float64)[:3, 3], np.asarray(goal_pose, np.float64)[:3, 3]
    flat = geodesic_distance(wad_path, map_name, s[:2] / UNIT_M, g[:2] / UNIT_M, radius) * UNIT_M
    return float(math.hypot(flat, g[2] - s[2]))
