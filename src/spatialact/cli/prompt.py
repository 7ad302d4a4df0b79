"""Print the exact prompt an MLLM agent receives for a task in `spatialact eval`, and write the images it carries.

The defaults are eval's for a model agent (read from the same definition): one-shot, the auto renderer (gl where
its OpenGL context starts, else tiny) and 384² images when gl renders (128² otherwise). The views are the ones eval
shows: in one-shot mode the task's start_image / goal_image files when it names both (checked as eval checks them:
a missing, non-image, damaged or over-64-megapixel file is one line naming the task, field and path), else views
rendered in its scene; in closed-loop mode always the views rendered in its scene (the first turn). The output
folder gets the images as PNG (image_1_start.png, ...), prompt.txt (what is printed) and messages.json (the
chat-completions messages exactly as sent, images as base64 data URLs), each written by the output rule (a
regular file replaced atomically; a FIFO or read-only file refused before any work). The pose is never part of a
prompt. --cues matches,depth,size shows the cue-prompting variant (the depth and size cues need views rendered in
the task's scene, which come with depth and intrinsics). The tasks come from a task file (--tasks FILE) or a built-in
suite (--suite NAME[:N], a frozen suite's pinned image size, renderer and quality the defaults, as in eval).

--format openai-batch writes, instead, one request per one-shot episode of every task (TASK_ID: only that one;
--limit N: the first N) to --out FILE in the OpenAI Batch API's input layout ({"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body"}): the body is the request `spatialact eval --agent openai` sends for the task with the
same --agent-arg options (model=..., max_tokens=..., params=...), built by that agent; custom_id is the episode key
task|openai|none|one-shot|seed, by which `spatialact score` joins the provider's output back to the tasks
(--tasks-out FILE writes the task file to score against; docs/scoring.md, "Scoring a provider's batch output").
Batch is one-shot only: --mode closed-loop is refused.

Examples:
  spatialact prompt nav:000 --tasks tasks.jsonl --out prompt_nav
  spatialact prompt --suite l4-v1-lite --format openai-batch --agent-arg model=gpt-4o --out batch.jsonl \
      --tasks-out l4-lite.tasks.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .main import print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .eval import GivenOption, size_arg
    from .main import seed_arg
    from .runs import MAX_IMAGE_SIDE, MIN_IMAGE_SIDE, add_render_quality, run_defaults

    defaults = run_defaults()  # eval's, from the one definition both read
    p.add_argument("task_id", metavar="TASK_ID", nargs="?", default=None,
                   help="id of the task (needed for the text prompt; with --format openai-batch only that task)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--tasks", metavar="FILE", help="task file (JSONL)")
    src.add_argument("--suite", metavar="NAME[:N]",
                     help="built-in suite, as eval takes it (default, nav:5, l4-v1-lite, l4-v1/nav, ...); a frozen "
                          "suite's pinned image size, renderer and render quality are the defaults")
    p.add_argument("--format", choices=["text", "openai-batch"], default="text",
                   help="text (default): the prompt of TASK_ID, its images, prompt.txt and messages.json in --out "
                        "DIR; openai-batch: one OpenAI Batch API request per one-shot episode in --out FILE")
    p.add_argument("--mode", choices=["one-shot", "closed-loop"], default=defaults.mode,
                   help=f"one-shot (whole sequence) or closed-loop (the first turn of the loop); default "
                        f"{defaults.mode}, as eval (openai-batch: one-shot only)")
    p.add_argument("--out", metavar="DIR|FILE", default=None,
                   help="text: where to write the images, prompt.txt and messages.json (default: "
                        "./prompt_<TASK_ID>); openai-batch: the batch file (JSONL; '-' standard output)")
    p.add_argument("--size", type=size_arg, default=None, metavar="N|WxH",
                   help=f"image size in pixels when rendering: N (N x N) or WxH, sides {MIN_IMAGE_SIDE} to "
                        f"{MAX_IMAGE_SIDE} (default: eval's for a model agent: 384 when gl renders, else 128; a "
                        f"frozen suite's pin; game tasks that width at 4:3)")
    p.add_argument("--width", type=int, default=None, help="render width in pixels (default: --size)")
    p.add_argument("--height", type=int, default=None, help="render height in pixels (default: --size)")
    p.add_argument("--renderer", choices=["auto", "tiny", "egl", "gl"], default=defaults.renderer, action=GivenOption,
                   help=f"renderer when rendering: auto (gl, else tiny saying why), tiny (PyBullet's CPU "
                        f"renderer), egl, gl (the project's OpenGL renderer); default {defaults.renderer}, as eval")
    add_render_quality(p, ", as eval")
    p.set_defaults(render_quality=None)  # not given: "default", or a frozen suite's pin
    p.add_argument("--json", action="store_true", help="print JSON (messages with image file names; openai-batch: "
                                                       "what was written) instead of text")
    p.add_argument("--cues", metavar="LIST", default=None,
                   help="cue prompting as --agent-arg cues=LIST would give it: any of matches,depth,size")
    p.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="openai-batch: an option of the openai agent, as eval takes it (model=NAME is needed; "
                        "max_tokens=N, params={...}); values read as JSON when they parse")
    p.add_argument("--seed", type=seed_arg, default=0,
                   help="seed of a procedural suite and of the episode keys (default 0, as eval)")
    p.add_argument("--limit", type=int, default=None, metavar="N", help="openai-batch: only the first N tasks")
    p.add_argument("--tasks-out", metavar="FILE", default=None,
                   help="openai-batch: also write the tasks of the batch as a task file (what `spatialact score` "
                        "scores the provider's output against)")


def observation_for(task, mode: str, width: int = 128, height: int = 128, renderer: str = "auto",
                    render_quality: str = "default") -> dict:
    """The first observation of an eval episode of ``task`` in ``mode`` (what the agent sees:
    :func:`spatialact.export.views.first_observation`, with depth and intrinsics for the cues); unusable image files
    raise a one-line CLIError naming task, field and path."""
    from spatialact.export.views import first_observation

    from .main import CLIError

    return first_observation(task, mode, width, height, renderer, render_quality or "default", error=CLIError)


def _sides(args: argparse.Namespace, tasks: list, frozen: dict | None) -> tuple[int, int]:
    """(width, height) of rendered views, as eval picks them: --width/--height, else --size, else a frozen suite's
    pin, else eval's default for a model agent (game tasks only: that width at the game's 4:3). A frozen suite's
    pins (renderer, render quality) become the defaults of the options left out, as in eval."""
    from .eval import all_game_tasks, apply_suite_pins, game_size, size_pair
    from .runs import default_image_side

    size_given = args.size is not None
    if frozen is not None:
        apply_suite_pins(args, frozen.get("pins") or {})
    size = args.size
    if size is None:
        size = default_image_side(args.renderer, model=True)
    width, height = size_pair(size)
    if not size_given and frozen is None and all_game_tasks(tasks):  # the game's screen is 4:3, as in eval
        width, height = game_size(width)
    return (args.width if args.width is not None else width), (args.height if args.height is not None else height)


def _check_sides(args: argparse.Namespace) -> None:
    from .eval import check_size
    from .runs import check_image_side

    check_size(args.size)
    for opt in ("width", "height"):
        check_image_side(getattr(args, opt), f"--{opt}")


def _load(args: argparse.Namespace) -> tuple[list, str, dict | None]:
    """(tasks, label, frozen suite info or None) of --tasks / --suite, as eval loads them."""
    from .eval import load_task_source

    tasks, _, _, _, frozen = load_task_source(args.tasks, args.suite, args.seed)
    label = args.tasks if args.tasks else f"suite {args.suite}"
    return list(tasks), label, frozen


def _shown_messages(messages: list, files: list) -> list:
    """The messages with each image part replaced by ``{"type": "image", "file": NAME}`` (the files in order)."""
    from spatialact.export.views import replace_images

    names = iter(files)
    return replace_images(messages, lambda k: {"type": "image", "file": next(names)})


def run(args: argparse.Namespace) -> int:
    from .main import CLIError

    _check_sides(args)
    if args.format == "openai-batch":
        return _run_batch(args)
    if args.task_id is None:
        raise CLIError("name a TASK_ID: the text prompt is one task's (--format openai-batch writes every task's "
                       "request)")
    for opt, given in (("--agent-arg", args.agent_arg), ("--limit", args.limit is not None),
                       ("--tasks-out", args.tasks_out)):
        if given:
            raise CLIError(f"{opt} goes with --format openai-batch (the text prompt takes --cues)")
    return _run_text(args)


def _run_text(args: argparse.Namespace) -> int:
    from spatialact.agents import AgentConfigError, build_prompt
    from spatialact.agents.cues import cue_problem, parse_cues
    from spatialact.agents.images import png_bytes
    from spatialact.agents.prompts import prompt_version
    from spatialact.evaluation.results import safe_name
    from spatialact.outputs import make_folder, write_bytes, write_text

    from .main import CLIError, check_out

    tasks, label, frozen = _load(args)
    width, height = _sides(args, tasks, frozen)
    task = next((t for t in tasks if t.id == args.task_id), None)
    if task is None:
        raise CLIError(f"{label}: no task with id {args.task_id!r} ({len(tasks)} tasks in the "
                       f"{'file' if args.tasks else 'suite'})")
    if args.mode == "closed-loop" and task.scene is None:  # what eval refuses (check_runnable): no prompt for it
        raise CLIError(f"task {task.id!r} has no scene (scene: null), so it cannot run closed-loop; run it with "
                       f"--mode one-shot")
    try:
        cues = parse_cues(args.cues)
    except AgentConfigError as e:
        raise CLIError(f"--{e}") from None
    out = Path(args.out) if args.out else Path(f"prompt_{safe_name(task.id)}")
    check_out(out)
    for name in ("prompt.txt", "messages.json"):  # by the output rule, before any work
        check_out(out / name, folder=False)
    obs = observation_for(task, args.mode, width, height, args.renderer, args.render_quality)
    why = cue_problem(task, cues, {k for k in ("depth", "intrinsics") if obs.get(k) is not None})
    if why:
        raise CLIError(why.replace("--agent-arg cues=", "--cues "))
    version = prompt_version(cues)
    messages, images = build_prompt(task, obs, args.mode, cues=cues)
    files = [im.filename for im in images]
    for f in files:
        check_out(out / f, folder=False)
    make_folder(out, "--out")
    for im in images:
        write_bytes(out / im.filename, png_bytes(im.rgb), "--out")

    shown = _shown_messages(messages, files)
    lines = [f"# prompt for task {task.id} ({task.kind}, {task.answer_format}, {args.mode}); "
             f"prompt version {version}"]
    for m in shown:
        lines.append(f"--- {m['role']} ---")
        if isinstance(m["content"], str):
            lines.append(m["content"])
        else:
            for part in m["content"]:
                lines.append(f"[image: {out / part['file']}]" if part["type"] == "image" else part["text"])
    text = "\n".join(lines)
    write_text(out / "prompt.txt", text + "\n", "--out")
    write_text(out / "messages.json", json.dumps(messages, ensure_ascii=False, indent=1), "--out")
    if args.json:
        print_json({"task_id": task.id, "mode": args.mode, "prompt_version": version,
                    "messages": shown, "images": [str(out / f) for f in files], "out": str(out)},
                   ensure_ascii=False, indent=2)
    else:
        print(text)
        print(f"\nwrote {len(files)} image(s), prompt.txt and messages.json to {out}")
    return 0


def _batch_agent(args: argparse.Namespace):
    """The openai agent eval builds from --agent-arg (and --cues), checked as eval checks it; one-line CLIError."""
    from spatialact.agents import AgentConfigError
    from spatialact.evaluation.runner import AgentSpec
    from spatialact.export.openai_batch import batch_agent

    from .main import CLIError
    from .runs import parse_agent_args

    kwargs = parse_agent_args(args.agent_arg)
    if args.cues is not None:
        if "cues" in kwargs:
            raise CLIError("--cues and --agent-arg cues=... both given: give one")
        kwargs["cues"] = args.cues
    try:
        spec = AgentSpec("openai", kwargs)  # eval's checks: no secrets, no seed, base_url normalised
        return batch_agent(spec.kwargs)
    except AgentConfigError as e:
        raise CLIError(str(e)) from None


def _batch_tasks(args: argparse.Namespace) -> tuple[list, list, dict | None]:
    """(the tasks of the batch, all tasks loaded, frozen suite info): TASK_ID only, or the first --limit N."""
    from .main import CLIError

    tasks, label, frozen = _load(args)
    chosen = tasks
    if args.task_id is not None:
        chosen = [t for t in tasks if t.id == args.task_id]
        if not chosen:
            raise CLIError(f"{label}: no task with id {args.task_id!r} ({len(tasks)} tasks)")
    if args.limit is not None:
        if args.limit < 1:
            raise CLIError(f"--limit {args.limit}: must be at least 1")
        chosen = chosen[:args.limit]
    seen = set()
    for t in chosen:
        if t.id in seen:  # custom ids must be unique in a batch
            raise CLIError(f"{label}: task id {t.id!r} appears twice: a batch's custom ids must be unique")
        seen.add(t.id)
    return chosen, tasks, frozen


def _run_batch(args: argparse.Namespace) -> int:
    import contextlib
    import sys

    from spatialact.agents.cues import cue_problem
    from spatialact.export.openai_batch import MAX_BATCH_REQUESTS, batch_line
    from spatialact.export.views import images_match
    from spatialact.outputs import OutputError, OutputFile

    from .main import CLIError, check_out

    if args.mode == "closed-loop":
        raise CLIError("--mode closed-loop: a batch file holds one-shot requests only (a closed-loop episode asks "
                       "again after every step it executes): run closed-loop episodes with spatialact eval")
    if not args.out:
        raise CLIError("--format openai-batch: name the batch file with --out FILE ('-': standard output)")
    out = check_out(args.out, "--out", folder=False, stdout=True)
    if args.tasks_out:
        check_out(args.tasks_out, "--tasks-out", folder=False)
    agent = _batch_agent(args)
    chosen, tasks, frozen = _batch_tasks(args)
    width, height = _sides(args, tasks, frozen)
    n = size = pinned = differ = 0
    try:
        with OutputFile(out, "--out", stdout=True) as f:
            for task in chosen:
                obs = observation_for(task, "one-shot", width, height, args.renderer, args.render_quality)
                why = cue_problem(task, agent.cues, {k for k in ("depth", "intrinsics") if obs.get(k) is not None})
                if why:
                    raise CLIError(why)
                match = images_match(task, obs)  # a frozen suite pins its views: eval records whether they match
                pinned, differ = pinned + (match is not None), differ + (match is False)
                line = batch_line(task, obs, agent, args.seed) + "\n"
                f.write(line)
                n += 1
                size += len(line.encode("utf-8", "surrogatepass"))
    except OutputError as e:
        raise CLIError(str(e)) from None
    if args.tasks_out:
        from spatialact.tasks import save_tasks

        save_tasks(chosen, args.tasks_out, option="--tasks-out")
    note = (f"; the OpenAI Batch API takes at most {MAX_BATCH_REQUESTS:,} requests a file: split it (--limit, "
            f"or tracks of the suite)" if n > MAX_BATCH_REQUESTS else "")
    info = {"out": str(out), "requests": n, "bytes": size, "model": agent.model, "mode": "one-shot",
            "width": width, "height": height, "renderer": args.renderer,
            "render_quality": args.render_quality or "default", "prompt_version": agent.prompt_version,
            "tasks_out": args.tasks_out, "images_checked": pinned, "images_differ": differ}
    with contextlib.redirect_stdout(sys.stderr if str(out) == "-" else sys.stdout):  # '-': the batch is stdout
        if args.json:
            print_json(info)
        else:
            print(f"wrote {n} one-shot request(s) for model {agent.model} ({size / (1 << 20):.1f} MiB, "
                  f"{width}x{height} views) to {out}{note}")
            if pinned:
                print(f"images: {pinned - differ} of {pinned} requests carry the suite's pinned start and goal images"
                      + (f"; {differ} differ (another renderer, size or machine: not comparable)" if differ else ""))
    return 0
