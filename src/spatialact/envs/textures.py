"""Procedural textures (wood, tiles, wallpaper, fabric, paintings) written once as small PNGs.

Every texture is a pure function of its name and parameters (no global random state), so scenes built from
the same seed look the same. Files go to a per-user cache directory keyed by content parameters.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from ..cache import cache_dir

__all__ = ["texture_path", "TEXTURE_KINDS"]

TEXTURE_KINDS = ("wood", "tiles", "wallpaper", "stripes", "fabric", "painting", "plain", "carpet")
_SIZE = 128


def texture_cache_dir() -> str:
    """The folder of generated textures and box meshes: ``<cache root>/textures-v1`` (``spatialact.cache``)."""
    return str(cache_dir("textures-v1"))


def _rgb(c) -> np.ndarray:
    return np.asarray(c, dtype=np.float64).reshape(1, 1, 3)


def _make(kind: str, color, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    n = _SIZE
    yy, xx = np.mgrid[0:n, 0:n] / n
    base = _rgb(color)
    if kind == "wood":  # planks along x with grain and per-plank tint
        planks = 4
        plank = np.floor(yy * planks)
        tint = 0.85 + 0.3 * rng.random(planks)[plank.astype(int)]
        grain = 0.9 + 0.1 * np.sin(2 * np.pi * (xx * 3 + 8 * yy + rng.random() * 3) * 4)
        img = base * (tint * grain)[..., None]
        img[(np.abs(yy * planks - np.round(yy * planks)) < 0.03)] *= 0.55
    elif kind == "tiles":
        k = 4
        check = ((np.floor(xx * k) + np.floor(yy * k)) % 2)[..., None]
        img = base * (0.8 + 0.2 * check)
        grout = (np.abs(xx * k - np.round(xx * k)) < 0.04) | (np.abs(yy * k - np.round(yy * k)) < 0.04)
        img[grout] = 0.9
    elif kind == "wallpaper":  # dots on a lattice
        k = 6
        fx, fy = xx * k % 1 - 0.5, yy * k % 1 - 0.5
        dots = (fx ** 2 + fy ** 2 < 0.06)[..., None]
        accent = _rgb(1.0 - np.asarray(color)) * 0.5 + base * 0.5
        img = np.where(dots, accent, base)
    elif kind == "stripes":
        k = 8
        s = (np.floor(xx * k) % 2)[..., None]
        img = base * (0.75 + 0.25 * s)
    elif kind == "fabric":
        noise = rng.random((n, n))
        weave = 0.92 + 0.08 * np.sin(xx * np.pi * 64) * np.sin(yy * np.pi * 64)
        img = base * (weave * (0.9 + 0.1 * noise))[..., None]
    elif kind == "carpet":
        k = 3
        ring = np.sqrt((xx - 0.5) ** 2 + (yy - 0.5) ** 2)
        band = (np.floor(ring * k * 4) % 2)[..., None]
        accent = _rgb(rng.random(3))
        img = np.where(band > 0, base, 0.5 * base + 0.5 * accent)
        img = img * (0.9 + 0.1 * rng.random((n, n)))[..., None]
    elif kind == "painting":  # a random abstract picture: coloured rectangles and discs, a strong landmark
        img = np.ones((n, n, 3)) * _rgb(rng.random(3) * 0.6 + 0.3)
        for _ in range(7):
            c = rng.random(3)
            if rng.random() < 0.5:
                x0, y0 = rng.random(2) * 0.8
                w, h = 0.1 + rng.random(2) * 0.5
                m = (xx >= x0) & (xx < x0 + w) & (yy >= y0) & (yy < y0 + h)
            else:
                cx, cy = rng.random(2)
                m = (xx - cx) ** 2 + (yy - cy) ** 2 < (0.05 + 0.2 * rng.random()) ** 2
            img[m] = c
    elif kind == "plain":
        img = base * (0.97 + 0.03 * rng.random((n, n)))[..., None]
    else:
        raise ValueError(f"unknown texture kind {kind!r} (expected one of {TEXTURE_KINDS})")
    return (np.clip(img, 0, 1) * 255).astype(np.uint8)


def texture_path(kind: str, color=(0.6, 0.6, 0.6), seed: int = 0) -> str:
    """Path of a PNG texture of this kind, base colour (RGB in [0, 1]) and seed; written on first use."""
    from PIL import Image

    color = [round(float(c), 4) for c in color]
    key = hashlib.sha1(json.dumps([kind, color, int(seed), _SIZE]).encode()).hexdigest()[:16]
    path = os.path.join(texture_cache_dir(), f"{kind}_{key}.png")
    if not os.path.isfile(path):  # a FIFO or a device planted there is replaced, never read
        img = _make(kind, color, int(seed))
        tmp = f"{path}.{os.getpid()}.tmp.png"
        Image.fromarray(img).save(tmp)
        os.replace(tmp, path)  # atomic: parallel workers never read a half-written file
    return path
