"""Strip outputs from the notebooks before committing them.

    .venv/bin/python scripts/strip_notebooks.py            # every notebooks/*.ipynb, in place
    .venv/bin/python scripts/strip_notebooks.py --check    # exit 1 naming the notebooks that carry outputs
    .venv/bin/python scripts/strip_notebooks.py PATH ...   # only these

Removes code-cell outputs and execution counts, and notebook and cell metadata that Jupyter adds while running
(widgets, timings, collapsed/scrolled state, the running Python's version); keeps the kernelspec and the
language's name. tests/docs/test_notebooks.py
fails on a committed notebook with outputs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEEP_NOTEBOOK_METADATA = ("kernelspec", "language_info")


def strip(nb) -> bool:
    """Strip ``nb`` (an nbformat NotebookNode) in place; True if anything changed."""
    changed = False
    for key in list(nb.metadata):
        if key not in KEEP_NOTEBOOK_METADATA:
            del nb.metadata[key]
            changed = True
    info = nb.metadata.get("language_info")
    if info is not None and set(info) != {"name"}:  # the running Python's version etc.: noise in diffs
        nb.metadata["language_info"] = {"name": info.get("name", "python")}
        changed = True
    for cell in nb.cells:
        if cell.get("metadata"):
            cell.metadata = {}
            changed = True
        if cell.cell_type == "code":
            if cell.outputs or cell.execution_count is not None:
                changed = True
            cell.outputs = []
            cell.execution_count = None
    return changed


def main(argv=None) -> int:
    import nbformat

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", help="notebooks (default: notebooks/*.ipynb)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook needs stripping")
    args = ap.parse_args(argv)
    paths = [Path(p) for p in args.paths] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    dirty = []
    for p in paths:
        if not p.is_file():
            print(f"strip_notebooks: {p}: no such notebook", file=sys.stderr)
            return 2
        nb = nbformat.read(p, as_version=4)
        if strip(nb):
            dirty.append(p)
            if not args.check:
                nbformat.write(nb, p)
    for p in dirty:
        print(f"{'needs stripping' if args.check else 'stripped'}: {p}")
    return 1 if (args.check and dirty) else 0


if __name__ == "__main__":
    raise SystemExit(main())
