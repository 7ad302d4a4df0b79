"""Run every benchmark in this folder, one after the other, print their reports and write docs/performance.md.

Benchmarks are not part of the test command; each prints ratios measured side by side in one run, and records its
headline figures (benchmarks/figures.py). When every benchmark ran (no NAME given), their figures are written to
docs/performance.md as one table with the date, the machine and the commit (``--doc PATH`` writes elsewhere, or
after a subset; ``--no-doc`` writes nothing).

Only its own part of the page is rewritten: the text between the marks :data:`BEGIN` and :data:`END` (the title,
the run's date, machine and commit, the table); everything before and after them — the sections benchmarks run by
hand write, each with what it printed — is kept as it was, byte for byte. A page without the marks (as written
before them) has its part from the top to its first ``## `` heading replaced, the marks added; a page with one
mark and not the other is refused (exit 2) before any benchmark runs.

Usage: .venv/bin/python benchmarks/run_all.py [--quick] [--doc PATH | --no-doc] [NAME ...]
  NAME: e.g. scorers, score_e2e, envs, extraction (default: all). --quick is passed to the benchmarks that take
  it (small sizes, minutes instead of tens of minutes).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
from figures import ENV  # noqa: E402


LOAD_START = os.getloadavg()[0]
#: The marks around the part of docs/performance.md this script owns (see the module doc).
BEGIN = "<!-- begin: written by benchmarks/run_all.py; rerun it rather than editing by hand -->"
END = "<!-- end: written by benchmarks/run_all.py; the sections below are kept when it reruns -->"


def machine() -> str:
    """CPU model, usable cores, memory and GPU, in words."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    mem = ""
    try:
        kb = int(next(x for x in Path("/proc/meminfo").read_text().splitlines() if x.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB"
    except (OSError, StopIteration, ValueError):
        pass
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip().replace("\n", ", ") or "no GPU"
    except (OSError, subprocess.SubprocessError):
        gpu = "no GPU"
    return f"{cpu}, {cores} cores{mem}, {gpu}, Python {platform.python_version()}"


def fmt(x) -> str:
    if x is None:
        return ""
    x = float(x)
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}".rstrip("0").rstrip(".")
    return f"{x:.3g}"


def splice(old: str | None, block: str) -> str:
    """The page with ``block`` (the lines this script writes, without the marks) as its own part: ``old`` None
    (no page yet) gives the block alone; a page with both marks has the text from :data:`BEGIN` to :data:`END`
    replaced; one without them has its top, up to its first ``## `` heading (or all of it), replaced. The rest of
    the page is kept unchanged. ValueError: only one mark, or END before BEGIN."""
    own = f"{BEGIN}\n{block.strip()}\n{END}\n"
    if old is None:
        return own
    b, e = old.find(BEGIN), old.find(END)
    if b < 0 and e < 0:
        cut = 0 if old.startswith("## ") else old.find("\n## ")
        if cut < 0:
            return own
        return own + "\n" + old[cut:].lstrip("\n")
    if b < 0 or e < 0 or e < b or old.count(BEGIN) > 1 or old.count(END) > 1:
        raise ValueError("its marks are not one begin mark followed by one end mark")
    rest = old[e + len(END):]
    return old[:b] + own.rstrip("\n") + (rest if rest.startswith("\n") else "\n" + rest)


def write_doc(path: Path, rows: list[dict], quick: bool, seconds: float) -> None:
    """Rewrite this script's part of ``path`` (:func:`splice`) with ``rows`` (benchmarks/figures.py records)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                                timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "?"
    lines = [
        "# Performance",
        "",
        "Every figure the project quotes, each beside its anchor — what a user would run instead, measured in the",
        "same run on the same machine. This part, down to the GPU note, is written by `benchmarks/run_all.py` (do not",
        "edit it by hand; rerun it); the sections after it are written by benchmarks run by hand, each with what it",
        "printed, and a rerun keeps them. A ratio above 1 means spatialact is faster. The README's speed table is made",
        "from this table by `scripts/make_readme_speed.py`.",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M %Z')}",
        f"- machine: {machine()}",
        f"- commit: {commit}",
        f"- mode: {'--quick (small sizes)' if quick else 'full sizes'}; {seconds / 60:.0f} min in all; 1-minute load "
        f"average {LOAD_START:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        + (" (above the core count: other jobs shared the machine, so the ratios, measured side by side, hold better "
           "than the absolute rates)" if max(LOAD_START, os.getloadavg()[0]) > (os.cpu_count() or 1) else ""),
        "",
        "| benchmark | figure | measured | anchor | anchor measured | ratio | aim |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        unit = r["unit"]
        anchor_v = f"{fmt(r['anchor_value'])} {unit}" if r.get("anchor_value") is not None else ""
        ratio = f"{r['ratio']:.2f}×" if r.get("ratio") else ""
        lines.append(f"| `{r['bench']}` | {r['figure']} | {fmt(r['value'])} {unit} | {r.get('anchor') or ''} | "
                     f"{anchor_v} | {ratio} | {r.get('aim') or ''} |")
    lines += ["", "No GPU was lent to the sessions that measured this: the EGL-on-GPU, gl-on-GPU (aim ≥ 5,000 "
              "images/s at 128² batched) and torch-CUDA figures are unmeasured; `benchmarks/device_check.sh` is "
              "the script that measures them on a GPU machine."]
    old = path.read_text(encoding="utf-8") if path.exists() else None
    path.write_text(splice(old, "\n".join(lines)), encoding="utf-8")


def main() -> int:
    args = sys.argv[1:]
    quick = "--quick" in args
    no_doc = "--no-doc" in args
    doc = None
    if "--doc" in args:
        k = args.index("--doc")
        if k + 1 >= len(args):
            print("run_all: --doc needs a path", file=sys.stderr)
            return 2
        doc = Path(args[k + 1])
        del args[k:k + 2]
    wanted = {a for a in args if a not in ("--quick", "--no-doc")}
    known = {s.stem[len("bench_"):] for s in here.glob("bench_*.py")}
    unknown = wanted - known
    if unknown:
        print(f"run_all: unknown benchmark(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}",
              file=sys.stderr)
        return 2
    if doc is None and not wanted and not no_doc:
        doc = here.parent / "docs" / "performance.md"
    if doc is not None and not no_doc and doc.exists():
        try:  # checked now, not after the benchmarks ran
            splice(doc.read_text(encoding="utf-8"), "")
        except (OSError, UnicodeDecodeError, ValueError) as e:
            print(f"run_all: {doc}: cannot be rewritten: {e}", file=sys.stderr)
            return 2
    status = 0
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.jsonl"
        env = dict(os.environ, **{ENV: str(out)})
        for script in sorted(here.glob("bench_*.py")):
            name = script.stem[len("bench_"):]
            if wanted and name not in wanted:
                continue
            extra = ["--quick"] if quick and '"--quick"' in script.read_text(encoding="utf-8") else []
            print(f"\n=== {script.name} {' '.join(extra)} ===", flush=True)
            rc = subprocess.call([sys.executable, str(script), *extra], env=env)
            if rc:
                print(f"run_all: {script.name} exited {rc}", file=sys.stderr)
            status |= rc
        rows = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    if doc is not None and not no_doc:
        write_doc(doc, rows, quick, time.time() - t0)
        print(f"\n{len(rows)} figures → {doc}")
        if doc.resolve() == (here.parent / "docs" / "performance.md").resolve():  # the README's table follows the page
            status |= subprocess.call([sys.executable, str(here.parent / "scripts" / "make_readme_speed.py")])
    return status


if __name__ == "__main__":
    sys.exit(main())
