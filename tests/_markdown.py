"""Reading the Markdown the report writes, in the tests: the rows of a table under a heading."""

from __future__ import annotations


def table_after(md: str, heading: str) -> list[dict]:
    """The rows of the first Markdown table after the line ``heading``, as dicts (header cell → cell)."""
    lines = md.split(heading + "\n", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    head = [c.strip() for c in lines[start].strip("|").split("|")]
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(head, (c.strip() for c in line.strip("|").split("|")))))
    return rows
