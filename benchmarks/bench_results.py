"""Results store and report speed: appends per second with fsync against without, and report generation time.

Usage: python benchmarks/bench_results.py [--n-append N] [--n-report N]
Prints figures measured side by side in this run (not part of the test suite).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _fabricate import fabricate_run, fake_record, make_task  # noqa: E402
from spatialact.report import make_report  # noqa: E402
from spatialact.evaluation.results import RunStore, load_run, export_parquet  # noqa: E402


sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import record  # noqa: E402

def appends_per_second(root: Path, n: int, fsync: bool) -> float:
    recs = [fake_record(make_task(f"t{i:05d}")) for i in range(n)]
    cfg = {"agent": "oracle", "mode": "one-shot"}
    with RunStore(root / f"run_fsync_{fsync}", cfg, {"bench": True}, fsync=fsync) as s:
        t0 = time.perf_counter()
        for r in recs:
            s.append(r)
        dt = time.perf_counter() - t0
    return n / dt


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n-append", type=int, default=500)
    ap.add_argument("--n-report", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        appends_per_second(root / "warm", 20, True)  # warm-up (imports, first file)
        with_fsync = appends_per_second(root, args.n_append, True)
        without = appends_per_second(root, args.n_append, False)
        print(f"append {args.n_append} records (~{len(str(fake_record(make_task('x'))))} B each)")
        print(f"  with fsync    : {with_fsync:10.0f} records/s")
        print(f"  without fsync : {without:10.0f} records/s")
        print(f"  ratio (without / with): {without / with_fsync:.1f}x")
        record("bench_results.py", "results.jsonl appends, fsynced (a kill loses nothing finished)", with_fsync,
               "records/s", anchor="appends without fsync", anchor_value=without)

        t0 = time.perf_counter()
        fabricate_run(root / "big", agent="openai", model="m", n=args.n_report, with_frames=True)
        t_fab = time.perf_counter() - t0
        t0 = time.perf_counter()
        df = load_run(root / "big")
        t_load = time.perf_counter() - t0
        t0 = time.perf_counter()
        export_parquet(root / "big")
        t_pq = time.perf_counter() - t0
        t0 = time.perf_counter()
        make_report([root / "big"], root / "rep")
        t_rep = time.perf_counter() - t0
        html_mb = (root / "rep" / "report.html").stat().st_size / 1e6
        print(f"\n{args.n_report} episodes (written in {t_fab:.1f} s, with frames):")
        print(f"  load_run        : {t_load:6.2f} s ({len(df)} rows)")
        print(f"  export_parquet  : {t_pq:6.2f} s")
        print(f"  make_report     : {t_rep:6.2f} s (HTML {html_mb:.2f} MB)")
        record("bench_results.py", f"make_report, {args.n_report} episodes with frames", t_rep, "s",
               higher_is_better=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
