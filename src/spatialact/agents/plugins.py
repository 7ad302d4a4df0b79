"""Agents from outside the package (docs/agents.md, "Write your own agent").

An agent is named three ways besides the built-in names (``spatialact.agents.AGENT_NAMES``):

* ``package.module:Class`` — a module Python can import (installed, or on ``PYTHONPATH``) and a class in it (or
  any callable that returns an agent; ``Outer.Inner`` reaches a nested name);
* ``path/to/agent.py:Class`` — a Python file, read from its path (a name ending in ``.py`` or holding a ``/``);
  the run records the file's SHA-256, and the code that runs is the code that was hashed;
* an installed plug-in: an entry point of the group :data:`ENTRY_POINT_GROUP` (``spatialact.agents``) of any
  installed distribution; the entry point's name is the agent's name (a built-in name or alias wins over it).

:func:`plugin_ref` resolves a name (None when it names no plug-in; :class:`AgentConfigError` in one line naming the
string and why when it names one that cannot be loaded), :func:`load_plugin` imports it (once per process and file
content), :func:`make_plugin_agent` builds one and wraps it in :class:`PluginAgent`, which gives every agent the
runner's protocol: ``reset(task, mode=..., seed=...)`` passes on only the keywords the agent's own ``reset`` takes
(its signature is read once per class); ``act`` and ``reset`` may be coroutines (``async def``), run on one event
loop per thread (:func:`resolve_awaitable`); ``act`` may return an :class:`~spatialact.agents.base.AgentTurn`, the
answer's text (parsed as a model's answer is, with the task's sizes and cap) or an
:class:`~spatialact.action_space.ActionSequence`; ``describe()`` is the agent's own or made from its name and
options. :func:`adapt_agent` wraps any agent object given to the episode runner that is not one of the package's.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .base import AgentConfigError, AgentTurn, json_safe, turn_from_sequence

__all__ = ["ENTRY_POINT_GROUP", "PluginRef", "PluginAgent", "plugin_ref", "load_plugin", "installed_plugins",
           "make_plugin_agent", "adapt_agent", "resolve_awaitable", "plugin_sha256", "accepted_keywords",
           "MAX_PLUGIN_BYTES"]

#: The entry-point group installed agents are found in (``[project.entry-points."spatialact.agents"]``).
ENTRY_POINT_GROUP = "spatialact.agents"
#: The largest agent file read (a Python source file; anything larger is refused unread).
MAX_PLUGIN_BYTES = 16 * 1024 * 1024
_MAX_SHOWN = 200  # characters of a name shown in a message


@dataclass(frozen=True)
class PluginRef:
    """A resolved plug-in name. ``spec``: the canonical name (a file plug-in's path made absolute; what a run
    records and its workers import); ``kind``: ``"module"``, ``"file"`` or ``"entry-point"``; ``target``: the module
    name or the file's absolute path; ``attr``: the name in it; ``label``: the agent's name in records when it
    has none of its own (a file plug-in: ``file.py:Class``, so the same file elsewhere keeps its episodes'
    keys); ``sha256``: the file's SHA-256 (file plug-ins only); ``source``: where it comes from, in words;
    ``given``: the name as written."""

    spec: str
    kind: str
    target: str
    attr: str
    label: str
    sha256: str | None = None
    source: str = ""
    given: str = ""  # the name as it was written (what a refusal names)

    @property
    def shown(self) -> str:
        return _shown(self.given or self.spec)


def _shown(name: Any) -> str:
    return repr(str(name)[:_MAX_SHOWN])


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}" if text else type(e).__name__


_EP_CACHE: dict[tuple, dict] = {}


def installed_plugins() -> dict:
    """``{name: EntryPoint}`` of the group :data:`ENTRY_POINT_GROUP` in the installed distributions (read once per
    ``sys.path``; the first of two with one name wins, as Python's own lookup does)."""
    key = tuple(sys.path)
    if key not in _EP_CACHE:
        from importlib.metadata import entry_points

        found: dict = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            found.setdefault(ep.name, ep)
        _EP_CACHE.clear()
        _EP_CACHE[key] = found
    return dict(_EP_CACHE[key])


def _is_dotted(text: str) -> bool:
    return bool(text) and all(p.isidentifier() for p in text.split("."))


def _read_file(spec: str, path_text: str) -> tuple[Path, bytes]:
    from ..jsonline import input_problem

    path = Path(path_text).expanduser()
    why = input_problem(path)
    if why:
        raise AgentConfigError(f"agent {_shown(spec)}: {path_text[:_MAX_SHOWN]}: {why}")
    try:
        size = path.stat().st_size
        if size > MAX_PLUGIN_BYTES:
            raise AgentConfigError(f"agent {_shown(spec)}: {path_text[:_MAX_SHOWN]}: {size} bytes, more than an agent "
                                   f"file may be ({MAX_PLUGIN_BYTES} bytes)")
        return path.resolve(), path.read_bytes()
    except OSError as e:
        raise AgentConfigError(f"agent {_shown(spec)}: {path_text[:_MAX_SHOWN]}: cannot be read "
                               f"({e.strerror or e})") from None


def plugin_ref(name: Any) -> PluginRef | None:
    """The plug-in ``name`` names, or None when it is no plug-in name (neither ``X:Y`` nor an installed plug-in).
    A ``module:Class`` whose parts are not dotted names, or a file that is missing or not a regular file, raises
    :class:`AgentConfigError` naming the string and why. Nothing is imported here (:func:`load_plugin` does)."""
    text = str(name).strip()
    if ":" not in text:
        ep = installed_plugins().get(text)
        if ep is None:
            return None
        return PluginRef(text, "entry-point", ep.value, "", text, None, f"entry point {ep.value}"
                         + (f" of {ep.dist.name} {ep.dist.version}" if getattr(ep, "dist", None) else ""), text)
    target, _, attr = text.rpartition(":")
    target, attr = target.strip(), attr.strip()
    if not _is_dotted(attr):
        raise AgentConfigError(f"agent {_shown(text)}: {attr[:80]!r} after the ':' is not a class name (expected "
                               f"package.module:Class or path/to/agent.py:Class)")
    if target.endswith(".py") or "/" in target or os.sep in target:
        path, data = _read_file(text, target)
        spec = f"{path}:{attr}"
        return PluginRef(spec, "file", str(path), attr, f"{path.name}:{attr}", hashlib.sha256(data).hexdigest(),
                         f"file {target}", text)
    if not _is_dotted(target):
        raise AgentConfigError(f"agent {_shown(text)}: {target[:80]!r} is neither a module name (package.module) "
                               f"nor a Python file (path/to/agent.py)")
    spec = f"{target}:{attr}"
    return PluginRef(spec, "module", target, attr, spec, None, f"module {target}", text)


def plugin_sha256(name: Any) -> str | None:
    """The SHA-256 of the file a file plug-in ``name`` names (None for any other agent name)."""
    try:
        ref = plugin_ref(name)
    except AgentConfigError:
        return None
    return ref.sha256 if ref is not None else None


_LOADED: dict[tuple, Any] = {}
_LOCK = threading.RLock()


def _exec_file(ref: PluginRef, data: bytes):
    """The module of a file plug-in: its bytes (those that were hashed) compiled and run under a name of their own,
    registered in ``sys.modules`` (dataclasses and pickling look a class's module up there)."""
    import types

    stem = "".join(c if c.isalnum() else "_" for c in Path(ref.target).stem)
    modname = f"spatialact_plugin_{stem}_{ref.sha256[:12]}"
    if modname in sys.modules:
        return sys.modules[modname]
    mod = types.ModuleType(modname)
    mod.__file__ = ref.target
    sys.modules[modname] = mod
    try:
        exec(compile(data, ref.target, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return mod


def _import_target(ref: PluginRef):
    if ref.kind == "entry-point":
        return installed_plugins()[ref.spec].load()
    if ref.kind == "file":
        _, data = _read_file(ref.given or ref.spec, ref.target)
        if hashlib.sha256(data).hexdigest() != ref.sha256:  # changed since it was resolved
            raise AgentConfigError(f"agent {ref.shown}: the file changed while it was being loaded")
        mod = _exec_file(ref, data)
    else:
        import importlib

        mod = importlib.import_module(ref.target)
    obj = mod
    for part in ref.attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n, v in vars(mod).items() if isinstance(v, type) and not n.startswith("_")
                           and getattr(v, "__module__", None) == mod.__name__)
            has = f" (its classes: {', '.join(names[:8])})" if names else " (it defines no class)"
            raise AgentConfigError(f"agent {ref.shown}: {ref.source} has no {ref.attr!r}{has}")
        obj = getattr(obj, part)
    return obj


def load_plugin(name: Any) -> tuple[PluginRef, Any]:
    """(its :class:`PluginRef`, the class or factory) of the plug-in ``name``, imported once per process (a file
    plug-in once per content: an edited file is read again). Whatever goes wrong — no such module or file, an
    error while importing it (the error's type and message), no such class, a name that is not callable — raises
    :class:`AgentConfigError` in one line naming the string and why."""
    ref = plugin_ref(name)
    if ref is None:
        raise AgentConfigError(f"unknown agent {_shown(name)}")
    key = (ref.spec, ref.sha256)
    with _LOCK:
        if key in _LOADED:
            return ref, _LOADED[key]
        try:
            obj = _import_target(ref)
        except AgentConfigError:
            raise
        except ModuleNotFoundError as e:
            raise AgentConfigError(f"agent {ref.shown}: cannot import {ref.source}: no module named "
                                   f"{e.name!r}" + (" (is it installed, or on PYTHONPATH?)" if e.name else "")) \
                from None
        except (Exception, SystemExit) as e:  # a plug-in's own import-time error, SyntaxError included
            raise AgentConfigError(f"agent {ref.shown}: importing {ref.source} failed: {_one_line(e)}") \
                from None
        if not callable(obj):
            raise AgentConfigError(f"agent {ref.shown}: {ref.attr or ref.source!s} is no class (nor a function that "
                                   f"makes an agent): it is {type(obj).__name__}")
        if isinstance(obj, type) and not any(hasattr(obj, m) for m in ("act", "answer")):
            raise AgentConfigError(f"agent {ref.shown}: class {obj.__name__} has no act(observation) method "
                                   f"(an agent has act, and reset(task, mode=..., seed=...); see docs/agents.md)")
        _LOADED[key] = obj
        return ref, obj


# ----- calling an agent --------------------------------------------------------------------------------------------
_THREAD = threading.local()
_HELPER: list = []


def _run_here(awaitable):
    import asyncio

    loop = getattr(_THREAD, "loop", None)
    if loop is None or loop.is_closed():
        loop = _THREAD.loop = asyncio.new_event_loop()
    return loop.run_until_complete(awaitable)


def resolve_awaitable(value):
    """``value`` itself, or, when it is awaitable (an ``async def`` method's coroutine), its result: run on this
    thread's event loop — one per thread, made on first use and kept, so an async client made in one turn works
    in the next. Called from inside a running loop (a notebook), it runs on a helper thread's own loop instead."""
    if not inspect.isawaitable(value):
        return value
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(value)
    with _LOCK:
        if not _HELPER:
            from concurrent.futures import ThreadPoolExecutor

            _HELPER.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="spatialact-agent-loop"))
    return _HELPER[0].submit(_run_here, value).result()


_ACCEPTS: dict[Any, tuple[frozenset, bool]] = {}


def accepted_keywords(fn) -> tuple[frozenset, bool]:
    """(the keyword names ``fn`` takes, whether it takes ``**kwargs``), read from its signature once per function;
    a callable without a readable signature takes none."""
    key = getattr(fn, "__func__", fn)
    if key not in _ACCEPTS:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):
            _ACCEPTS[key] = (frozenset(), False)
        else:
            _ACCEPTS[key] = (frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)),
                             any(p.kind is p.VAR_KEYWORD for p in params))
    return _ACCEPTS[key]


class PluginAgent:
    """An agent from outside the package, speaking the runner's protocol (see the module docstring). Attributes it
    does not have itself (``model``, ``repeat``, ...) are the wrapped agent's, read and written through; the
    wrapped object is ``inner``."""

    _OWN = frozenset({"inner", "name", "task", "mode", "episode_seed", "ref", "params"})

    def __init__(self, inner, label: str, ref: PluginRef | None = None, params: dict | None = None):
        for k, v in (("inner", inner), ("name", label), ("task", None), ("mode", "one-shot"), ("episode_seed", None),
                     ("ref", ref), ("params", dict(params or {}))):
            object.__setattr__(self, k, v)

    def __getattr__(self, name: str):
        if name.startswith("__") or name in PluginAgent._OWN:
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value) -> None:
        if name in PluginAgent._OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)

    def __repr__(self) -> str:
        return f"PluginAgent({self.name!r})"

    def reset(self, task, mode: str | None = None, seed: int | None = None, **kwargs) -> None:
        """Start an episode: ``mode`` (``one-shot`` | ``closed-loop``) and ``seed`` (the episode's) are passed on to
        the agent's ``reset`` when it takes them (by name or ``**kwargs``), as are other keywords; a ``reset(task)``
        gets the task alone. An agent without ``reset`` is fine."""
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "mode", mode or "one-shot")
        object.__setattr__(self, "episode_seed", seed)
        fn = getattr(self.inner, "reset", None)
        if fn is None:
            return
        names, anything = accepted_keywords(fn)
        given = {"mode": mode, "seed": seed, **kwargs}
        resolve_awaitable(fn(task, **{k: v for k, v in given.items() if anything or k in names}))

    def act(self, observation: dict) -> AgentTurn:
        """The agent's turn as an :class:`AgentTurn`: its own, or made from the text it answered (parsed with the
        task's sizes and cap, as a model's text is) or from the :class:`ActionSequence` it returned."""
        from ..action_space import ActionSequence, parse_response

        if self.task is None:
            raise RuntimeError(f"agent {self.name!r}: act() called before reset(task)")
        act = getattr(self.inner, "act", None)
        if act is None:
            raise TypeError(f"agent {self.name!r} has no act(observation) method: it answers questions only")
        t0 = time.perf_counter()
        out = resolve_awaitable(act(observation))
        latency = time.perf_counter() - t0
        if isinstance(out, AgentTurn):
            return out
        if isinstance(out, str):
            parse = parse_response(out, sizes=self.task.sizes, cap=self.task.gt.cap)
            return AgentTurn(text=out, parse=parse, latency_s=latency)
        if isinstance(out, ActionSequence):
            return turn_from_sequence(out, self.task.answer_format, latency)
        raise TypeError(f"agent {self.name!r}: act() returned {type(out).__name__}; expected an AgentTurn, the "
                        f"answer's text (str) or an ActionSequence")

    def answer(self, question: dict) -> str:
        """The agent's answer to a generated question (``spatialact questions score``): the text its
        ``answer(question)`` returns (awaited when it is a coroutine)."""
        fn = getattr(self.inner, "answer", None)
        if fn is None:
            raise TypeError(f"agent {self.name!r} has no answer(question) method")
        out = resolve_awaitable(fn(question))
        if not isinstance(out, str):
            raise TypeError(f"agent {self.name!r}: answer() returned {type(out).__name__}, expected the answer's "
                            f"text (str), e.g. '(B)' or '1.5'")
        return out

    def check_task(self, task, supplies) -> str | None:
        """Why the agent cannot run ``task`` (asked for every task before a run starts): it has no ``act``, or its
        own ``check_task`` says why; else None."""
        if getattr(self.inner, "act", None) is None:
            return (f"agent {self.name!r} has no act(observation) method: it cannot run episodes (an agent with "
                    f"answer(question) only answers `spatialact questions score`)")
        own = getattr(self.inner, "check_task", None)
        return resolve_awaitable(own(task, supplies)) if own is not None else None

    def describe(self) -> dict:
        """The agent's own ``describe()`` when it has one, else ``{"agent": its name, "model": its ``model``
        attribute when that is text, "params": the options it was built with}``; a plug-in adds ``plugin`` (its
        canonical name) and, for a file, ``plugin_sha256``."""
        own = getattr(self.inner, "describe", None)
        if own is not None:
            desc = resolve_awaitable(own())
            if not isinstance(desc, dict):
                raise TypeError(f"agent {self.name!r}: describe() returned {type(desc).__name__}, expected a dict")
            desc = dict(desc)
        else:
            model = getattr(self.inner, "model", None)
            desc = {"agent": self.name, "model": model if isinstance(model, str) else None,
                    "params": json_safe(self.params)}
        if self.ref is not None:
            desc.setdefault("plugin", self.ref.spec)
            if self.ref.sha256:
                desc.setdefault("plugin_sha256", self.ref.sha256)
        return desc


def adapt_agent(agent):
    """``agent`` itself when it is one of the package's agents (or wrapped already), else a :class:`PluginAgent`
    around it — so that any object with ``act`` runs: ``reset`` given only the keywords it takes, coroutines
    awaited, text answers parsed."""
    if isinstance(agent, PluginAgent) or type(agent).__module__.split(".", 1)[0] == "spatialact":
        return agent
    label = getattr(agent, "name", None)
    return PluginAgent(agent, label if isinstance(label, str) and label else type(agent).__name__)


def make_plugin_agent(ref: PluginRef, obj, kwargs: dict) -> PluginAgent:
    """Build the plug-in's agent with ``kwargs`` (options checked by the caller; ``seed`` passed only when its
    constructor takes it) and wrap it. An error in its constructor is :class:`AgentConfigError`, one line naming the
    agent."""
    names, anything = accepted_keywords(obj)
    kw = {k: v for k, v in kwargs.items() if k != "seed" or anything or "seed" in names}
    try:
        inner = obj(**kw)
    except AgentConfigError:
        raise
    except Exception as e:
        raise AgentConfigError(f"agent {ref.shown}: building it failed: {_one_line(e)}") from None
    own = getattr(inner, "name", None)
    label = own if isinstance(own, str) and own.strip() else ref.label
    return PluginAgent(inner, label, ref, {k: v for k, v in kwargs.items() if k != "seed"})
