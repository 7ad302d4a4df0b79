"""Write a Markdown and a self-contained HTML report for one or more run directories, and their leaderboard rows.

Several runs (e.g. an MLLM and the baselines on the same tasks) are compared side by side: overall, per track, per
kind, per source and per tag, each table led by skill (0: doing nothing, the stay baseline; 1: the ground truth)
with its bootstrap 95% interval, the paper's raw step score beside it; runs that share episodes are compared
episode by episode (paired differences of skill and, closed loop, of success, with paired bootstrap intervals and
Holm-corrected Wilcoxon p-values); the parser's most common reasons for answers that did not parse; blocked steps
in worlds with walls; plots of score distributions, final position error against start-goal distance and predicted
against true paths (top view); start / goal / final frames of example episodes; token and cost totals for API
agents. Model text is escaped; the HTML page needs no other file.

The report folder also gets leaderboard.json, one row per run (suite and its SHA-256, agent and options without
secrets, prompt version, renderer, image size, mode, profile, figures per track): the input of
`spatialact leaderboard`.

Examples:
  spatialact report runs/gpt4o runs/oracle runs/stay --out report/
  spatialact report runs/demo                      # every run inside, into runs/demo/report/
  spatialact report runs/gpt4o --json              # figures, paired comparison and leaderboard row as JSON
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .main import print_json, printable


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", metavar="RUN", nargs="+",
                   help="run directories (each with results.jsonl), or folders of runs such as runs/demo "
                        "(every run directory inside is reported)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: RUN/report for one RUN argument, ./report for several)")
    p.add_argument("--json", action="store_true", help="print the overall figures as JSON instead of a table")


def expand_runs(args_runs: list[str]) -> list:
    """The run directories the RUN arguments stand for (a folder of runs gives each run in it), in order,
    without repeats; one line (CLIError) naming the argument when there is none."""
    from spatialact.evaluation.results import find_runs

    from .main import CLIError

    out, seen = [], set()
    for r in args_runs:
        try:
            found = find_runs(r)
        except FileNotFoundError as e:
            raise CLIError(str(e)) from None
        for d in found:
            key = d.resolve()
            if key not in seen:
                seen.add(key)
                out.append(d)
    return out


def check_report_folder(out: Path, option: str = "--out") -> None:
    """The report folder and what the report replaces in it (report.md, report.html, leaderboard.json: by the output
    rule; figures/ and frames/, which it empties: plain folders only), checked before any work; one-line CLIError
    otherwise."""
    from .main import CLIError, check_out

    check_out(out, option)
    for name in ("report.md", "report.html", "leaderboard.json"):
        check_out(out / name, option, folder=False)
    for name in ("figures", "frames"):
        d = out / name
        if d.is_symlink() or (d.exists() and not d.is_dir()):
            raise CLIError(f"{option} {out}: {name}/ is not a plain folder; the report empties it and will not "
                           f"replace or follow this (move it away)")


def run(args: argparse.Namespace) -> int:
    from spatialact.evaluation.results import RunStoreError
    from spatialact.report import make_report, report_json
    from spatialact.report.tables import fmt_skill

    from .main import CLIError
    from .table import format_table

    runs = expand_runs(args.runs)
    out = Path(args.out) if args.out else Path(args.runs[0]) / "report" if len(args.runs) == 1 else Path("report")
    check_report_folder(out)
    from spatialact.outputs import make_folder

    make_folder(out)  # by the output rule: a link to a folder that does not exist yet makes that folder
    try:
        md, html_path = make_report(runs, out)
        js = report_json(runs)
    except RunStoreError as e:
        raise CLIError(str(e)) from None
    summary = js["runs"]
    if args.json:
        print_json({"markdown": str(md), "html": str(html_path), "leaderboard_file": str(out / "leaderboard.json"),
                    **js}, indent=2)
        return 0
    rows = []
    for s in summary:
        sk, sc, succ = s["skill"], s["score"], s["success"]
        rows.append([printable(s["run"]), s["episodes"], s["question_answers"], fmt_skill(sk),
                     sc["mean"] if sc["n"] else None, succ["mean"] if succ["n"] else None, s["errors"],
                     int(s["prompt_tokens"]), int(s["completion_tokens"]), s["cost_usd"]])
    print(format_table(rows, ["run", "episodes", "question answers", "skill [95% CI]", "step score (paper)",
                              "success", "failed records", "prompt tok.", "completion tok.", "cost USD"],
                       floatfmt=".3f"))
    print(f"\nwrote {md}\nwrote {html_path}\nwrote {out / 'leaderboard.json'}")
    return 0

