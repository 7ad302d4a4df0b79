"""What a run will cost before it runs (``spatialact eval --dry-run``, docs/evaluation.md, "Before a run").

Pure functions of figures: nothing here renders, reads an image's pixels or sends a request. The command gathers
the figures (:func:`prompt_shape` builds one prompt per task with 1 × 1 stand-in pictures, for its text; the image
sizes come from the run's ``--size`` or a task's image files) and :func:`run_estimate` adds them up.

Units: tokens are whole numbers of the OpenAI-style counting below; prices are USD per million tokens (the
agents' ``price_in`` / ``price_out`` options); costs are USD; image sizes are pixels (width, height).

* Text: :data:`CHARS_PER_TOKEN` (4) characters a token, rounded up per request — the rule of thumb OpenAI gives for
  English text; no tokenizer is a dependency, and the prompts are English and JSON.
* Images: OpenAI's vision rule for its tile-priced models (GPT-4o, GPT-4.1, GPT-4.5, o1, o3; "Images and vision",
  Calculating costs: https://platform.openai.com/docs/guides/images-vision#calculating-costs): ``detail: "low"``
  costs :data:`IMAGE_BASE_TOKENS` (85); ``"high"`` scales the image to fit a :data:`MAX_SIDE_PX` (2048) square, then
  so that its short side is at most :data:`SHORT_SIDE_PX` (768) — images are never enlarged —, and costs 85 +
  :data:`IMAGE_TILE_TOKENS` (170) per :data:`TILE_PX` (512) square tile that covers it. A 384 × 384 image: one tile,
  255 tokens; 1024 × 1024: scaled to 768 × 768, four tiles, 765. The agents send no ``detail``, so the endpoint's
  default (``"auto"``) applies, which chooses at most ``"high"``: the estimate counts ``"high"``. Models priced by
  32-pixel patches (gpt-4.1-mini, gpt-4.1-nano, o4-mini) and other providers count otherwise.
* Completion: every request is counted at its ``max_tokens`` (the most it may be billed).
* Closed loop: turn t (0, 1, …) carries the steps taken so far as text (``Steps already taken (t): …``, one
  answered step each, :func:`history_chars`), so each turn is counted with its own history; the turns are
  bounded by the episode's step limit, ``max(--max-steps, ground-truth steps)``. An upper bound: episodes that
  stop early (Stay) make fewer calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["CHARS_PER_TOKEN", "IMAGE_BASE_TOKENS", "IMAGE_TILE_TOKENS", "TILE_PX", "MAX_SIDE_PX", "SHORT_SIDE_PX",
           "DETAILS", "PromptShape", "RunEstimate", "text_tokens", "image_tokens", "history_chars",
           "turn_prompt_tokens", "episode_calls", "episode_tokens", "cost_usd", "run_estimate", "prompt_shape"]

#: Characters per text token (OpenAI's rule of thumb for English text).
CHARS_PER_TOKEN = 4
#: Tokens of an image at ``detail: "low"``, and the fixed part of one at ``"high"``.
IMAGE_BASE_TOKENS = 85
#: Tokens of each 512-pixel tile of an image at ``detail: "high"``.
IMAGE_TILE_TOKENS = 170
#: The side of a tile, in pixels.
TILE_PX = 512
#: ``"high"``: an image is first scaled down to fit a square of this side, in pixels.
MAX_SIDE_PX = 2048
#: ``"high"``: then scaled down so that its shorter side is at most this, in pixels.
SHORT_SIDE_PX = 768
#: The ``detail`` values an estimate takes (``auto`` is counted as ``high``, its most).
DETAILS = ("high", "low", "auto")


def text_tokens(chars: int) -> int:
    """Tokens of ``chars`` characters of text: ``ceil(chars / CHARS_PER_TOKEN)`` (0 for none)."""
    return -(-max(0, int(chars)) // CHARS_PER_TOKEN)


def image_tokens(width: int, height: int, detail: str = "high") -> int:
    """Tokens of one image of ``width`` × ``height`` pixels at ``detail`` (``"low"``: 85; ``"high"`` and
    ``"auto"``: 85 + 170 per 512-pixel tile after scaling down to fit 2048 × 2048 and to a short side of at most
    768), by OpenAI's rule for its tile-priced vision models (module doc)."""
    if detail not in DETAILS:
        raise ValueError(f"detail must be one of {', '.join(DETAILS)}, got {str(detail)[:40]!r}")
    w, h = float(width), float(height)
    if w <= 0 or h <= 0:
        raise ValueError(f"an image has sides above 0 pixels, got {width} x {height}")
    if detail == "low":
        return IMAGE_BASE_TOKENS
    s = min(1.0, MAX_SIDE_PX / max(w, h))
    w, h = w * s, h * s
    s = min(1.0, SHORT_SIDE_PX / min(w, h))
    w, h = w * s, h * s
    tiles = math.ceil(round(w, 6) / TILE_PX) * math.ceil(round(h, 6) / TILE_PX)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def history_chars(turn: int, step_chars: int) -> int:
    """Characters a closed-loop prompt's history adds at turn ``turn`` (0-based), when each step taken is written
    in ``step_chars`` characters: none at turn 0; then a paragraph ``"Steps already taken (t): s1; s2; …"`` after a
    blank line (``"\\n\\n"``), as ``spatialact.agents.prompts.build_prompt`` writes it."""
    t = int(turn)
    if t <= 0:
        return 0
    return 2 + len(f"Steps already taken ({t}): ") + t * int(step_chars) + 2 * (t - 1)


@dataclass(frozen=True)
class PromptShape:
    """What one episode's prompt is made of: ``text_chars``, the characters of its text at turn 0 (system and
    user parts); ``images``, the (width, height) in pixels of each image it carries; ``step_chars``, the characters
    of one step taken as the closed-loop history writes it; ``turns``, the most turns the episode may take (its
    step limit; 1 for one-shot)."""

    text_chars: int
    images: tuple
    step_chars: int = 0
    turns: int = 1


def turn_prompt_tokens(shape: PromptShape, turn: int = 0, detail: str = "high") -> int:
    """Prompt tokens of one request at turn ``turn``: the text (with the history of that turn) and the images."""
    text = shape.text_chars + history_chars(turn, shape.step_chars)
    return text_tokens(text) + sum(image_tokens(w, h, detail) for w, h in shape.images)


def episode_calls(shape: PromptShape, mode: str, requests_per_turn: int = 1) -> int:
    """Model requests of one episode at most: one turn one-shot, ``shape.turns`` closed-loop, each of at most
    ``requests_per_turn`` requests (1; a tool agent's conversation: ``max_calls + 1`` for react, 2 for
    plan-execute)."""
    turns = 1 if mode == "one-shot" else max(1, int(shape.turns))
    return turns * max(1, int(requests_per_turn))


def episode_tokens(shape: PromptShape, mode: str, requests_per_turn: int = 1, max_tokens: int | None = None,
                   detail: str = "high") -> tuple[int, int | None]:
    """(prompt tokens, completion tokens) of one episode at most: each request of each turn counted with that
    turn's prompt (:func:`turn_prompt_tokens`), and at ``max_tokens`` of completion (None when the agent sets no
    ``max_tokens``: unbounded)."""
    turns = 1 if mode == "one-shot" else max(1, int(shape.turns))
    per = max(1, int(requests_per_turn))
    prompt = per * sum(turn_prompt_tokens(shape, t, detail) for t in range(turns))
    completion = None if max_tokens is None else turns * per * int(max_tokens)
    return prompt, completion


def cost_usd(prompt_tokens: int, completion_tokens: int | None, price_in: float | None,
             price_out: float | None) -> float | None:
    """USD of ``prompt_tokens`` at ``price_in`` and ``completion_tokens`` at ``price_out`` (USD per million
    tokens); None when a price is missing or the completion is unbounded."""
    if price_in is None or price_out is None or completion_tokens is None:
        return None
    return (int(prompt_tokens) * float(price_in) + int(completion_tokens) * float(price_out)) / 1e6


@dataclass(frozen=True)
class RunEstimate:
    """The figures of :func:`run_estimate`: ``episodes`` to run, model ``calls`` (an upper bound closed-loop),
    ``prompt_tokens`` and ``completion_tokens`` (None: unknown or unbounded), ``cost_usd`` (None: unknown)."""

    episodes: int
    calls: int | None
    prompt_tokens: int | None
    completion_tokens: int | None
    cost_usd: float | None

    def to_dict(self) -> dict:
        return {"episodes": self.episodes, "calls": self.calls, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd}


def run_estimate(shapes, mode: str, requests_per_turn: int | None = 1, max_tokens: int | None = None,
                 price_in: float | None = None, price_out: float | None = None,
                 detail: str = "high") -> RunEstimate:
    """The sum over the episodes to run, one :class:`PromptShape` each (None for an episode whose prompt is not
    known: a plug-in agent). ``requests_per_turn`` None: an agent that calls no model (0 calls, 0 tokens);
    prices in USD per million tokens."""
    shapes = list(shapes)
    if requests_per_turn is None:
        return RunEstimate(len(shapes), 0, 0, 0, 0.0)
    if any(s is None for s in shapes):
        return RunEstimate(len(shapes), None, None, None, None)
    calls = prompt = 0
    completion: int | None = 0
    for s in shapes:
        calls += episode_calls(s, mode, requests_per_turn)
        p, c = episode_tokens(s, mode, requests_per_turn, max_tokens, detail)
        prompt += p
        completion = None if completion is None or c is None else completion + c
    return RunEstimate(len(shapes), calls, prompt, completion, cost_usd(prompt, completion, price_in, price_out))


def prompt_shape(task, mode: str, views: tuple, example_size: tuple | None = None, turns: int = 1) -> PromptShape:
    """The :class:`PromptShape` of ``task``'s prompt (``spatialact.agents.prompts.build_prompt``, no cues) in
    ``mode``, its views being ``views`` pixels (width, height) and its example picture, when it has one,
    ``example_size``; ``turns``: the episode's step limit. The prompt is built once with 1 × 1 stand-in images:
    its text does not depend on the pictures."""
    import numpy as np

    from ..agents.prompts import build_prompt

    px = np.zeros((1, 1, 3), np.uint8)
    obs = {"rgb": px, "goal_rgb": px, "start_rgb": px}
    if example_size is not None:
        obs["example_rgb"] = px
    messages, images = build_prompt(task, obs, mode)
    chars = 0
    for m in messages:
        content = m["content"]
        parts = [content] if isinstance(content, str) else [p.get("text", "") for p in content
                                                             if p.get("type") == "text"]
        chars += sum(len(p) for p in parts)
    sizes = tuple(tuple(example_size) if im.role == "example" else tuple(views) for im in images)
    step = task.gt[:1] if len(task.gt) else None
    step_chars = len(step.to_text("vector" if step.has_vectors else "flat")) if step is not None else 0
    return PromptShape(chars, sizes, step_chars, max(1, int(turns)))
