"""The gl renderer's render qualities side by side: docs/images/render_quality.png.

Columns: ``render_quality="high"`` (4× MSAA: the default before), one sample per pixel with no smoothing, and the
default (one sample per pixel and the edge-smoothing pass). Rows: the Panda tabletop and a room at 128² (the RL and
demo size, enlarged 3× with nearest-neighbour so pixels show), and a 384² view (the size model agents see) cropped to
its middle half, enlarged 2×. Each column's render time on this machine is printed (process CPU time per image).

Usage: .venv/bin/python scripts/make_quality_sheet.py [--out docs/images/render_quality.png]
The scenes and views are fixed, so the sheet is reproducible (per machine: llvmpipe and a GPU differ in rounding).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from spatialact.envs.camera import CameraSpec, look_at
from spatialact.envs.gl import GLRenderer
from spatialact.envs.rendering import BulletBackend
from spatialact.envs.scenes import build_scene

SCENES = [({"generator": "tabletop", "seed": 2}, look_at([1.0, -1.0, 1.3], [0.45, 0.0, 0.78]), 128),
          ({"generator": "room", "seed": 5}, look_at([1.0, -1.0, 1.5], [0.0, 0.5, 0.8]), 128),
          ({"generator": "tabletop", "seed": 2}, look_at([0.9, -0.7, 1.1], [0.3, 0.05, 0.85]), 384)]
# column title -> (GLRenderer msaa, world render_quality)
COLUMNS = {"high: 4x MSAA (old default)": (None, "high"), "no antialiasing": (0, "default"),
           "default: edge smoothing": (None, "default")}


def _world(spec, gl, quality):
    w = BulletBackend("gl", gl=gl, render_quality=quality)
    info = build_scene(w, spec)
    if spec["generator"] == "tabletop":
        w.p.loadURDF("franka_panda/panda.urdf", [0, 0, info.table_z], useFixedBase=True, physicsClientId=w.client)
    return w


def _cell(img: np.ndarray, size: int) -> Image.Image:
    if size <= 128:
        return Image.fromarray(img).resize((size * 3, size * 3), Image.NEAREST)
    q = size // 4
    return Image.fromarray(img[q:size - q, q:size - q]).resize((size, size), Image.NEAREST)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/images/render_quality.png")
    args = ap.parse_args(argv)
    renderers = {None: GLRenderer(), 0: GLRenderer(msaa=0)}
    cells, times = [], {}
    for spec, T, size in SCENES:
        row = []
        for title, (msaa, quality) in COLUMNS.items():
            w = _world(spec, renderers[msaa], quality)
            cam = CameraSpec(size, size, 60.0)
            img = w.render(T, cam, depth=False)[0]
            t0, n = time.process_time(), 20
            for _ in range(n):
                w.render(T, cam, depth=False)
            times.setdefault(title, []).append((size, (time.process_time() - t0) / n * 1e3))
            w.close()
            row.append(_cell(img, size))
        cells.append(row)
    pad, head = 8, 22
    cw = max(c.width for r in cells for c in r)
    heights = [max(c.height for c in r) for r in cells]
    sheet = Image.new("RGB", (len(COLUMNS) * (cw + pad) + pad, head + sum(h + pad for h in heights)), "white")
    draw = ImageDraw.Draw(sheet)
    for j, title in enumerate(COLUMNS):
        draw.text((pad + j * (cw + pad), 5), title, fill="black")
    y = head
    for row, h in zip(cells, heights):
        for j, c in enumerate(row):
            sheet.paste(c, (pad + j * (cw + pad), y))
        y += h + pad
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out, optimize=True)
    print(out)
    for title, ts in times.items():
        print(f"  {title}: " + ", ".join(f"{s}² {ms:.1f} ms CPU" for s, ms in ts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
