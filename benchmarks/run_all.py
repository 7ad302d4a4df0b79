"""Run every benchmark in this folder, one after the other, and print their reports.

Benchmarks are not part of the test command; each prints ratios measured side by side in one run.
Usage: .venv/bin/python benchmarks/run_all.py [--quick] [NAME ...]
  NAME: e.g. scorers, score_e2e, envs, extraction (default: all). --quick is passed to the benchmarks that take
  it (small sizes, minutes instead of tens of minutes).
"""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
args = sys.argv[1:]
quick = "--quick" in args
wanted = {a for a in args if a != "--quick"}
known = {s.stem[len("bench_"):] for s in here.glob("bench_*.py")}
unknown = wanted - known
if unknown:
    print(f"run_all: unknown benchmark(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}",
          file=sys.stderr)
    sys.exit(2)
status = 0
for script in sorted(here.glob("bench_*.py")):
    name = script.stem[len("bench_"):]
    if wanted and name not in wanted:
        continue
    extra = ["--quick"] if quick and '"--quick"' in script.read_text(encoding="utf-8") else []
    print(f"\n=== {script.name} {' '.join(extra)} ===", flush=True)
    status |= subprocess.call([sys.executable, str(script), *extra])
sys.exit(status)
