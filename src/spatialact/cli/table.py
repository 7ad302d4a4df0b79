"""Plain-text tables for the terminal: the default output of every subcommand (``--json`` gives JSON)."""

from __future__ import annotations

from typing import Any, Sequence


def _cell(v: Any, floatfmt: str) -> str:
    if isinstance(v, float):
        return format(v, floatfmt)
    return "" if v is None else str(v)


def format_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], floatfmt: str = ".4f",
                 title: str | None = None) -> str:
    """Rows under headers, columns padded; numbers right-aligned."""
    cells = [[_cell(v, floatfmt) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in rows if
                   row[i] is not None) and rows for i in range(len(headers))]

    def line(vals):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    out = [title] if title else []
    out += [line(headers), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    return "\n".join(out)
