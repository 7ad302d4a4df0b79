"""The MLLM agent for any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, SGLang, Ollama, …).

It sends the prompt of :func:`spatialact.agents.prompts.build_prompt` (images as base64 PNG data URLs, the pose
never), at temperature 0, with a timeout; retries 429 and 5xx answers (and connection failures) with exponential
backoff, honouring ``Retry-After``; and keeps an on-disk response cache keyed by a SHA-256 of the request
(model, messages, parameters and the prompt version — never the API key or the base URL).

The API key comes from the environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``) or from the
file named by ``api_key_file``; it is held only by the client object and is never written to results, cache keys,
cache files, logs, reports or ``describe()``. Failures never raise out of ``act``: the AgentTurn carries the
error (and an empty, unparseable answer, which scores 0).
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import math
import numbers
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .base import AgentConfigError, AgentTurn, observation_step
from .prompts import PROMPT_VERSION, PromptedAgent, prompt_version
from .wire import (DEFAULT_TIMEOUT_S, MAX_REPLY_BYTES, MAX_RETRY_AFTER_S, MAX_TEXT_BYTES, GateClosed, ReplyGuard,
                   cap_text, current_gate, retry_after, salvage_content, sane_usage)

__all__ = ["OpenAIAgent", "ResponseCache", "request_key", "Completion", "CREDENTIAL_HEADERS", "check_extra_headers"]


def request_key(request: dict, version: str = PROMPT_VERSION, repeat: int = 0) -> str:
    """SHA-256 of the canonical JSON of a request (sorted keys), with the prompt version (``version``: the
    variant's, e.g. with cues, see :func:`~spatialact.agents.prompts.prompt_version`) mixed in, and ``repeat``
    when above 0 (``eval --repeats K``: repeat k of an episode is asked again, not read from repeat 0's answer;
    repeat 0 keeps the key a run without repeats has)."""
    key = {"prompt_version": version, "request": request}
    if int(repeat) > 0:
        key["repeat"] = int(repeat)
    blob = json.dumps(key, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass
class Completion:
    """One chat-completions request, answered (from the endpoint or the cache) or failed.

    ``text`` the message content ("" when none; at most :data:`~spatialact.agents.wire.MAX_TEXT_BYTES`),
    ``tool_calls`` the function calls of the message as plain dicts ``{"id", "name", "arguments"}`` (``arguments``
    the raw JSON text the model wrote), ``usage`` the tokens (``cached: True`` on a cache hit; both counts None
    when the reply's were not believable), ``cost_usd`` (0 for a hit, None when the tokens are unknown),
    ``error`` / ``error_kind`` as in :class:`~spatialact.agents.base.AgentTurn`, ``key`` the request's cache key,
    ``attempts`` HTTP attempts made, ``truncated`` whether the reply was longer than the caps and ``text`` holds its
    beginning."""

    text: str = ""
    tool_calls: list = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    cost_usd: float | None = 0.0
    error: str | None = None
    error_kind: str | None = None
    cached: bool = False
    key: str = ""
    attempts: int = 0
    truncated: bool = False


def _tool_calls(message) -> list[dict]:
    """The tool calls of a reply message as ``{"id", "name", "arguments"}`` dicts, whatever shape the server sent
    (a missing id or name is None; arguments that are not text are kept as JSON text)."""
    calls = getattr(message, "tool_calls", None)
    if calls is None and isinstance(message, dict):
        calls = message.get("tool_calls")
    out = []
    for tc in calls or ():
        get = (lambda o, k: o.get(k)) if isinstance(tc, dict) else (lambda o, k: getattr(o, k, None))
        fn = get(tc, "function")
        fget = (lambda o, k: o.get(k)) if isinstance(fn, dict) else (lambda o, k: getattr(o, k, None))
        name = fget(fn, "name") if fn is not None else None
        args = fget(fn, "arguments") if fn is not None else None
        if args is not None and not isinstance(args, str):
            try:
                args = json.dumps(args)
            except (TypeError, ValueError):
                args = str(args)
        tid = get(tc, "id")
        out.append({"id": tid if isinstance(tid, str) and tid else None,
                    "name": name if isinstance(name, str) else None, "arguments": args})
    return out


class ResponseCache:
    """One JSON file per request key under ``root/<first two hex digits>/<key>.json``, written atomically.

    A file holds the key, model, prompt version, answer text, usage and time — not the request (its images are
    large) and never a credential. Entries are read and written by :mod:`spatialact.cache`'s rules: only a regular
    file of at most ``cache.MAX_ENTRY_BYTES`` is read (a FIFO, a device, a link to one, a folder or a larger file
    at an entry is a miss, said once on standard error, and asked again); a damaged entry is a miss too; an entry
    that cannot be written is skipped.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).expanduser()

    def _path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"bad cache key {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        from ..cache import read_entry
        from ..jsonline import check_depth

        raw = read_entry(self._path(key))
        if raw is None:
            return None
        try:
            check_depth(raw)
            entry = json.loads(raw.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):  # a damaged entry is a miss; it is rewritten on the next success
            return None
        if not isinstance(entry, dict):
            return None
        return entry if entry.get("key") == key and isinstance(entry.get("text"), str) else None

    def put(self, key: str, entry: dict) -> None:
        from ..cache import write_entry

        text = json.dumps(dict(entry, key=key), ensure_ascii=False)
        write_entry(self._path(key), text.encode("utf-8", "surrogatepass"))  # a lone surrogate a reply held


def _check_base_url(url) -> None:
    """An http(s) URL with a host and no credentials in it, else AgentConfigError (naming base_url)."""
    from urllib.parse import urlsplit

    if not isinstance(url, str) or not url.strip():
        raise AgentConfigError(f"openai: base_url must be an http(s) URL such as http://localhost:8000/v1, "
                               f"got {str(url)[:80]!r}")
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as e:
        raise AgentConfigError(f"openai: base_url is not a URL ({e})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise AgentConfigError(f"openai: base_url must be an http(s) URL with a host, such as "
                               f"http://localhost:8000/v1 (got scheme {parts.scheme or 'none'!r}"
                               f"{'' if host else ', no host'})")
    if parts.username is not None or parts.password is not None:
        raise AgentConfigError("openai: base_url must not carry a user name or password: use api_key_env=NAME "
                               "or api_key_file=PATH")


def normalise_base_url(url):
    """``base_url`` as the agent uses it and a run's configuration should hold it: surrounding spaces and trailing
    slashes of its path removed (``http://host:8000/v1/`` and ``http://host:8000/v1`` are one endpoint: the client
    adds the slash itself). Anything else (None, not text) is returned as it is, for :func:`_check_base_url` to
    judge."""
    if not isinstance(url, str):
        return url
    from urllib.parse import urlsplit, urlunsplit

    url = url.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return urlunsplit(parts._replace(path=parts.path.rstrip("/")))


class _Malformed(ValueError):
    """A reply body that is not a chat completion with an answer."""


def _read_reply(body: bytes, cut: bool) -> tuple[dict, object]:
    """(message ``{"content", "tool_calls", "truncated"}``, the reply's usage block) from a chat-completion body;
    ``cut``: the body is the first :data:`~spatialact.agents.wire.MAX_REPLY_BYTES` of a longer reply, whose message
    text is salvaged (:func:`~spatialact.agents.wire.salvage_content`; tool calls and usage are lost). The text is
    kept to :data:`~spatialact.agents.wire.MAX_TEXT_BYTES` (``truncated`` when anything was dropped). Raises
    :class:`_Malformed` for a body that is not a chat completion, a message whose content is neither text nor null,
    and a message with neither content nor tool calls (``content: null``: no answer, so not cached and asked again)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        data = None
    if data is None and cut:
        text = salvage_content(body)
        if text is None:
            raise _Malformed(f"the reply is longer than {MAX_REPLY_BYTES:,} bytes and its message text does not "
                             f"start before that")
        text, _ = cap_text(text)
        return {"content": text, "tool_calls": [], "truncated": True}, None
    if data is None:
        raise _Malformed("the body is not JSON")
    try:
        msg = data["choices"][0]["message"]
        content = msg.get("content")
        calls = _tool_calls(msg)
    except (KeyError, IndexError, TypeError, AttributeError):
        raise _Malformed("no choices[0].message.content") from None
    if content is not None and not isinstance(content, str):
        raise _Malformed(f"choices[0].message.content is {type(content).__name__}, not text")
    if content is None and not calls:
        raise _Malformed("choices[0].message has no content (null) and no tool calls")
    text, capped = cap_text(content or "")
    return {"content": text, "tool_calls": calls, "truncated": bool(cut or capped)}, data.get("usage")


def _http_client(openai, **kwargs):
    """The ``openai`` package's default HTTP client (its timeouts, limits and redirects) with ``kwargs``, closed
    when the agent is collected, as the client the package builds for itself is (the runner builds an agent per
    episode). Its TLS context is the process's one (:func:`_shared_tls_context`)."""
    cls = openai.DefaultHttpxClient
    tls = _shared_tls_context(cls)
    if tls is not None and "verify" not in kwargs:
        kwargs["verify"] = tls
    return _closing_client_class(cls)(**kwargs)


@functools.lru_cache(maxsize=None)
def _shared_tls_context(client_class: type):
    """The TLS context the HTTP package of ``client_class`` makes by default (its ``create_ssl_context()``: the
    system's certificates, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as set when it is first made), made once per
    process and shared by every agent's client: making one reads the certificate store, about 30 ms, which an
    agent built per episode paid every episode. A context is safe to share between connections and threads. None
    when the package has no such function (each client then makes its own)."""
    package = sys.modules.get(next((c.__module__ for c in client_class.__mro__ if c.__name__ == "Client"),
                                   "").split(".")[0])
    make = getattr(package, "create_ssl_context", None)
    if make is None:
        return None
    try:
        return make()
    except Exception:  # noqa: BLE001 - the client makes its own, as before
        return None


@functools.lru_cache(maxsize=None)
def _closing_client_class(base: type) -> type:
    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit anything may be gone
            pass

    return type("ClosingHttpClient", (base,), {"__del__": __del__})


#: What this process has said once on stderr (``"cut"``, ``"usage"``); clear it to hear it again.
SAID_ONCE: set = set()


def _note_once(what: str, line: str) -> None:
    """Print ``line`` on stderr the first time this process meets ``what`` (a cut reply, unbelievable token
    counts): once per run, not once per episode (the runner builds an agent per episode)."""
    if what not in SAID_ONCE:
        SAID_ONCE.add(what)
        print(line, file=sys.stderr)


#: Headers that carry a credential: refused in ``params.extra_headers`` (the key comes from ``api_key_env`` /
#: ``api_key_file``; any capitalisation).
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "api-key", "x-api-key")
_HEADER_NAME_CHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def check_extra_headers(headers, where: str = "openai:") -> None:
    """``params.extra_headers``: a JSON object of header names (HTTP tokens) and text values without control
    characters; a credential header (:data:`CREDENTIAL_HEADERS`, any capitalisation) is refused
    (:class:`AgentConfigError` naming the option, never a value)."""
    opt = f"{where} 'params.extra_headers'"
    if not isinstance(headers, dict):
        raise AgentConfigError(f"{opt} must be a JSON object of header names and text values, got "
                               f"{type(headers).__name__}")
    for name, value in headers.items():
        if not isinstance(name, str) or not name or len(name) > 256 or not set(name) <= _HEADER_NAME_CHARS:
            raise AgentConfigError(f"{opt}: {str(name)[:40]!r} is not a header name (letters, digits and "
                                   f"!#$%&'*+-.^_`|~, at most 256)")
        if name.lower() in CREDENTIAL_HEADERS:
            raise AgentConfigError(f"{opt} may not carry the credential header {name!r}: the API key comes from "
                                   f"the environment (api_key_env=NAME) or a key file (api_key_file=PATH); headers "
                                   f"are recorded by name only")
        if not isinstance(value, str) or len(value) > 8192 or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise AgentConfigError(f"{opt}: the value of {name!r} must be text without control characters, at "
                                   f"most 8,192 characters")


#: The most tokens ``max_tokens`` may ask for (no chat model answers more; a larger number is a typo).
MAX_TOKENS_LIMIT = 1_000_000
#: The most retries ``max_retries`` may ask for.
MAX_RETRIES_LIMIT = 100


def _number(name: str, v, *, whole: bool = False, lo: float = 0.0, hi: float | None = None,
            above: bool = False, what: str = ""):
    """Argument ``name`` as an int (``whole``) or a finite number within [``lo``, ``hi``] (``above``: > ``lo``),
    else AgentConfigError naming the argument and the allowed range. A number written as text (``"60"``) is
    read; a bool, NaN, ±inf or anything else is refused. A number given as a number comes back as it was (an int
    stays an int), so what is recorded or sent does not change."""
    if whole:
        rng = f"a whole number from {lo:,.0f}" + (f" to {hi:,.0f}" if hi is not None else " up")
    else:
        rng = f"a finite number from {lo:g} to {hi:g}" if hi is not None else \
            f"a finite number {'>' if above else '≥'} {lo:g}"
    bad = AgentConfigError(f"openai: {name} must be {rng}{what}, got {str(v)[:40]!r}" if isinstance(v, str)
                           else f"openai: {name} must be {rng}{what}, got {v!r:.40}")
    x = v
    if isinstance(x, str):
        try:
            x = int(x.strip())
        except ValueError:
            try:
                x = float(x.strip())
            except ValueError:
                raise bad from None
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise bad
    if not isinstance(x, (int, float)):  # numpy scalars and the like
        x = int(x) if isinstance(x, numbers.Integral) else float(x)
    if isinstance(x, float) and not math.isfinite(x):
        raise bad
    if whole and isinstance(x, float):
        if not x.is_integer():
            raise bad
        x = int(x)
    if x < lo or (above and x <= lo) or (hi is not None and x > hi):
        raise bad
    return x


class OpenAIAgent(PromptedAgent):
    """An MLLM behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``model`` (required), ``base_url`` (None: the OpenAI API), ``api_key_env`` / ``api_key_file`` (see the
    module doc; for a local server without authentication the variable may be unset when ``base_url`` is
    given), ``timeout`` seconds per request, ``max_retries`` extra attempts on 429 / 5xx / connection errors,
    ``rate_limit_wait`` seconds of waiting that 429 replies may take in all — a rate-limited request is retried
    past ``max_retries`` while its waits (``Retry-After``, else backoff) add up to at most this (default
    :data:`~spatialact.agents.wire.MAX_RETRY_AFTER_S`, 300 s; 0: ``max_retries`` alone), ``backoff`` first wait
    in seconds (doubled each retry, capped at ``max_backoff``), ``retry_on_timeout``,
    ``cache_dir`` (None: no cache), ``max_tokens``, ``params`` (extra request fields, e.g. ``{"top_p": 1}``),
    ``price_in`` / ``price_out`` in USD per million prompt / completion tokens (for the cost totals).

    Checked here (AgentConfigError naming the argument and its range): ``max_tokens`` a whole number from 1 to
    ``MAX_TOKENS_LIMIT`` or None; ``timeout`` finite > 0; ``max_retries`` whole, 0 to ``MAX_RETRIES_LIMIT``;
    ``backoff`` / ``max_backoff`` finite ≥ 0; prices finite ≥ 0 or None; ``params.temperature`` finite in [0, 2]
    and ``params.max_tokens`` as ``max_tokens``. ``base_url`` is kept normalised (:func:`normalise_base_url`).
    """

    name = "openai"

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 api_key_file: str | os.PathLike | None = None, timeout: float = DEFAULT_TIMEOUT_S, max_retries: int = 3,
                 backoff: float = 1.0, max_backoff: float = 30.0, retry_on_timeout: bool = False,
                 cache_dir: str | os.PathLike | None = None, max_tokens: int | None = 1024,
                 params: dict | None = None, price_in: float | None = None, price_out: float | None = None,
                 seed: int = 0, cues=None, rate_limit_wait: float = MAX_RETRY_AFTER_S):
        if not model or not isinstance(model, str) or not model.strip():
            raise AgentConfigError("openai: a model name is required (--agent-arg model=NAME)")
        if len(model) > 256 or any(c.isspace() or not c.isprintable() for c in model):
            raise AgentConfigError(f"openai: model {model[:60]!r} is not a model name (no spaces or control "
                                   f"characters, at most 256 characters)")
        if base_url is not None:
            _check_base_url(base_url)
            base_url = normalise_base_url(base_url)
        timeout = float(_number("timeout", timeout, lo=0.0, above=True, what=" (seconds)"))
        max_retries = _number("max_retries", max_retries, whole=True, lo=0, hi=MAX_RETRIES_LIMIT)
        rate_limit_wait = float(_number("rate_limit_wait", rate_limit_wait, what=" (seconds)"))
        backoff = float(_number("backoff", backoff, what=" (seconds)"))
        max_backoff = float(_number("max_backoff", max_backoff, what=" (seconds)"))
        if max_tokens is not None:
            max_tokens = _number("max_tokens", max_tokens, whole=True, lo=1, hi=MAX_TOKENS_LIMIT)
        if price_in is not None:
            price_in = _number("price_in", price_in, what=" (USD per million prompt tokens)")
        if price_out is not None:
            price_out = _number("price_out", price_out, what=" (USD per million completion tokens)")
        if params is not None and not isinstance(params, dict):
            raise AgentConfigError(f"openai: params must be a JSON object of extra request fields, got "
                                   f"{type(params).__name__}")
        params = dict(params or {})
        # Request fields that params may set, with the bounds of the argument (max_tokens) or of the API
        # (temperature); a number is sent as given (the request, hence its cache key, unchanged), text as the number.
        for k, bounds in (("max_tokens", {"whole": True, "lo": 1, "hi": MAX_TOKENS_LIMIT}),
                          ("temperature", {"lo": 0.0, "hi": 2.0})):
            if params.get(k) is not None:
                v = _number(f"params.{k}", params[k], **bounds)
                if isinstance(params[k], str):
                    params[k] = v
        from .cues import parse_cues

        self.cues = parse_cues(cues)
        self.prompt_version = prompt_version(self.cues)
        if "extra_headers" in params:
            check_extra_headers(params["extra_headers"])
        for bad in ("model", "messages", "api_key", "stream", "tools", "tool_choice"):
            if bad in params:
                raise AgentConfigError(f"openai: params may not set {bad!r}")
        try:
            import openai
        except ImportError as e:
            raise AgentConfigError("openai: needs the 'openai' package (pip install 'spatialact[agents]')") from e
        self._openai = openai
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.api_key_file = None if api_key_file is None else str(api_key_file)
        self.timeout = timeout
        self.max_retries = max_retries
        self.rate_limit_wait = rate_limit_wait
        self.backoff, self.max_backoff = backoff, max_backoff
        self.retry_on_timeout = bool(retry_on_timeout)
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.cache_dir = None if cache_dir is None else str(cache_dir)
        self.max_tokens = max_tokens
        self.params = params
        self.price_in, self.price_out = price_in, price_out
        self.seed = int(seed)
        self.repeat = 0  # eval --repeats: the runner sets the episode's repeat; it enters the response cache key
        key = self._read_key()
        self._secret = key  # used to scrub error messages; never stored elsewhere
        # Our own retry loop (the test must see a 429 then success, and backoff must be ours to record); our own
        # bounds on what is read (a total deadline, a byte cap with bounded decoding: spatialact.agents.wire).
        self.reply_guard = ReplyGuard()  # what the last request read: raw_bytes, body_bytes, cut, expired
        http = _http_client(openai, timeout=self.timeout, event_hooks=self.reply_guard.hooks(),
                            headers={"Accept-Encoding": "gzip, deflate"})
        self._client = openai.OpenAI(api_key=key, base_url=base_url, timeout=self.timeout, max_retries=0,
                                     http_client=http)
        self.task = None
        self.mode = "one-shot"
        self._history: list[str] = []
        self.n_requests = 0
        self.last_images: list = []  # the PromptImages of the last request built (labels and roles)

    def _read_key(self) -> str:
        if self.api_key_file is not None:
            try:
                key = Path(self.api_key_file).read_text(encoding="utf-8").strip()
            except OSError as e:
                raise AgentConfigError(f"openai: cannot read the API key file {self.api_key_file}: "
                                       f"{e.strerror or e}") from None
            if not key:
                raise AgentConfigError(f"openai: the API key file {self.api_key_file} is empty")
            return key
        key = os.environ.get(self.api_key_env or "", "").strip()
        if key:
            return key
        if self.base_url:  # local servers (vLLM, Ollama) often need none; the client wants a string
            return "EMPTY"
        raise AgentConfigError(f"openai: set the environment variable {self.api_key_env} (or pass api_key_file=) "
                               f"with your API key")

    def __repr__(self) -> str:
        return f"OpenAIAgent(model={self.model!r}, base_url={self.base_url!r})"

    def describe(self) -> dict:
        return {"agent": self.name, "model": self.model,
                "params": {"base_url": self.base_url, "temperature": self.params.get("temperature", 0),
                           "max_tokens": self.params.get("max_tokens", self.max_tokens),
                           "timeout": self.timeout, "max_retries": self.max_retries,
                           "rate_limit_wait": self.rate_limit_wait, "backoff": self.backoff,
                           "extra": self._recorded_params(), "prompt_version": self.prompt_version,
                           "cues": list(self.cues),
                           "api_key_env": None if self.api_key_file else self.api_key_env,
                           "api_key_file": self.api_key_file is not None, "cache": self.cache_dir is not None,
                           "price_in": self.price_in, "price_out": self.price_out}}


    def _recorded_params(self) -> dict:
        """``params`` as provenance records them: ``extra_headers`` by name only (a value may be a credential)."""
        extra = dict(self.params)
        if isinstance(extra.get("extra_headers"), dict):
            extra["extra_headers"] = sorted(extra["extra_headers"])
        return extra

    # ----- one request ------------------------------------------------------------------------------------
    def build_request(self, observation: dict) -> dict:
        messages, self.last_images = self.turn_prompt(observation)
        req = {"model": self.model, "messages": messages, "temperature": 0}
        if self.max_tokens is not None:
            req["max_tokens"] = self.max_tokens
        req.update(self.params)
        return req

    def _scrub_text(self, text: str) -> str:
        """``text`` with the API key replaced by ``***`` (model answers are stored; the key never is)."""
        if self._secret and self._secret != "EMPTY" and self._secret in text:
            text = text.replace(self._secret, "***")
        return text

    def _scrub(self, msg: str) -> str:
        return self._scrub_text(msg)[:500]

    def _backoff(self, attempt: int) -> float:
        return min(self.max_backoff, self.backoff * (2 ** attempt))

    def _wait(self, attempt: int, err) -> float | None:
        """Seconds to wait before retrying after failed attempt ``attempt`` (0-based): what the reply asks for
        (``Retry-After`` / ``retry-after-ms``: :func:`~spatialact.agents.wire.retry_after`), honoured in full up to
        :data:`~spatialact.agents.wire.MAX_RETRY_AFTER_S` — longer, None: not retried —, else exponential backoff
        (``backoff`` doubled each attempt, at most ``max_backoff``)."""
        resp = getattr(err, "response", None)
        ra = retry_after(getattr(resp, "headers", None)) if resp is not None else None
        if ra is None:
            return self._backoff(attempt)
        return ra if ra <= MAX_RETRY_AFTER_S else None

    def _attempt(self, request: dict, attempt: int) -> tuple:
        """One HTTP attempt: ``(message, usage, error, error kind, outcome, wait)`` — ``message`` None when it
        failed; ``outcome`` what the request gate is told (:data:`~spatialact.agents.wire.OUTCOMES`); ``wait`` the
        seconds before a retry, None when the failure is not retried (another 4xx, a timeout without
        ``retry_on_timeout``, a ``Retry-After`` too long)."""
        oa = self._openai
        guard = self.reply_guard
        try:
            with guard.deadline(self.timeout):
                raw = self._client.chat.completions.with_raw_response.create(**request)
                body = raw.http_response.content
        except oa.APIStatusError as e:
            status = e.status_code
            err = f"HTTP {status}: {self._scrub(str(e))}"
            if status == 429 or status >= 500:
                wait = self._wait(attempt, e)
                if wait is None:
                    err += f" (the endpoint asks to wait more than {MAX_RETRY_AFTER_S:g} s: not retried)"
                return None, {}, err, "http", "rate_limited" if status == 429 else "server_error", wait
            return None, {}, err, "http", "client_error", None
        except Exception as e:  # noqa: BLE001 - whatever the client raises is a failed attempt, kind by kind
            if guard.expired or isinstance(e, oa.APITimeoutError):
                return (None, {}, f"timeout after {self.timeout:g} s", "timeout", "timeout",
                        self._backoff(attempt) if self.retry_on_timeout else None)
            if isinstance(e, oa.APIConnectionError):
                return (None, {}, f"connection error: {self._scrub(str(e))}", "connection", "connection",
                        self._backoff(attempt))
            # a reply body that cannot be read, and the like
            return (None, {}, f"malformed reply: {e.__class__.__name__}: {self._scrub(str(e))}", "malformed",
                    "malformed", self._backoff(attempt))
        try:
            message, usage = _read_reply(body, guard.cut)
        except _Malformed as e:
            return None, {}, f"malformed reply: {self._scrub(str(e))}", "malformed", "malformed", \
                self._backoff(attempt)
        counts, problem = sane_usage(usage)
        if guard.cut:
            counts = None
            _note_once("cut", f"spatialact: {self.name}: a reply longer than {MAX_REPLY_BYTES:,} bytes was cut "
                              f"there: its first {MAX_TEXT_BYTES:,} bytes of text are the answer (marked "
                              f"truncated), its token counts are unknown (null); said once")
        elif counts is None:
            _note_once("usage", f"spatialact: {self.name}: the endpoint's token counts are not believable "
                                f"({problem}): tokens and cost are recorded as unknown (null); said once")
        if counts is None:
            counts = {"prompt_tokens": None, "completion_tokens": None}
        return message, counts, None, None, "ok", None

    def _complete(self, request: dict) -> tuple[dict | None, dict, str | None, str | None, int]:
        """(message ``{"content", "tool_calls", "truncated"}``, usage, error, error kind, attempts) — never raises
        for HTTP or network trouble.

        Each attempt runs under a total deadline of ``timeout`` seconds (:class:`~spatialact.agents.wire.ReplyGuard`:
        a reply dripped byte by byte is abandoned then, as a silent server is), and reads at most
        :data:`~spatialact.agents.wire.MAX_REPLY_BYTES` of the reply (decoded while it streams); a reply cut there
        keeps the text read so far (``truncated``). Retried (up to ``max_retries`` more attempts — a 429 also past
        them while its waits add up to at most ``rate_limit_wait`` seconds —, after
        :meth:`_wait`: the reply's ``Retry-After``, else backoff): 429, 5xx, connection failures, malformed replies
        (a body that is not a chat completion, or a message with neither content nor tool calls) and, with
        ``retry_on_timeout``, timeouts. Other 4xx answers are returned at once. The error kind is one of
        ``ERROR_KINDS``. ``usage`` is :func:`~spatialact.agents.wire.sane_usage`'s counts, or ``{"prompt_tokens":
        None, "completion_tokens": None}`` when the reply's are not believable or were cut off (said once on
        stderr).

        Every attempt passes this process's request gate when the runner installed one
        (:func:`~spatialact.agents.wire.current_gate`: the adaptive concurrency and the rate budgets of ``eval
        --concurrency``), which is told how it ended; waiting there does not count against ``timeout``, and a
        retry waiting out its backoff holds no place. A gate closed by a stopping run ends the request unsent."""
        gate = current_gate()
        attempts = 0
        err, kind = "retries exhausted", "http"
        limited_s = 0.0  # seconds waited so far after 429 replies (bounded by rate_limit_wait)
        attempt = 0
        while True:
            ticket = None
            if gate is not None:
                try:
                    ticket = gate.acquire(retry=attempt > 0)
                except GateClosed as e:
                    return None, {}, f"not sent: {e}", "connection", attempts
            attempts += 1
            self.n_requests += 1
            t0 = time.perf_counter()
            outcome = "malformed"
            try:
                message, counts, err, kind, outcome, wait = self._attempt(request, attempt)
            finally:
                if ticket is not None:
                    used = None
                    if outcome == "ok" and None not in (counts.get("prompt_tokens"), counts.get("completion_tokens")):
                        used = counts["prompt_tokens"] + counts["completion_tokens"]
                    gate.release(ticket, outcome, time.perf_counter() - t0, used)
            if message is not None:
                return message, counts, None, None, attempts
            limited = outcome == "rate_limited" and wait is not None and limited_s + wait <= self.rate_limit_wait
            if wait is None or (attempt >= self.max_retries and not limited):
                return None, {}, err, kind, attempts
            if outcome == "rate_limited":
                limited_s += wait
            time.sleep(wait)
            attempt += 1

    def _cost(self, usage: dict) -> float | None:
        """USD for ``usage`` at the agent's prices; None when a count is unknown (and a price would apply)."""
        c = 0.0
        for count, price in (("prompt_tokens", self.price_in), ("completion_tokens", self.price_out)):
            if price:
                n = usage.get(count, 0)
                if n is None:
                    return None
                c += n * float(price) / 1e6
        return c

    def complete(self, request: dict) -> Completion:
        """One request through the response cache: a hit makes no request and costs 0; an answer is scrubbed of
        the API key (text and tool-call arguments), priced, and cached when it succeeded. Never raises for HTTP
        or network trouble (the Completion carries the error)."""
        key = request_key(request, self.prompt_version, self.repeat)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            calls = [dict(c, arguments=self._scrub_text(c["arguments"]) if isinstance(c.get("arguments"), str)
                          else c.get("arguments")) for c in (cached.get("tool_calls") or ()) if isinstance(c, dict)]
            return Completion(text=self._scrub_text(cached["text"]), tool_calls=calls,
                              usage=dict(cached.get("usage") or {}, cached=True), cached=True, key=key,
                              truncated=bool(cached.get("truncated")))
        message, usage, error, error_kind, attempts = self._complete(request)
        if message is None:
            return Completion(usage=usage, error=error, error_kind=error_kind, key=key, attempts=attempts)
        text = self._scrub_text(message["content"])  # a model (or a proxy) may echo the key: never store it
        calls = [dict(c, arguments=self._scrub_text(c["arguments"]) if isinstance(c["arguments"], str)
                      else c["arguments"]) for c in message["tool_calls"]]
        if self.cache is not None:
            entry = {"model": self.model, "prompt_version": self.prompt_version, "text": text, "usage": usage,
                     "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
            if calls:
                entry["tool_calls"] = calls
            if message["truncated"]:
                entry["truncated"] = True
            self.cache.put(key, entry)
        return Completion(text=text, tool_calls=calls, usage=usage, cost_usd=self._cost(usage), key=key,
                          attempts=attempts, truncated=message["truncated"])

    def ask(self, messages: list[dict]) -> Completion:
        """One request that is not an action turn — a generated question (:mod:`spatialact.questions` builds the
        ``messages``) — through the same endpoint, temperature 0, ``max_tokens``, extra params, retries and response
        cache as :meth:`act`. Never raises for HTTP or network trouble (the Completion carries the error)."""
        req = {"model": self.model, "messages": messages, "temperature": 0}
        if self.max_tokens is not None:
            req["max_tokens"] = self.max_tokens
        req.update(self.params)
        return self.complete(req)

    def act(self, observation: dict) -> AgentTurn:
        t0 = time.perf_counter()
        request = self.build_request(observation)
        c = self.complete(request)
        info = {"request_key": c.key, "step_index": observation_step(observation)}
        if c.cached:
            info["cached"] = True
        else:
            info["attempts"] = c.attempts
        text, usage, error, error_kind, cost = (c.text if c.error is None else None), c.usage, c.error, \
            c.error_kind, c.cost_usd
        parse = self.parse_turn(text or "", observation)
        return AgentTurn(text=text or "", parse=parse, latency_s=time.perf_counter() - t0,
                         usage=usage or {"prompt_tokens": 0, "completion_tokens": 0}, error=error, cost_usd=cost,
                         info=info, error_kind=error_kind, response_truncated=c.truncated and error is None)
