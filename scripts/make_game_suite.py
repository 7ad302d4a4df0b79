"""Regenerate the built-in ``game`` suite's task file (spatialact/data/suites/game-v1.jsonl) from scratch.

The explorer walks each map of spatialact.taskgen.game_suite.SUITE_MAPS deterministically, pairs of the walk get
their ground truth, their level and their geodesic d0 (meta["d0"], metres), and the pairs the game does not execute
to the goal are dropped (see that module). Same code, same vizdoom, same file: run it to check the shipped file is reproducible (``--check``), or after
a deliberate change of the suite, with SUITE_VERSION raised.

Usage: .venv/bin/python scripts/make_game_suite.py [--out FILE] [--check]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


def main() -> int:
    from spatialact.taskgen.game_suite import build_game_suite, suite_path

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="task file to write (default: the shipped file)")
    p.add_argument("--check", action="store_true", help="build into a temporary file and compare with the shipped one")
    args = p.parse_args()
    if args.check:
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "game.jsonl"
            build_game_suite(out)
            same = out.read_bytes() == suite_path().read_bytes()
        print(f"{suite_path()}: {'reproduced byte for byte' if same else 'DIFFERS from a fresh build'}")
        return 0 if same else 1
    out = Path(args.out) if args.out else suite_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    tasks, skipped = build_game_suite(out)
    for name, why in skipped.items():
        for reason, k in why.items():
            print(f"{name}: skipped {k}: {reason}", file=sys.stderr)
    print(f"{len(tasks)} tasks -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
