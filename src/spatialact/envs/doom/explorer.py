"""``Explorer``: a deterministic walk through a Doom level at a walking pace, recording every tic.

The explorer sees what the camera sees: each tic it reads the depth buffer's band around the horizon (eye-level
walls, doors, pillars; the floor there is more than 10 m away) as the free distance along each image column. It
walks forward at the walking speed (1.4 m/s by default, Doom's own walk is ~9 m/s), turning toward a heading chosen
among the visible free directions, scored by free distance, by how little the level around the end point has been
visited (a 2 m grid of time spent) and by a seeded random term; it re-chooses every second, when the way ahead
closes (under 2.5 m) or when it makes no progress (a step too high, a ledge it cannot see), and turns around when
no direction is free. Turns are at most 4° a tic (140°/s), exact. It never presses *use*: doors stay as at the
map's start. The same seed on the same level gives the same inputs, poses and images.

Frames are yielded as :class:`Frame` values: rgb, raw depth levels, the C2W pose (4, 4) float64 in metres (world
+Z up, OpenCV axes; level: the explorer never looks up or down), the game tic and the inputs of the tic that led to
it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .engine import MAX_THRUST, TICRATE, DoomEngine, depth_to_metres, UNIT_M

__all__ = ["Explorer", "Frame", "TURN_RATE_DEG", "NEAR_UNITS", "CELL_UNITS"]

TURN_RATE_DEG = 4.0      # largest turn a tic
NEAR_UNITS = 80.0        # free distance ahead under which a new heading is chosen (2.5 m)
STOP_UNITS = 40.0        # free distance ahead under which the explorer stops walking (1.25 m)
FAR_UNITS = 640.0        # free distances are capped here when scored (20 m)
CELL_UNITS = 64.0        # visit grid (2 m)
REPLAN_TICS = TICRATE    # a new heading at least every second
STUCK_TICS = TICRATE     # less than STUCK_UNITS moved in this many tics of walking: stuck
STUCK_UNITS = 8.0


@dataclass(frozen=True)
class Frame:
    """One recorded tic: ``rgb`` (H, W, 3) uint8, ``depth`` (H, W) uint8 raw levels (see
    :func:`spatialact.envs.doom.engine.depth_to_metres`), ``pose`` C2W (4, 4) float64 metres, ``tic`` (game tics
    since the episode started) and ``action`` (forward, side, turn°, look°, up) that led to this frame."""

    rgb: np.ndarray
    depth: np.ndarray
    pose: np.ndarray
    tic: int
    action: tuple


class Explorer:
    """Walks ``engine``'s level from the map's start, deterministically for ``seed``."""

    def __init__(self, engine: DoomEngine, seed: int = 0):
        self.engine = engine
        self.seed = int(seed)
        self.rng = np.random.default_rng(self.seed)
        self.visits: dict[tuple[int, int], int] = {}
        w, h = engine.width, engine.height
        K = engine.intrinsics()
        cols = np.arange(w)
        # Each column's horizontal angle from the optical axis (+ left, as yaw counts), and its ray stretch.
        self._col_angle = -np.arctan((cols - K[0, 2]) / K[0, 0])
        self._stretch = 1.0 / np.cos(self._col_angle)
        band = max(2, h // 12)
        cy = int(round(K[1, 2]))
        self._rows = slice(cy - band, cy + band)
        self._ahead = np.abs(self._col_angle) <= math.radians(12)
        self.heading = None
        self.exited = False
        self._since_plan = 0
        self._trail: list[np.ndarray] = []

    def free_distance(self, depth_levels: np.ndarray) -> np.ndarray:
        """Free distance (map units) along each image column: the nearest depth in the horizon band, along the
        column's ray."""
        d = depth_to_metres(depth_levels[self._rows], self.engine.height).min(axis=0) / UNIT_M
        return d * self._stretch

    def _cell(self, xy) -> tuple[int, int]:
        return int(math.floor(xy[0] / CELL_UNITS)), int(math.floor(xy[1] / CELL_UNITS))

    def _choose(self, free: np.ndarray, pos: np.ndarray, yaw: float) -> float:
        """A new heading (degrees): the best-scored visible free direction, or a turn-around."""
        ok = free >= 1.5 * NEAR_UNITS
        if not ok.any():
            return yaw + float(self.rng.choice([-1.0, 1.0])) * float(self.rng.uniform(100.0, 180.0))
        idx = np.nonzero(ok)[0][:: max(1, len(free) // 64)]
        best, best_score = None, -math.inf
        noise = self.rng.normal(0.0, 60.0, size=len(idx))
        for k, c in enumerate(idx):
            a = yaw + math.degrees(self._col_angle[c])
            reach = min(free[c] - NEAR_UNITS, 4 * CELL_UNITS)
            end = pos + reach * np.array([math.cos(math.radians(a)), math.sin(math.radians(a))])
            score = min(free[c], FAR_UNITS) - 40.0 * self.visits.get(self._cell(end), 0) / TICRATE + noise[k]
            if score > best_score:
                best, best_score = a, score
        return float(best)

    def _stuck(self, pos: np.ndarray) -> bool:
        self._trail.append(pos.copy())
        if len(self._trail) > STUCK_TICS:
            self._trail.pop(0)
            return float(np.linalg.norm(self._trail[-1] - self._trail[0])) < STUCK_UNITS
        return False

    def run(self, tics: int) -> Iterator[Frame]:
        """Start the level (:meth:`DoomEngine.start`) and walk ``tics`` game tics, yielding the start frame and one
        :class:`Frame` per tic (``tics + 1`` frames; fewer when the walk crosses an exit line and the level ends:
        :attr:`exited` is then True)."""
        eng = self.engine
        eng.start()
        self.exited = False
        action = (0, 0, 0.0, 0.0, 0)
        for i in range(tics + 1):
            if eng.finished:
                self.exited = True
                return
            rgb, levels = eng.render_raw()
            v = eng.variables()
            yield Frame(rgb, levels, eng.pose(), eng.tics, action)
            if i == tics:
                return
            action = self._act(levels, v)
            eng.tic(*action)

    def _act(self, levels: np.ndarray, v: np.ndarray) -> tuple:
        """The inputs of the next tic from the view's depth and the game variables ``v``."""
        pos, vel, yaw = v[0:2], v[3:5], float(v[6])
        cell = self._cell(pos)
        self.visits[cell] = self.visits.get(cell, 0) + 1
        free = self.free_distance(levels)
        ahead = float(free[self._ahead].min())
        self._since_plan += 1
        if (self.heading is None or self._since_plan >= REPLAN_TICS or ahead < NEAR_UNITS
                or self._stuck(pos)):
            if self.heading is None or self._since_plan >= 4:
                self.heading = self._choose(free, pos, yaw)
                self._since_plan = 0
                self._trail.clear()
        err = (self.heading - yaw + 180.0) % 360.0 - 180.0
        turn = max(-TURN_RATE_DEG, min(TURN_RATE_DEG, err))
        speed = self.engine.speed_units if abs(err) < 20.0 else self.engine.speed_units * max(
            0.0, math.cos(math.radians(min(90.0, 2 * abs(err)))))
        if ahead < STOP_UNITS:
            speed = 0.0
        rad = math.radians(yaw)
        fwd_dir = np.array([math.cos(rad), math.sin(rad)])
        right_dir = np.array([math.sin(rad), -math.cos(rad)])
        a = speed * fwd_dir - vel
        f = max(-MAX_THRUST, min(MAX_THRUST, round(32.0 * float(a @ fwd_dir))))
        s = max(-MAX_THRUST, min(MAX_THRUST, round(32.0 * float(a @ right_dir))))
        units = round(turn / 360.0 * 65536)
        # + turn input turns right (the yaw decreases); the game floors value/180*32768.
        return (int(f), int(s), (-units + 1e-3) * 360.0 / 65536 if units else 0.0, 0.0, 0)
