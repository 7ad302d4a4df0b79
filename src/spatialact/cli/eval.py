"""Run tasks × agent × environment and write a resumable run directory.

Tasks come from a task file (--tasks FILE, JSONL as written by `spatialact tasks`), a built-in procedural
suite (--suite default | nav | manip | hand | full, optionally NAME:N for N tasks per kind) or a frozen benchmark
suite (--suite l4-v1, a track such as l4-v1/nav, or l4-v1-lite): its pinned image size, renderer, render quality
and profile are the defaults, another value given is recorded and warned about (not comparable), and each episode
checks its start and goal images against the hashes the suite pins. Each task is an
episode: in one-shot mode (the paper's) the agent answers a whole sequence from the start and goal views, which
is scored step by step and executed in the simulator; in closed-loop mode the agent acts one step at a time
until it answers Stay or --max-steps run out.

The run directory (--out) holds config.json, results.jsonl (one record per episode, fsynced as each finishes)
and the start/goal/final frames. Rerunning the same command resumes: finished episodes are skipped; a run
directory made with a different configuration is refused, naming what differs. The agent, its arguments and
every task are checked before anything is written; an API key is never an --agent-arg (use api_key_env=NAME or
api_key_file=PATH). An API agent's endpoint must accept a connection first (one TCP connection, within 5 s, nothing
sent): else one line, exit 2, and no run folder. --dry-run prints what the run would cost — episodes left, model
calls (closed-loop: an upper bound), prompt and completion tokens, USD at the agent's price_in / price_out — and
runs, writes and sends nothing (docs/evaluation.md, Before a run). API agents wait up to 600 s for a request
(timeout=SECONDS).

--flip (FlipEval, 3DSRBench) runs every episode twice, plain and mirrored left-right: the agent sees flipped
images, mirrored poses and ground truth and an instruction with left and right swapped, and its answer is mirrored
back before it is executed and scored (two records per task, variant "" and "mirror"). The command then also
prints the plain, mirrored and paired scores, the mirror inconsistency and the left/right bias
(docs/diagnostics.md). Built-in diagnostic suites: ladder (difficulty levels L1-L5), viewpoint (common and
uncommon viewpoint pairs) and diagnostics (both, as the demo runs them); `spatialact report` shows their figures.

The summary leads with skill (0 doing nothing, 1 the ground truth) and its 95% interval, then the raw score,
success and SPL (closed-loop), the share of answers that parsed and the failures. --repeats K runs every episode K
times (other agent seeds; an API agent asks again) and adds the run-to-run spread. Free-camera rooms have walls
(--no-collisions: none); a task whose ground truth goes through them is warned about before the run.

Failures are not results. An episode whose agent call failed (connection, timeout, HTTP error, malformed reply,
after the agent's retries) is recorded with reason api_error, printed as it happens, and the command exits 1;
rerunning the same command retries those episodes (an answer that did not parse is a result and stays);
--retry-errors retries every failed episode (also reason "error": an exception inside the episode). Three
connection failures in a row at the start (a server that accepts connections but fails them) stop the run. Exit
status: 0 all episodes have results, 1 some failed, 2 bad input or a refused run directory, 3 stopped at --max-cost
(resumable).

--concurrency N keeps up to N model requests in flight in one process (default 16 for openai, react and
plan-execute, 1 for the others): worlds are stepped while the models answer; requests pass an adaptive limit (lower
while the endpoint rate-limits, fails or slows down) within --max-rpm / --max-tpm, and honour Retry-After. The progress bar
and the summary show requests in flight, the current concurrency, retries, tokens and cost.

Examples:
  spatialact eval --suite default --agent oracle --out runs/oracle
  spatialact eval --suite l4-v1-lite --agent noisy-oracle --repeats 3 --out runs/noisy-l4
  spatialact eval --tasks tasks.jsonl --agent openai --agent-arg model=gpt-4o --mode closed-loop --out runs/gpt4o
  spatialact eval --suite nav:50 --agent geometric --workers 2 --out runs/geo
  spatialact eval --suite default --agent constant --agent-arg action="Truck Left" --flip --out runs/const
  spatialact eval --suite ladder:2 --agent noisy-oracle --flip --out runs/noisy-ladder
  spatialact eval --suite default --agent react --agent-arg model=gpt-4o --agent-arg tools=default --out runs/react
  spatialact eval --suite default --agent hf --agent-arg model=Qwen/Qwen2.5-VL-3B-Instruct --out runs/qwen
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spatialact.vocab import BASELINE_AGENTS, ENVS, KINDS, MODES, PROFILES, RUN_BACKENDS, VARIANTS

from .main import print_json, seed_arg
from .runs import (add_render_quality, check_image_side, default_image_side, failure_summary, parse_agent_args,
                   run_defaults)


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--tasks", metavar="FILE", help="task file (JSONL)")
    src.add_argument("--suite", metavar="NAME[:N]",
                     help="built-in suite (default: default): a procedural one, or a frozen benchmark suite (l4-v1, "
                          "l4-v1/nav, l4-v1-lite, ...): its pinned image size, renderer, render quality and "
                          "profile become the defaults, and the run records the suite and its SHA-256")
    p.add_argument("--agent", default="oracle",
                   help="random | stay | oracle | noisy-oracle | constant | geometric | openai | react | plan-execute | hf "
                        "(default: oracle); aliases noisy, mllm and any capitalisation name the same agent; or your "
                        "own: package.module:Class, path/to/agent.py:Class, an installed plug-in's name "
                        "(`spatialact agents` lists them)")
    p.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="agent option, repeatable (e.g. model=gpt-4o, base_url=http://localhost:8000/v1,"
                        " api_key_env=OPENAI_API_KEY); `spatialact agents` lists each agent's options with their"
                        " types, defaults and meaning; values are read as JSON when they parse, else as text;"
                        " a secret (api_key=..., token=...) is refused")
    defaults = run_defaults()  # the one definition of a run's defaults (prompt reads the same)
    p.add_argument("--mode", choices=list(MODES), default=defaults.mode,
                   help=f"one-shot (the whole sequence from the start view) or closed-loop (default {defaults.mode})")
    p.add_argument("--env", choices=list(ENVS), default="pybullet",
                   help="simulator for tasks with a scene; 'none' scores one-shot without simulating")
    p.add_argument("--renderer", choices=["auto", "tiny", "egl", "gl"], default=defaults.renderer, action=GivenOption,
                   help="renderer: auto (gl when its OpenGL context starts, else tiny, saying why; default), gl (the"
                        " project's OpenGL renderer: a GPU, or Mesa on a CPU), tiny (PyBullet's CPU renderer) or egl"
                        " (PyBullet's EGL plugin); the GL that answered is in each record")
    add_render_quality(p, "; part of the run configuration (a resume at another quality is refused)")
    p.set_defaults(render_quality=None)  # not given: "default", or a frozen suite's pin
    p.add_argument("--scene", metavar="FILE", default=None,
                   help="a mesh scene (.glb/.gltf/.obj/.ply) for navigation tasks that have none (scene: null, e.g."
                        " camera-path tasks built with --no-scene), so they run in it; their poses must be in the"
                        " mesh's frame")
    p.add_argument("--size", type=size_arg, default=None, metavar="N|WxH",
                   help="image size in pixels: N (N x N) or WxH, e.g. 320x240 (default 128; 384 for a model agent "
                        "when gl renders; game tasks without --size: the game's 4:3 at that width, e.g. 128x96; a square N is "
                        "honoured, squashed)")
    p.add_argument("--max-steps", type=int, default=20,
                   help="step limit (default 20): closed-loop episodes and one-shot execution stop after "
                        "max(--max-steps, ground-truth steps); a one-shot answer is scored in full")
    p.add_argument("--profile", choices=list(PROFILES), default="paper", action=GivenOption,
                   help="step-score profile (default paper, or a frozen suite's pin)")
    p.add_argument("--weights", metavar="WT,WR,WG",
                   help="manipulation/hand weights of translation, rotation and gripper (default equal thirds)")
    p.add_argument("--seed", type=seed_arg, default=0)
    p.add_argument("--limit", type=int, help="run only the first N tasks")
    p.add_argument("--workers", type=workers_arg, default=1, metavar="N|auto",
                   help="parallel worker processes (default 1): a count up to 64, never more than the episodes to "
                        "run; auto: one per 16 episodes, at most one per usable CPU (a worker costs about 1.5 s "
                        "to start, so few episodes run faster in one process)")
    p.add_argument("--backend", choices=list(RUN_BACKENDS), default="local",
                   help="'ray' runs the episodes as Ray tasks on a local Ray instance")
    add_concurrency_arguments(p)
    p.add_argument("--max-cost", type=cost_arg, default=None, metavar="USD",
                   help="stop the run once the cost recorded in its directory reaches USD (the agent's price_in and "
                        "price_out price it): no episode starts after that, those in progress are written, and the "
                        "command exits 3 saying so; rerun with a higher --max-cost to go on")
    p.add_argument("--flip", action="store_true",
                   help="FlipEval: run every episode plain and mirrored left-right (two records per task, variant "
                        "'mirror'); also prints plain, mirrored and paired scores, mirror inconsistency and "
                        "left/right bias")
    p.add_argument("--repeats", type=repeats_arg, default=1, metavar="K",
                   help="run every episode K times (default 1): repeat k > 0 has |r<k> at the end of its key and an "
                        "agent seeded episode seed + k (an API agent asks again: the repeat is in its response cache "
                        "key); the summary adds the run-to-run spread. More repeats may be added on a resume")
    p.add_argument("--no-collisions", action="store_true",
                   help="free-camera rooms without walls: the camera passes through walls and furniture (as runs "
                        "made before walls did); part of the run configuration")
    p.add_argument("--retry-errors", action="store_true",
                   help="also retry episodes that failed with reason 'error' (api_error episodes are retried "
                        "anyway); answers that did not parse are results and are not retried")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--dry-run", action="store_true",
                   help="print what the run would cost and run nothing, write nothing, send nothing: the episodes "
                        "(less those already done in --out), the model calls (closed-loop: an upper bound, "
                        "max(--max-steps, ground-truth steps) turns an episode), the prompt tokens of its text and "
                        "images, the completion tokens at the agent's max_tokens, and the price at its price_in / "
                        "price_out (docs/evaluation.md, Before a run)")


def add_concurrency_arguments(p: argparse.ArgumentParser, what: str = "model requests in flight") -> None:
    """``--concurrency N``, ``--max-rpm N``, ``--max-tpm N`` (eval and questions score; docs/evaluation.md, "Many
    requests in flight")."""
    p.add_argument("--concurrency", type=concurrency_arg, default=None, metavar="N",
                   help=f"the most {what} at once in one process (default 16 for an agent that talks to an "
                        "endpoint: openai, react, plan-execute; 1 for the others): while one waits for its model "
                        "the others go on; requests pass an adaptive limit that drops while the endpoint "
                        "rate-limits (429), fails or slows down and rises again when it is healthy; with "
                        "--workers each process runs its own N")
    p.add_argument("--max-rpm", type=rate_arg, default=None, metavar="N",
                   help="at most N requests a minute (a token bucket shared by the threads; divided between worker "
                        "processes)")
    p.add_argument("--max-tpm", type=rate_arg, default=None, metavar="N",
                   help="at most N tokens (prompt + completion) a minute, as replies count them (divided between "
                        "worker processes)")


def concurrency_arg(text: str) -> int:
    """``--concurrency``: a whole number from 1 to ``spatialact.evaluation.runner.MAX_CONCURRENCY``."""
    from spatialact.evaluation.runner import MAX_CONCURRENCY

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
    if not 1 <= n <= MAX_CONCURRENCY:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_CONCURRENCY} (MAX_CONCURRENCY), got {n}")
    return n


def _finite(text: str) -> float:
    import math

    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text[:40]!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text[:40]!r}")
    return x


def rate_arg(text: str) -> float:
    """``--max-rpm`` / ``--max-tpm``: a finite number above 0."""
    x = _finite(text)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text[:40]}")
    return x


def cost_arg(text: str) -> float:
    """``--max-cost``: a finite number of USD, 0 or more."""
    x = _finite(text)
    if x < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more (USD), got {text[:40]}")
    return x


class GivenOption(argparse.Action):
    """Stores the value, and remembers that the option was given (``args.given``): a frozen suite's pins are the
    defaults only of options left out."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, "given", tuple(getattr(namespace, "given", ()) or ()) + (self.dest,))


def repeats_arg(text: str) -> int:
    """``--repeats``: a whole number from 1 to ``spatialact.evaluation.runner.MAX_REPEATS``."""
    from spatialact.evaluation.runner import MAX_REPEATS

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text[:40]!r}") from None
    if not 1 <= n <= MAX_REPEATS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_REPEATS} (MAX_REPEATS), got {n}")
    return n


def workers_arg(text: str):
    """``--workers``: ``auto`` or a whole number from 1 to ``spatialact.vocab.MAX_WORKERS``."""
    from spatialact.vocab import MAX_WORKERS

    if text.strip().lower() == "auto":
        return "auto"
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number or auto, got {text[:40]!r}") from None
    if not 1 <= n <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_WORKERS} (MAX_WORKERS) or auto, got {n}")
    return n


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


def is_frozen_suite(spec: str | None) -> bool:
    """Whether ``--suite`` names a frozen benchmark suite (``l4-v1``, ``l4-v1-lite``, a track such as
    ``l4-v1/nav``): a name starting ``l4-``."""
    return bool(spec) and spec.split(":", 1)[0].startswith("l4-")


def frozen_suite_info(spec: str) -> dict:
    """``spatialact.taskgen.suite_info(spec)`` (name, version, track, sha256, pins, n_tasks); CLIError in one line
    when the suite is unknown."""
    from .main import CLIError

    try:
        from spatialact.taskgen import suite_info
    except ImportError:
        raise CLIError(f"--suite {spec}: this build of spatialact ships no frozen suite") from None
    try:
        return suite_info(spec)
    except (ValueError, KeyError) as e:
        raise CLIError(f"--suite {spec}: {' '.join(str(e).split())}") from None


def load_task_source(tasks: str | None, suite: str | None, seed: int):
    """(tasks, source label, sha256 or None, task file or None, frozen suite info or None) for --tasks /
    --suite."""
    from spatialact.taskgen.suites import builtin_suite
    from spatialact.tasks import load_task_file

    if tasks:
        tf = load_task_file(tasks)  # one read: the hash is that of the bytes the tasks came from
        return list(tf.tasks), f"file:{tasks}", tf.sha256, tasks, None
    spec = suite or "default"
    if is_frozen_suite(spec):
        info = frozen_suite_info(spec)
        return builtin_suite(spec, seed=seed), f"suite:{spec}", None, None, info
    return builtin_suite(spec, seed=seed), f"suite:{spec}:seed={seed}", None, None, None


#: Digits of one side in ``--size`` (more is refused before it becomes a number: a side is at most a few thousand).
MAX_SIZE_DIGITS = 6


def size_arg(text: str):
    """``--size``: ``N`` (an N × N image; returned as the int N) or ``WxH`` (returned as (W, H)); the sides' bounds
    are checked by :func:`check_size`."""
    t = str(text).strip().lower()
    w, sep, h = t.partition("x")
    sides = [w, h] if sep else [w]
    if not all(v.isascii() and v.isdigit() and len(v) <= MAX_SIZE_DIGITS for v in sides):
        raise argparse.ArgumentTypeError(f"{str(text)[:40]!r} is not an image size: N (N x N pixels) or WxH, "
                                         "e.g. 320x240")
    return (int(w), int(h)) if sep else int(w)


def size_pair(size) -> tuple[int, int]:
    """(width, height) of a ``--size`` value (an int N is N × N)."""
    return (int(size[0]), int(size[1])) if isinstance(size, tuple) else (int(size), int(size))


def check_size(size) -> None:
    """Each side of ``--size`` within the image side bounds (one-line CLIError naming the option)."""
    if size is not None:
        for side in size_pair(size):
            check_image_side(side, "--size")


def game_size(width: int) -> tuple[int, int]:
    """The game's default image size for a width: its 4:3 screen (width × round(3/4 width)); the game's pixels
    keep fy = 1.2·fx at any 4:3 size (docs/game.md)."""
    return int(width), max(1, int(round(int(width) * 3 / 4)))


def all_game_tasks(tasks) -> bool:
    """Whether every task runs in the game (its scene is a game level)."""
    return bool(tasks) and all(t.scene is not None and t.scene.is_game for t in tasks)


def apply_suite_pins(args: argparse.Namespace, pins: dict) -> None:
    """A frozen suite's pins (image size, renderer, render quality, profile) as the defaults of the options left
    out; an option given with another value stays (the run records it, and warns that it is not comparable)."""
    given = set(getattr(args, "given", ()) or ())
    if args.size is None and pins.get("image_size") is not None:
        args.size = int(pins["image_size"])
    if "renderer" not in given and pins.get("renderer"):
        args.renderer = pins["renderer"]
    if args.render_quality is None and pins.get("render_quality"):
        args.render_quality = pins["render_quality"]
    if "profile" not in given and pins.get("profile"):
        args.profile = pins["profile"]


def fill_scenes(tasks: list, scene_file: str) -> list:
    """``--scene FILE``: navigation tasks without a scene run in the mesh scene FILE; a task of another kind
    without one is refused (a mesh holds no robot or hand), tasks that have a scene keep it."""
    from dataclasses import replace

    from .main import CLIError
    from .tasks import scene_file as check_scene_file

    try:
        mesh = check_scene_file(scene_file)
    except ValueError as e:
        raise CLIError(str(e)) from None
    out = []
    for t in tasks:
        if t.scene is None:
            if t.kind != "nav":
                raise CLIError(f"--scene {scene_file}: task {t.id!r} is a {t.kind!r} task; a mesh scene can only "
                               "hold navigation tasks (build manipulation and hand tasks with their replay scenes)")
            t = replace(t, scene={"generator": "mesh", "mesh": mesh, "seed": 0})
        out.append(t)
    return out


def summary_rows(records: list[dict], mode: str = "one-shot") -> tuple[list[list], list[str], list[dict]]:
    """The table printed at the end, overall then per kind, led by skill (0 doing nothing, 1 the ground truth) with
    its 95% interval, then the raw score, success and SPL (closed-loop runs), the rate of answers that parsed, the
    failures, and with repeats the run-to-run spread (sd of the per-repeat skills, share of episodes whose score
    differs between repeats); and its JSON form (:func:`spatialact.evaluation.stats.summary_table`, every figure)."""
    from spatialact.evaluation.stats import format_skill, summary_table

    table = summary_table(records)
    headers = ["kind", "episodes", "skill [95% CI]", "score"]
    if mode == "closed-loop":
        headers += ["success", "SPL"]
    headers += ["parse ok", "failed"]
    repeats = any("skill_sd" in r for r in table)
    if repeats:
        headers += ["skill sd", "differ"]
    key = {"kind": "kind", "episodes": "episodes", "score": "score", "success": "success", "SPL": "SPL",
           "parse ok": "parse_ok", "failed": "failed", "skill sd": "skill_sd", "differ": "differ"}
    rows = [[format_skill(r) if h == "skill [95% CI]" else r.get(key[h], float("nan")) for h in headers]
            for r in table]
    return rows, headers, table


def flip_rows(records: list[dict]) -> tuple[list[list], list[str], dict]:
    """The FlipEval table of a run (all kinds, then each kind) and its JSON form
    (:func:`spatialact.diagnostics.flip_summary` per row)."""
    from spatialact.diagnostics import flip_summary

    def mean(s):
        return s["mean"] if s and s["n"] else float("nan")

    def bias(v):
        return float("nan") if v is None else v

    headers = ["kind", "pairs", "plain", "mirrored", "paired", "inconsistency", "unparsed", "L/R bias",
               "L/R bias truth"]
    rows, js = [], {}
    for kind in ("all", *KINDS):
        rs = records if kind == "all" else [r for r in records if r.get("kind") == kind]
        f = flip_summary(rs)
        if f is None:
            continue
        js[kind] = f
        rows.append([kind, f["n_pairs"], mean(f["plain"]), mean(f["mirrored"]), mean(f["paired"]),
                     mean(f["inconsistency"]), f["inconsistency_nan"], bias(f["bias_pred"]), bias(f["bias_gt"])])
    return rows, headers, js


def run(args: argparse.Namespace) -> int:
    from spatialact.agents import AgentConfigError
    from spatialact.evaluation.runner import AgentSpec

    from .main import CLIError, check_out

    check_out(args.out)
    check_size(args.size)
    size_given = args.size is not None
    frozen = frozen_suite_info(args.suite) if args.tasks is None and is_frozen_suite(args.suite) else None
    if frozen is not None:
        apply_suite_pins(args, frozen.get("pins") or {})
    cfg = _episode_config(args)
    kwargs = parse_agent_args(args.agent_arg)
    try:
        agent = AgentSpec(args.agent, kwargs)
    except AgentConfigError as e:
        raise CLIError(f"--agent {args.agent[:40]!r}: {e}" if "unknown agent" in str(e) else str(e)) from None
    from spatialact.agents import API_AGENTS

    if agent.name in API_AGENTS and "cache_dir" not in kwargs:
        # API answers are cached by default (a rerun or a resumed run does not pay twice), inside the run.
        agent = AgentSpec(agent.name, dict(kwargs, cache_dir=str(Path(args.out) / "cache")))
    try:
        agent.validate()  # options, model, API key: refused before the suite is built or the task file read
    except AgentConfigError as e:
        raise CLIError(str(e)) from None
    tasks, source, sha, task_file, frozen = load_task_source(args.tasks, args.suite, args.seed)
    if args.scene is not None:
        tasks, source = fill_scenes(tasks, args.scene), f"{source}+scene:{args.scene}"
    if not size_given and frozen is None and all_game_tasks(tasks):  # the game's screen is 4:3: not squashed
        from dataclasses import replace

        cfg = replace(cfg, width=game_size(cfg.width)[0], height=game_size(cfg.width)[1])
    suite = {} if frozen is None else {"suite": args.suite, "suite_sha256": frozen.get("sha256"),
                                       "suite_pins": frozen.get("pins") or {}}
    if args.dry_run:  # nothing is written and nothing is sent: not even the endpoint check
        return _dry_run(args, agent, cfg, tasks, source, sha, suite)
    _check_endpoint(args, agent, cfg, tasks, source, sha, suite)
    from spatialact.outputs import folder_for_work

    # by the output rule (a dangling link as --out makes the folder it names); a refusal inside the run's checks
    # removes the folder again, so a refused run leaves nothing behind
    with folder_for_work(args.out):
        return _run(args, agent, cfg, tasks, source, sha, task_file, suite)


def _run(args, agent, cfg, tasks, source, sha, task_file, suite) -> int:
    from spatialact.evaluation.results import RunStoreError, read_records
    from spatialact.evaluation.runner import EndpointUnreachable, run_eval

    from .main import CLIError

    try:
        summary = run_eval(tasks, agent, cfg, args.out, task_source=source, task_hash=sha, task_file=task_file,
                           limit=args.limit, workers=args.workers, backend=args.backend,
                           progress=not args.no_progress, retry_errors=args.retry_errors,
                           variants=VARIANTS if args.flip else None, repeats=args.repeats,
                           concurrency=args.concurrency, max_rpm=args.max_rpm, max_tpm=args.max_tpm,
                           max_cost=args.max_cost, **suite)
        records = read_records(args.out)
    except (RunStoreError, EndpointUnreachable) as e:
        raise CLIError(str(e)) from None
    except PermissionError as e:
        raise CLIError(f"{e.filename or args.out}: {e.strerror or e}") from None
    return _report(args, agent, source, summary, records)


def _pending(args, agent, cfg, tasks, source, sha, suite):
    """``spatialact.evaluation.runner.pending_episodes`` of this command (read-only)."""
    from spatialact.evaluation.runner import pending_episodes

    return pending_episodes(tasks, agent, cfg, args.out, task_source=source, task_hash=sha, limit=args.limit,
                            variants=VARIANTS if args.flip else None, repeats=args.repeats,
                            retry_errors=args.retry_errors, **suite)


def _check_endpoint(args, agent, cfg, tasks, source, sha, suite) -> None:
    """An API agent's endpoint must accept a TCP connection before the run directory is made
    (``spatialact.evaluation.runner.endpoint_problem``, within ``ENDPOINT_CHECK_S``); else one line, exit 2, and
    nothing written. Not asked when ``--out`` is a run with nothing left to run (its summary needs no server)."""
    from spatialact.evaluation.results import is_run_dir
    from spatialact.evaluation.runner import endpoint_problem, endpoint_url

    from .main import CLIError

    url = endpoint_url(agent)
    if url is None:
        return
    if is_run_dir(args.out):
        try:
            left = _pending(args, agent, cfg, tasks, source, sha, suite)
        except (OSError, ValueError):
            left = None  # the run itself says what is wrong with the directory
        if left is not None and left.refusal is None and not left.todo:
            return
    why = endpoint_problem(url)
    if why is not None:
        raise CLIError(f"cannot reach {url} ({why}): is the server running, is base_url right? nothing was written")


def _dry_run(args, agent, cfg, tasks, source, sha, suite) -> int:
    """``--dry-run``: the figures of ``spatialact.evaluation.estimate`` for the episodes this command would run,
    printed (a table, or ``--json``); nothing is written, nothing is sent. A run directory that would be refused is
    refused the same way (exit 2)."""
    from .main import CLIError

    left = _pending(args, agent, cfg, tasks, source, sha, suite)
    if left.refusal is not None:
        raise CLIError(left.refusal)
    js = dry_run_figures(agent, cfg, left, n_tasks=len(tasks[:args.limit] if args.limit is not None else tasks),
                         variants=2 if args.flip else 1, repeats=args.repeats)
    if args.json:
        print_json(js)
    else:
        print(format_dry_run(js, source))
    return 0


def _image_size(path, fallback: tuple[int, int]) -> tuple[int, int]:
    """(width, height) in pixels of the image file ``path``, read from its header; ``fallback`` when it cannot be
    read (the run's own check names the file)."""
    if path:
        from PIL import Image

        try:
            with Image.open(path) as im:
                return int(im.size[0]), int(im.size[1])
        except (OSError, ValueError):
            pass
    return fallback


def _prompt_shape(task, cfg):
    """The ``estimate.PromptShape`` of an episode of ``task`` under ``cfg``: its views at the run's image size when
    the simulator renders them, else at its start image's size; its example picture at the file's size."""
    from spatialact.evaluation.episode import execution_limit, observation_supplies
    from spatialact.evaluation.estimate import prompt_shape

    size = (int(cfg.width), int(cfg.height))
    views = _image_size(task.start_image, size) if observation_supplies(task, cfg) == {"pose"} else size
    ex = (task.example or {}).get("start_image")
    return prompt_shape(task, cfg.mode, views, _image_size(ex, size) if ex else None, execution_limit(task, cfg))


def _agent_figures(agent, built) -> dict:
    """What the estimate needs to know of the built agent: requests per turn (None: it calls no model; 0: unknown,
    a plug-in), max_tokens, prices (USD per million tokens) and notes."""
    from spatialact.agents import API_AGENTS
    from spatialact.agents.prompts import PromptedAgent

    notes = []
    if agent.name in BASELINE_AGENTS or agent.name == "geometric":
        return {"requests_per_turn": None, "max_tokens": None, "price_in": None, "price_out": None, "notes": notes}
    if not isinstance(built, PromptedAgent):
        notes.append(f"agent {agent.name!r} is a plug-in: its model calls and tokens are not known before a run")
        return {"requests_per_turn": 0, "max_tokens": None, "price_in": None, "price_out": None, "notes": notes}
    per = 1
    paradigm = getattr(built, "paradigm", None)
    if paradigm is not None:
        per = int(built.max_calls) + 1 if paradigm == "react" else 2
        notes.append(f"{agent.name}: up to {per} requests a turn, each counted with the turn's prompt; tool "
                     "definitions, tool calls and their results come on top")
    if getattr(built, "cues", ()):
        notes.append(f"cue prompting ({','.join(built.cues)}): its text and pictures are not counted")
    params = (built.describe().get("params") or {}) if hasattr(built, "describe") else {}
    max_tokens = params.get("max_tokens", getattr(built, "max_new_tokens", None))
    api = agent.name in API_AGENTS
    if not api:
        notes.append(f"{agent.name} runs on this machine: tokens counted as an OpenAI-style endpoint would; no price")
    return {"requests_per_turn": per, "max_tokens": max_tokens, "price_in": getattr(built, "price_in", None),
            "price_out": getattr(built, "price_out", None), "notes": notes, "api": api}


def dry_run_figures(agent, cfg, left, n_tasks: int, variants: int = 1, repeats: int = 1) -> dict:
    """The ``--dry-run`` summary (JSON-able) of the episodes ``left`` (``runner.PendingEpisodes``) with ``agent``
    (an ``AgentSpec``) under ``cfg``: episodes, model calls, prompt and completion tokens, cost in USD (None:
    unknown, with ``cost_note`` saying why), and the figures they came from."""
    from spatialact.evaluation.estimate import run_estimate
    from spatialact.evaluation.runner import endpoint_url

    a = _agent_figures(agent, agent.validate())
    per = a["requests_per_turn"]
    if not per:  # None: no model; 0: a plug-in, unknown
        est = run_estimate([None] * len(left.todo), cfg.mode, per)
    else:
        seen: dict = {}
        for task, _variant, _repeat in left.todo:
            if task.id not in seen:
                seen[task.id] = _prompt_shape(task, cfg)
        est = run_estimate([seen[t.id] for t, _, _ in left.todo], cfg.mode, per, a["max_tokens"], a["price_in"],
                           a["price_out"])
    note = None
    if est.cost_usd is None:
        if per == 0:
            note = "unknown: a plug-in agent"
        elif not a.get("api"):
            note = "none: a local model"
        elif est.completion_tokens is None:
            note = "unknown: the agent sets no max_tokens (give --agent-arg max_tokens=N)"
        else:
            note = "unknown: give --agent-arg price_in=USD --agent-arg price_out=USD (per million tokens)"
    return {"dry_run": True, "agent": agent.name, "endpoint": endpoint_url(agent), "mode": cfg.mode,
            "tasks": int(n_tasks), "variants": int(variants), "repeats": int(repeats), "episodes_total": left.total,
            "episodes_done": left.done, **est.to_dict(), "calls_bound": cfg.mode == "closed-loop",
            "requests_per_turn": per, "max_tokens": a["max_tokens"], "price_in": a["price_in"],
            "price_out": a["price_out"], "detail": "high", "cost_note": note, "notes": a["notes"]}


def format_dry_run(js: dict, source: str) -> str:
    """The ``--dry-run`` summary as printed: one line a figure."""
    def n(v):
        return "unknown" if v is None else f"{v:,}"

    up = "at most " if js["calls_bound"] else ""
    per = js["requests_per_turn"]
    if per is None:
        calls = "0 (the agent calls no model)"
    elif js["calls"] is None:
        calls = "unknown"
    elif js["mode"] == "closed-loop":
        calls = f"{up}{n(js['calls'])} (max(--max-steps, ground-truth steps) turns per episode, {per} per turn)"
    else:
        calls = f"{n(js['calls'])} ({per} per episode)"
    comp = n(js["completion_tokens"])
    if js["completion_tokens"] is not None and js["max_tokens"] is not None and per:
        comp = f"at most {comp} (max_tokens {js['max_tokens']} per call)"
    if js["cost_usd"] is not None:
        cost = f"at most ${js['cost_usd']:.4f} (price_in {js['price_in']:g}, price_out {js['price_out']:g} USD per " \
               f"million tokens)"
    else:
        cost = js["cost_note"]
    prompt = n(js["prompt_tokens"])
    if js["prompt_tokens"] and per:
        prompt = f"{up}{prompt} (text at 4 characters a token; images at OpenAI's high-detail tiles)"
    lines = [f"spatialact eval --dry-run: {js['agent']} · {js['mode']} · {source} · nothing run, nothing written",
             f"  episodes           {js['episodes']:,} to run ({js['tasks']} tasks × {js['variants']} variant"
             f"{'s' * (js['variants'] != 1)} × {js['repeats']} repeat{'s' * (js['repeats'] != 1)} = "
             f"{js['episodes_total']:,}; {js['episodes_done']:,} already done)",
             f"  model calls        {calls}",
             f"  prompt tokens      {prompt}",
             f"  completion tokens  {comp}",
             f"  cost               {cost}"]
    lines += [f"  note: {x}" for x in js["notes"]]
    return "\n".join(lines)


def _episode_config(args: argparse.Namespace):
    """The run's EpisodeConfig from the options (the image side's default, the step and limit bounds)."""
    from spatialact.agents import AgentConfigError
    from spatialact.evaluation.episode import EpisodeConfig

    from .main import CLIError

    if args.size is None:  # images a model looks at are larger when the gl renderer draws them (docs/environments.md, Renderers)
        from spatialact.agents import canonical_agent_name

        try:
            model = canonical_agent_name(args.agent) not in BASELINE_AGENTS
        except AgentConfigError:
            model = False  # refused below, naming the agent
        args.size = default_image_side(args.renderer, model, args.env)
    if args.max_steps < 1:
        raise CLIError(f"--max-steps {args.max_steps}: must be at least 1")
    if args.limit is not None and args.limit < 0:
        raise CLIError(f"--limit {args.limit}: must be 0 or more")
    width, height = size_pair(args.size)
    return EpisodeConfig(mode=args.mode, env=args.env, renderer=args.renderer, width=width, height=height,
                         max_steps=args.max_steps, profile=args.profile, weights=parse_weights(args.weights),
                         seed=args.seed, render_quality=args.render_quality or "default",
                         collisions=not args.no_collisions)


def _report(args: argparse.Namespace, agent, source: str, summary, records: list[dict]) -> int:
    """Print the summary (a table led by skill, or ``--json``) of the run's plain episodes, repeats
    0…K-1, and return the exit status (1 when some episodes failed)."""
    from .table import format_table

    records = [r for r in records if int(r.get("repeat") or 0) < args.repeats]
    plain = [r for r in records if not r.get("variant")]
    rows, headers, table = summary_rows(plain, args.mode)
    flip = flip_rows([r for r in records if not r.get("repeat")]) if args.flip else None
    differ = sum(1 for r in records if r.get("images_match") is False)
    pinned = sum(1 for r in records if r.get("images_match") is not None)
    line = failure_summary(summary.failures)
    if args.workers == "auto" and not args.json:
        print(f"spatialact eval: --workers auto ran {summary.n_new} episodes on {summary.workers} worker"
              f"{'s' * (summary.workers != 1)} (one per 16 episodes, at most one per usable CPU)", file=sys.stderr)
    if args.json:
        out = {"run_dir": str(summary.run_dir), "new": summary.n_new, "skipped": summary.n_skipped,
               "errors": summary.n_errors, "failures": summary.failures, "workers": summary.workers,
               "repeats": summary.repeats, "notes": list(summary.notes), "summary": table,
               "images_checked": pinned, "images_differ": differ, "concurrency": summary.concurrency,
               "figures": summary.figures, "stopped": summary.stopped}
        if flip is not None:
            out["flip"] = flip[2]
        print_json(out)
    else:
        reps = f" · {args.repeats} repeats" if args.repeats > 1 else ""
        print(format_table(rows, headers, floatfmt=".3f",
                           title=f"{agent.name} · {args.mode} · {source}{reps}"
                                 + (" · plain episodes" if args.flip else "")
                                 + " · skill: 0 doing nothing, 1 the ground truth"))
        if flip is not None:
            print()
            print(format_table(flip[0], flip[1], title="FlipEval · scores of the mirrored answers mirrored back; "
                                                       "paired = the worse of the two per task"))
        if pinned:
            print(f"\nimages: {pinned - differ} of {pinned} episodes saw the suite's pinned start and goal images"
                  + (f"; {differ} differ (another renderer, size or machine: not comparable)" if differ else ""))
        print(f"\n{summary.n_new} episodes run, {summary.n_skipped} already done; results: "
              f"{summary.run_dir / 'results.jsonl'}")
        if summary.n_new and (summary.concurrency > 1 or (summary.figures or {}).get("requests")):
            from spatialact.evaluation.progress import format_figures

            print(format_figures(summary.figures))
    if summary.stopped == "max_cost":
        f = summary.figures or {}
        print(f"spatialact eval: stopped: the cost recorded for this run (${f.get('cost_usd_run', 0):.4f}) reached "
              f"--max-cost {args.max_cost:g} USD; {summary.n_tasks * summary.repeats - summary.n_skipped - summary.n_new}"
              f" episodes not run; rerun with a higher --max-cost to go on", file=sys.stderr)
        return 3
    if line:
        print(f"spatialact eval: {line}", file=sys.stderr)
        return 1
    return 0
