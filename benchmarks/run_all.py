"""Run every benchmark in this folder, one after the other, and print their reports.

Benchmarks are not part of the test command; each prints ratios measured side by side in one run.
Usage: .venv/bin/python benchmarks/run_all.py [NAME ...]   (NAME: e.g. scorers, envs, extraction)
"""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
wanted = set(sys.argv[1:])
status = 0
for script in sorted(here.glob("bench_*.py")):
    name = script.stem[len("bench_"):]
    if wanted and name not in wanted:
        continue
    print(f"\n=== {script.name} ===", flush=True)
    status |= subprocess.call([sys.executable, str(script)])
sys.exit(status)
