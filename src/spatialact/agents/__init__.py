"""Agents (SPEC §7): the ``Agent`` protocol, an MLLM agent for OpenAI-compatible endpoints, and baselines.

``make_agent(name, **kwargs)`` builds one by name (``AGENT_NAMES``); a bad configuration raises
``AgentConfigError``. The ``openai`` client library and OpenCV are imported only by the agents that use them.
"""

from __future__ import annotations

from .base import Agent, AgentConfigError, AgentTurn
from .prompts import PROMPT_VERSION, PromptImage, build_prompt, png_data_url, prompt_text

__all__ = ["Agent", "AgentTurn", "AgentConfigError", "AGENT_NAMES", "make_agent", "build_prompt", "PROMPT_VERSION",
           "PromptImage", "png_data_url", "prompt_text"]

AGENT_NAMES = ("random", "stay", "oracle", "noisy-oracle", "geometric", "openai")


def make_agent(name: str, **kwargs) -> Agent:
    """An agent by name. Keyword arguments are the agent's parameters:

    * ``random``: ``seed``, ``p_move``, ``max_count``;  ``stay``: ``seed``;
    * ``oracle``: ``seed``;  ``noisy-oracle``: ``seed``, ``noise`` (count std), ``grip_flip``;
    * ``geometric``: ``seed``, ``n_features``, ``ratio``, ``min_matches``;
    * ``openai``: ``model`` (required), ``base_url``, ``api_key_env`` (default ``OPENAI_API_KEY``),
      ``api_key_file``, ``timeout``, ``max_retries``, ``backoff``, ``cache_dir``, ``max_tokens``, ``params``,
      ``price_in``, ``price_out`` (USD per million tokens), ``seed``.

    Unknown names or parameters raise :class:`AgentConfigError`.
    """
    key = str(name).strip().lower().replace("_", "-")
    if key in ("noisy", "noisyoracle"):
        key = "noisy-oracle"
    if key in ("mllm", "api"):
        key = "openai"
    try:
        if key == "random":
            from .baselines import RandomAgent as cls
        elif key == "stay":
            from .baselines import StayAgent as cls
        elif key == "oracle":
            from .baselines import OracleAgent as cls
        elif key == "noisy-oracle":
            from .baselines import NoisyOracleAgent as cls
        elif key == "geometric":
            from .geometric import GeometricAgent as cls
        elif key == "openai":
            from .openai_agent import OpenAIAgent as cls
        else:
            raise AgentConfigError(f"unknown agent {name!r} (expected one of {', '.join(AGENT_NAMES)})")
    except ImportError as e:
        raise AgentConfigError(f"agent {name!r} needs a missing package: {e} (pip install 'spatialact[agents]')") \
            from None
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise AgentConfigError(f"agent {name!r}: bad parameters: {e}") from None
