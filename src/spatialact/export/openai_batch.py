"""One-shot tasks as an OpenAI Batch API input file, and the provider's output file read back as answers
(docs/scoring.md, "Scoring a provider's batch output").

The input file (``spatialact prompt --format openai-batch``) holds one JSON line per one-shot episode, in the Batch
API's request-input layout::

    {"custom_id": "<episode key>", "method": "POST", "url": "/v1/chat/completions", "body": {<chat request>}}

``body`` is the request ``spatialact eval --agent openai`` sends for that task, field for field: it is built by
the agent itself (:meth:`spatialact.agents.openai_agent.OpenAIAgent.build_request`, on the observation of
:func:`spatialact.export.views.first_observation`): the model, the messages of
:func:`spatialact.agents.build_prompt` (the images as base64 PNG data URLs at eval's size), ``temperature: 0``,
``max_tokens`` and the agent's extra ``params``. Options of the client rather than of the request
(``params.extra_headers``, ``extra_query``, ``timeout``) are not part of a body and are left out;
``params.extra_body`` is merged into it, as the client merges it. No request is sent and no API key is needed.

``custom_id`` is the episode key of :func:`spatialact.records.episode_key`: ``task|openai|none|one-shot|seed``
(the agent ``openai``, the environment ``none``: the answers are scored without a simulator), so every answer joins
back to one task without ambiguity (task ids are unique in a task file, hence the keys in a batch file).

The output file the provider returns has one line per request, in any order::

    {"id": ..., "custom_id": ..., "response": {"status_code": 200, "request_id": ..., "body": {<chat completion>}},
     "error": null}

(the error file's lines: ``"response": null`` and ``"error": {"code", "message"}``). :func:`read_batch_output`
turns each answered line (status 200, a message with text in ``choices[0].message.content``, cut to the agent's
:data:`~spatialact.agents.wire.MAX_TEXT_BYTES`) into an answers line ``{"task_id", "response"}`` for
:func:`spatialact.scorers.score_file`, and each other line (an ``error``, a status other than 200, a body with no
message text: what the agent records as a failed call) into a failure: no score, counted and reported. Token
counts (``usage``) are summed. A ``custom_id`` that is not an episode key of a task of the task file is refused
(:class:`BatchError`, one line naming the file and the line). Lines that are not JSON objects are passed on as they
are (scored 0 with their reason, as in any answers file).
"""

from __future__ import annotations

import json

__all__ = ["BATCH_URL", "BATCH_AGENT", "BATCH_ENV", "BATCH_MODE", "MAX_BATCH_REQUESTS", "CLIENT_OPTIONS",
           "BatchError", "BatchAnswers", "custom_id", "task_id_of", "batch_agent", "request_body", "batch_line",
           "line_kind", "read_batch_output"]

#: The endpoint every request of a batch file names (the chat-completions API the openai agent speaks).
BATCH_URL = "/v1/chat/completions"
#: The agent, environment and mode in a batch file's custom ids (the episode key's fields).
BATCH_AGENT, BATCH_ENV, BATCH_MODE = "openai", "none", "one-shot"
#: The most requests the OpenAI Batch API takes in one input file (a larger file is split by the user).
MAX_BATCH_REQUESTS = 50_000
#: Request options the ``openai`` client takes out of a request (they are headers, query or transport settings,
#: never body fields); ``extra_body`` is merged into the body.
CLIENT_OPTIONS = ("extra_headers", "extra_query", "timeout")
#: The most failures a summary lists one by one (all are counted).
MAX_LISTED = 50


class BatchError(ValueError):
    """A batch output file that cannot be scored (an unknown custom id): one line naming the file and the line."""


def custom_id(task_id: str, seed: int = 0) -> str:
    """The custom id of a task's request: :func:`spatialact.records.episode_key` of (task, ``openai``, ``none``,
    ``one-shot``, ``seed``)."""
    from ..records import episode_key

    return episode_key(task_id, BATCH_AGENT, BATCH_ENV, BATCH_MODE, seed)


def task_id_of(cid) -> str | None:
    """The task id in a custom id written by :func:`custom_id` (``task|agent|env|one-shot|seed``: the last four
    fields taken off the right, so a ``|`` inside the task id stays), or None when ``cid`` is not such a key (not
    text, too few fields, another mode, a seed that is not a whole number)."""
    if not isinstance(cid, str):
        return None
    parts = cid.rsplit("|", 4)
    if len(parts) != 5 or not parts[0] or parts[3] != BATCH_MODE:
        return None
    seed = parts[4][1:] if parts[4].startswith("-") else parts[4]
    if not (seed.isascii() and seed.isdigit()):
        return None
    return parts[0]


def batch_agent(kwargs: dict):
    """The openai agent ``spatialact eval --agent openai --agent-arg ...`` builds from ``kwargs`` (its checks: model
    name, ``max_tokens``, ``params``, cues; an :class:`~spatialact.agents.AgentConfigError` in one line), used
    here only to build requests: without ``base_url`` it is given the OpenAI API's, so that no API key is needed
    (nothing is sent)."""
    from ..agents import make_agent

    kwargs = dict(kwargs)
    kwargs.setdefault("base_url", "https://api.openai.com/v1")
    kwargs.setdefault("cache_dir", None)
    return make_agent(BATCH_AGENT, seed=0, **kwargs)


def request_body(request: dict) -> dict:
    """The JSON body the ``openai`` client sends for ``request`` (the keyword arguments of
    ``chat.completions.create``): the client options (:data:`CLIENT_OPTIONS`) left out, ``extra_body`` merged."""
    body = {k: v for k, v in request.items() if k not in CLIENT_OPTIONS and k != "extra_body"}
    extra = request.get("extra_body")
    if isinstance(extra, dict):
        body.update(extra)
    return body


def batch_line(task, observation: dict, agent, seed: int = 0) -> str:
    """One line of the batch input file (no line end): the request ``agent`` (:func:`batch_agent`) sends in the
    first turn of a one-shot episode of ``task`` on ``observation``, under its :func:`custom_id`."""
    agent.reset(task, mode=BATCH_MODE, seed=seed)
    body = request_body(agent.build_request(observation))
    return json.dumps({"custom_id": custom_id(task.id, seed), "method": "POST", "url": BATCH_URL, "body": body},
                      ensure_ascii=False, separators=(",", ":"))


def line_kind(rec) -> str | None:
    """``"openai-batch"`` for a line of a provider's batch output (``custom_id`` with ``response`` or ``error``),
    ``"openai-batch-input"`` for a line of a batch input file (``custom_id``, ``method``, ``body``), else None."""
    if not isinstance(rec, dict) or "custom_id" not in rec:
        return None
    if "method" in rec and "body" in rec:
        return "openai-batch-input"
    if "response" in rec or "error" in rec:
        return "openai-batch"
    return None


class BatchAnswers:
    """What :func:`read_batch_output` read: ``lines`` (one per input line, in order: the answers line as JSON bytes
    for an answered request, ``b""`` for a failed one or a blank line — so the scores keep the file's line numbers
    —, the raw bytes of a line that is not a JSON object), ``failures`` (the first :data:`MAX_LISTED`:
    ``{"line", "custom_id", "task_id", "status_code", "error"}``), ``n_failed``, ``failed_tasks`` (task ids of
    failed requests), ``answered_tasks``, ``n_lines``, ``answered``, ``truncated`` (answers cut to the text cap),
    ``models`` (the ``model`` the bodies name), ``usage`` (``prompt_tokens``, ``completion_tokens`` summed over the
    answered lines whose counts are believable, :func:`~spatialact.agents.wire.sane_usage`; ``unknown``: lines
    without believable counts)."""

    def __init__(self):
        self.lines: list = []
        self.failures: list = []
        self.n_failed = 0
        self.failed_tasks: set = set()
        self.answered_tasks: set = set()
        self.n_lines = 0
        self.answered = 0
        self.truncated = 0
        self.models: set = set()
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "unknown": 0}

    def fail(self, lineno: int, cid: str, tid: str, status, error: str) -> None:
        self.n_failed += 1
        self.failed_tasks.add(tid)
        if len(self.failures) < MAX_LISTED:
            self.failures.append({"line": lineno, "custom_id": cid, "task_id": tid, "status_code": status,
                                  "error": error[:500]})
        self.lines.append(b"")

    def summary(self) -> dict:
        """The figures a score summary carries (JSON-able)."""
        return {"format": "openai-batch", "lines": self.n_lines, "answered": self.answered, "failed": self.n_failed,
                "failed_tasks": len(self.failed_tasks - self.answered_tasks), "truncated": self.truncated,
                "models": sorted(self.models), "usage": dict(self.usage), "failures": list(self.failures)}


def _message_text(body) -> tuple[str | None, str | None]:
    """(the answer text, None) of a chat-completion body, or (None, why there is none) — as the agent reads a reply:
    ``choices[0].message.content``, text (a message with only tool calls or ``content: null`` has no answer)."""
    try:
        content = body["choices"][0]["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        return None, "malformed reply: no choices[0].message.content"
    if not isinstance(content, str):
        return None, ("malformed reply: choices[0].message has no content (null)" if content is None else
                      f"malformed reply: choices[0].message.content is {type(content).__name__}, not text")
    return content, None


def _error_text(rec: dict, response) -> tuple[object, str | None]:
    """(status code, why the request failed) of an output line, or (200, None) for an answered one."""
    err = rec.get("error")
    status = response.get("status_code") if isinstance(response, dict) else None
    if err is not None:
        if isinstance(err, dict):
            code, msg = err.get("code"), err.get("message")
            return status, f"{code or 'error'}: {msg}" if msg else str(code or "error")
        return status, str(err)[:500]
    if not isinstance(response, dict):
        return status, "no response and no error"
    if status != 200 or isinstance(status, bool):
        body = response.get("body")
        msg = body.get("error", {}).get("message") if isinstance(body, dict) and \
            isinstance(body.get("error"), dict) else None
        return status, f"HTTP {status}" + (f": {msg}" if msg else "")
    return 200, None


def _read_line(out: BatchAnswers, lineno: int, raw: bytes, task_ids, label: str) -> None:
    from ..agents.wire import cap_text, sane_usage
    from ..jsonline import TooDeep, check_depth

    try:
        check_depth(raw)
        rec = json.loads(raw)
    except (TooDeep, ValueError, RecursionError):
        out.lines.append(bytes(raw))  # not JSON: scored 0 (invalid_json) as in any answers file
        return
    if not isinstance(rec, dict) or "custom_id" not in rec:
        out.lines.append(bytes(raw))
        return
    cid = rec["custom_id"]
    tid = task_id_of(cid)
    if tid is None or tid not in task_ids:
        shown = json.dumps(cid, ensure_ascii=False)[:120]
        raise BatchError(f"{label}: line {lineno}: custom_id {shown} names no task of the task file (expected "
                         f"task|{BATCH_AGENT}|{BATCH_ENV}|{BATCH_MODE}|seed, as `spatialact prompt --format "
                         f"openai-batch` writes it for these tasks)")
    response = rec.get("response")
    status, why = _error_text(rec, response)
    text = None
    body = response.get("body") if isinstance(response, dict) else None
    if why is None:
        text, why = _message_text(body)
    if why is not None:
        out.fail(lineno, cid, tid, status, why)
        return
    text, cut = cap_text(text)
    out.truncated += cut
    out.answered += 1
    out.answered_tasks.add(tid)
    if isinstance(body.get("model"), str):
        out.models.add(body["model"][:256])
    counts, _ = sane_usage(body.get("usage"))
    if counts is None:
        out.usage["unknown"] += 1
    else:
        out.usage["prompt_tokens"] += counts["prompt_tokens"]
        out.usage["completion_tokens"] += counts["completion_tokens"]
    out.lines.append(json.dumps({"task_id": tid, "response": text}, ensure_ascii=False).encode("utf-8",
                                                                                               "surrogatepass"))


def read_batch_output(f, task_ids, label: str) -> BatchAnswers:
    """Read a provider's batch output from the binary stream ``f`` (the file named ``label``), its lines bounded
    (:func:`spatialact.jsonline.iter_lines`: a line longer than :data:`~spatialact.jsonline.MAX_LINE_BYTES` is
    passed on as a bad line) and each checked for nesting (:func:`~spatialact.jsonline.check_depth`), against the
    set of task ids ``task_ids``. Raises :class:`BatchError` (one line naming the file and the line) for a custom id
    that names no task of them, or a line with no end in sight."""
    from ..jsonline import LineTooLong, LongLine, iter_lines

    out = BatchAnswers()
    try:
        for lineno, raw in enumerate(iter_lines(f), 1):
            out.n_lines = lineno
            if type(raw) is LongLine:
                out.lines.append(raw)
            elif not raw.strip():
                out.lines.append(b"")
            else:
                _read_line(out, lineno, raw, task_ids, label)
    except LineTooLong as e:
        raise BatchError(f"{label}: {e}") from None
    return out
