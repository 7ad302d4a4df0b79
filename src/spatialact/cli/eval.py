"""Run tasks × agent × environment and write a resumable run directory.

Tasks come from a task file (--tasks FILE, JSONL as written by `spatialact tasks`) or a built-in procedural
suite (--suite default | nav | manip | hand | full, optionally NAME:N for N tasks per kind). Each task is an
episode: in one-shot mode (the paper's) the agent answers a whole sequence from the start and goal views, which
is scored step by step and executed in the simulator; in closed-loop mode the agent acts one step at a time
until it answers Stay or --max-steps run out.

The run directory (--out) holds config.json, results.jsonl (one record per episode, fsynced as each finishes)
and the start/goal/final frames. Rerunning the same command resumes: finished episodes are skipped; a run
directory made with a different configuration is refused, naming what differs.

Examples:
  spatialact eval --suite default --agent oracle --out runs/oracle
  spatialact eval --tasks tasks.jsonl --agent openai --agent-arg model=gpt-4o --mode closed-loop --out runs/gpt4o
  spatialact eval --suite nav:50 --agent geometric --workers 2 --out runs/geo
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--tasks", metavar="FILE", help="task file (JSONL)")
    src.add_argument("--suite", metavar="NAME[:N]", help="built-in procedural suite (default: default)")
    p.add_argument("--agent", default="oracle",
                   help="random | stay | oracle | noisy-oracle | geometric | openai (default: oracle)")
    p.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="agent keyword argument, repeatable (e.g. model=gpt-4o, base_url=http://localhost:8000/v1,"
                        " api_key_env=OPENAI_API_KEY); values are read as JSON when they parse, else as text")
    p.add_argument("--mode", choices=["one-shot", "closed-loop"], default="one-shot")
    p.add_argument("--env", choices=["pybullet", "habitat", "none"], default="pybullet",
                   help="simulator for tasks with a scene; 'none' scores one-shot without simulating")
    p.add_argument("--renderer", choices=["auto", "tiny", "egl"], default="auto",
                   help="PyBullet renderer: auto (EGL on an NVIDIA GPU when there is one, else tiny; default),"
                        " tiny (CPU) or egl (GPU, or Mesa on a CPU); the GL that answered is in each record")
    p.add_argument("--size", type=int, default=128, help="image width and height in pixels (default 128)")
    p.add_argument("--max-steps", type=int, default=20, help="closed-loop step limit (default 20)")
    p.add_argument("--profile", choices=["paper", "paper+rot"], default="paper", help="step-score profile")
    p.add_argument("--weights", metavar="WT,WR,WG",
                   help="manipulation/hand weights of translation, rotation and gripper (default equal thirds)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--limit", type=int, help="run only the first N tasks")
    p.add_argument("--workers", type=int, default=1, help="parallel worker processes (default 1)")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="'ray' runs the episodes as Ray tasks on a local Ray instance")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def parse_agent_args(items: list[str]) -> dict:
    from .main import CLIError

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CLIError(f"--agent-arg {item!r}: expected KEY=VALUE")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def parse_weights(text: str | None):
    from .main import CLIError

    if text is None:
        return None
    try:
        w = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise CLIError(f"--weights {text!r}: expected three numbers WT,WR,WG") from None
    if len(w) != 3:
        raise CLIError(f"--weights {text!r}: expected three numbers WT,WR,WG")
    return w


def load_task_source(tasks: str | None, suite: str | None, seed: int):
    """(tasks, source label, sha256 or None, task file or None) for --tasks / --suite."""
    from spatialact.evaluation.suites import builtin_suite
    from spatialact.tasks import file_sha256, load_tasks

    if tasks:
        return load_tasks(tasks), f"file:{tasks}", file_sha256(tasks), tasks
    spec = suite or "default"
    return builtin_suite(spec, seed=seed), f"suite:{spec}:seed={seed}", None, None


def summary_rows(records: list[dict]) -> tuple[list[list], list[str]]:
    """Overall and per-kind means of a run's records, for the table printed at the end."""
    import numpy as np

    def row(name, rs):
        sc = [r["score"] for r in rs]
        succ = [bool(r["success"]) for r in rs if r.get("success") is not None]
        spl = [r["spl"] for r in rs if r.get("spl") is not None]
        perr = [r["final_position_error"] for r in rs if r.get("final_position_error") is not None]
        return [name, len(rs), float(np.mean(sc)) if sc else float("nan"),
                float(np.mean(succ)) if succ else float("nan"), float(np.mean(spl)) if spl else float("nan"),
                float(np.median(perr)) if perr else float("nan"),
                sum(1 for r in rs if r.get("reason") == "parse_error"), sum(1 for r in rs if r.get("error"))]

    rows = [row("all", records)]
    for kind in ("nav", "manip", "hand"):
        rs = [r for r in records if r["kind"] == kind]
        if rs:
            rows.append(row(kind, rs))
    headers = ["kind", "episodes", "score", "success", "SPL", "median pos err m", "parse errors", "errors"]
    return rows, headers


def run(args: argparse.Namespace) -> int:
    from spatialact.evaluation.episode import EpisodeConfig
    from spatialact.evaluation.results import read_records
    from spatialact.evaluation.runner import AgentSpec, run_eval

    from .table import format_table

    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    cfg = EpisodeConfig(mode=args.mode, env=args.env, renderer=args.renderer, width=args.size, height=args.size,
                        max_steps=args.max_steps, profile=args.profile, weights=parse_weights(args.weights),
                        seed=args.seed)
    kwargs = parse_agent_args(args.agent_arg)
    if args.agent == "openai" and "cache_dir" not in kwargs:
        # API answers are cached by default (a rerun or a resumed run does not pay twice), inside the run.
        kwargs["cache_dir"] = str(Path(args.out) / "cache")
    agent = AgentSpec(args.agent, kwargs)
    tasks, source, sha, task_file = load_task_source(args.tasks, args.suite, args.seed)
    summary = run_eval(tasks, agent, cfg, args.out, task_source=source, task_hash=sha, task_file=task_file,
                       limit=args.limit, workers=args.workers, backend=args.backend,
                       progress=not args.no_progress)
    records = read_records(args.out)
    rows, headers = summary_rows(records)
    if args.json:
        print(json.dumps({"run_dir": str(summary.run_dir), "new": summary.n_new, "skipped": summary.n_skipped,
                          "errors": summary.n_errors, "summary": [dict(zip(headers, r)) for r in rows]}))
    else:
        print(format_table(rows, headers, title=f"{args.agent} · {args.mode} · {source}"))
        print(f"\n{summary.n_new} episodes run, {summary.n_skipped} already done; results: "
              f"{summary.run_dir / 'results.jsonl'}")
    return 0
