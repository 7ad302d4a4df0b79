"""What the commands that run agents share (``eval``, ``demo``, ``questions score``): reading ``--agent-arg`` options
and the end-of-run line about failed episodes."""

from __future__ import annotations

import json

__all__ = ["parse_agent_args", "failure_summary"]


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
