"""Rank runs on one suite: a Markdown, HTML and CSV leaderboard from leaderboard rows.

A row sums up one run: `spatialact report RUN` writes the rows of its runs to RUN/report/leaderboard.json (and puts
them in `report --json`). Give this command any number of such files (a file may hold one row, a list of rows or
a report's {"rows": [...]}): it writes DIR/leaderboard.md, leaderboard.html and leaderboard.csv, the runs sorted by
skill (0: doing nothing, the stay baseline; 1: the ground truth) with its bootstrap 95% interval, the skill per
track, the paper's raw step score, success, SPL, parse-ok rate, blocked-step rate, API errors, tokens and cost.

Rank = 1 + the number of runs whose interval lies wholly above this run's: runs whose intervals overlap share a
rank. Rows must compare like for like: rows that differ in their suite's SHA-256 (or suite, for suites without
one), profile, mode or image size are refused in one line naming the two rows and the field (exit 2).

Examples:
  spatialact report runs/gpt4o runs/qwen runs/stay --out report/
  spatialact leaderboard report/leaderboard.json --out board/
  spatialact leaderboard runs/gpt4o/report/leaderboard.json runs/qwen/report/leaderboard.json --out board/
"""

from __future__ import annotations

import argparse

from .main import print_json, printable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rows", metavar="ROW.json", nargs="+",
                   help="leaderboard rows: a report folder's leaderboard.json, or any file of rows")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="output folder for leaderboard.md, leaderboard.html and leaderboard.csv")
    p.add_argument("--json", action="store_true", help="print the ranked rows as JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from spatialact.report import LeaderboardError, rank_rows, read_rows, write_leaderboard
    from spatialact.report.tables import fmt_skill

    from .main import CLIError, check_out
    from .table import format_table

    out = Path(args.out)
    check_out(out)
    for name in ("leaderboard.md", "leaderboard.html", "leaderboard.csv"):
        check_out(out / name, folder=False)
    try:
        named = read_rows(args.rows)
        md, page, csv_path = write_leaderboard(named, out)
    except LeaderboardError as e:
        raise CLIError(str(e)) from None
    ranked = rank_rows([r for _, r in named])
    if args.json:
        print_json({"markdown": str(md), "html": str(page), "csv": str(csv_path),
                    "rows": [dict(row, rank=rank) for rank, row in ranked]}, indent=2)
        return 0
    table = [[rank if rank is not None else "–", printable(r["run"]), printable(r.get("model") or "–"),
              fmt_skill(r["overall"]["skill"]), r["overall"].get("episodes")] for rank, r in ranked]
    print(format_table(table, ["rank", "run", "model", "skill [95% CI]", "episodes"]))
    print(f"\nwrote {md}\nwrote {page}\nwrote {csv_path}")
    return 0
