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
the task's scene, which come with depth and intrinsics).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .main import print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    from .runs import MAX_IMAGE_SIDE, MIN_IMAGE_SIDE, add_render_quality, run_defaults

    defaults = run_defaults()  # eval's, from the one definition both read
    p.add_argument("task_id", metavar="TASK_ID", help="id of the task in the task file")
    p.add_argument("--tasks", metavar="FILE", required=True, help="task file (JSONL)")
    p.add_argument("--mode", choices=["one-shot", "closed-loop"], default=defaults.mode,
                   help=f"one-shot (whole sequence) or closed-loop (the first turn of the loop); default "
                        f"{defaults.mode}, as eval")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="where to write the images, prompt.txt and messages.json (default: ./prompt_<TASK_ID>)")
    p.add_argument("--size", type=int, default=None,
                   help=f"image width and height in pixels when rendering, {MIN_IMAGE_SIDE} to {MAX_IMAGE_SIDE} "
                        f"(default: eval's for a model agent: 384 when gl renders, else 128)")
    p.add_argument("--width", type=int, default=None, help="render width in pixels (default: --size)")
    p.add_argument("--height", type=int, default=None, help="render height in pixels (default: --size)")
    p.add_argument("--renderer", choices=["auto", "tiny", "egl", "gl"], default=defaults.renderer,
                   help=f"renderer when rendering: auto (gl, else tiny saying why), tiny (PyBullet's CPU "
                        f"renderer), egl, gl (the project's OpenGL renderer); default {defaults.renderer}, as eval")
    add_render_quality(p, ", as eval")
    p.add_argument("--json", action="store_true", help="print JSON (messages with image file names) instead of text")
    p.add_argument("--cues", metavar="LIST", default=None,
                   help="cue prompting as --agent-arg cues=LIST would give it: any of matches,depth,size")


def _read_image(task, field: str, path: str):
    """The image file a task names, as eval reads it; one line naming task, field and path when it cannot be used
    (missing, no image, damaged, a decompression bomb: :mod:`spatialact.image_files`)."""
    from spatialact.image_files import ImageFileError, read_image_rgb

    from .main import CLIError

    try:
        return read_image_rgb(path)
    except ImageFileError as e:
        raise CLIError(f"task {task.id!r}: {field} {e}") from None


def _shows_files(task, mode: str) -> bool:
    """eval's choice: the task's image files in one-shot mode when it names both, or when it has no scene."""
    return (mode == "one-shot" and bool(task.start_image and task.goal_image)) or task.scene is None


def observation_for(task, mode: str, width: int = 128, height: int = 128, renderer: str = "auto",
                    render_quality: str = "default") -> dict:
    """The first observation of an eval episode of ``task`` in ``mode`` (what the agent sees, as
    ``spatialact.evaluation.episode`` builds it): the task's image files (one-shot with both, or no scene), else
    the views rendered in its scene (``width`` × ``height`` pixels, ``renderer`` at ``render_quality``) with their depth (metres) and
    intrinsics (pixels). Unusable image files raise a one-line CLIError naming task, field and path."""
    from .main import CLIError

    obs = {"mode": mode, "step_index": 0, "depth": None, "intrinsics": None}
    if _shows_files(task, mode):
        missing = [k for k in ("start_image", "goal_image") if not getattr(task, k)]
        if missing:
            raise CLIError(f"task {task.id!r} has no {' or '.join(missing)} and no scene to render the views from")
        obs["rgb"] = obs["start_rgb"] = _read_image(task, "start_image", task.start_image)
        obs["goal_rgb"] = _read_image(task, "goal_image", task.goal_image)
        return obs
    try:
        import numpy as np

        from spatialact.envs import make_env
    except ImportError as e:
        raise CLIError(f"task {task.id!r} must be rendered, which needs the simulator: {e} "
                       f"(pip install 'spatialact[sim]')") from None
    env = make_env(task.kind, task=task, width=width, height=height, renderer=renderer, render_quality=render_quality)
    try:
        o, _ = env.reset(seed=0, options={"task": task})
        obs["rgb"] = obs["start_rgb"] = np.asarray(o["rgb"])
        obs["goal_rgb"] = np.asarray(o["goal_rgb"])
        obs["depth"] = np.asarray(o["depth"]) if "depth" in o else env.unwrapped.observation_depth()
        obs["intrinsics"] = np.asarray(env.unwrapped.intrinsics, dtype=np.float64)
    finally:
        env.close()
    return obs


def _example_image(task, mode: str) -> None:
    """The example view a one-shot flat navigation prompt reads (``example.start_image``), checked as eval checks
    it before a run."""
    ex = task.example or {}
    if mode == "one-shot" and task.kind == "nav" and task.answer_format == "flat" and ex.get("start_image"):
        _read_image(task, "example.start_image", ex["start_image"])


def _sides(args: argparse.Namespace) -> tuple[int, int]:
    """(width, height) of rendered views: --width/--height, else --size, else eval's default for a model agent."""
    from .runs import check_image_side, default_image_side

    for opt in ("size", "width", "height"):
        check_image_side(getattr(args, opt), f"--{opt}")
    side = args.size
    if side is None and (args.width is None or args.height is None):
        side = default_image_side(args.renderer, model=True)
    return (args.width if args.width is not None else side), (args.height if args.height is not None else side)


def run(args: argparse.Namespace) -> int:
    from spatialact.agents import AgentConfigError, build_prompt
    from spatialact.agents.cues import cue_problem, parse_cues
    from spatialact.agents.prompts import png_bytes, prompt_version
    from spatialact.evaluation.results import safe_name
    from spatialact.outputs import make_folder, write_bytes, write_text
    from spatialact.tasks import load_tasks

    from .main import CLIError, check_out

    width, height = _sides(args)
    tasks = load_tasks(args.tasks)
    task = next((t for t in tasks if t.id == args.task_id), None)
    if task is None:
        raise CLIError(f"{args.tasks}: no task with id {args.task_id!r} ({len(tasks)} tasks in the file)")
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
    _example_image(task, args.mode)
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

    shown, k = [], 0
    for m in messages:
        if isinstance(m["content"], str):
            shown.append({"role": m["role"], "content": m["content"]})
            continue
        parts = []
        for part in m["content"]:
            if part["type"] == "image_url":
                parts.append({"type": "image", "file": files[k]})
                k += 1
            else:
                parts.append(part)
        shown.append({"role": m["role"], "content": parts})
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
