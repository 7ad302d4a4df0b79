"""The ``Agent`` protocol, the ``AgentTurn`` value an agent returns, and helpers shared by every agent.

An observation is a dict (all keys optional except ``rgb`` and ``goal_rgb`` for the image agents):

* ``rgb``, ``goal_rgb``, ``start_rgb``, ``example_rgb``: (H, W, 3) uint8 RGB images;
* ``depth``: (H, W) float32 depth in metres of the current view, or None;
* ``intrinsics``: (3, 3) pinhole K in pixels;
* ``pose``: (4, 4) float64 C2W of the current camera / end-effector (metres; world +Z up, camera OpenCV
  axes). Baselines may use it; the MLLM agent never sends it;
* ``step_index`` (or ``step``): how many steps have been executed so far;
* ``mode``: ``one-shot`` or ``closed-loop`` (else the mode given to ``reset``, else one-shot).
"""

from __future__ import annotations

import json
import math
import zlib
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .. import geometry
from ..action_space import ActionSequence, ParseResult, Step, StepSizes
from ..vocab import MODES

__all__ = ["Agent", "AgentTurn", "AgentConfigError", "observation_mode", "observation_step",
           "quantise_motion", "split_counts", "answer_text", "turn_from_sequence", "task_rng"]

# Why an agent call failed: no connection; no answer in time; an HTTP error status; a reply that is not a
# chat completion. (Text that does not parse is not a failure: it is an answer that scores 0.)


class AgentConfigError(ValueError):
    """A bad agent configuration (unknown name, missing model or key, bad parameter): the runner aborts."""


@dataclass(frozen=True)
class AgentTurn:
    """One answer of an agent.

    ``text`` is the raw answer (what is scored and stored), ``parse`` its ParseResult (with the task's sizes),
    ``latency_s`` the wall time of the call in seconds, ``usage`` ``{"prompt_tokens", "completion_tokens"}``
    (plus ``"cached": True`` on a response-cache hit), ``error`` why the call failed (timeout, HTTP error) or
    None, ``error_kind`` what kind of failure (one of :data:`ERROR_KINDS`), ``cost_usd`` the price of the call
    when the agent knows its prices (0 for a cache hit), ``info`` agent-specific extras (e.g. the geometric
    baseline's match count and scale). A turn with an ``error`` is a failure, not an answer: the runner records
    it with reason ``api_error`` and no score.

    An API agent's token counts are None (and ``cost_usd`` None) when the endpoint's counts were not believable
    (not whole numbers from 0 to 10⁸, or cut off): unknown, not zero. ``response_truncated`` is True when the reply
    was longer than the agent's caps (``spatialact.agents.wire``: 1 MiB of text, 8 MiB read) and ``text`` holds its
    beginning: an answer all the same, parsed and scored as received.
    """

    text: str
    parse: ParseResult
    latency_s: float = 0.0
    usage: dict = field(default_factory=dict)
    error: str | None = None
    cost_usd: float | None = 0.0
    info: dict = field(default_factory=dict)
    error_kind: str | None = None
    response_truncated: bool = False

    def to_dict(self) -> dict:
        return {"text": self.text, "parse": self.parse.to_dict(), "latency_s": self.latency_s,
                "usage": dict(self.usage), "error": self.error, "error_kind": self.error_kind,
                "cost_usd": self.cost_usd, "info": dict(self.info), "response_truncated": self.response_truncated}


@runtime_checkable
class Agent(Protocol):
    """What the runner needs from an agent.

    ``reset(task, **kw)`` starts an episode (keyword arguments such as ``mode`` and ``seed`` may be passed and
    are accepted by every agent here); ``act(observation)`` answers one turn: in one-shot mode a whole
    sequence, in closed-loop mode one step (Stay ends the episode); ``describe()`` is the agent's provenance
    (name, model, parameters; never a secret).
    """

    name: str

    def reset(self, task, **kwargs) -> None: ...

    def act(self, observation: dict) -> AgentTurn: ...

    def describe(self) -> dict: ...


def observation_mode(observation: dict, default: str = "one-shot") -> str:
    mode = observation.get("mode") or default or "one-shot"
    if mode not in MODES:
        raise ValueError(f"observation mode must be one of {MODES}, got {mode!r}")
    return mode


def observation_step(observation: dict) -> int:
    v = observation.get("step_index", observation.get("step", 0))
    return int(v or 0)


def task_rng(seed: int, task_id: str, *extra: int) -> np.random.Generator:
    """A generator that depends only on (seed, task id, extra): the same episode gets the same draws whatever
    order the runner visits tasks in (crc32, not Python's salted ``hash``)."""
    return np.random.default_rng([int(seed) & 0xFFFFFFFF, zlib.crc32(task_id.encode("utf-8")), *extra])


def quantise_motion(motion, sizes: StepSizes, cap: int | None = None) -> np.ndarray:
    """A body-frame motion ``(tx, ty, tz, tilt, pan, roll)`` (m, rad) → signed integer counts per axis,
    rounded half away from zero; clipped to ±cap when ``cap`` is given."""
    m = np.asarray(motion, dtype=np.float64) / sizes.units()
    c = np.sign(m) * np.floor(np.abs(m) + 0.5)
    if cap is not None:
        c = np.clip(c, -cap, cap)
    return c.astype(np.int64)


def split_counts(signed: np.ndarray, cap: int) -> list[np.ndarray]:
    """Split signed counts whose magnitude exceeds ``cap`` into ``ceil(max/cap)`` steps that sum to them."""
    signed = np.asarray(signed, dtype=np.int64)
    n = max(1, int(math.ceil(np.abs(signed).max() / cap))) if signed.size and np.abs(signed).max() else 1
    base = np.sign(signed) * (np.abs(signed) // n)
    rem = np.abs(signed) % n
    out = []
    for k in range(n):
        out.append(base + np.sign(signed) * (k < rem))
    return out


def motion_to_step_counts(delta: np.ndarray, sizes: StepSizes, cap: int) -> np.ndarray:
    """The body-frame rigid motion Δ (4, 4) → signed counts (6,), clipped to the cap."""
    return quantise_motion(geometry.delta_to_motion(delta), sizes, cap)


def answer_text(seq: ActionSequence, answer_format: str, one_step: bool = False) -> str:
    """The JSON text an agent answers with: the task's format (``flat`` only for one step)."""
    fmt = answer_format
    if fmt == "flat" and len(seq) != 1:
        fmt = "stepped"
    if fmt != "vector" and seq.has_vectors:
        fmt = "vector"
    if one_step and fmt == "vector" and len(seq) == 1:
        return json.dumps(seq.steps[0].as_vector(seq.sizes))
    return seq.to_text(fmt)


def turn_from_sequence(seq: ActionSequence, answer_format: str, latency_s: float = 0.0,
                       info: dict | None = None) -> AgentTurn:
    """An AgentTurn for a baseline: the answer text in the task's format and its (exact) ParseResult."""
    fmt = answer_format if not seq.has_vectors else "vector"
    if fmt == "flat" and len(seq) != 1:
        fmt = "stepped"
    text = answer_text(seq, answer_format)
    return AgentTurn(text=text, parse=ParseResult(seq, (), True, None, fmt, text), latency_s=latency_s,
                     usage={"prompt_tokens": 0, "completion_tokens": 0}, info=dict(info or {}))


def stay_sequence(sizes: StepSizes, cap: int, n: int = 1, gripper: int | None = None) -> ActionSequence:
    return ActionSequence(tuple(Step.stay(gripper) for _ in range(max(1, n))), sizes, cap)


def json_safe(x: Any) -> Any:
    """numpy values and tuples → plain JSON values (for describe() and info dicts)."""
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x
