"""Render a start / goal pair from each environment into docs/images/*.png (256×256) for the README and docs.

Each pair is rendered twice: with the project's gl renderer (``<stem>_start.png``, ``<stem>_goal.png``) and with
PyBullet's TinyRenderer, the renderer before it (``<stem>_start_tiny.png``, ``<stem>_goal_tiny.png``), so the README
shows them side by side.

Usage: .venv/bin/python scripts/make_readme_images.py [--out docs/images] [--size 256]
The tasks come from ``procedural_tasks`` with fixed seeds, so the images are reproducible (per renderer and machine).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from PIL import Image

from spatialact.envs import make_env
from spatialact.taskgen import procedural_tasks

# (file stem, kind, seed, variant)
PAIRS = [("nav", "nav", 5, "reach"), ("nav2", "nav", 2, "reach"), ("manip", "manip", 2, "pick_place"),
         ("hand", "hand", 4, "grab_move")]
# renderer -> file-name suffix
RENDERERS = {"gl": "", "tiny": "_tiny"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/images")
    ap.add_argument("--size", type=int, default=256)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for stem, kind, seed, variant in PAIRS:
        task = procedural_tasks(kind, 1, seed=seed, variant=variant)[0]
        for renderer, suffix in RENDERERS.items():
            env = make_env(kind, width=args.size, height=args.size, renderer=renderer, wrap=False)
            try:
                obs, info = env.reset(options={"task": task})
                for name, img in (("start", obs["rgb"]), ("goal", obs["goal_rgb"])):
                    path = out / f"{stem}_{name}{suffix}.png"
                    Image.fromarray(np.asarray(img)).save(path, optimize=True)
                    print(path, info["renderer"], task.gt.to_text())
            finally:
                env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
