"""Run the main job on the embedded default and write a report.

The built-in procedural suite (navigation in PyBullet rooms, Franka manipulation on a tabletop, a floating hand)
is run one-shot with every baseline agent — oracle, noisy-oracle, geometric, random, stay, and constant (always
"Truck Left") — on the PyBullet simulator, no API key needed. It prints one table (agents × task kinds) led by
skill (0 for doing nothing, 1 for the ground truth) with its 95% interval, then the raw score, skill per kind, the
rate of answers that parsed, and success and SPL for a closed-loop demo.

Diagnostics (docs/diagnostics.md) ride along on a small subset: one task per difficulty level L1–L5 and one
common/uncommon viewpoint pair, for navigation and manipulation (suite "diagnostics"), and every task is also run
mirrored left-right (FlipEval). A second table gives each agent's paired score, mirror inconsistency, left/right
bias, label CV, viewpoint δ and score per level; the Markdown and HTML report compares the agents in full.
--no-diagnostics runs the suite alone, plain, into its own run folders and its own report folder, OUT/report-plain/
(the full demo's OUT/report/, with its Diagnostics section, is left as it was). Each agent's run directory is
resumable, so an interrupted demo picks up where it stopped.
"""

from __future__ import annotations

import argparse
import sys

from spatialact.vocab import BASELINE_AGENTS, KINDS, MODES

from .main import print_json, seed_arg

BASELINES = BASELINE_AGENTS  # the agents the demo runs by default, in its table's order
# The diagnostic subset the demo adds to its suite (spatialact.taskgen.suites).
DIAGNOSTIC_SUITE = "diagnostics"


def report_folder(diagnostics: bool) -> str:
    """The demo's report folder inside --out: ``report`` for the full demo (with its Diagnostics section),
    ``report-plain`` for --no-diagnostics, so neither run replaces the other's report."""
    return "report" if diagnostics else "report-plain"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="runs/demo", help="output directory (default: runs/demo)")
    p.add_argument("--suite", default="default", help="built-in suite (default: default)")
    p.add_argument("--agents", default=",".join(BASELINES),
                   help=f"comma-separated agents (default: {','.join(BASELINES)})")
    p.add_argument("--mode", choices=list(MODES), default="one-shot")
    p.add_argument("--seed", type=seed_arg, default=0)
    p.add_argument("--no-diagnostics", action="store_true",
                   help="run the suite alone and plain: no diagnostic subset, no mirrored episodes; its report goes "
                        "to OUT/report-plain/ (the full demo's OUT/report/ is kept)")
    p.add_argument("--workers", type=int, default=1, help="parallel worker processes (default 1)")
    from .runs import add_render_quality

    add_render_quality(p, "; part of each agent's run configuration")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the score table as JSON")


def run(args: argparse.Namespace) -> int:
    from spatialact.agents import AgentConfigError
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.report import make_report
    from spatialact.evaluation.results import RunStoreError, read_records
    from spatialact.evaluation.runner import AgentSpec, EndpointUnreachable, run_eval
    from spatialact.taskgen.suites import builtin_suite
    from spatialact.vocab import VARIANTS

    from .main import CLIError, check_out
    from .report import check_report_folder
    from .runs import failure_summary
    from .table import format_table

    out = check_out(args.out)
    check_out(out / "runs")
    report_dir = out / report_folder(not args.no_diagnostics)
    check_report_folder(report_dir)  # what the report replaces there, before the runs
    names = [a.strip() for a in args.agents.split(",") if a.strip()]
    if not names:
        raise CLIError("--agents: name at least one agent")
    try:  # every agent is checked before the first run starts
        specs = [AgentSpec(name) for name in names]
        for spec in specs:
            spec.validate()
    except AgentConfigError as e:
        raise CLIError(f"--agents: {e}") from None
    if args.workers < 1:
        raise CLIError(f"--workers {args.workers}: must be at least 1")
    tasks = builtin_suite(args.suite, seed=args.seed)
    main_ids = {t.id for t in tasks}
    diagnostics = not args.no_diagnostics
    source = f"suite:{args.suite}:seed={args.seed}"
    if diagnostics:
        tasks += [t for t in builtin_suite(DIAGNOSTIC_SUITE, seed=args.seed) if t.id not in main_ids]
        source += f"+suite:{DIAGNOSTIC_SUITE}:seed={args.seed}"
    cfg = EpisodeConfig(mode=args.mode, seed=args.seed, render_quality=args.render_quality)
    from spatialact.outputs import make_folder

    make_folder(out / "runs")  # by the output rule: a dangling link as --out makes the folder it names
    run_dirs, table, diag_rows, failures = [], [], [], {}

    for spec in specs:
        name = spec.name
        # a plug-in's name is a path or module:Class: its run folder is named by its last part, inside --out
        label = "".join(c if c.isalnum() or c in "._-" else "_" for c in name.replace("\\", "/").rsplit("/", 1)[-1])
        run_dir = out / "runs" / (f"{label}-{args.mode}" + ("-diagnostics" if diagnostics else ""))
        try:
            summary = run_eval(tasks, spec, cfg, run_dir, task_source=source, workers=args.workers,
                               progress=not args.no_progress, variants=VARIANTS if diagnostics else None)
            every = read_records(run_dir)
        except (RunStoreError, EndpointUnreachable) as e:
            raise CLIError(str(e)) from None
        recs = [r for r in every if not r.get("variant") and r["task_id"] in main_ids]
        if diagnostics:
            diag_rows.append(_diagnostic_row(name, every))
        for k, v in summary.failures.items():
            failures[k] = failures.get(k, 0) + v
        run_dirs.append(run_dir)
        table.append(_agent_row(name, recs))
    md, html = make_report(run_dirs, report_dir)
    headers = ["agent", "episodes", "skill [95% CI]", "score", *(f"skill {k}" for k in KINDS)]
    headers += ["success", "SPL"] if args.mode == "closed-loop" else []
    headers += ["parse ok"]
    nan = float("nan")  # an undefined figure (a zero denominator): null in JSON, nan here
    if args.json:
        print_json({"table": table, "diagnostics": diag_rows, "report_md": str(md), "report_html": str(html),
                    "failures": failures})
    else:
        print()
        from spatialact.evaluation.stats import format_skill

        def cell(r, h):
            if h == "skill [95% CI]":
                return format_skill(r)
            v = r[h.replace(" ", "_") if h.startswith(("skill ", "parse ")) else h]
            return nan if v is None else v

        cells = [[cell(r, h) for h in headers] for r in table]
        print(format_table(cells, headers, floatfmt=".3f",
                           title=f"spatialact demo · {len(main_ids)} tasks × {len(specs)} agents · {args.mode}"
                                 f" · skill (0 doing nothing, 1 the ground truth; paper profile), raw score"
                                 + (", success and SPL" if args.mode == "closed-loop" else "")))
        print(legend([t for t in MAIN_LEGEND if args.mode == "closed-loop" or t[0] not in ("success", "SPL")]))
        if diag_rows:
            print()
            print(format_table([[nan if r[h] is None else r[h] for h in DIAG_HEADERS] for r in diag_rows],
                               DIAG_HEADERS, floatfmt=".3f",
                               title=f"diagnostics · {len(tasks)} tasks plain and mirrored (FlipEval) · viewpoint "
                                     f"pairs · ladder L1-L5 (nav / manip)"))
            print(legend(DIAG_LEGEND))
        print(f"\nreport: {html}\n        {md}")
    line = failure_summary(failures)
    if line:
        print(f"spatialact demo: {line}", file=sys.stderr)
        return 1
    return 0


# One line per term of the printed tables (definitions in full: docs/scoring.md, docs/diagnostics.md).
MAIN_LEGEND = [
    ("skill", "(s - s0) / (1 - s0), s the mean step score, s0 that of doing nothing (stay); [95% CI] bootstrap"),
    ("score", "the paper's raw step score (0..1), mean over episodes; doing nothing already earns s0"),
    ("skill nav/manip/hand", "skill on each task kind: camera navigation, Franka manipulation, floating hand"),
    ("success", "share of closed-loop episodes that end at the goal (within tolerance, or the object placed)"),
    ("SPL", "success weighted by path length: success × d0 / max(d0, path taken), d0 the start-goal distance"),
    ("parse ok", "share of answers that parsed into actions"),
]
DIAG_LEGEND = [
    ("paired", "FlipEval: each task is also run mirrored left-right; mean over tasks of the worse of the two scores"),
    ("inconsist.", "how far the mirrored answer is from the mirror of the plain one: 0 consistent, 0.5 a fixed move"),
    ("L/R bias", "(left - right) / (left + right) over sideways steps: +1 only left, -1 only right"),
    ("label CV", "std / mean of how often each of the 12 motions is used: 0 evenly, √11 only one"),
    ("δ view", "(S uncommon - S common) / S common over viewpoint pairs: below 0, worse from unusual views"),
    ("ladder", "mean score at difficulty levels L1-L5 (the report gives RPDR = min(1, S(L+1) / S(L)) between them)"),
    ("nan", "undefined (a zero denominator, e.g. no sideways step); –: no task at that level"),
]


def legend(terms: list[tuple[str, str]]) -> str:
    """The lines under a printed table: each term, padded, then what it means."""
    width = max(len(t) for t, _ in terms)
    return "\n".join(f"  {t.ljust(width)}  {d}" for t, d in terms)


def _agent_row(agent: str, recs: list[dict]) -> dict:
    """One agent's line of the demo table (spatialact.evaluation.stats.summary_row of its plain episodes, and of
    each kind's): skill and its interval first, then the raw score, skill per kind, success, SPL, the parse rate
    and the failures; an undefined figure is None."""
    import math

    from spatialact.evaluation.stats import summary_row

    def num(v):
        return None if v is None or not math.isfinite(float(v)) else float(v)

    s = summary_row(recs)
    row = {"agent": agent, "episodes": len(recs), "skill": num(s["skill"]), "skill_lo": num(s["skill_lo"]),
           "skill_hi": num(s["skill_hi"]), "score": num(s["score"])}
    for kind in KINDS:
        rs = [r for r in recs if r["kind"] == kind]
        k = summary_row(rs, n_boot=0) if rs else {}
        row[f"skill_{kind}"], row[kind] = num(k.get("skill")), num(k.get("score"))  # skill and raw score per kind
    row.update(success=num(s["success"]), SPL=num(s["SPL"]), parse_ok=num(s["parse_ok"]), failed=s["failed"])
    return row


DIAG_HEADERS = ["agent", "paired", "inconsist.", "L/R bias", "label CV", "δ view", "ladder nav", "ladder manip"]


def _diagnostic_row(agent: str, records: list[dict]) -> dict:
    """One agent's line of the diagnostics table (spatialact.diagnostics.run_diagnostics of its run); an undefined
    figure is None."""
    import math

    from spatialact.diagnostics import run_diagnostics
    from spatialact.vocab import LEVELS

    d = run_diagnostics(records)
    flip, vp, lad, bias = d["flip"] or {}, d["viewpoint"] or {}, d["ladder"] or {}, d["bias"] or {}

    def num(v):
        return None if v is None or not math.isfinite(float(v)) else float(v)

    def levels(kind):
        sc = (lad.get(kind) or {}).get("scores") or {}
        return "/".join(f"{sc[lv]['mean']:.2f}" if lv in sc else "–" for lv in LEVELS) if sc else "–"

    vp_all = vp.get("all") or next(iter(vp.values()), {})
    return {"agent": agent, "paired": num((flip.get("paired") or {}).get("mean")),
            "inconsist.": num((flip.get("inconsistency") or {}).get("mean")), "L/R bias": num(flip.get("bias_pred")),
            "label CV": num(bias.get("label_cv")), "δ view": num(vp_all.get("delta")),
            "ladder nav": levels("nav"), "ladder manip": levels("manip")}
