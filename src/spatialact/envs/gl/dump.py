"""Scene dumps: what the gl renderer draws of a world, saved so that it can be drawn again without PyBullet.

A machine with a GPU may lack PyBullet (its wheel alone is over 100 MB) while the renderer needs only numpy and
moderngl. :class:`SceneRecorder` reads a world's scene as the renderer holds it — the triangles at the face budget
of one image size (meshes decimated as for that size), their colours and textures (already at the side the
renderer uploads them, so no image library is needed to draw them), the link slots and the light — and records the
link poses of frame after frame; :meth:`SceneRecorder.save` writes them, with the views to draw and the camera,
to one compressed ``.npz`` file. :func:`load_dump` reads it back (no pickle) and :class:`DumpedScene` is a
:class:`~spatialact.envs.gl.renderer.GLScene` drawn from it: :meth:`DumpedScene.set_frame` puts the links where
frame ``i`` had them, and the renderer draws it as it draws the world (the same programs, shadow map and passes:
on the same GL, the same pixels, tested).

Frames and units: link poses as PyBullet gives them — positions (n_slots, 3) in metres, (x, y, z, w) quaternions,
a base at its centre of mass (the dump keeps each base's inverse inertial frame); views are OpenCV C2W (4, 4)
float64 poses in metres, world +Z up; the camera is width × height pixels with a vertical field of view in degrees.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from .meshes import Part, SceneGeometry
from .renderer import GLScene, texture_side

__all__ = ["DUMP_FORMAT", "SceneRecorder", "SceneDump", "load_dump", "DumpedScene"]

#: The ``format`` entry of a dump this module writes and reads.
DUMP_FORMAT = "spatialact-gl-scene-dump/1"


def _textures_at_side(geo: SceneGeometry) -> tuple[list[np.ndarray], dict]:
    """The geometry's distinct textures, resized (as the renderer would upload them) to one side, and texture key ->
    layer."""
    keys, images = {}, []
    for _, _, part in geo.parts:
        if part.texture is not None and part.texture_key not in keys:
            keys[part.texture_key] = len(images)
            images.append(part.texture)
    if images:
        S = texture_side(images)
        from PIL import Image

        images = [im if im.shape[:2] == (S, S) else np.asarray(Image.fromarray(im).resize((S, S), Image.BILINEAR))
                  for im in images]
    return images, keys


def _pack(geo: SceneGeometry, layer_of: dict, prefix: str) -> dict:
    """The parts of one level of detail as flat arrays named ``prefix + field``."""
    parts = [part for _, _, part in geo.parts]

    def cat(name, dt):
        return np.concatenate([getattr(p, name) for p in parts]).astype(dt) if parts else np.zeros((0,), dt)

    return {prefix + "part_slot": np.array([s for s, _, _ in geo.parts], np.int32),
            prefix + "part_body": np.array([b for _, b, _ in geo.parts], np.int32),
            prefix + "part_closed": np.array([p.closed for p in parts], bool),
            prefix + "part_layer": np.array([layer_of.get(p.texture_key, -1) if p.texture is not None else -1
                                             for p in parts], np.int32),
            prefix + "part_counts": np.array([[len(p.positions), len(p.faces)] for p in parts],
                                             np.int64).reshape(-1, 2),
            prefix + "positions": cat("positions", np.float32), prefix + "normals": cat("normals", np.float32),
            prefix + "uvs": cat("uvs", np.float32), prefix + "colors": cat("colors", np.uint8),
            prefix + "faces": cat("faces", np.int32)}


def _unpack(a: dict, prefix: str, textures: np.ndarray) -> list:
    """The parts (slot, body, Part) of one level from :func:`_pack`'s arrays."""
    parts, v0, f0 = [], 0, 0
    for i, (nv, nf) in enumerate(a[prefix + "part_counts"]):
        layer = int(a[prefix + "part_layer"][i])
        part = Part(*(a[prefix + k][v0:v0 + nv] for k in ("positions", "normals", "uvs", "colors")),
                    a[prefix + "faces"][f0:f0 + nf], texture=textures[layer] if layer >= 0 else None,
                    texture_key=f"dump-{layer}" if layer >= 0 else None, closed=bool(a[prefix + "part_closed"][i]))
        parts.append((int(a[prefix + "part_slot"][i]), int(a[prefix + "part_body"][i]), part))
        v0, f0 = v0 + nv, f0 + nf
    return parts


class SceneRecorder:
    """Records a world's gl scene for a ``width`` × ``height`` image: the geometry once (the levels of detail a
    render at that size draws: the size's face budget, and the coarser one its shadow map is drawn from), then the
    link poses of each frame :meth:`frame` is called at. ``world``: a ``BulletBackend`` drawn by gl."""

    def __init__(self, world, width: int, height: int):
        from .context import current

        self.scene = scene = world.gl
        self.width, self.height = int(width), int(height)
        self.budget = scene.renderer.face_budget(self.width, self.height)
        shadow_key = None if self.budget is None else max(24, self.budget // 4)  # GLScene.sync's shadow level
        with current(scene.ctx):
            scene.sync(self.budget)  # the scene as the renderer holds it (slots, light)
            self.geometry = scene.level(self.budget)["geometry"]
            self.levels = {self.budget: self.geometry}
            self.levels.setdefault(shadow_key, scene.level(shadow_key)["geometry"])
        self.light = dict(getattr(world, "light", None) or {})
        self.positions: list[np.ndarray] = []
        self.quaternions: list[np.ndarray] = []

    def frame(self) -> int:
        """Record the link poses the world holds now; returns the frame's index."""
        pos, quat = self.scene.poses()
        self.positions.append(np.asarray(pos, np.float64))
        self.quaternions.append(np.asarray(quat, np.float64))
        return len(self.positions) - 1

    def save(self, path, views, fov_deg: float = 60.0, extra: dict | None = None) -> int:
        """Write the dump to ``path`` (``.npz``, compressed) with ``views`` (K OpenCV C2W poses) and the camera's
        vertical field of view; ``extra``: more named arrays (e.g. reference images). Returns the file's size in
        bytes."""
        if not self.positions:
            raise ValueError("record at least one frame before saving")
        geo = self.geometry
        images, layer_of = _textures_at_side(geo)
        budgets = list(self.levels)  # the first is the image size's
        meta = {"format": DUMP_FORMAT, "budgets": budgets, "width": self.width, "height": self.height,
                "fov_deg": float(fov_deg),
                "light": {k: np.asarray(v).tolist() for k, v in self.light.items()},
                "slots": [list(map(int, s)) for s in geo.slots],
                "links": {str(b): list(map(int, ls)) for b, ls in geo.links.items()},
                "bases": {str(b): np.asarray(m).tolist() for b, m in geo.base_inertial_inv.items()},
                "n_bodies": int(geo.n_bodies), "decimated": int(geo.decimated)}
        arrays = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
        for i, b in enumerate(budgets):
            arrays.update(_pack(self.levels[b], layer_of, f"L{i}_"))
        arrays.update({
            "textures": np.stack(images) if images else np.zeros((0, 1, 1, 4), np.uint8),
            "frame_positions": np.stack(self.positions), "frame_quaternions": np.stack(self.quaternions),
            "views": np.asarray(views, np.float64).reshape(-1, 4, 4),
        })
        for k, v in (extra or {}).items():
            arrays["x_" + k] = np.asarray(v)
        with open(path, "wb") as f:
            np.savez_compressed(f, **arrays)
        return os.path.getsize(path)


@dataclass
class SceneDump:
    """A dump read back: the ``geometry`` (the image size's level of detail; ``levels``: face budget -> geometry,
    every level saved), ``light``, link poses per frame (``positions`` (F, n, 3) metres,
    ``quaternions`` (F, n, 4) x, y, z, w), ``views`` (K, 4, 4) OpenCV C2W, the camera (``width``, ``height``,
    ``fov_deg``) and any ``extra`` arrays saved with it."""

    geometry: SceneGeometry
    levels: dict
    light: dict
    positions: np.ndarray
    quaternions: np.ndarray
    views: np.ndarray
    width: int
    height: int
    fov_deg: float
    extra: dict

    @property
    def n_frames(self) -> int:
        return len(self.positions)


def load_dump(path) -> SceneDump:
    """Read a dump written by :meth:`SceneRecorder.save` (no pickled objects: a file that needs them is refused)."""
    with np.load(path, allow_pickle=False) as z:
        a = {k: z[k] for k in z.files}
    meta = json.loads(a.pop("meta").tobytes().decode())
    if meta.get("format") != DUMP_FORMAT:
        raise ValueError(f"{path}: not a gl scene dump of format {DUMP_FORMAT} (format: {meta.get('format')!r})")
    textures = a.pop("textures")
    levels = {}
    for i, b in enumerate(meta["budgets"]):
        levels[b] = SceneGeometry(slots=[tuple(s) for s in meta["slots"]], parts=_unpack(a, f"L{i}_", textures),
                                  base_inertial_inv={int(k): np.asarray(m) for k, m in meta["bases"].items()},
                                  links={int(k): ls for k, ls in meta["links"].items()}, n_bodies=meta["n_bodies"],
                                  decimated=meta["decimated"])
    extra = {k[2:]: v for k, v in a.items() if k.startswith("x_")}
    return SceneDump(levels[meta["budgets"][0]], levels, meta["light"], a["frame_positions"],
                     a["frame_quaternions"], a["views"], meta["width"], meta["height"], meta["fov_deg"], extra)


class DumpedScene(GLScene):
    """A :class:`GLScene` drawn from a :class:`SceneDump` instead of a PyBullet world: the dump's geometry at
    every face budget, its light, and the link poses of the frame :meth:`set_frame` chose (frame 0 at first)."""

    def __init__(self, renderer, dump: SceneDump, quality: str = "default"):
        renderer.mode(quality)
        super().__init__(renderer, dump, quality)  # the dump stands for the world: its ``light`` is read
        self.dump = dump
        self.frame = 0

    def set_frame(self, i: int) -> None:
        """Put the links where frame ``i`` of the dump has them (drawn at the next render)."""
        if not 0 <= i < self.dump.n_frames:
            raise IndexError(f"frame {i} is not in the dump (0 to {self.dump.n_frames - 1})")
        self.frame = int(i)

    def read_geometry(self, budget) -> SceneGeometry:
        """The dump's level at ``budget`` (a budget it has no level for: the image size's)."""
        return self.dump.levels.get(budget, self.dump.geometry)

    def body_count(self) -> int:
        return self.dump.geometry.n_bodies

    def poses(self) -> tuple[np.ndarray, np.ndarray]:
        return self.dump.positions[self.frame], self.dump.quaternions[self.frame]
