"""List the agents and the options each takes (``--agent-arg KEY=VALUE`` of eval, demo and questions score).

  spatialact agents                 every agent (built in, then installed plug-ins), options with type, default, meaning
  spatialact agents openai          one agent (aliases such as mllm or noisy work)
  spatialact agents my_pkg.agent:MyAgent      a plug-in agent: a module's class, or a file's:
  spatialact agents path/to/agent.py:MyAgent  (as --agent of eval and questions score takes them)
  spatialact agents --json          the same as JSON

Installed plug-ins are the entry points of the group spatialact.agents (the entry point's name is the agent's).
Names, types and defaults come from each agent's constructor and the meanings from spatialact.agents.options (a
plug-in's from its docstrings: a line "``option`` — meaning"), so the listing is what make_agent accepts. A plug-in
that cannot be loaded is listed with the reason (alone: refused in one line, exit 2). An option an agent does not take is refused by eval in one line naming the
agent, the option and the valid ones (exit 2). `seed` is no option: every episode's seed comes from --seed.
Values are read as JSON when they parse (numbers, true/false, null, {"a": 1}), else as text.
"""

from __future__ import annotations

import argparse

from .main import print_json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", nargs="?", default=None,
                   help="one agent (name, alias, installed plug-in, package.module:Class or path/to/agent.py:Class); "
                        "default: every agent, then every installed plug-in")
    p.add_argument("--json", action="store_true", help="print the listing as JSON")


def _default_text(opt) -> str:
    if opt.required:
        return "required"
    import json

    try:
        return json.dumps(opt.default)
    except (TypeError, ValueError):
        return repr(opt.default)


def _titles(names: list[str]) -> dict[str, str]:
    """Each agent's heading: its aliases (built-in) or where it comes from (a plug-in)."""
    from spatialact.agents import AGENT_ALIASES, is_plugin
    from spatialact.agents.plugins import plugin_ref

    aliases: dict[str, list[str]] = {}
    for alias, canonical in AGENT_ALIASES.items():
        aliases.setdefault(canonical, []).append(alias)
    out = {}
    for name in names:
        if not is_plugin(name):
            out[name] = name + (f" (also: {', '.join(aliases[name])})" if name in aliases else "")
            continue
        try:
            ref = plugin_ref(name)
        except Exception:  # listed with its reason below
            ref = None
        out[name] = f"{name} (plug-in: {ref.source})" if ref is not None and ref.kind != "file" else \
            f"{name} (plug-in file, SHA-256 {ref.sha256[:12]})" if ref is not None else f"{name} (plug-in)"
    return out


def run(args: argparse.Namespace) -> int:
    from spatialact.agents import AGENT_NAMES, AgentConfigError, canonical_agent_name, installed_plugins
    from spatialact.agents.options import agent_options

    from .main import CLIError
    from .table import format_table

    if args.agent is not None:
        try:
            names = [canonical_agent_name(args.agent)]
        except AgentConfigError as e:
            raise CLIError(str(e)) from None
    else:  # the built-in agents, then installed plug-ins whose names no built-in name or alias takes
        names = list(AGENT_NAMES)
        for ep_name in sorted(installed_plugins()):
            try:
                taken = canonical_agent_name(ep_name) in AGENT_NAMES
            except AgentConfigError:
                taken = False
            if not taken:
                names.append(ep_name)
    listing = {}
    for name in names:
        try:
            listing[name] = agent_options(name)
        except AgentConfigError as e:  # a missing extra, a plug-in that does not load: say so, list the others
            listing[name] = str(e)
    if args.agent is not None and isinstance(listing[names[0]], str) and names[0] not in AGENT_NAMES:
        raise CLIError(listing[names[0]])
    if args.json:
        print_json({n: (v if isinstance(v, str) else [o.to_dict() for o in v]) for n, v in listing.items()})
        return 0
    titles = _titles(names)
    for i, (name, opts) in enumerate(listing.items()):
        title = titles[name]
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
