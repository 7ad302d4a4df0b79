"""One measured figure of a benchmark, recorded for docs/performance.md.

A benchmark prints its own table for a reader and, for each headline figure, calls :func:`record` with the figure,
its anchor (what a user would use instead, measured in the same run) and the ratio between them. ``run_all.py``
sets ``SPATIALACT_BENCH_OUT`` to a JSON-lines file, collects the records of every benchmark it runs and writes them
as one table, with the date and the machine. Run alone, a benchmark records nothing.
"""

from __future__ import annotations

import json
import os

ENV = "SPATIALACT_BENCH_OUT"


def record(bench: str, figure: str, value: float, unit: str, *, anchor: str | None = None,
           anchor_value: float | None = None, higher_is_better: bool = True, aim: str | None = None) -> None:
    """Record ``value`` (in ``unit``) of ``figure`` from benchmark ``bench`` beside ``anchor`` (its value in the same
    unit, measured in the same run). The ratio is value/anchor when higher is better (rates), anchor/value
    otherwise (times), so a ratio above 1 always means this project is faster. ``aim``: the target, as text."""
    path = os.environ.get(ENV)
    if not path:
        return
    ratio = None
    if anchor_value:
        ratio = value / anchor_value if higher_is_better else anchor_value / value
    row = {"bench": bench, "figure": figure, "value": value, "unit": unit, "anchor": anchor,
           "anchor_value": anchor_value, "ratio": ratio, "aim": aim}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\n")


def best(fn, repeats: int) -> float:
    """CPU seconds of this process for the fastest of ``repeats`` calls of ``fn()`` (CPU time, not wall time: the
    machines these run on are often shared, and another process's load would otherwise count as ours)."""
    import time

    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)
