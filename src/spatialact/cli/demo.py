"""Run the main job on the embedded default and write a report.

For now (the evaluation runner has not landed yet) this parses the bundled example answers, shows the
rigid motion each one commands, and writes runs/demo/report.md. It grows into the full closed-loop
evaluation of the baseline agents as the scorers, environments and runner land.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/demo", help="run directory (default: runs/demo)")
    p.add_argument("--json", action="store_true", help="print JSON instead of tables")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from spatialact.action_space import StepSizes, parse_response
    from spatialact.geometry import geodesic_angle

    from .table import format_table

    text = resources.files("spatialact").joinpath("data/examples/answers.jsonl").read_text(encoding="utf-8")
    rows, records = [], []
    for line in text.splitlines():
        rec = json.loads(line)
        res = parse_response(rec["response"], sizes=StepSizes.for_kind(rec["kind"]))
        net = res.sequence.to_poses()[-1]
        row = [rec["task_id"], rec["kind"], res.format or "-", len(res.sequence), len(res.repairs),
               float(np.linalg.norm(net[:3, 3])), float(np.degrees(geodesic_angle(net[:3, :3]))),
               "ok" if res.ok else f"parse_error"]
        rows.append(row)
        records.append({"task_id": rec["task_id"], **res.to_dict()})
    headers = ["task", "kind", "format", "steps", "repairs", "net move m", "net turn °", "status"]
    table = format_table(rows, headers, title="Parsed example answers (scoring lands with the scorers issue)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "parsed.jsonl", "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    md = ["# spatialact demo", "", "```", table, "```", ""]
    for r in records:
        md += [f"## {r['task_id']}", "", f"- ok: {r['ok']}  format: {r['format']}  error: {r['error']}"]
        md += [f"- repair: {x}" for x in r["repairs"]] + [""]
    (out / "report.md").write_text("\n".join(md), encoding="utf-8")
    if args.json:
        print(json.dumps(records, ensure_ascii=False, indent=1))
    else:
        print(table)
        print(f"\nreport: {out / 'report.md'}")
    return 0
