"""Doom levels through ViZDoom: the game engine in spatialact's frames, a deterministic explorer, recordings.

* :mod:`.engine` — :class:`DoomEngine`: one headless level; poses C2W (4, 4) float64 in metres (1 map unit =
  1/32 m), world +Z up, OpenCV camera axes; rgb + depth; motion through the game's physics;
* :mod:`.explorer` — :class:`Explorer`: walks a level at a walking pace, deterministically for a seed;
* :mod:`.wad` — WAD files: the bundled Freedoom IWADs, their maps and SHA-256, their map data checked before the
  engine sees it (:func:`check_wad`), a map's lines, sides, sectors and things;
* :mod:`.geodesic` — the shortest walkable distance between two points of a level (:func:`geodesic_distance`,
  map units): the ``d0`` of SPL for game tasks.

This package imports no other ``spatialact.envs`` module; vizdoom is imported only when an engine is built.
"""

from .engine import DoomEngine, Execution, GameUnavailable, INSTALL_HINT, require_vizdoom
from .geodesic import geodesic_distance
from .wad import WadError, check_wad, resolve_wad, wad_maps, wad_sha256

__all__ = ["DoomEngine", "Execution", "GameUnavailable", "INSTALL_HINT", "require_vizdoom", "WadError",
           "resolve_wad", "wad_maps", "wad_sha256", "check_wad", "geodesic_distance"]
