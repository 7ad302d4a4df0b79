"""Make docs/images/replay_droid.png: the contact sheet of the replay command the README and docs show.

    .venv/bin/python scripts/make_replay_sheet.py

It runs ``scripts/make_readme_images.py --only replay``: the command shown beside the picture,
``spatialact replay examples/droid --episode 0 --out scratch/replay-droid``, exactly as written (on the shipped
synthetic DROID sample, examples/droid), and copies its ``contact_sheet.png`` into docs/images. For a real DROID
dataset, run the command itself: ``spatialact replay DROID_DIR --episode 3 --out scratch/replay-droid3``.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_readme_images import main as make

    return make(["--only", "replay", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
