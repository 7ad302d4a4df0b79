"""Lines of code per package of ``src/spatialact`` at two git revisions, side by side (a Markdown table).

    python scripts/loc_by_package.py BEFORE [AFTER]      # AFTER defaults to the working tree

A line counts when it is not blank (docstrings and comments count: in this code base they are the manual). A
package is a folder under ``src/spatialact`` (nested folders count with their top one, e.g. ``envs/doom`` with
``envs``); the top-level modules are one row, ``(modules)``. The ``tests`` row counts ``tests/`` the same way.
docs/architecture.md quotes its output.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = "src/spatialact/"


def _files(rev: str | None) -> dict[str, str]:
    """path -> text of every tracked ``.py`` file under src/spatialact and tests at ``rev`` (None: the work tree)."""
    if rev is None:
        paths = subprocess.run(["git", "ls-files", "--", SRC, "tests"], cwd=ROOT, check=True, capture_output=True,
                               text=True).stdout.split()
        return {p: (ROOT / p).read_text(encoding="utf-8") for p in paths if p.endswith(".py") and (ROOT / p).exists()}
    paths = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "--", SRC, "tests"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {p: subprocess.run(["git", "show", f"{rev}:{p}"], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout for p in paths if p.endswith(".py")}


def _package(path: str) -> str:
    if path.startswith("tests/"):
        return "tests"
    rest = path[len(SRC):]
    return rest.split("/", 1)[0] + "/" if "/" in rest else "(modules)"


def count(rev: str | None) -> tuple[Counter, Counter]:
    """(lines, files) per package at ``rev``."""
    lines, files = Counter(), Counter()
    for path, text in _files(rev).items():
        pkg = _package(path)
        lines[pkg] += sum(1 for line in text.splitlines() if line.strip())
        files[pkg] += 1
    return lines, files


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="a git revision (commit, tag, branch)")
    ap.add_argument("after", nargs="?", default=None, help="a git revision (default: the working tree)")
    args = ap.parse_args(argv)
    (lb, fb), (la, fa) = count(args.before), count(args.after)
    label = args.after or "now"
    print(f"| package | lines {args.before} | lines {label} | change | files {args.before} → {label} |")
    print("| --- | ---: | ---: | ---: | ---: |")
    keys = sorted(set(lb) | set(la), key=lambda k: (k == "tests", k == "(modules)", k))
    for k in keys:
        print(f"| `{k}` | {lb[k]:,} | {la[k]:,} | {la[k] - lb[k]:+,} | {fb[k]} → {fa[k]} |")
    src_b = sum(v for k, v in lb.items() if k != "tests")
    src_a = sum(v for k, v in la.items() if k != "tests")
    print(f"| **src/spatialact** | {src_b:,} | {src_a:,} | {src_a - src_b:+,} | "
          f"{sum(v for k, v in fb.items() if k != 'tests')} → {sum(v for k, v in fa.items() if k != 'tests')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
