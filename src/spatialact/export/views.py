"""The first observation of an eval episode of a task, as a model agent sees it: the one place ``spatialact
prompt`` (the prompt and the OpenAI batch file), ``spatialact export lmms-eval`` and the batch export build it.

``spatialact eval`` shows a model agent, in one-shot mode, the task's own ``start_image`` / ``goal_image`` files
when it names both (or when it has no scene to render in), else the views rendered in its scene at the reset of
seed 0; in closed-loop mode always the rendered views (the first turn). The files are read and checked as eval
checks them (:mod:`spatialact.image_files`: a missing, non-image, damaged or over-64-megapixel file is one line
naming the task, the field and the path); so is the example view a one-shot flat navigation prompt shows
(``example.start_image``). Rendered views come with their depth (metres, per pixel) and the camera intrinsics
(pixels) when asked for: the cue prompts (``--cues depth,size``) read them.
"""

from __future__ import annotations

__all__ = ["shows_files", "first_observation", "read_task_image", "check_example_image", "replace_images",
           "images_match"]


def shows_files(task, mode: str = "one-shot") -> bool:
    """Whether an eval episode of ``task`` in ``mode`` shows the task's own image files (one-shot with both named,
    or no scene to render in) rather than views rendered in its scene: eval's choice."""
    return (mode == "one-shot" and bool(task.start_image and task.goal_image)) or task.scene is None


def read_task_image(task, field: str, path: str, error: type[Exception] = ValueError):
    """The image file ``path`` that ``task`` names in ``field``, as eval reads it (RGB, uint8, H × W × 3); ``error``
    with one line naming the task, the field and the path when it cannot be used."""
    from ..image_files import ImageFileError, read_image_rgb

    try:
        return read_image_rgb(path)
    except ImageFileError as e:
        raise error(f"task {task.id!r}: {field} {e}") from None


def check_example_image(task, mode: str, error: type[Exception] = ValueError) -> None:
    """The example view a one-shot flat navigation prompt reads (``example.start_image``), checked as eval checks
    it before a run (``error`` in one line when it cannot be used)."""
    ex = task.example or {}
    if mode == "one-shot" and task.kind == "nav" and task.answer_format == "flat" and ex.get("start_image"):
        read_task_image(task, "example.start_image", ex["start_image"], error)


def first_observation(task, mode: str = "one-shot", width: int = 128, height: int = 128, renderer: str = "auto",
                      render_quality: str = "default", *, depth: bool = True,
                      error: type[Exception] = ValueError) -> dict:
    """The first observation of an eval episode of ``task`` in ``mode`` (what a model agent sees, as
    :mod:`spatialact.evaluation.episode` builds it): ``{"mode", "step_index": 0, "rgb", "start_rgb", "goal_rgb",
    "depth", "intrinsics"}``. The task's image files (:func:`shows_files`), else the views rendered in its scene
    (``width`` × ``height`` pixels, ``renderer`` at ``render_quality``, reset with seed 0) and, with ``depth``, their
    depth map (metres) and the camera intrinsics (3 × 3, pixels); ``depth`` and ``intrinsics`` are None for image
    files or without ``depth``. The example view is checked first (:func:`check_example_image`). Unusable files, a
    task with neither files nor a scene, or a missing simulator raise ``error`` in one line naming the task."""
    import numpy as np

    check_example_image(task, mode, error)
    obs = {"mode": mode, "step_index": 0, "depth": None, "intrinsics": None}
    if shows_files(task, mode):
        missing = [k for k in ("start_image", "goal_image") if not getattr(task, k)]
        if missing:
            raise error(f"task {task.id!r} has no {' or '.join(missing)} and no scene to render the views from")
        obs["rgb"] = obs["start_rgb"] = read_task_image(task, "start_image", task.start_image, error)
        obs["goal_rgb"] = read_task_image(task, "goal_image", task.goal_image, error)
        return obs
    try:
        from ..envs import make_env
    except ImportError as e:
        raise error(f"task {task.id!r} must be rendered, which needs the simulator: {e} "
                    f"(pip install 'spatialact[sim]')") from None
    env = make_env(task.kind, task=task, width=width, height=height, renderer=renderer, render_quality=render_quality)
    try:
        o, _ = env.reset(seed=0, options={"task": task})
        obs["rgb"] = obs["start_rgb"] = np.asarray(o["rgb"])
        obs["goal_rgb"] = np.asarray(o["goal_rgb"])
        if depth:
            obs["depth"] = np.asarray(o["depth"]) if "depth" in o else env.unwrapped.observation_depth()
            obs["intrinsics"] = np.asarray(env.unwrapped.intrinsics, dtype=np.float64)
    finally:
        env.close()
    return obs


def replace_images(messages: list, placeholder) -> list:
    """Chat-completions ``messages`` with the k-th image part (``{"type": "image_url", ...}``, k from 0 in order)
    replaced by ``placeholder(k)``; text parts and text contents are copied as they are. What ``spatialact prompt``
    shows (image file names) and an lmms-eval export stores (image roles) instead of the data URLs."""
    out, k = [], 0
    for m in messages:
        if isinstance(m["content"], str):
            out.append({"role": m["role"], "content": m["content"]})
            continue
        parts = []
        for part in m["content"]:
            if part["type"] == "image_url":
                parts.append(placeholder(k))
                k += 1
            else:
                parts.append(dict(part))
        out.append({"role": m["role"], "content": parts})
    return out


def images_match(task, obs: dict) -> bool | None:
    """Whether the views of ``obs`` are the ones ``task`` pins in ``meta["image_sha256"]`` (``{"start", "goal"}``:
    SHA-256 of the raw uint8 RGB array bytes, C order, at a frozen suite's pinned renderer, quality and size; what
    eval records as ``images_match``); None when the task pins none."""
    import hashlib

    import numpy as np

    want = (task.meta or {}).get("image_sha256")
    if not isinstance(want, dict):
        return None
    return all(want.get(role) == hashlib.sha256(np.ascontiguousarray(obs[key], dtype=np.uint8).tobytes()).hexdigest()
               for role, key in (("start", "rgb"), ("goal", "goal_rgb")))
