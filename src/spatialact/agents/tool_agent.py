"""Tool-using agents over any OpenAI-compatible endpoint with function calling, after SpatialScore's SpatialAgent
(its two paradigms; appendix D.4):

* ``react`` (ReAct): the model sees the task's prompt (the same as the ``openai`` agent's, cues included) and the
  tools (:mod:`spatialact.agents.tools`); it calls tools, reads their results, calls more, and answers with the
  final JSON in a reply without a tool call. At most ``max_calls`` tool calls per turn: when they are used up the
  next request has ``tool_choice: "none"`` and a note asking for the answer.
* ``plan-execute`` (Plan-Execute): the planner request asks for every tool call at once (function calls in one
  reply; a JSON list ``[{"name", "arguments"}, ...]`` in the text is read as a plan too, for endpoints without
  function calling); the calls are executed in order (at most ``max_calls``) and the results sent back; the
  summariser request (``tool_choice: "none"``) asks for the final answer. A planner that answers at once
  answers.

Every call is executed by :func:`~spatialact.agents.tools.run_tool_call` and recorded — request index, id, name,
raw arguments, result, error, whether it was malformed, whether it read simulator truth — in
``AgentTurn.info["tool_calls"]``; the runner stores them in the episode record (``tool_calls``) and the report
shows them. A malformed call (arguments that are not JSON, an unknown tool, a bad argument) is answered with
``{"error": ...}`` and the conversation goes on. Requests go through :meth:`OpenAIAgent.complete`: the response
cache (each request of a conversation is one entry; tool results are deterministic, so a rerun replays the whole
conversation from the cache), retries, key scrubbing and prices; the turn's ``usage`` sums the conversation's
tokens (``requests``, ``cached_requests``; ``cached`` when every request was a hit) and ``cost_usd`` its cost.

``tools=privileged`` adds the tools that read the simulator's truth (exact poses, segmentation): the agent's
``describe()``, every turn and every record say ``privileged: true``, and the report marks the run.
"""

from __future__ import annotations

import json
import time

from ..action_space import parse_response
from .base import AgentConfigError, AgentTurn, observation_step
from .openai_agent import OpenAIAgent
from .tools import ToolContext, observation_supplies, offered_tools, parse_tool_set, run_tool_call

__all__ = ["ToolAgent", "ReActAgent", "PlanExecuteAgent", "MAX_CALLS_LIMIT"]

MAX_CALLS_LIMIT = 64
_ARG_CHARS_RECORDED = 2000

_REACT = ("You can call tools (functions) that measure the images before you answer. {views} Call a tool, read "
          "its result, and call more tools if they help; you have at most {n} tool calls. The tool results can be "
          "incomplete or wrong: judge them. When you are ready, reply WITHOUT a tool call, with only the final "
          "answer in the required JSON output format.")
_PLAN = ("You can call tools (functions) that measure the images. {views} First make a plan: call every tool you "
         "need now, all in this one reply (several function calls, at most {n}); you will get all their results "
         "together and then give the final answer. If your endpoint cannot call functions, write the plan as a "
         'JSON list [{{"name": ..., "arguments": {{...}}}}, ...] instead. Do not answer yet.')
_SUMMARY = ("All tool results are above. The results can be incomplete or wrong: judge them. Now give the final "
            "answer, with only the JSON in the required output format.")
_BUDGET = "The tool-call budget ({n} calls) is used up. Give the final answer now, with only the JSON in the required " \
          "output format."


def _views_text(images) -> str:
    names = {"start": "current", "current": "current", "goal": "goal"}
    parts = [f'"{names[im.role]}" is {im.label}' for im in images if im.role in names]
    return ("The tools name the views: " + " and ".join(parts) + ".") if parts else ""


def _text_plan(text: str) -> list | None:
    """A plan written as text: the JSON list between the first '[' and the last ']' whose items are objects with
    a "name"; None when there is none (the text is then the answer)."""
    i, j = text.find("["), text.rfind("]")
    if i < 0 or j <= i:
        return None
    try:
        plan = json.loads(text[i:j + 1])
    except ValueError:
        return None
    if not isinstance(plan, list) or not plan or not all(isinstance(p, dict) and "name" in p for p in plan):
        return None
    return plan


class ToolAgent(OpenAIAgent):
    """An MLLM with tools behind an OpenAI-compatible endpoint (see the module doc). Parameters are those of
    :class:`~spatialact.agents.openai_agent.OpenAIAgent` plus ``tools`` (``default`` | ``privileged``) and
    ``max_calls`` (tool calls per turn, 1…64; default 8, SpatialAgent allowed ReAct 10 turns). ``max_tokens``
    defaults to 2048 (SpatialAgent's budget for agents)."""

    name = "react"
    paradigm = "react"

    def __init__(self, model: str | None = None, tools: str = "default", max_calls: int = 8,
                 max_tokens: int | None = 2048, **kwargs):
        try:
            self.tool_set = parse_tool_set(tools)
        except ValueError as e:
            raise AgentConfigError(f"{self.name}: {e}") from None
        if isinstance(max_calls, bool) or not isinstance(max_calls, int) or not 1 <= max_calls <= MAX_CALLS_LIMIT:
            raise AgentConfigError(f"{self.name}: max_calls must be a whole number from 1 to {MAX_CALLS_LIMIT}, "
                                   f"got {max_calls!r}")
        try:
            super().__init__(model=model, max_tokens=max_tokens, **kwargs)
        except AgentConfigError as e:  # the parent's messages name "openai"; this agent has its own name
            msg = str(e)
            raise AgentConfigError(f"{self.name}:{msg[7:]}" if msg.startswith("openai:") else msg) from None
        self.max_calls = int(max_calls)
        self.privileged = self.tool_set == "privileged"
        self.prompt_version = f"{self.prompt_version}+{self.paradigm}-tools-v1"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r}, tools={self.tool_set!r})"

    def describe(self) -> dict:
        d = super().describe()
        d["agent"] = self.name
        d["tools"] = self.tool_set
        d["privileged"] = self.privileged
        d["params"].update(paradigm=self.paradigm, tools=self.tool_set, max_calls=self.max_calls,
                           privileged=self.privileged)
        return d

    # ----- one conversation ---------------------------------------------------------------------------------
    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        task = self.task
        base = self.build_request(observation)
        offered = offered_tools(self.tool_set, observation_supplies(observation))
        conv = _Conversation(self, base, offered, ToolContext(task, observation, seed=self.seed))
        instructions = (_REACT if self.paradigm == "react" else _PLAN).format(views=_views_text(self.last_images),
                                                                             n=self.max_calls)
        conv.extend_system(instructions)
        text = conv.react() if self.paradigm == "react" else conv.plan_execute()
        info = conv.info()
        info["step_index"] = observation_step(observation)
        if conv.error is not None:
            return AgentTurn(text="", parse=parse_response("", sizes=task.sizes, cap=task.gt.cap),
                             latency_s=time.perf_counter() - t0, usage=conv.usage(), error=conv.error,
                             cost_usd=conv.total_cost(), info=info, error_kind=conv.error_kind)
        parse = self.parse_turn(text or "", observation)
        return AgentTurn(text=text or "", parse=parse, latency_s=time.perf_counter() - t0, usage=conv.usage(),
                         cost_usd=conv.total_cost(), info=info, response_truncated=conv.truncated)


class ReActAgent(ToolAgent):
    """``react``: interleaved tool calls and reasoning until an answer (see the module doc)."""

    name = "react"
    paradigm = "react"


class PlanExecuteAgent(ToolAgent):
    """``plan-execute``: all tool calls planned at once, executed, then one summarising answer (module doc)."""

    name = "plan-execute"
    paradigm = "plan-execute"


class _Conversation:
    """The requests of one turn: messages, tool execution and records, usage and cost."""

    def __init__(self, agent: ToolAgent, base: dict, offered, ctx: ToolContext):
        self.agent = agent
        self.base = {k: v for k, v in base.items() if k != "messages"}
        self.messages = [dict(m) for m in base["messages"]]
        self.tools = {t.name: t for t in offered}
        self.specs = [t.spec() for t in offered]
        self.ctx = ctx
        self.calls: list[dict] = []
        self.keys: list[str] = []
        self.prompt_tokens = self.completion_tokens = self.n_cached = 0
        self.cost = 0.0
        self.tokens_unknown = self.cost_unknown = False  # a request whose token counts were not believable
        self.truncated = False
        self.error = self.error_kind = None
        self.assistant_texts: list[str] = []
        self.plan_source: str | None = None
        self._ids = 0

    def extend_system(self, text: str) -> None:
        for m in self.messages:
            if m.get("role") == "system" and isinstance(m.get("content"), str):
                m["content"] = m["content"] + "\n\n" + text
                return
        self.messages.insert(0, {"role": "system", "content": text})

    # ----- requests -------------------------------------------------------------------------------------------
    def ask(self, tool_choice: str):
        req = dict(self.base, messages=[dict(m) for m in self.messages])
        if self.specs:
            req["tools"] = self.specs
            req["tool_choice"] = tool_choice
        c = self.agent.complete(req)
        self.keys.append(c.key)
        u = c.usage or {}
        if "prompt_tokens" in u and (u["prompt_tokens"] is None or u.get("completion_tokens") is None):
            self.tokens_unknown = True
        else:
            self.prompt_tokens += int(u.get("prompt_tokens", 0) or 0)
            self.completion_tokens += int(u.get("completion_tokens", 0) or 0)
        self.n_cached += int(bool(c.cached))
        if c.cost_usd is None:
            self.cost_unknown = True
        else:
            self.cost += float(c.cost_usd)
        self.truncated = self.truncated or bool(c.truncated)
        if c.error is not None:
            self.error, self.error_kind = c.error, c.error_kind
            return None
        return c

    def usage(self) -> dict:
        """Tokens summed over the conversation's requests; None when any request's counts were unknown."""
        n = len(self.keys)
        unknown = self.tokens_unknown
        u = {"prompt_tokens": None if unknown else self.prompt_tokens,
             "completion_tokens": None if unknown else self.completion_tokens, "requests": n,
             "cached_requests": self.n_cached}
        if n and self.n_cached == n:
            u["cached"] = True
        return u

    def total_cost(self) -> float | None:
        """USD of the conversation's requests; None when any request's cost was unknown."""
        return None if self.cost_unknown else self.cost

    def info(self) -> dict:
        out = {"paradigm": self.agent.paradigm, "tools": self.agent.tool_set, "privileged": self.agent.privileged,
               "offered_tools": sorted(self.tools), "tool_calls": self.calls, "requests": len(self.keys),
               "cached_requests": self.n_cached, "request_keys": list(self.keys),
               "assistant_texts": self.assistant_texts}
        if self.plan_source is not None:
            out["plan"] = self.plan_source
        return out

    # ----- tool calls -----------------------------------------------------------------------------------------
    def _id(self, given) -> str:
        self._ids += 1
        return given if isinstance(given, str) and given else f"call_{self._ids}"

    def _execute(self, name, arguments, request: int, call_id, why_not: str | None = None) -> dict:
        """Run one call (or, with ``why_not`` or past the budget, record it as not executed) and record it."""
        if why_not is None and self._budget_left() <= 0:
            why_not = f"tool-call budget ({self.agent.max_calls} calls) used up: not executed; give the final answer"
        if why_not is not None:
            msg = why_not
            rec = {"name": name if isinstance(name, str) else None, "arguments": arguments, "result": {"error": msg},
                   "error": msg, "malformed": False, "privileged": False, "executed": False}
        else:
            rec = run_tool_call(self.tools, self.ctx, name, arguments)
            rec["executed"] = True
        args = rec["arguments"]
        if isinstance(args, str) and len(args) > _ARG_CHARS_RECORDED:
            args = args[:_ARG_CHARS_RECORDED] + "..."
        rec = {"call": len(self.calls), "request": request, "id": call_id, **rec, "arguments": args}
        self.calls.append(rec)
        return rec

    def _run_function_calls(self, c, request: int) -> None:
        """Append the assistant's function calls and one tool message per call (its result as JSON)."""
        calls = []
        for tc in c.tool_calls:
            name = tc.get("name")
            args = tc.get("arguments")
            calls.append({"id": self._id(tc.get("id")), "type": "function",
                          "function": {"name": name if isinstance(name, str) and name else "unknown",
                                       "arguments": args if isinstance(args, str) else ""}})
        self.messages.append({"role": "assistant", "content": c.text or None, "tool_calls": calls})
        for tc, sent in zip(c.tool_calls, calls):
            rec = self._execute(tc.get("name"), tc.get("arguments"), request, sent["id"])
            self.messages.append({"role": "tool", "tool_call_id": sent["id"],
                                  "content": json.dumps(rec["result"], ensure_ascii=False)})

    def _budget_left(self) -> int:
        return self.agent.max_calls - sum(1 for c in self.calls if c["executed"])

    # ----- paradigms ------------------------------------------------------------------------------------------
    def react(self) -> str | None:
        # Each request but the last executes at least one call, so there are at most max_calls + 1 requests.
        while True:
            choice = "auto" if self._budget_left() > 0 else "none"
            c = self.ask(choice)
            if c is None:
                return None
            if not c.tool_calls or not self.specs or choice == "none":
                if c.tool_calls:  # a call after the budget (tool_choice "none"): recorded, not run
                    for tc in c.tool_calls:
                        self._execute(tc.get("name"), tc.get("arguments"), len(self.keys) - 1, self._id(tc.get("id")),
                                      why_not="a tool call in the final answer request: not executed")
                return c.text
            if c.text:
                self.assistant_texts.append(c.text[:_ARG_CHARS_RECORDED])
            self._run_function_calls(c, len(self.keys) - 1)
            if self._budget_left() <= 0:
                self.messages.append({"role": "user", "content": _BUDGET.format(n=self.agent.max_calls)})

    def plan_execute(self) -> str | None:
        c = self.ask("auto")
        if c is None:
            return None
        if c.tool_calls and self.specs:
            self.plan_source = "function calls"
            if c.text:
                self.assistant_texts.append(c.text[:_ARG_CHARS_RECORDED])
            self._run_function_calls(c, 0)
        else:
            plan = _text_plan(c.text) if self.specs else None
            if plan is None:
                self.plan_source = "none: answered at once"
                return c.text
            self.plan_source = "text"
            self.assistant_texts.append(c.text[:_ARG_CHARS_RECORDED])
            self.messages.append({"role": "assistant", "content": c.text})
            results = []
            for step in plan:
                args = step.get("arguments", {})
                rec = self._execute(step.get("name"), args if isinstance(args, str) else json.dumps(args), 0,
                                    self._id(None))
                results.append({"name": rec["name"], "result": rec["result"]})
            self.messages.append({"role": "user", "content": "Tool results, in the order of your plan:\n"
                                  + json.dumps(results, ensure_ascii=False)})
        self.messages.append({"role": "user", "content": _SUMMARY})
        c2 = self.ask("none")
        if c2 is None:
            return None
        if c2.tool_calls:  # the summariser may not call tools: recorded, not run
            for tc in c2.tool_calls:
                self._execute(tc.get("name"), tc.get("arguments"), len(self.keys) - 1, self._id(tc.get("id")),
                              why_not="a tool call in the final answer request: not executed")
        return c2.text

