"""What the commands that run agents share (``eval``, ``demo``, ``questions score``, and ``prompt``, which shows what
``eval`` sends): reading ``--agent-arg`` options, the run's defaults and image size, and the end-of-run line about
failed episodes."""

from __future__ import annotations

import json

__all__ = ["parse_agent_args", "failure_summary", "run_defaults", "default_image_side", "check_image_side",
           "MIN_IMAGE_SIDE", "MAX_IMAGE_SIDE", "add_render_quality"]

#: The bounds of an image side in pixels (``eval --size``, ``prompt --size/--width/--height``): 8 to 4096.
MIN_IMAGE_SIDE, MAX_IMAGE_SIDE = 8, 4096


def run_defaults():
    """The defaults of a run (mode, renderer, step limit, profile, seed, ...): an
    :class:`~spatialact.evaluation.episode.EpisodeConfig` as declared — the one definition ``eval``'s options and
    ``prompt``'s (which shows what ``eval`` sends) read."""
    from spatialact.evaluation.episode import EpisodeConfig

    return EpisodeConfig()


def add_render_quality(p, what: str = "") -> None:
    """The ``--render-quality`` option (``default`` or ``high``) of the commands that render: eval, demo, prompt,
    replay, questions build; ``what``: a clause on where the choice goes."""
    from spatialact.evaluation.episode import RENDER_QUALITIES

    p.add_argument("--render-quality", choices=list(RENDER_QUALITIES), default="default",
                   help="how the gl renderer draws: default (one sample per pixel and edge smoothing, the same images"
                        " on every device) or high (4× multisampling: the images gl drew before the default changed;"
                        " several times slower on a CPU); tiny and egl draw the same either way" + what)


def default_image_side(renderer: str, model: bool, env: str = "pybullet") -> int:
    """``eval``'s image side when ``--size`` is not given: 384 for a model agent when the gl renderer draws (``gl``,
    or ``auto`` when gl starts), else 128 (baselines, tiny renderer, no simulator)."""
    if env == "none":
        return 128
    from spatialact.envs.rendering import default_image_size

    return default_image_size(renderer, model)


def check_image_side(value: int | None, option: str = "--size") -> int | None:
    """``value`` when it is a side from :data:`MIN_IMAGE_SIDE` to :data:`MAX_IMAGE_SIDE` pixels (None passes);
    else a one-line CLIError naming ``option`` — a 100000-pixel side would allocate tens of GiB."""
    from .main import CLIError

    if value is not None and not MIN_IMAGE_SIDE <= value <= MAX_IMAGE_SIDE:
        raise CLIError(f"{option} {value}: must be between {MIN_IMAGE_SIDE} and {MAX_IMAGE_SIDE} pixels")
    return value


def parse_agent_args(items: list[str]) -> dict:
    """``--agent-arg KEY=VALUE`` options → keyword arguments (values read as JSON when they parse, else as text);
    a malformed item, a key given twice or a secret is a one-line CLIError that never echoes the value."""
    from spatialact.agents import AgentConfigError, check_agent_args

    from .main import CLIError

    out = {}
    for n, item in enumerate(items, 1):
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:  # the text is not echoed: it may be a pasted key
            raise CLIError(f"--agent-arg number {n}: expected KEY=VALUE (e.g. model=gpt-4o)")
        if key in out:
            raise CLIError(f"--agent-arg {key[:40]!r} is given twice")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    try:
        check_agent_args(out, where="--agent-arg")
    except AgentConfigError as e:
        raise CLIError(str(e)) from None
    return out


def failure_summary(failures: dict) -> str | None:
    """The end-of-run line for failed episodes (counts by reason and what a rerun does), or None."""
    if not failures:
        return None
    from spatialact.records import RETRIED_ON_RESUME

    n = sum(failures.values())
    counts = ", ".join(f"{k} {v}" for k, v in sorted(failures.items()))
    retried = [k for k in failures if k in RETRIED_ON_RESUME]
    hint = ("rerun the same command to retry the " + "/".join(retried) + " episodes"
            + ("; add --retry-errors to retry the others too" if len(retried) < len(failures) else "")
            if retried else "add --retry-errors to retry them")
    return f"{n} episode{'s' if n != 1 else ''} failed ({counts}): no score recorded; {hint}"
