"""Run the baseline agents on the frozen suite l4-v1 and write their leaderboard rows into docs/benchmark.md.

Runs, each through the `spatialact eval` command line with --workers auto (a rerun resumes what is done):
oracle, noisy-oracle at noise 0.5, 1, 2, 4 and 8, geometric, random, stay and constant, one-shot on every track
(nav, manip, hand, game, camera) and closed-loop on nav and game; the suite's pins (image size, renderer, render
quality, profile) are eval's defaults for a frozen suite. Then `spatialact report --json` over each (track, mode)
gives the mean score and success with their 95% intervals, skill (0 doing nothing, 1 the ground truth) comes from
the records' score and s0 (spatialact.scorers.skill_summary, the report's when it has it), and the table replaces
what lies between the markers of docs/benchmark.md's "Baseline leaderboard".

Usage: .venv/bin/python scripts/l4_baselines.py [--lite] [--runs DIR] [--doc FILE] [--tracks nav,game]
       [--agents oracle,stay] [--table-only]
--lite runs l4-v1-lite (minutes); --table-only rebuilds the table from the runs already there.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- l4-baselines:start -->", "<!-- l4-baselines:end -->"
#: (label, agent, --agent-arg values)
AGENTS = [("oracle", "oracle", []), *[(f"noisy-oracle-{n:g}", "noisy-oracle", [f"noise={n:g}"])
                                      for n in (0.5, 1, 2, 4, 8)],
          ("geometric", "geometric", []), ("random", "random", []), ("stay", "stay", []),
          ("constant", "constant", [])]
TRACKS = ("nav", "manip", "hand", "game", "camera")
CLOSED_LOOP = ("nav", "game")


def plan(suite: str, tracks, agents) -> list[tuple[str, str, str, str, list]]:
    """(track, mode, label, agent, agent args) of every run."""
    out = []
    for track in tracks:
        for mode in ("one-shot", "closed-loop") if track in CLOSED_LOOP else ("one-shot",):
            out += [(track, mode, label, agent, args) for label, agent, args in AGENTS if label in agents]
    return out


def run_dir(runs: Path, suite: str, track: str, mode: str, label: str) -> Path:
    return runs / suite / track / mode / label


def cli(*args: str, capture: bool = False) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "spatialact.cli.main", *args]
    print("$ spatialact " + " ".join(args), file=sys.stderr, flush=True)
    return subprocess.run(cmd, cwd=ROOT, text=True, capture_output=capture)


def evaluate(suite: str, runs: Path, todo) -> list[str]:
    """Run (or resume) every run of ``todo``; returns the runs that did not finish cleanly."""
    bad = []
    for track, mode, label, agent, args in todo:
        extra = [a for kv in args for a in ("--agent-arg", kv)]
        out = run_dir(runs, suite, track, mode, label)
        r = cli("eval", "--suite", f"{suite}/{track}", "--agent", agent, *extra, "--mode", mode, "--workers", "auto",
                "--no-progress", "--json", "--out", str(out), capture=True)
        if r.returncode != 0:
            bad.append(f"{out}: exit {r.returncode}: {(r.stderr or '').strip().splitlines()[-1:]}")
    return bad


def _skill(run: Path, report_row: dict) -> dict | None:
    """Skill with its interval: the report's, else skill_summary of the records (score and s0)."""
    if isinstance(report_row.get("skill"), dict) and "skill" in report_row["skill"]:
        return report_row["skill"]
    from spatialact.evaluation.results import read_records
    from spatialact.scorers import skill_summary

    recs = [r for r in read_records(run) if r.get("score") is not None and r.get("s0") is not None]
    return skill_summary([r["score"] for r in recs], [r["s0"] for r in recs]) if recs else None


def _ci(d) -> str:
    """``x [lo, hi]`` of a report figure ({mean, ci_low, ci_high}) or a skill ({skill, lo, hi}); – when absent."""
    if not isinstance(d, dict):
        return "–" if d is None else f"{d:.3f}"
    x = d.get("mean", d.get("skill"))
    lo, hi = d.get("ci_low", d.get("lo")), d.get("ci_high", d.get("hi"))
    if x is None or math.isnan(x):
        return "–"
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return f"{x:.3f}"
    return f"{x:.3f} [{lo:.3f}, {hi:.3f}]"


def table(suite: str, runs: Path, todo) -> list[str]:
    """The leaderboard rows (Markdown): per (track, mode), `spatialact report --json` over its runs (the report and
    its leaderboard.json in <track>/<mode>/report/, the ranked board by `spatialact leaderboard` in .../board/),
    the runs sorted by skill."""
    rows = ["| track | mode | agent | episodes | skill [95% CI] | score [95% CI] | success [95% CI] |",
            "| --- | --- | --- | ---: | --- | --- | --- |"]
    groups: dict = {}
    for track, mode, label, _, _ in todo:
        groups.setdefault((track, mode), []).append(label)
    for (track, mode), labels in groups.items():
        dirs = [run_dir(runs, suite, track, mode, lb) for lb in labels]
        dirs = [d for d in dirs if (d / "results.jsonl").is_file()]
        if not dirs:
            continue
        where = runs / suite / track / mode
        r = cli("report", "--json", "--out", str(where / "report"), *map(str, dirs), capture=True)
        if r.returncode != 0:
            raise SystemExit(f"l4_baselines.py: spatialact report --json failed: {r.stderr.strip()[-300:]}")
        report = json.loads(r.stdout)
        board = Path(report.get("leaderboard_file") or where / "report" / "leaderboard.json")
        if board.is_file():
            cli("leaderboard", str(board), "--out", str(where / "board"), capture=True)
        by_dir = {str(Path(row["dir"]).resolve()): row for row in report["runs"]}
        found = []
        for d in dirs:
            row = by_dir.get(str(d.resolve()), {})
            skill = _skill(d, row)
            found.append((-(skill or {}).get("skill", -math.inf), d.name, row, skill))
        for _, name, row, skill in sorted(found, key=lambda x: (x[0], x[1])):
            success = _ci(row.get("success")) if mode == "closed-loop" else "–"
            rows.append(f"| {track} | {mode} | {name} | {row.get('episodes', 0)} | {_ci(skill)} | "
                        f"{_ci(row.get('score'))} | {success} |")
    return rows


def write_doc(doc: Path, suite: str, rows: list[str], lite: bool) -> None:
    from spatialact.taskgen import suite_info

    text = doc.read_text(encoding="utf-8")
    if START not in text or END not in text:
        raise SystemExit(f"l4_baselines.py: {doc}: the markers {START} and {END} are missing")
    info = suite_info(suite)
    head = [START, "",
            f"Suite `{suite}` (SHA-256 `{info['sha256']}`), written by `scripts/l4_baselines.py"
            f"{' --lite' if lite else ''}`. Scores are the paper's episode score (profile {info['pins']['profile']}); "
            "skill rescales it so that doing nothing (`stay`) is 0 and the ground truth 1; success is closed-loop "
            "only. Intervals: 95% bootstrap over episodes.", ""]
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    doc.write_text(before + "\n".join(head + rows + ["", END]) + after, encoding="utf-8")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lite", action="store_true", help="run l4-v1-lite instead of l4-v1")
    p.add_argument("--runs", default="runs", help="folder of the run directories (default runs/)")
    p.add_argument("--doc", default=str(ROOT / "docs" / "benchmark.md"), help="the page to write the table into")
    p.add_argument("--tracks", default=",".join(TRACKS), help="comma-separated tracks (default all)")
    p.add_argument("--agents", default=",".join(a[0] for a in AGENTS), help="comma-separated agent labels")
    p.add_argument("--table-only", action="store_true", help="no eval: the table from the runs already there")
    args = p.parse_args()
    tracks = [t for t in args.tracks.split(",") if t]
    agents = [a for a in args.agents.split(",") if a]
    unknown = [t for t in tracks if t not in TRACKS] + [a for a in agents if a not in [x[0] for x in AGENTS]]
    if unknown:
        print(f"l4_baselines.py: unknown track or agent {unknown[0]!r} (tracks: {', '.join(TRACKS)}; agents: "
              f"{', '.join(a[0] for a in AGENTS)})", file=sys.stderr)
        return 2
    suite = "l4-v1-lite" if args.lite else "l4-v1"
    runs = Path(args.runs).resolve()
    todo = plan(suite, tracks, agents)
    bad = [] if args.table_only else evaluate(suite, runs, todo)
    rows = table(suite, runs, todo)
    write_doc(Path(args.doc), suite, rows, args.lite)
    print("\n".join(rows))
    for line in bad:
        print(f"l4_baselines.py: not finished: {line}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
