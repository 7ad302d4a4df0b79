"""List the agents and the options each takes (``--agent-arg KEY=VALUE`` of eval, demo and questions score).

  spatialact agents                 every agent, its options with type, default and meaning
  spatialact agents openai          one agent (aliases such as mllm or noisy work)
  spatialact agents --json          the same as JSON

Names, types and defaults come from each agent's constructor and the meanings from spatialact.agents.options, so
the listing is what make_agent accepts. An option an agent does not take is refused by eval in one line naming the
agent, the option and the valid ones (exit 2). `seed` is no option: every episode's seed comes from --seed.
Values are read as JSON when they parse (numbers, true/false, null, {"a": 1}), else as text.
"""

from __future__ import annotations

import argparse

from .main import print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", nargs="?", default=None, help="one agent (name or alias); default: every agent")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")


def _default_text(opt) -> str:
    if opt.required:
        return "required"
    import json

    try:
        return json.dumps(opt.default)
    except (TypeError, ValueError):
        return repr(opt.default)


def run(args: argparse.Namespace) -> int:
    from spatialact.agents import AGENT_ALIASES, AGENT_NAMES, AgentConfigError, canonical_agent_name
    from spatialact.agents.options import agent_options

    from .main import CLIError
    from .table import format_table

    if args.agent is not None:
        try:
            names = [canonical_agent_name(args.agent)]
        except AgentConfigError as e:
            raise CLIError(str(e)) from None
    else:
        names = list(AGENT_NAMES)
    listing = {}
    for name in names:
        try:
            listing[name] = agent_options(name)
        except AgentConfigError as e:  # a missing extra: say so, list the others
            listing[name] = str(e)
    if args.json:
        print_json({n: (v if isinstance(v, str) else [o.to_dict() for o in v]) for n, v in listing.items()})
        return 0
    aliases: dict[str, list[str]] = {}
    for alias, canonical in AGENT_ALIASES.items():
        aliases.setdefault(canonical, []).append(alias)
    for i, (name, opts) in enumerate(listing.items()):
        title = name + (f" (also: {', '.join(aliases[name])})" if name in aliases else "")
        if i:
            print()
        if isinstance(opts, str):
            print(f"{title}: {opts}")
        elif not opts:
            print(f"{title}: no options")
        else:
            rows = [[o.name, o.type or "-", _default_text(o), o.meaning] for o in opts]
            print(format_table(rows, ["option", "type", "default", "meaning"], title=title))
    return 0
