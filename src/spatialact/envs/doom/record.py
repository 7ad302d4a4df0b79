"""``record_level``: the explorer's walk through a level written as a game trajectory folder (format in
:mod:`spatialact.trajectories.game`; docs/trajectories.md). One frame a game tic (35 fps), the start frame
included; poses C2W (4, 4) float64 in metres, world +Z up, OpenCV camera axes. Same arguments, same files."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ...trajectories.game import GameTrajectoryWriter
from .engine import DEPTH_CALIBRATION, DEPTH_STEP_UNITS, TICRATE, UNIT_M, WALK_SPEED_MPS, DoomEngine
from .explorer import Explorer

__all__ = ["record_level", "depth_meta"]


def depth_meta(height: int) -> dict:
    """How a stored 8-bit depth level of a screen ``height`` rows tall becomes metres (the middle of the level)."""
    step = DEPTH_STEP_UNITS * UNIT_M
    return {"scale_m": step, "offset_m": (0.5 * DEPTH_STEP_UNITS + DEPTH_CALIBRATION[int(height)]) * UNIT_M,
            "quantisation_m": step, "far_level": 255}


def record_level(out, *, map: str = "MAP01", seconds: float = 10.0, seed: int = 0, wad=None,
                 resolution: tuple[int, int] = (320, 240), speed_mps: float = WALK_SPEED_MPS,
                 progress: Callable[[int], None] | None = None) -> Path:
    """Walk ``map`` of ``wad`` for ``seconds`` with the explorer seeded ``seed`` and write the trajectory folder
    ``out`` (it must not exist or be empty; it appears only when complete). ``progress(n)`` is called after each
    frame written. A walk that crosses an exit line ends early (``explorer.exited_level`` in meta.json). Returns
    ``out``."""
    tics = max(1, int(round(float(seconds) * TICRATE)))
    with DoomEngine(wad, map, resolution, speed_mps=speed_mps) as engine:
        explorer = Explorer(engine, seed=seed)
        info = engine.describe()
        meta = {"wad": {"name": info["wad"], "sha256": info["wad_sha256"]}, "map": info["map"],
                "engine": {"name": info["engine"], "version": info["engine_version"]},
                "units": {"length": "metres", "map_unit_m": UNIT_M, "angles": "radians",
                          "world": "the map's x east, y north, +Z up", "camera": "OpenCV: +X right, +Y down, "
                                                                                "+Z forward", "poses": "C2W"},
                "explorer": {"seed": int(seed), "seconds": float(seconds), "tics": tics,
                             "speed_mps": float(speed_mps), "monsters": False, "god_mode": True}}
        writer = GameTrajectoryWriter(out, fps=float(TICRATE), width=engine.width, height=engine.height,
                                      intrinsics=engine.intrinsics(), depth=depth_meta(engine.height), meta=meta)
        with writer:
            for frame in explorer.run(tics):
                writer.add(frame.rgb, frame.depth, frame.pose, frame.tic, frame.action)
                if progress is not None:
                    progress(len(writer))
            # A walk over an exit line ends the level: the recording stops there, and says so.
            writer.meta["explorer"]["exited_level"] = explorer.exited
            return writer.close()
