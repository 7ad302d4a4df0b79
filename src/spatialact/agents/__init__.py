"""Agents (docs/agents.md): the ``Agent`` protocol, an MLLM agent for OpenAI-compatible endpoints, tool-using agents
(``react``, ``plan-execute``) over the same endpoints, a local Hugging Face agent (``hf``), and baselines.

``make_agent(name, **kwargs)`` builds one by name (``AGENT_NAMES``, or an alias in ``AGENT_ALIASES``); a bad
configuration raises ``AgentConfigError``. ``canonical_agent_name`` is the one place a name or alias becomes the
canonical name that runs, records and resume keys carry. ``check_agent_args`` refuses secrets passed as agent
arguments (an API key belongs in the environment or a key file); ``recorded_agent_args`` is what of the arguments a
run may write down (header names of ``params.extra_headers``, never their values). The ``openai`` client library and OpenCV are
imported only by the agents that use them; so are ``transformers`` and ``torch`` (the ``hf`` agent).
``API_AGENTS`` are the agents that talk to a chat-completions endpoint (they get a response cache in the run
directory by default and stop a run when the endpoint cannot be reached).

Agents from outside the package (:mod:`spatialact.agents.plugins`): ``package.module:Class``,
``path/to/agent.py:Class``, or the name of an installed plug-in (an entry point of the group ``spatialact.agents``,
``installed_plugins()``) work wherever a name does; ``is_plugin`` tells them from the built-in names,
``recorded_agent`` is the agent as a run records it (a file plug-in with its SHA-256), and ``adapt_agent`` gives any
agent object the runner's protocol (``reset(task, mode=..., seed=...)`` passed on as its own ``reset`` takes it,
``async def`` methods awaited, text answers parsed).
"""

from __future__ import annotations

from typing import Any

from .base import Agent, AgentConfigError, AgentTurn
from .images import PromptImage, png_data_url
from .plugins import ENTRY_POINT_GROUP, adapt_agent, installed_plugins
from .prompts import PROMPT_VERSION, build_prompt, prompt_text

__all__ = ["Agent", "AgentTurn", "AgentConfigError", "AGENT_NAMES", "AGENT_ALIASES", "make_agent",
           "canonical_agent_name", "check_agent_args", "build_prompt", "PROMPT_VERSION", "PromptImage",
           "png_data_url", "prompt_text", "API_AGENTS", "recorded_agent_args", "is_plugin", "recorded_agent",
           "installed_plugins", "adapt_agent", "ENTRY_POINT_GROUP"]

AGENT_NAMES = ("random", "stay", "oracle", "noisy-oracle", "constant", "geometric", "openai", "react", "plan-execute",
               "hf")
# alias (lower case, '_' read as '-') -> canonical name
AGENT_ALIASES = {"noisy": "noisy-oracle", "noisyoracle": "noisy-oracle", "mllm": "openai", "api": "openai",
                 "planexecute": "plan-execute", "plan-and-execute": "plan-execute", "planandexecute": "plan-execute",
                 "huggingface": "hf", "transformers": "hf"}
# Agents that send requests to an OpenAI-compatible chat-completions endpoint.
API_AGENTS = ("openai", "react", "plan-execute")

# Argument names that are allowed although they mention a key: they name where the key is, not the key.
_KEY_POINTERS = frozenset({"apikeyenv", "apikeyfile"})
_SECRET_NAMES = frozenset({"key", "token", "secret", "password", "passwd", "auth", "authorization", "bearer",
                           "credential", "credentials", "cookie"})
_SECRET_SUFFIXES = ("apikey", "secret", "secretkey", "privatekey", "password", "passwd", "accesstoken",
                    "authtoken", "bearertoken", "apitoken", "sessiontoken", "refreshtoken", "authorization")


def canonical_agent_name(name: Any) -> str:
    """The canonical name of an agent (``"Oracle"`` → ``"oracle"``, ``"noisy"`` → ``"noisy-oracle"``,
    ``"mllm"`` → ``"openai"``). A plug-in (:mod:`spatialact.agents.plugins`) keeps its name — ``module:Class``, an
    installed plug-in's entry-point name — except that a file plug-in's path is made absolute
    (``/abs/path/agent.py:Class``); it is imported here (once per process), so a plug-in that cannot be loaded is
    refused now. An unknown name, or a plug-in that cannot be loaded, raises :class:`AgentConfigError` (one line
    naming the string and why)."""
    text = str(name).strip()
    if ":" not in text:
        key = text.lower().replace("_", "-")
        key = AGENT_ALIASES.get(key, AGENT_ALIASES.get(key.replace("-", ""), key))
        if key in AGENT_NAMES:
            return key
    from .plugins import load_plugin, plugin_ref

    ref = plugin_ref(text)
    if ref is None:
        raise AgentConfigError(f"unknown agent {str(name)[:60]!r} (expected one of {', '.join(AGENT_NAMES)}, an "
                               f"installed plug-in, package.module:Class or path/to/agent.py:Class)")
    load_plugin(text)
    return ref.spec


def is_plugin(name: str) -> bool:
    """Whether the canonical agent name ``name`` is a plug-in's (not one of :data:`AGENT_NAMES`)."""
    return name not in AGENT_NAMES


def _secret_name(name: str) -> bool:
    n = "".join(c for c in str(name).lower() if c.isalnum())
    if n in _KEY_POINTERS:
        return False
    return n in _SECRET_NAMES or n.endswith(_SECRET_SUFFIXES) or (n.startswith("apikey") and n not in _KEY_POINTERS)


def _secret_value(v: str) -> bool:
    s = v.strip()
    low = s.lower()
    return ((low.startswith(("sk-", "sk_", "rk-")) and len(s) >= 20) or low.startswith("bearer ")
            or low.startswith(("hf_", "gsk_", "xai-")) and len(s) >= 20 and "/" not in s)  # a path is not a key


def recorded_agent_args(kwargs: dict) -> dict:
    """The agent arguments as a run may record them (its configuration, its provenance): a copy in which
    ``params.extra_headers`` is the sorted list of its header names — a header's value may be a credential the
    user does not expect to see written down, so it is never recorded."""
    out = dict(kwargs)
    params = out.get("params")
    if isinstance(params, dict) and isinstance(params.get("extra_headers"), dict):
        out["params"] = dict(params, extra_headers=sorted(str(k) for k in params["extra_headers"]))
    return out


def recorded_agent(name: str, kwargs: dict) -> dict:
    """The agent as a run's configuration records it: ``{"name", "kwargs"}`` (the canonical name; the arguments
    as :func:`recorded_agent_args` gives them), and for a file plug-in ``name_sha256``, the file's SHA-256 — a
    resume with an edited file is refused, one with the same file at another path resumes."""
    from .plugins import plugin_sha256

    out = {"name": name, "kwargs": recorded_agent_args(kwargs)}
    sha = plugin_sha256(name) if is_plugin(name) else None
    if sha:
        out["name_sha256"] = sha
    return out


def check_agent_args(kwargs: dict, where: str = "agent argument") -> None:
    """Refuse an argument that carries a secret: a key-like name (``api_key``, ``token``, ``Authorization``, …,
    also nested inside dicts such as ``params``; ``api_key_env`` and ``api_key_file`` are fine), a value that
    looks like a key (``sk-…``, ``Bearer …``), or a ``base_url`` with a user or password in it; and
    ``params.extra_headers`` that are not header names and text, or carry a credential header
    (``spatialact.agents.openai_agent.CREDENTIAL_HEADERS``). The message names the argument, never its value.
    Raises :class:`AgentConfigError`."""
    params = kwargs.get("params")
    if isinstance(params, dict) and "extra_headers" in params:
        from .openai_agent import check_extra_headers

        check_extra_headers(params["extra_headers"], where)
    def walk(obj, path):
        if isinstance(obj, dict):
            for k, v in obj.items():
                p = f"{path}.{k}" if path else str(k)
                if _secret_name(k):
                    raise AgentConfigError(
                        f"{where} {p[:80]!r} looks like a secret and is refused (it would be written to the run's "
                        f"config): put the API key in an environment variable (api_key_env=NAME) or a file "
                        f"(api_key_file=PATH)")
                walk(v, p)
        elif isinstance(obj, (list, tuple)):
            for i, v in enumerate(obj):
                walk(v, f"{path}[{i}]")
        elif isinstance(obj, str) and _secret_value(obj):
            raise AgentConfigError(f"{where} {path[:80]!r} holds what looks like an API key and is refused: use "
                                   f"api_key_env=NAME or api_key_file=PATH")

    walk(dict(kwargs), "")
    url = kwargs.get("base_url")
    if isinstance(url, str):
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(url)
            has_user = parts.username is not None or parts.password is not None
        except ValueError:
            has_user = False
        if has_user:
            raise AgentConfigError(f"{where} 'base_url' carries a user name or password and is refused: use "
                                   f"api_key_env=NAME or api_key_file=PATH for credentials")
        from urllib.parse import parse_qsl

        for qk, _ in parse_qsl(parts.query if not has_user else "", keep_blank_values=True):
            if _secret_name(qk) or qk.lower() in ("key", "code", "sig"):
                raise AgentConfigError(f"{where} 'base_url' carries a secret in its query ({qk[:40]!r}) and is "
                                       f"refused: use api_key_env=NAME or api_key_file=PATH")


def make_agent(name: str, **kwargs) -> Agent:
    """An agent by name (or alias, see :func:`canonical_agent_name`). Keyword arguments are the agent's options
    (``--agent-arg KEY=VALUE``): :func:`spatialact.agents.options.agent_options` lists each agent's with its type,
    default and meaning, read from the agent's constructor (``spatialact agents`` prints them):

    * ``random``: ``p_move``, ``max_count``;  ``stay``, ``oracle``: none;  ``noisy-oracle``: ``noise``, ``grip_flip``;
    * ``constant``: ``action`` (a primitive, default ``"Truck Left"``), ``count`` (units per step);
    * ``geometric``: ``n_features``, ``ratio``, ``min_matches``, ``stop_disparity_px``;
    * ``openai``: ``model`` (required), ``base_url``, ``api_key_env`` (default ``OPENAI_API_KEY``),
      ``api_key_file``, ``timeout``, ``max_retries``, ``backoff``, ``cache_dir``, ``max_tokens``, ``params``,
      ``price_in``, ``price_out`` (USD per million tokens), ``cues`` (``matches,depth,size``: cue prompting,
      :mod:`spatialact.agents.cues`), …;
    * ``react``, ``plan-execute``: those of ``openai`` plus ``tools`` (``default`` | ``privileged``) and
      ``max_calls`` (:mod:`spatialact.agents.tool_agent`);
    * ``hf``: ``model`` (a Hugging Face id or a local folder; required), ``device``, ``dtype``, ``max_new_tokens``,
      ``revision``, ``trust_remote_code``, ``local_files_only``, ``cues`` (:mod:`spatialact.agents.hf_agent`);
    * every agent: ``seed``;
    * a plug-in (``package.module:Class``, ``path/to/agent.py:Class``, an installed plug-in's name): its
      constructor's keyword arguments (``seed`` only when it takes one), built and wrapped by
      :func:`spatialact.agents.plugins.make_plugin_agent`.

    Raise :class:`AgentConfigError` (one line): an unknown name; an option the agent does not take (naming the
    agent, the option and the valid ones) or a yes/no option given anything but true/false
    (:func:`spatialact.agents.options.check_agent_options`); a bad value, in the agent's own words or naming the
    agent and the option (:func:`~spatialact.agents.options.wrong_kind`); a secret passed as an argument
    (:func:`check_agent_args`).
    """
    from .options import agent_class, check_agent_options, wrong_kind

    key = canonical_agent_name(name)
    check_agent_args(kwargs)
    cls = agent_class(key)
    check_agent_options(key, kwargs)
    if is_plugin(key):
        from .plugins import load_plugin, make_plugin_agent

        return make_plugin_agent(load_plugin(key)[0], cls, kwargs)
    try:
        return cls(**kwargs)
    except AgentConfigError:
        raise
    except (TypeError, ValueError) as e:  # a value the agent's own checks did not word: still one line, named
        raise AgentConfigError(wrong_kind(key, kwargs)
                               or f"agent {key!r}: bad option value: {' '.join(str(e).split())[:200]}") from None
