"""Write the README's speed table from docs/performance.md, so that the README quotes no figure a benchmark did not
print.

docs/performance.md's first part is written by ``benchmarks/run_all.py`` from what the benchmarks record: one table
row per figure (benchmark, figure, measured, anchor, anchor measured, ratio, aim) and the run's date, machine,
commit and mode. This script reads that table and rewrites the README's block between :data:`BEGIN` and
:data:`END` with one row per figure, every number copied as the page prints it (nothing rounded, nothing typed),
the aim followed by "met" or "not met" where the aim is a plain bound on the figure or its ratio. Figures the
README names that the page does not hold (:data:`NOT_MEASURED`) are listed as "not measured", with the command that
measures them. ``tests/docs/test_docs_drift.py`` fails when the README's block is not what this script makes from the
committed page, or when a number in it is not in the page.

Usage: .venv/bin/python scripts/make_readme_speed.py [--check] [--perf PATH] [--readme PATH]
  --check: write nothing; exit 1 when the README's block differs from what would be written.
A page without the run's table, or a README without exactly one pair of marks, is refused in one line (exit 2).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEGIN = ("<!-- begin: speed table, written by scripts/make_readme_speed.py from docs/performance.md; "
         "rerun it rather than editing by hand -->")
END = "<!-- end: speed table -->"
#: The header of the table benchmarks/run_all.py writes in docs/performance.md.
PERF_HEADER = "| benchmark | figure | measured | anchor | anchor measured | ratio | aim |"
RUN_FIELDS = ("date", "machine", "commit", "mode")
#: Figures the README names that docs/performance.md's table may not hold: (what, the command that measures it,
#: (benchmark, words of a figure) that would hold it). A row is listed as "not measured" while no row of the page's
#: table is of that benchmark with those words in its figure.
NOT_MEASURED = (
    ("`bench_score_e2e.py` — `spatialact score`, 1 M answers to 1 k tasks, one core and `--workers 2`",
     "`benchmarks/bench_score_e2e.py` at full size", ("bench_score_e2e.py", "1,000,000 answers")),
    ("`bench_render.py` — K = 64 views per call", "`benchmarks/bench_render.py` without `--quick`",
     ("render", "K = 64")),
    ("`bench_envs.py` — `AsyncVectorEnv`, 1 → 2 workers (64²)",
     "`benchmarks/bench_envs.py` (printed, not recorded)", ("bench_envs.py", "AsyncVectorEnv")),
    ("EGL and gl on a GPU (aim ≥ 5,000 images/s at 128² batched), torch on CUDA", "`benchmarks/device_check.sh`",
     ("device_check.sh", "GPU")),
)
NUMBER = re.compile(r"[0-9][0-9,.]*")
AIM = re.compile(r"([<>≤≥]) ([0-9][0-9,.]*)(×?) ?(.*)")


class PageError(ValueError):
    """docs/performance.md or the README is not as this script expects (the message names what)."""


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def read_perf(text: str) -> tuple[dict, list[dict]]:
    """The run's fields (date, machine, commit, mode: as the page prints them) and the rows of run_all.py's table in
    docs/performance.md (each a dict of its seven cells). PageError: no such table, or a row without seven cells."""
    lines = text.splitlines()
    try:
        at = lines.index(PERF_HEADER)
    except ValueError:
        raise PageError(f"no table headed {PERF_HEADER!r}") from None
    run = {}
    for line in lines[:at]:
        for f in RUN_FIELDS:
            if line.startswith(f"- {f}: "):
                run[f] = line[len(f) + 4:]
    rows = []
    keys = ("bench", "figure", "measured", "anchor", "anchor_measured", "ratio", "aim")
    for k, line in enumerate(lines[at + 2:], at + 3):
        if not line.startswith("|"):
            break
        cells = _cells(line)
        if len(cells) != len(keys):
            raise PageError(f"line {k}: {len(cells)} cells, not {len(keys)}")
        rows.append(dict(zip(keys, cells)))
    if not rows:
        raise PageError("its table has no rows")
    return run, rows


def _number(s: str) -> float:
    return float(s.replace(",", ""))


def verdict(row: dict) -> str:
    """"met" / "not met" for an aim that bounds the figure (``≥ 500 steps/s``, ``< 0.5 s``: the same unit as the
    measured cell) or its ratio (``≥ 5× lmms-eval``); "" for any other aim or none."""
    m = AIM.fullmatch(row["aim"])
    if not m:
        return ""
    op, bound, times, rest = m.group(1), _number(m.group(2)), m.group(3), m.group(4)
    if times:
        r = NUMBER.match(row["ratio"])
        if not r:
            return ""
        value = _number(r.group())
    else:
        v = NUMBER.match(row["measured"])
        if not v or row["measured"][v.end():].strip() != rest:
            return ""
        value = _number(v.group())
    ok = {"<": value < bound, ">": value > bound, "≤": value <= bound, "≥": value >= bound}[op]
    return "met" if ok else "not met"


def _measured(row: dict) -> str:
    a, b = row["measured"], row["anchor_measured"]
    if not b:
        return a
    ua, ub = a.split(" ", 1)[-1], b.split(" ", 1)[-1]
    if " " in a and " " in b and ua == ub:
        return f"{a.split(' ', 1)[0]} vs {b}"
    return f"{a} vs {b}"


def render(perf_text: str) -> str:
    """The README's block (without the marks) made from docs/performance.md's text."""
    run, rows = read_perf(perf_text)
    out = [f"From [`docs/performance.md`](docs/performance.md) as `benchmarks/run_all.py` last wrote it: "
           + "; ".join(f"{f} {run[f]}" for f in RUN_FIELDS if f in run) + ".",
           "",
           "| benchmark — figure (vs anchor) | measured (vs anchor) | ratio | aim |",
           "| --- | --- | --- | --- |"]
    last = None
    for r in rows:
        name = "″" if r["bench"] == last else r["bench"]
        last = r["bench"]
        what = f"{name} — {r['figure']}" + (f", vs {r['anchor']}" if r["anchor"] else "")
        v = verdict(r)
        aim = f"{r['aim']}: {v}" if v else r["aim"]
        out.append(f"| {what} | {_measured(r)} | {r['ratio']} | {aim} |")
    for what, how, (bench, words) in NOT_MEASURED:
        if not any(r["bench"] == f"`{bench}`" and words in r["figure"] for r in rows):
            out.append(f"| {what} | not measured (no row in docs/performance.md): {how} | | |")
    if any(line.startswith("## ") for line in perf_text.splitlines()):
        out += ["", "Benchmarks run by hand (many requests in flight, local models in batches, …) are in the "
                "sections after docs/performance.md's table, each with what it printed and what its figures say."]
    return "\n".join(out)


def splice(readme: str, block: str) -> str:
    """``readme`` with the text between its marks replaced by ``block``. PageError: not one BEGIN before one END."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.find(END) < readme.find(BEGIN):
        raise PageError("not one begin mark followed by one end mark of the speed table")
    b, e = readme.find(BEGIN) + len(BEGIN), readme.find(END)
    return readme[:b] + "\n" + block.strip("\n") + "\n" + readme[e:]


def block_of(readme: str) -> str:
    """The text between the README's marks (stripped of the newlines around it)."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or readme.find(END) < readme.find(BEGIN):
        raise PageError("not one begin mark followed by one end mark of the speed table")
    return readme[readme.find(BEGIN) + len(BEGIN):readme.find(END)].strip("\n")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    paths = {"--perf": ROOT / "docs" / "performance.md", "--readme": ROOT / "README.md"}
    for opt in paths:
        if opt in args:
            k = args.index(opt)
            if k + 1 >= len(args):
                print(f"make_readme_speed: {opt} needs a path", file=sys.stderr)
                return 2
            paths[opt] = Path(args[k + 1])
            del args[k:k + 2]
    extra = [a for a in args if a != "--check"]
    if extra:
        print(f"make_readme_speed: unknown argument {extra[0]!r} (--check, --perf PATH, --readme PATH)",
              file=sys.stderr)
        return 2
    perf, readme = paths["--perf"], paths["--readme"]
    try:
        block = render(perf.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, PageError) as e:
        print(f"make_readme_speed: {perf}: {e}", file=sys.stderr)
        return 2
    try:
        old = readme.read_text(encoding="utf-8")
        new = splice(old, block)
    except (OSError, UnicodeDecodeError, PageError) as e:
        print(f"make_readme_speed: {readme}: {e}", file=sys.stderr)
        return 2
    if check:
        if new != old:
            print(f"make_readme_speed: {readme}'s speed table is not what {perf} gives; run "
                  "scripts/make_readme_speed.py", file=sys.stderr)
            return 1
        return 0
    if new != old:
        readme.write_text(new, encoding="utf-8")
        n = sum(x.startswith("| ") for x in block.splitlines()) - 2
        print(f"{readme}: speed table written from {perf} ({n} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
