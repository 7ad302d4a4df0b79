"""The options of each agent — what ``make_agent(name, **kwargs)`` and ``--agent-arg KEY=VALUE`` may set.

Names, types and defaults are read from the agent's constructor (its signature, following ``**kwargs`` to the
parent class); the one-line meaning of each is read from the list below (:func:`parse_meanings` of this
docstring). Nothing is written twice: a test checks that every constructor option has a meaning here and that
every option here is a constructor option. ``spatialact agents`` prints them; :func:`check_agent_options`
refuses an unknown option naming the agent, the option and the valid ones, and a yes/no option given anything but
true or false; :func:`wrong_kind` names the option when a constructor fails on a value that is no number. ``seed`` is every agent's and is not listed: a run derives each
episode's seed from its own ``--seed``.

Meanings:

* ``random``:
  ``p_move`` — probability (0…1) that each of the six axes moves in a step;
  ``max_count`` — the largest count drawn per moving axis (counts 1…max_count units, capped by the task).

* ``stay``: no options (always answers Stay).

* ``oracle``: no options (answers the ground truth; closed-loop, steps from its pose to the goal).

* ``noisy-oracle``:
  ``noise`` — standard deviation, in units, of the normal noise added to every signed count;
  ``grip_flip`` — probability (0…1) that each gripper state is flipped.

* ``constant``:
  ``action`` — the motion primitive answered every step: a name, symbol or alias ("Truck Left", "Push"), or "Stay";
  ``count`` — units per step, 1…10.

* ``geometric``:
  ``n_features`` — ORB features detected per image (at least 50);
  ``ratio`` — Lowe's ratio-test threshold for a match (0…1];
  ``min_matches`` — fewest matches that are trusted (fewer: the agent answers Stay);
  ``stop_disparity_px`` — answers Stay when the median disparity of the matches is below this, in pixels.

* ``openai``:
  ``model`` — the model name the endpoint serves (required);
  ``base_url`` — the OpenAI-compatible endpoint, e.g. http://localhost:8000/v1 (default: the OpenAI API);
  ``api_key_env`` — the environment variable holding the API key (never the key itself);
  ``api_key_file`` — a file holding the API key, instead of api_key_env;
  ``timeout`` — seconds one request may take in all (a total deadline, also for a reply that trickles in);
  ``max_retries`` — extra attempts after a 429, a 5xx or a connection error (0…100);
  ``rate_limit_wait`` — seconds a request may wait in all on 429 replies, retried past max_retries (default 300);
  ``backoff`` — seconds waited before the first retry, doubled each retry;
  ``max_backoff`` — the longest wait between retries, in seconds;
  ``retry_on_timeout`` — also retry a request that timed out;
  ``cache_dir`` — the response cache folder (eval and questions score: <out>/cache; null: no cache);
  ``max_tokens`` — the most completion tokens asked per reply (1…1000000, or null);
  ``params`` — extra request fields as a JSON object, e.g. {"top_p": 1}; extra_headers are recorded by name only;
  ``price_in`` — USD per million prompt tokens, for the cost totals;
  ``price_out`` — USD per million completion tokens, for the cost totals;
  ``cues`` — cue prompting: any of matches,depth,size (correspondences, distances and sizes added to the prompt).

* ``react``, ``plan-execute``: those of ``openai``, and
  ``tools`` — the tool set: default, or privileged (tools that read the simulator's truth);
  ``max_calls`` — tool calls allowed per turn (1…64);
  ``max_tokens`` — the most completion tokens asked per reply (default 2048 for tool agents).

* ``hf``:
  ``model`` — a Hugging Face Hub id or a local model folder (required);
  ``device`` — auto, cpu, cuda, cuda:N or mps;
  ``dtype`` — auto, float32, float16 or bfloat16;
  ``max_new_tokens`` — the most tokens generated per reply;
  ``revision`` — the Hub revision (branch, tag or commit) to load;
  ``trust_remote_code`` — run the model repository's own Python code;
  ``local_files_only`` — never download: use the local Hugging Face cache only;
  ``cues`` — cue prompting, as for openai;
  ``batch_size`` — the most turns of episodes in flight answered by one generate call (1…1024).
"""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass
from typing import Any

from .base import AgentConfigError

__all__ = ["AgentOption", "agent_class", "agent_options", "check_agent_options", "wrong_kind", "parse_meanings",
           "NOT_LISTED", "constructor_parameters", "docstring_meanings", "takes_any_option"]

#: Constructor parameters that are no ``--agent-arg`` option (a run derives them itself).
NOT_LISTED = ("seed",)
_REQUIRED = "(required)"


@dataclass(frozen=True)
class AgentOption:
    """One option of an agent: ``name``, ``type`` (the annotation as written, ``""`` when there is none),
    ``default`` (the constructor's default value), ``meaning`` (one line)."""

    name: str
    type: str
    default: Any
    meaning: str

    @property
    def required(self) -> bool:
        return _REQUIRED in self.meaning

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "default": self.default, "required": self.required,
                "meaning": self.meaning}


def _builtin_class(key: str) -> type | None:
    """The class of the built-in agent ``key`` (a canonical name), or None when ``key`` names no built-in agent."""
    try:
        if key in ("random", "stay", "oracle", "noisy-oracle", "constant"):
            from . import baselines

            return {"random": baselines.RandomAgent, "stay": baselines.StayAgent, "oracle": baselines.OracleAgent,
                    "noisy-oracle": baselines.NoisyOracleAgent, "constant": baselines.ConstantAgent}[key]
        if key == "geometric":
            from .geometric import GeometricAgent

            return GeometricAgent
        if key in ("react", "plan-execute"):
            from .tool_agent import PlanExecuteAgent, ReActAgent

            return ReActAgent if key == "react" else PlanExecuteAgent
        if key == "hf":
            from .hf_agent import HFAgent

            return HFAgent
        if key == "openai":
            from .openai_agent import OpenAIAgent

            return OpenAIAgent
    except ImportError as e:
        extra = "hf" if key == "hf" else "agents"
        raise AgentConfigError(f"agent {key!r} needs a missing package: {e} (pip install 'spatialact[{extra}]')") \
            from None
    return None


def agent_class(key: str):
    """The class of the canonical agent name ``key``: a built-in agent's, or a plug-in's class (or the function
    that makes it: ``module:Class``, ``path.py:Class``, an installed plug-in; :mod:`spatialact.agents.plugins`). A
    missing package raises :class:`AgentConfigError` saying which extra installs it (the modules import their heavy
    libraries lazily, so this rarely happens); a plug-in that cannot be loaded, one line naming it and why."""
    cls = _builtin_class(key)
    if cls is not None:
        return cls
    from .plugins import load_plugin, plugin_ref

    if plugin_ref(key) is not None:
        return load_plugin(key)[1]
    raise AgentConfigError(f"unknown agent {key!r}")


def constructor_parameters(cls) -> tuple[dict[str, inspect.Parameter], bool]:
    """(the keyword parameters of ``cls``'s constructor — or of a function that makes an agent —, following
    ``**kwargs`` up the class hierarchy, a subclass's own parameter and default winning; whether it takes any
    keyword at all: a ``**kwargs`` that no parent constructor takes up)."""
    out: dict[str, inspect.Parameter] = {}
    if not isinstance(cls, type):
        params = list(inspect.signature(cls).parameters.values())
        for p in params:
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                out.setdefault(p.name, p)
        return out, any(p.kind is p.VAR_KEYWORD for p in params)
    more = False
    for c in cls.__mro__:
        init = c.__dict__.get("__init__")
        if init is None or c is object:
            continue
        more = False
        for p in list(inspect.signature(init).parameters.values())[1:]:
            if p.kind is p.VAR_KEYWORD:
                more = True
            elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                out.setdefault(p.name, p)
        if not more:
            break
    return out, more


def _parameters(cls) -> dict[str, inspect.Parameter]:
    return constructor_parameters(cls)[0]


def parse_meanings(doc: str) -> dict[str, dict[str, str]]:
    """``{agent: {option: meaning}}`` from a docstring laid out as::

        * ``random``:
          ``p_move`` — probability that each axis moves in a step;
        * ``react``, ``plan-execute``: those of ``openai``, and
          ``tools`` — …

    An agent line may say ``those of ``X`` `` (it has X's options too, its own lines win). Linear in the text."""
    out: dict[str, dict[str, str]] = {}
    inherits: dict[str, str] = {}
    current: list[str] = []
    for raw in doc.splitlines():
        line = raw.strip()
        if line.startswith("* ``"):
            head = line[2:].split(":", 1)
            current = [n.strip().strip("`") for n in head[0].split(",")]
            for n in current:
                out.setdefault(n, {})
            if len(head) > 1 and "those of ``" in head[1]:
                base = head[1].split("those of ``", 1)[1].split("``", 1)[0]
                for n in current:
                    inherits[n] = base
        elif current and line.startswith("``") and " — " in line:
            name, meaning = line.split(" — ", 1)
            for n in current:
                out[n][name.strip().strip("`")] = meaning.strip().rstrip(";.").strip()
        elif not line:
            current = []
    for n, base in inherits.items():
        out[n] = {**out.get(base, {}), **out[n]}
    return out


def _meanings() -> dict[str, dict[str, str]]:
    return parse_meanings(__doc__ or "")


def docstring_meanings(obj, names) -> dict[str, str]:
    """A plug-in's option meanings, read from its class's (or function's) docstring and its constructor's: a line
    that starts with an option's name (in ``double backquotes`` or not, a ``(type)`` after it allowed) followed by
    ``—``, ``–``, ``-``, ``--`` or ``:`` gives the rest of the line. Linear in the text."""
    docs = [inspect.getdoc(obj) or ""]
    if isinstance(obj, type) and "__init__" in obj.__dict__:
        docs.append(inspect.getdoc(obj.__dict__["__init__"]) or "")
    wanted, out = set(names), {}
    for raw in "\n".join(docs).splitlines():
        line = raw.strip().lstrip("*-• ").strip()
        head, _, rest = line.partition(" ")
        if ":" in head and not head.endswith("``"):  # name: meaning
            head, _, tail = head.partition(":")
            rest = (": " + tail + " " + rest).strip()
        name = head.strip("`*")
        if name not in wanted or name in out:
            continue
        rest = rest.strip()
        if rest.startswith("("):  # name (type) — meaning
            rest = rest.partition(")")[2].strip()
        for sep in ("—", "–", "--", "-", ":"):
            if rest.startswith(sep):
                meaning = rest[len(sep):].strip().rstrip(";.").strip()
                if meaning:
                    out[name] = meaning
                break
    return out


def _annotation(p: inspect.Parameter) -> str:
    ann = p.annotation
    if ann is inspect.Parameter.empty:
        return ""
    return ann.__name__ if isinstance(ann, type) else str(ann)


def agent_options(key: str) -> tuple[AgentOption, ...]:
    """The options of the canonical agent ``key`` in constructor order (``seed`` left out, :data:`NOT_LISTED`); a
    plug-in's meanings come from its docstrings (:func:`docstring_meanings`)."""
    cls = agent_class(key)
    params = _parameters(cls)
    meanings = _meanings().get(key) if _builtin_class(key) is not None else docstring_meanings(cls, params)
    out = []
    for name, p in params.items():
        if name in NOT_LISTED:
            continue
        default = None if p.default is inspect.Parameter.empty else p.default
        meaning = (meanings or {}).get(name, "")
        if p.default is inspect.Parameter.empty and _REQUIRED not in meaning and _builtin_class(key) is None:
            meaning = f"{meaning} {_REQUIRED}".strip()
        out.append(AgentOption(name, _annotation(p), default, meaning))
    return tuple(out)


def takes_any_option(key: str) -> bool:
    """Whether the plug-in ``key``'s constructor takes any keyword (a ``**kwargs`` no parent takes up): its options
    are then not checked by name. Always False for the built-in agents."""
    if _builtin_class(key) is not None:
        return False
    return constructor_parameters(agent_class(key))[1]


def _kind(opt: AgentOption) -> str | None:
    """``"number"`` or ``"flag"`` when the option can only be one (from its annotation), else None."""
    parts = {t.strip() for t in opt.type.split("|")} - {"None"}
    if parts and parts <= {"int", "float"}:
        return "number"
    if parts == {"bool"}:
        return "flag"
    return None


def _is_number(v) -> bool:
    """A number, or text that reads as one (the constructor checks the range)."""
    if isinstance(v, bool):
        return False
    if isinstance(v, numbers.Real):
        return True
    if isinstance(v, str):
        try:
            float(v)
        except ValueError:
            return False
        return True
    return False


def check_agent_options(key: str, kwargs: dict) -> None:
    """Refuse (:class:`AgentConfigError`, one line) an option ``key``'s constructor does not take — naming the
    agent, the option and the valid ones — and a value that is not true or false for a yes/no option (a text such
    as ``"no"`` would read as yes). Asked before the agent is built."""
    opts = {o.name: o for o in agent_options(key)}
    for name, value in kwargs.items():
        if name in NOT_LISTED:
            continue
        opt = opts.get(name)
        if opt is None and takes_any_option(key):
            continue
        if opt is None:
            valid = (f"its options: {', '.join(opts)}; `spatialact agents {key}` says what each means" if opts
                     else "it takes no options")
            raise AgentConfigError(f"agent {key!r}: bad parameters: no option {str(name)[:40]!r} ({valid})")
        if _kind(opt) == "flag" and not isinstance(value, bool) and not (value is None and opt.default is None):
            raise AgentConfigError(f"agent {key!r}: option {name!r} must be true or false (default "
                                   f"{str(opt.default).lower()}), got {str(value)[:40]!r}")


def wrong_kind(key: str, kwargs: dict) -> str | None:
    """The first option of ``kwargs`` whose value is not a number where ``key``'s constructor wants one (one line
    naming the agent and the option), or None: asked when the constructor failed without saying which option."""
    opts = {o.name: o for o in agent_options(key)}
    for name, value in kwargs.items():
        opt = opts.get(name)
        if opt is None or (value is None and opt.default is None):
            continue
        if _kind(opt) == "number" and not _is_number(value):
            return (f"agent {key!r}: option {name!r} must be a number ({opt.type}, default {opt.default!r}), got "
                    f"{str(value)[:40]!r}")
    return None
