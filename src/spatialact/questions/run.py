"""Asking an agent the generated questions: every option question under every rotation of its options (CircularEval),
numeric questions once; one result record per (question, rotation) in a run directory.

The records (their fields, key and schema variant owned by :mod:`spatialact.records`) live in a run directory of
:mod:`spatialact.evaluation.results` (``config.json``, ``results.jsonl`` appended, flushed and fsynced; resumable;
a changed configuration refused), beside the episode records' fields:
``key``, ``task_id`` (the question id), ``agent``, ``model``, ``env: "questions"``, ``mode: "question"``, ``seed``,
``variant: "question-r<k>"``, ``response``, ``score``, ``reason``, ``error``, ``error_kind``, ``usage`` (tokens,
``cost_usd``, ``cached``), ``latency_s``, ``provenance``; and ``record: "question"``, ``question_id``, ``type``,
``format``, ``rotation``, ``n_rotations``, ``answer`` (the correct letter under that rotation), ``pred``,
``correct`` (and ``rel_error``, ``delta2``, ``mra`` for numeric questions), ``request_key``, ``prompt_version``.
The variant keeps them out of the report's episode tables; the report's Diagnostics section summarises them.

Answerers: the MLLM agent (``openai``: the same endpoint, response cache, retries and usage figures as its actions,
through :meth:`spatialact.agents.openai_agent.OpenAIAgent.ask`) and three calibration baselines: ``oracle`` (reads
the stored answer: 1.0 under CircularEval), ``constant`` (always the same letter, default "A", and the same
number: 0 under CircularEval) and ``random`` (a seeded uniform letter; a log-uniform number). Failures are not
results: an answer that could not be obtained (connection, timeout, HTTP error, malformed reply) is recorded with
reason ``api_error`` and no score, and rerunning the same command asks it again.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..records import QUESTION_ENV, QUESTION_MODE, QUESTION_RECORD, RETRIED_ON_RESUME, question_key, question_variant
from .prompt import QUESTION_PROMPT_VERSION, n_rotations, question_prompt, rotated_answer
from .io import option_letters
from .scoring import score_response

__all__ = ["QUESTION_AGENTS", "make_answerer", "Reply", "run_questions", "QuestionRunSummary", "check_question_inputs",
           "asked_question"]

#: The agents that answer questions (aliases of ``openai`` such as ``mllm`` are accepted).
QUESTION_AGENTS = ("oracle", "constant", "random", "openai")
_UNIT_SCALE = {"m": (0.1, 10.0), "deg": (10.0, 150.0), "px": (1.0, 500.0)}


@dataclass
class Reply:
    """One answer: its text, and for an API agent the usage, cost, cache and failure figures."""

    text: str | None
    usage: dict = field(default_factory=dict)
    cost_usd: float = 0.0
    error: str | None = None
    error_kind: str | None = None
    cached: bool = False
    request_key: str | None = None


class _Baseline:
    model = None

    def __init__(self, seed: int = 0, **kwargs):
        if kwargs:
            raise ValueError(f"agent {self.name!r}: unknown parameters {', '.join(sorted(kwargs))}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 63:
            raise ValueError(f"agent {self.name!r}: seed must be a whole number from 0 to 2^63-1, got {seed!r:.40}")
        self.seed = seed

    def describe(self) -> dict:
        return {"agent": self.name, "model": None, "params": {"seed": self.seed}}

    def check_questions(self, questions) -> None:
        """Refuse (one-line ValueError) a question set this answerer cannot answer meaningfully; nothing by
        default."""

    def answer(self, q: dict, rotation: int, messages) -> Reply:
        raise NotImplementedError


class OracleAnswerer(_Baseline):
    """Reads the stored answer: the correct letter under the rotation (``(B)``), or the exact number."""

    name = "oracle"

    def answer(self, q, rotation, messages):
        a = rotated_answer(q, rotation)
        return Reply(text=repr(float(a)) if q["format"] == "numeric" else f"({a})")


class ConstantAnswerer(_Baseline):
    """Always the same answer: ``letter`` (default "A") and ``number`` (default 1.0)."""

    name = "constant"

    def __init__(self, seed: int = 0, letter: str = "A", number: float = 1.0, **kwargs):
        super().__init__(seed, **kwargs)
        if not (isinstance(letter, str) and len(letter) == 1 and letter.upper() in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"):
            raise ValueError(f"agent 'constant': letter must be one letter A-Z, got {str(letter)[:20]!r}")
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not math.isfinite(number):
            raise ValueError(f"agent 'constant': number must be a finite number, got {number!r}")
        self.letter, self.number = letter.upper(), float(number)

    def describe(self) -> dict:
        return {"agent": self.name, "model": None,
                "params": {"seed": self.seed, "letter": self.letter, "number": self.number}}

    def check_questions(self, questions) -> None:
        """The letter must name an option of at least one option question asked (``Z`` against four options would
        only measure the parser)."""
        sizes = [len(q["options"]) for q in questions if q.get("options")]
        if sizes and self.letter not in option_letters(max(sizes)):
            raise ValueError(f"agent 'constant': letter {self.letter!r} is not an option of any question asked "
                             f"(they have at most {max(sizes)} options, {option_letters(max(sizes))[-1]!r} the last)")

    def answer(self, q, rotation, messages):
        return Reply(text=repr(self.number) if q["format"] == "numeric" else f"({self.letter})")


class RandomAnswerer(_Baseline):
    """A uniform letter among the options; a log-uniform number over a range for the unit (m 0.1–10, deg 10–150,
    px 1–500). Seeded per (seed, question, rotation): the same in any order or process."""

    name = "random"

    def answer(self, q, rotation, messages):
        import hashlib

        h = hashlib.sha256(f"{self.seed}|{q['id']}|{rotation}".encode()).digest()
        rng = np.random.default_rng(int.from_bytes(h[:8], "little"))
        if q["format"] == "numeric":
            lo, hi = _UNIT_SCALE.get(q.get("unit"), (0.1, 10.0))
            return Reply(text=f"{math.exp(rng.uniform(math.log(lo), math.log(hi))):.3f}")
        return Reply(text="(" + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[int(rng.integers(len(q["options"])))] + ")")


class _APIAnswerer:
    """The MLLM agent answering through :meth:`OpenAIAgent.ask` (same endpoint, cache and retries as actions).
    ``kwargs``: the agent's arguments, so that :meth:`fresh` builds another for another thread (an agent's reply
    guard serves one request at a time)."""

    def __init__(self, agent, kwargs: dict | None = None):
        self.agent = agent
        self.name = agent.name
        self.model = agent.model
        self.kwargs = dict(kwargs or {})

    def fresh(self) -> "_APIAnswerer":
        """Another answerer of the same agent (same arguments), for another thread."""
        from ..agents import make_agent

        return _APIAnswerer(make_agent("openai", **self.kwargs), self.kwargs)

    def describe(self) -> dict:
        d = self.agent.describe()
        d["params"] = dict(d.get("params") or {}, question_prompt_version=QUESTION_PROMPT_VERSION)
        return d

    def endpoint(self) -> str:
        return self.agent.base_url or "the OpenAI API"

    def answer(self, q, rotation, messages):
        c = self.agent.ask(messages)
        return Reply(text=c.text if c.error is None else None, usage=dict(c.usage or {}), cost_usd=c.cost_usd,
                     error=c.error, error_kind=c.error_kind, cached=c.cached, request_key=c.key)


class _PluginAnswerer:
    """A plug-in agent (``module:Class``, ``path.py:Class``, an installed plug-in) answering through its
    ``answer(question)``: it gets what a model is shown (:func:`asked_question`), never the stored answer."""

    def __init__(self, agent):
        self.agent = agent
        self.name = agent.name
        self.plugin = agent.ref  # spatialact.agents.plugins.PluginRef: recorded in the run's configuration
        self.model = agent.describe().get("model")

    def describe(self) -> dict:
        d = self.agent.describe()
        d["params"] = dict(d.get("params") or {}, question_prompt_version=QUESTION_PROMPT_VERSION)
        return d

    def answer(self, q, rotation, messages):
        asked = asked_question(q, rotation, messages)
        try:
            text = self.agent.answer(asked)
        except Exception as e:  # the plug-in's own failure: the run stops here, in one line; a rerun resumes
            raise ValueError(f"agent {self.name!r}: answer() failed on question {q['id']!r} (rotation {rotation}): "
                             f"{type(e).__name__}: {' '.join(str(e).split())[:200]}") from None
        return Reply(text=text)


def asked_question(q: dict, rotation: int, messages: list) -> dict:
    """What a plug-in's ``answer(question)`` gets for question ``q`` under ``rotation``: ``id``, ``type``,
    ``format`` (``multiple_choice``, ``judgment``, … or ``numeric``), ``unit`` (numeric: ``m``, ``deg``, ``px``), ``question`` (the text),
    ``options`` (the option texts in the order shown, lettered A, B, …; None for a numeric question), ``images``
    ((H, W, 3) uint8 RGB arrays, in the order the prompt names them) and ``messages`` (the chat-completions messages
    the MLLM agent sends, images as data URLs). Not the answer, the points or the views' poses."""
    from ..image_files import read_image_rgb
    from .prompt import rotate_options

    numeric = q["format"] == "numeric"
    return {"id": q["id"], "type": q["type"], "format": q["format"], "unit": q.get("unit") if numeric else None,
            "question": q["question"], "options": None if numeric else list(rotate_options(q["options"], rotation)),
            "images": [read_image_rgb(im["path"]) for im in q["images"]], "messages": messages}


_BASELINES = {"oracle": OracleAnswerer, "constant": ConstantAnswerer, "random": RandomAnswerer}


def make_answerer(name: str, **kwargs):
    """A question answerer by name: ``oracle``, ``constant`` (``letter``, ``number``), ``random`` (``seed``), the
    MLLM agent ``openai`` (an alias: ``mllm``, ``api``; the arguments of :class:`~spatialact.agents.openai_agent.
    OpenAIAgent`), or a plug-in agent with an ``answer(question)`` method (``package.module:Class``,
    ``path/to/agent.py:Class``, an installed plug-in: it gets :func:`asked_question`). Other agents (action
    baselines, tool agents, plug-ins without ``answer``) do not answer questions: AgentConfigError."""
    from ..agents import AgentConfigError, canonical_agent_name, check_agent_args

    check_agent_args(kwargs)
    key = str(name).strip().lower()
    if key not in _BASELINES:
        try:
            key = canonical_agent_name(name)
        except AgentConfigError as e:
            if not str(e).startswith("unknown agent"):  # a plug-in that cannot be loaded: its own reason
                raise
            raise AgentConfigError(f"unknown agent {str(name)[:60]!r} for questions (expected one of "
                                   f"{', '.join(QUESTION_AGENTS)}, or a plug-in with answer(question): "
                                   f"package.module:Class, path/to/agent.py:Class)") from None
    from ..agents import is_plugin

    if key not in _BASELINES and is_plugin(key):
        from ..agents import make_agent

        agent = make_agent(key, **kwargs)
        if getattr(agent.inner, "answer", None) is None:
            raise AgentConfigError(f"agent {key!r} does not answer questions: it has no answer(question) method "
                                   f"(docs/agents.md)")
        return _PluginAnswerer(agent)
    if key in _BASELINES:
        try:
            return _BASELINES[key](**kwargs)
        except (TypeError, ValueError) as e:
            raise AgentConfigError(str(e) if "agent" in str(e) else f"agent {key!r}: {e}") from None
    if key != "openai":
        raise AgentConfigError(f"agent {key!r} does not answer questions (use one of {', '.join(QUESTION_AGENTS)})")
    from ..agents import make_agent

    return _APIAnswerer(make_agent("openai", **kwargs), kwargs)


def check_question_inputs(questions) -> None:
    """Refuse (one-line ValueError naming the question and the file) a question whose image file is missing or
    does not decode as an image (:func:`~spatialact.questions.prompt.image_png_bytes`), before anything is
    written."""
    from .prompt import image_png_bytes

    for q in questions:
        for im in q["images"]:
            if not Path(im["path"]).is_file():
                raise ValueError(f"question {q['id']!r}: field 'images': {im['path']}: no such image file")
            try:
                image_png_bytes(im["path"])
            except ValueError as e:
                raise ValueError(f"question {q['id']!r}: field 'images': {e}") from None


@dataclass
class QuestionRunSummary:
    run_dir: Path
    n_new: int
    n_skipped: int
    failures: dict
    summary: dict
    concurrency: int = 1  # answers asked at once (questions score --concurrency N)
    figures: dict = field(default_factory=dict)  # requests, retries, tokens, cost, peak in flight, wall time


#: ``--concurrency`` of ``questions score`` when not given: for the MLLM agent (the same default as ``eval``'s);
#: baselines and plug-ins answer one question at a time.
API_CONCURRENCY = 16


#: Answers that open a run: until then one question is asked at a time.
PROBE_ANSWERS = 2


def _asked(agent, q: dict, r: int):
    t0 = time.perf_counter()
    messages = question_prompt(q, r)
    reply = agent.answer(q, r, messages)
    return q, r, reply, time.perf_counter() - t0


def _answers(agent, todo: list, concurrency: int):
    """``(question, rotation, reply, latency)`` for every job of ``todo``: asked here one at a time, or by
    ``concurrency`` threads (each with its own answerer when the answerer has ``fresh()``: an API agent), yielded
    as they come back. The run opens with a probe, as ``eval``'s does (``spatialact.evaluation.concurrent``): one
    question at a time until two answers came back, then ``concurrency`` at once."""
    if concurrency <= 1:
        for q, r in todo:
            yield _asked(agent, q, r)
        return
    import threading
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    local = threading.local()

    def ask(q, r):
        own = getattr(local, "agent", None)
        if own is None:
            own = local.agent = agent.fresh() if hasattr(agent, "fresh") else agent
        return _asked(own, q, r)

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="spatialact-question")
    running: set = set()
    answers = 0
    try:
        it = iter(todo)
        nxt = next(it, None)
        while nxt is not None or running:
            allowed = 1 if answers < PROBE_ANSWERS else concurrency
            while nxt is not None and len(running) < allowed:
                running.add(pool.submit(ask, *nxt))
                nxt = next(it, None)
            done, running = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                item = fut.result()
                answers += item[2].error is None
                yield item
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def run_questions(questions, agent, out, *, seed: int = 0, circular: bool = True, question_file=None,
                  question_sha: str | None = None, config: dict | None = None, progress: bool = False,
                  limit: int | None = None, concurrency: int | None = None, max_rpm: float | None = None,
                  max_tpm: float | None = None) -> QuestionRunSummary:
    """Ask ``agent`` (an answerer of :func:`make_answerer`) every question — option questions under every rotation
    when ``circular`` (else rotation 0 only) — and append one record per answer to the run directory ``out``
    (:class:`spatialact.evaluation.results.RunStore`). Finished answers are skipped on a rerun, except failures
    (reason ``api_error``), which are asked again. ``config``: what identifies the run (a different one refuses
    the directory). Three connection failures in a row before any answer came through stop the run
    (:class:`spatialact.evaluation.runner.EndpointUnreachable`). ``concurrency`` (None: :data:`API_CONCURRENCY`
    for the MLLM agent, else 1): answers asked at once, each thread with its own agent; the API agent's requests
    pass a request gate (``spatialact.agents.wire.RequestGate``: adaptive, within ``max_rpm`` / ``max_tpm``), and
    records are appended (one writer) as answers come back, in that order.
    Returns the counts and :func:`~spatialact.questions.summarise_answers` of every record of the run."""
    from ..evaluation.results import RunStore, provenance, read_records
    from .scoring import summarise_answers

    questions = list(questions)[:limit] if limit is not None else list(questions)
    check_question_inputs(questions)
    if hasattr(agent, "check_questions"):
        agent.check_questions(questions)
    desc = agent.describe()
    name = desc.get("agent") or agent.name
    cfg = dict(config or {})
    cfg.setdefault("command", "questions")
    cfg.setdefault("agent", name)
    cfg.setdefault("seed", int(seed))
    cfg.setdefault("circular", bool(circular))
    prov = provenance(question_file, agent, seed)
    if question_sha is not None:
        prov["question_file_sha256"] = question_sha
    jobs = [(q, r) for q in questions for r in (range(n_rotations(q)) if circular else (0,))]
    if concurrency is None:
        concurrency = API_CONCURRENCY if isinstance(agent, _APIAnswerer) else 1
    from ..agents.wire import RequestGate, use_gate
    from ..evaluation.progress import RunProgress

    gate = RequestGate(concurrency, max_rpm, max_tpm) if isinstance(agent, _APIAnswerer) else None
    n_new = n_skipped = 0
    bar = None
    with RunStore(out, cfg, prov) as store, use_gate(gate):
        done = store.done_keys(retry_reasons=RETRIED_ON_RESUME)
        todo = [(q, r) for q, r in jobs if question_key(q["id"], name, seed, r) not in done]
        n_skipped = len(jobs) - len(todo)
        if progress and todo:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(jobs), initial=n_skipped, desc=f"{name} questions", unit="q", file=sys.stderr)
        prog = RunProgress(bar, concurrency)
        if gate is not None:
            from os import getpid

            prog.local = lambda: {"pid": getpid(), **gate.snapshot()}
        prog.start()
        try:
            n_new = _ask_all(agent, todo, concurrency, store, prog, name, desc.get("model"), seed)
        finally:
            prog.close()
            if bar is not None:
                bar.close()
        latest = [store.latest(question_key(q["id"], name, seed, r)) for q, r in jobs]
        failures = {}
        for rec in latest:
            if rec is not None and rec.get("reason") == "api_error":
                failures["api_error"] = failures.get("api_error", 0) + 1
        figures = prog.figures()
    records = read_records(out)
    return QuestionRunSummary(run_dir=Path(out), n_new=n_new, n_skipped=n_skipped, failures=failures,
                              summary=summarise_answers(records), concurrency=int(concurrency), figures=figures)


def _ask_all(agent, todo: list, concurrency: int, store, prog, name: str, model, seed: int) -> int:
    """Ask ``todo`` (:func:`_answers`) and append each answer's record as it comes; returns how many. Three
    connection failures in a row before any answer came through raise ``EndpointUnreachable``."""
    n_new = 0
    conn_streak, got_through = 0, False
    answers = _answers(agent, todo, concurrency)
    try:
        for q, r, reply, latency in answers:
            rec = _record(q, r, name, model, seed, reply, latency)
            store.append(rec)
            n_new += 1
            prog.add(rec, None, reply.error is not None)
            if reply.error is not None:
                print(f"spatialact questions: {q['id']} rotation {r}: {reply.error}", file=sys.stderr)
                if reply.error_kind == "connection" and not got_through:
                    conn_streak += 1
                    if conn_streak >= 3:
                        ep = agent.endpoint() if hasattr(agent, "endpoint") else "the agent"
                        from ..evaluation.runner import EndpointUnreachable

                        raise EndpointUnreachable(
                            f"stopped after {conn_streak} connection failures in a row at the start: cannot "
                            f"reach {ep} (is the server running, is base_url right?); rerunning the same command "
                            f"asks these questions again")
            else:
                got_through = True
    finally:
        answers.close()
    return n_new


def _record(q: dict, rotation: int, agent: str, model, seed: int, reply: Reply, latency: float) -> dict:
    failed = reply.error is not None
    if failed:
        s = {"score": None, "correct": None, "pred": None, "answer": rotated_answer(q, rotation),
             "reason": "api_error"}
        if q["format"] == "numeric":
            s.update(rel_error=None, delta2=None, mra=None)
    else:
        s = score_response(q, reply.text or "", rotation)
    u = reply.usage or {}
    usage = {"prompt_tokens": int(u.get("prompt_tokens", 0) or 0),
             "completion_tokens": int(u.get("completion_tokens", 0) or 0),
             "cost_usd": float(reply.cost_usd or 0.0), "cached": int(bool(reply.cached)), "turns": 1}
    return {
        "key": question_key(q["id"], agent, seed, rotation),
        "record": QUESTION_RECORD, "task_id": q["id"], "question_id": q["id"], "type": q["type"],
        "format": q["format"], "source": q.get("source"), "agent": agent, "model": model, "env": QUESTION_ENV,
        "mode": QUESTION_MODE, "seed": int(seed), "variant": question_variant(rotation), "rotation": int(rotation),
        "n_rotations": n_rotations(q), **s, "response": reply.text, "error": reply.error,
        "error_kind": reply.error_kind, "usage": usage, "latency_s": float(latency),
        "request_key": reply.request_key, "cached": bool(reply.cached), "prompt_version": QUESTION_PROMPT_VERSION,
    }
