"""Print the exact prompt an MLLM agent would receive for a task, and write the images it carries.

The images come from the task's start_image / goal_image files; a task without them is rendered in its scene
(spatialact.envs). The output directory gets the images as PNG (image_1_start.png, ...), prompt.txt (what is
printed) and messages.json (the chat-completions messages exactly as sent, images as base64 data URLs).
The pose is never part of a prompt. --cues matches,depth,size shows the cue-prompting variant (the depth and size
cues need views rendered in the task's scene, which come with depth and intrinsics).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .main import print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("task_id", metavar="TASK_ID", help="id of the task in the task file")
    p.add_argument("--tasks", metavar="FILE", required=True, help="task file (JSONL)")
    p.add_argument("--mode", choices=["one-shot", "closed-loop"], default="one-shot",
                   help="one-shot (whole sequence, default) or closed-loop (first step of the loop)")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="where to write the images, prompt.txt and messages.json (default: ./prompt_<TASK_ID>)")
    p.add_argument("--width", type=int, default=128, help="render width in pixels when rendering (default 128)")
    p.add_argument("--height", type=int, default=128, help="render height in pixels when rendering (default 128)")
    p.add_argument("--renderer", choices=["tiny", "egl", "gl", "auto"], default="tiny",
                   help="renderer when rendering: tiny (PyBullet's CPU renderer, default), egl, gl (the project's "
                        "OpenGL renderer, as eval uses when it starts) or auto (gl, else tiny saying why)")
    p.add_argument("--json", action="store_true", help="print JSON (messages with image file names) instead of text")
    p.add_argument("--cues", metavar="LIST", default=None,
                   help="cue prompting as --agent-arg cues=LIST would give it: any of matches,depth,size")


def _load(path):
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def observation_for(task, mode: str, width: int = 128, height: int = 128, renderer: str = "tiny") -> dict:
    """The first observation of an episode: from the task's image files, else rendered in its scene."""
    from .main import CLIError

    obs = {"mode": mode, "step_index": 0}
    if task.start_image and task.goal_image and Path(task.start_image).is_file() and Path(task.goal_image).is_file():
        obs["rgb"] = obs["start_rgb"] = _load(task.start_image)
        obs["goal_rgb"] = _load(task.goal_image)
        return obs
    missing = [k for k in ("start_image", "goal_image") if getattr(task, k) and not Path(getattr(task, k)).is_file()]
    if task.scene is None:
        why = f"its {', '.join(missing)} file is missing" if missing else "it has no start_image/goal_image"
        raise CLIError(f"task {task.id!r}: {why} and no scene to render the views from")
    try:
        import numpy as np

        from spatialact.envs import make_env
    except ImportError as e:
        raise CLIError(f"task {task.id!r} must be rendered, which needs the simulator: {e} "
                       f"(pip install 'spatialact[sim]')") from None
    env = make_env(task.kind, task=task, width=width, height=height, renderer=renderer)
    try:
        o, _ = env.reset(seed=0, options={"task": task})
        obs["rgb"] = obs["start_rgb"] = np.asarray(o["rgb"])
        obs["goal_rgb"] = np.asarray(o["goal_rgb"])
        obs["depth"] = env.unwrapped.observation_depth()  # for cue prompting (--cues)
        obs["intrinsics"] = np.asarray(env.unwrapped.intrinsics, dtype=np.float64)
        ex = task.example or {}
        if not ex.get("start_image") and ex.get("start_pose") is not None and hasattr(env.unwrapped, "render_view"):
            view = env.unwrapped.render_view(np.asarray(ex["start_pose"], dtype=np.float64))
            obs["example_rgb"] = np.asarray(view["rgb"] if isinstance(view, dict) else view)
    finally:
        env.close()
    return obs


def run(args: argparse.Namespace) -> int:
    from PIL import Image

    from spatialact.agents import AgentConfigError, build_prompt
    from spatialact.agents.cues import cue_problem, parse_cues
    from spatialact.agents.prompts import prompt_version
    from spatialact.evaluation.results import safe_name
    from spatialact.tasks import load_tasks

    from .main import CLIError, check_out

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
    obs = observation_for(task, args.mode, args.width, args.height, args.renderer)
    why = cue_problem(task, cues, {k for k in ("depth", "intrinsics") if obs.get(k) is not None})
    if why:
        raise CLIError(why.replace("--agent-arg cues=", "--cues "))
    version = prompt_version(cues)
    messages, images = build_prompt(task, obs, args.mode, cues=cues)
    out = check_out(args.out) if args.out else Path(f"prompt_{safe_name(task.id)}")
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for im in images:
        Image.fromarray(im.rgb).save(out / im.filename)
        files.append(im.filename)

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
    (out / "prompt.txt").write_text(text + "\n", encoding="utf-8")
    (out / "messages.json").write_text(json.dumps(messages, ensure_ascii=False, indent=1), encoding="utf-8")
    if args.json:
        print_json({"task_id": task.id, "mode": args.mode, "prompt_version": version,
                    "messages": shown, "images": [str(out / f) for f in files], "out": str(out)},
                   ensure_ascii=False, indent=2)
    else:
        print(text)
        print(f"\nwrote {len(files)} image(s), prompt.txt and messages.json to {out}")
    return 0
