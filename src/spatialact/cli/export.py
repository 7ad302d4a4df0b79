"""Export tasks for another evaluation tool. Format: lmms-eval.

`spatialact export lmms-eval --suite l4-v1 --out DIR` writes the one-shot tasks of a built-in suite (or of a task
file: --tasks FILE) as an lmms-eval task folder: one task per track (<group>_nav, <group>_manip, ...) and their
group (spatialact_l4_v1 for l4-v1; --name changes it), the items as Parquet with their start and goal views (PNG,
the Hugging Face datasets Image layout), and a utils.py that shows spatialact's own prompt (what `spatialact
prompt` prints) and scores each answer with spatialact's scorer. Per track lmms-eval reports skill = (mean s −
mean s0) / (1 − mean s0) (0: all-Stay answers, 1: the ground truth), score (the paper's raw score), s0 and parsed;
the group, the mean of the tracks' figures. Run it with

  lmms-eval --model openai --model_args model=MODEL,base_url=URL --tasks spatialact_l4_v1 --include_path DIR

where spatialact is installed in lmms-eval's Python (utils.py imports it). The folder can move (its data files are
named relative to it). Views are rendered as eval renders them for a model agent: a frozen suite's pinned size,
renderer and quality, else eval's defaults (the auto renderer; 384² when gl draws, else 128²); --size, --renderer
and --render-quality override them, and the command says so when the result is not the frozen suite's images.
DIR must be new, empty or an earlier export (whose files are replaced). docs/lmms_eval_profile.md, "Export to
lmms-eval".
"""

from __future__ import annotations

import argparse
import sys

from .main import print_json, seed_arg


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .runs import MAX_IMAGE_SIDE, MIN_IMAGE_SIDE, add_render_quality

    p.add_argument("format", choices=["lmms-eval"], help="what to write: lmms-eval (a task folder)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--suite", metavar="NAME", help="a built-in suite: l4-v1, l4-v1/nav, default, nav:20, ...")
    src.add_argument("--tasks", metavar="FILE", help="a task file (JSONL)")
    p.add_argument("--out", metavar="DIR", required=True, help="the folder to write (new, empty or an earlier export)")
    p.add_argument("--name", metavar="NAME", default=None,
                   help="names the group spatialact_<NAME> (default: the suite's name, or the task file's stem)")
    p.add_argument("--seed", type=seed_arg, default=0, help="seed of a procedural suite (default 0)")
    p.add_argument("--size", type=int, default=None,
                   help=f"rendered image width and height in pixels, {MIN_IMAGE_SIDE} to {MAX_IMAGE_SIDE} (default: "
                        f"the suite's pinned size, else eval's for a model agent: 384 when gl renders, else 128)")
    p.add_argument("--renderer", choices=["auto", "tiny", "egl", "gl"], default=None,
                   help="renderer of views rendered in their scene (default: the suite's pinned one, else auto)")
    add_render_quality(p, "; default: the suite's pinned one")
    p.set_defaults(render_quality=None)
    p.add_argument("--profile", choices=["paper", "paper+rot"], default=None,
                   help="scoring profile of the score and s0 (default: the suite's pinned one, else paper)")
    p.add_argument("--json", action="store_true", help="print the export's card as JSON")


def _progress(i: int, n: int, task_id: str) -> None:
    if sys.stderr.isatty():
        print(f"\rexport: {i + 1}/{n} {task_id[:40]:40s}", end="" if i + 1 < n else "\n", file=sys.stderr,
              flush=True)


def run(args: argparse.Namespace) -> int:
    from spatialact.export import ExportError, export_lmms_eval, export_source
    from spatialact.outputs import OutputError

    from .main import CLIError, check_out

    from .runs import check_image_side

    check_image_side(args.size, "--size")
    out = check_out(args.out)
    try:
        source = export_source(args.suite, args.tasks, seed=args.seed)
        card = export_lmms_eval(source, out, name=args.name, size=args.size, renderer=args.renderer,
                                render_quality=args.render_quality, profile=args.profile, progress=_progress)
    except (ExportError, OutputError) as e:
        raise CLIError(str(e)) from None
    if args.json:
        print_json(card, indent=1, ensure_ascii=False)
    else:
        tracks = ", ".join(f"{t} ({n})" for t, n in card["tasks"].items())
        size = card["image_size"]
        views = f"views rendered {size[0]}x{size[1]} ({card['renderer']})" if size else "the tasks' own views"
        print(f"wrote lmms-eval group {card['group']} to {out}: {tracks}; {views}, prompt {card['prompt_version']}, "
              f"profile {card['profile']}")
        print(f"run: lmms-eval --model openai --model_args model=MODEL,base_url=URL --tasks {card['group']} "
              f"--include_path {out}  (spatialact installed in lmms-eval's Python)")
    for w in card["warnings"]:
        print(f"spatialact export: warning: {w}", file=sys.stderr)
    return 0
