"""Run the main job on the embedded default and write a report.

The built-in procedural suite (navigation in PyBullet rooms, Franka manipulation on a tabletop, a floating hand)
is run one-shot with every baseline agent — oracle, noisy-oracle, geometric, random, stay — on the PyBullet
simulator, no API key needed. It prints one score table (agents × task kinds) and writes a Markdown and HTML
report comparing the agents. Each agent's run directory is resumable, so an interrupted demo picks up where it
stopped.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

BASELINES = ("oracle", "noisy-oracle", "geometric", "random", "stay")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/demo", help="output directory (default: runs/demo)")
    p.add_argument("--suite", default="default", help="built-in suite (default: default)")
    p.add_argument("--agents", default=",".join(BASELINES),
                   help=f"comma-separated agents (default: {','.join(BASELINES)})")
    p.add_argument("--mode", choices=["one-shot", "closed-loop"], default="one-shot")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=1, help="parallel worker processes (default 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the score table as JSON")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.report import make_report
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval
    from spatialact.evaluation.suites import builtin_suite

    from .table import format_table

    out = Path(args.out)
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    tasks = builtin_suite(args.suite, seed=args.seed)
    cfg = EpisodeConfig(mode=args.mode, seed=args.seed)
    source = f"suite:{args.suite}:seed={args.seed}"
    run_dirs, table = [], []
    for name in agents:
        run_dir = out / "runs" / f"{name}-{args.mode}"
        run_eval(tasks, AgentSpec(name), cfg, run_dir, task_source=source, workers=args.workers,
                 progress=not args.no_progress)
        run_dirs.append(run_dir)
        recs = read_records(run_dir)
        row = {"agent": name, "episodes": len(recs), "score": float(np.mean([r["score"] for r in recs]))}
        for kind in ("nav", "manip", "hand"):
            rs = [r["score"] for r in recs if r["kind"] == kind]
            row[kind] = float(np.mean(rs)) if rs else None
        succ = [bool(r["success"]) for r in recs if r.get("success") is not None]
        row["success"] = float(np.mean(succ)) if succ else None
        spl = [r["spl"] for r in recs if r.get("spl") is not None]
        row["SPL"] = float(np.mean(spl)) if spl else None
        table.append(row)
    md, html = make_report(run_dirs, out / "report")
    headers = ["agent", "episodes", "score", "nav", "manip", "hand", "success", "SPL"]
    if args.json:
        print(json.dumps({"table": table, "report_md": str(md), "report_html": str(html)}))
    else:
        print()
        print(format_table([[r[h] for h in headers] for r in table], headers,
                           title=f"spatialact demo · {len(tasks)} tasks × {len(agents)} agents · {args.mode}"
                                 f" · mean step score (paper profile), closed-loop success and SPL"))
        print(f"\nreport: {html}\n        {md}")
    return 0
