"""What the API agents read from the wire, bounded: a total deadline per request, a cap on the bytes of a reply
(read and after decoding its ``content-encoding``, cut while streaming), a cap on the model text kept, the salvage
of a reply cut at the cap, and the sanity of its token counts.

The ``openai`` client's ``timeout`` is per read, so a server that drips its reply one byte at a time never times
out. :class:`ReplyGuard` gives an ``httpx`` client (the one the ``openai`` client is built on) two event hooks:

* the request hook asks the connection layer (``httpcore``'s ``trace`` extension) for each socket it opens; a
  watchdog timer started by :meth:`ReplyGuard.deadline` shuts those sockets down when the request's total time
  runs out, which ends any read in progress (headers or body) — the request fails and the guard says it
  :attr:`~ReplyGuard.expired`;
* the response hook replaces the response's byte stream, before the client reads it, by one that decodes
  ``gzip`` / ``deflate`` itself with bounded output and stops at :data:`MAX_REPLY_BYTES` (raw or decoded), marking
  the reply :attr:`~ReplyGuard.cut`; the deadline is checked there too, chunk by chunk, for a connection layer
  without the ``trace`` extension. Other encodings are passed on undecoded (the body is then not JSON: a malformed
  reply).

A guard serves one request at a time: an agent answers one turn at a time, and the runner builds an agent per
episode, so the threads of ``eval --concurrency N`` never share one.

The rest of a request's manners live here too: :func:`retry_after` reads how long a reply asks the client to wait,
and :class:`RequestGate` is the one place the requests of a process's threads pass — at most an adaptive number in
flight, within optional requests- and tokens-per-minute budgets (:func:`use_gate` installs it for a run).

Limits (documented in docs/agents.md): :data:`MAX_REPLY_BYTES` (8 MiB) of a reply read or decoded,
:data:`MAX_TEXT_BYTES` (1 MiB, UTF-8) of model text kept per reply, :data:`MAX_USAGE_TOKENS` (10⁸) tokens a sane
usage block may count for one request.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import threading
import time
import weakref
import zlib
from contextlib import contextmanager

__all__ = ["MAX_REPLY_BYTES", "MAX_TEXT_BYTES", "MAX_USAGE_TOKENS", "ReplyGuard", "DeadlineExceeded", "cap_text",
           "salvage_content", "sane_usage", "retry_after", "MAX_RETRY_AFTER_S", "RequestGate", "GateClosed", "Ticket",
           "OUTCOMES", "current_gate", "use_gate", "install_gate", "DEFAULT_TIMEOUT_S"]

#: The API agents' default ``timeout``: seconds one request may take in all (connect, send, wait, every read), the
#: total deadline :class:`ReplyGuard` enforces. 600 s, the default of lmms-eval's async OpenAI-compatible chat model: a
#: large model on a busy server, or a reasoning model, can take minutes for one image-laden answer, and a request
#: cut at its deadline is paid for and asked again.
DEFAULT_TIMEOUT_S = 600.0

#: The most bytes of one reply read from the wire, and the most its decoded body may hold (a gzip reply of 200 KB
#: that inflates to 200 MB is cut here while it is decoded). 1 MiB of text escaped as ``\\uXXXX`` is 6 MiB of JSON.
MAX_REPLY_BYTES = 8 * 1024 * 1024
#: The most model text kept from one reply, in UTF-8 bytes (1 MiB); what is past it is dropped and the reply is
#: marked truncated.
MAX_TEXT_BYTES = 1024 * 1024
#: The most tokens a usage count may state for one request; more is not believed (no model reads or writes 10⁸
#: tokens in one request).
MAX_USAGE_TOKENS = 10 ** 8


class DeadlineExceeded(Exception):
    """The request's total deadline passed while its reply was being read."""


class ReplyGuard:
    """The total deadline and the byte caps of one client's requests (see the module doc).

    ``hooks()`` gives the ``event_hooks`` of an ``httpx`` client; ``with guard.deadline(seconds): ...`` runs one
    request under a total deadline. After it, :attr:`expired` says whether the deadline passed (the request was
    abandoned) and :attr:`cut` whether the reply was longer than :attr:`max_bytes` (its body then holds the first
    :attr:`max_bytes` decoded bytes); :attr:`raw_bytes` / :attr:`body_bytes` count what was read and decoded."""

    def __init__(self, max_bytes: int = MAX_REPLY_BYTES):
        self.max_bytes = int(max_bytes)
        self._sockets: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._until: float | None = None
        self.expired = False
        self.cut = False
        self.raw_bytes = 0
        self.body_bytes = 0

    # ----- the deadline ---------------------------------------------------------------------------------------
    @contextmanager
    def deadline(self, seconds: float):
        """Run one request: a watchdog shuts its sockets down ``seconds`` after the start."""
        self.expired = self.cut = False
        self.raw_bytes = self.body_bytes = 0
        self._until = time.monotonic() + float(seconds)
        timer = threading.Timer(float(seconds), self._fire)
        timer.daemon = True
        timer.start()
        try:
            yield self
        finally:
            timer.cancel()
            self._until = None

    def past_deadline(self) -> bool:
        if self._until is not None and time.monotonic() >= self._until:
            self.expired = True
        return self.expired

    def _fire(self) -> None:
        self.expired = True
        with self._lock:
            socks = list(self._sockets)
        for s in socks:
            try:  # the plain socket call: it ends a read blocked in another thread, TLS or not
                socket.socket.shutdown(s, socket.SHUT_RDWR)
            except (OSError, ValueError, TypeError):
                pass

    def _trace(self, name: str, info: dict) -> None:
        if name.endswith((".connect_tcp.complete", ".start_tls.complete", ".connect_unix_socket.complete")):
            stream = info.get("return_value")
            try:
                sock = stream.get_extra_info("socket") if stream is not None else None
            except Exception:  # a connection layer without it: the per-chunk check still bounds the body
                sock = None
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._sockets.add(sock)

    # ----- client hooks -------------------------------------------------------------------------------------
    def hooks(self) -> dict:
        """``event_hooks`` for an ``httpx`` client."""
        return {"request": [self._on_request], "response": [self._on_response]}

    def _on_request(self, request) -> None:
        ext = dict(request.extensions)
        ext["trace"] = self._trace
        request.extensions = ext

    def _on_response(self, response) -> None:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip"):
            decoder = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            decoder = _DeflateDecoder()
        else:
            decoder = None
        if decoder is not None:
            del response.headers["content-encoding"]
        elif encoding not in ("", "identity"):
            # passed on undecoded; the client must not inflate it without a bound
            del response.headers["content-encoding"]
        response.stream = _stream_class(response)(response.stream, decoder, self)


class _DeflateDecoder:
    """``deflate`` as servers send it: zlib-wrapped, or raw deflate (as ``httpx`` reads it)."""

    def __init__(self):
        self._d = zlib.decompressobj()
        self._first = True

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        if self._first:
            self._first = False
            try:
                return self._d.decompress(data, max_length)
            except zlib.error:
                self._d = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._d.decompress(data, max_length)

    @property
    def unconsumed_tail(self) -> bytes:
        return self._d.unconsumed_tail


_STREAM_CLASSES: dict = {}


def _stream_class(response):
    """A bounded stream class deriving from the ``SyncByteStream`` of the response's own HTTP package (``httpx``
    checks the type before it reads)."""
    package = type(response).__module__.split(".")[0]
    cls = _STREAM_CLASSES.get(package)
    if cls is None:
        cls = type("BoundedByteStream", (_BoundedStream, getattr(sys.modules[package], "SyncByteStream")), {})
        _STREAM_CLASSES[package] = cls
    return cls


class _BoundedStream:
    """The response's bytes, decoded with bounded output, at most ``guard.max_bytes`` raw and decoded."""

    def __init__(self, inner, decoder, guard: ReplyGuard):
        self._inner, self._decoder, self._guard = inner, decoder, guard

    def __iter__(self):
        g = self._guard
        try:
            for chunk in self._inner:
                if g.past_deadline():
                    raise DeadlineExceeded("total deadline passed while reading the reply")
                if len(chunk) > g.max_bytes - g.raw_bytes:
                    chunk = chunk[:g.max_bytes - g.raw_bytes]
                    g.cut = True
                g.raw_bytes += len(chunk)
                if self._decoder is None:
                    out = chunk[:g.max_bytes - g.body_bytes]
                    if len(out) < len(chunk):
                        g.cut = True
                    g.body_bytes += len(out)
                    if out:
                        yield out
                else:
                    yield from self._decode(chunk)
                if g.cut:
                    return
        finally:
            self.close()

    def _decode(self, data: bytes):
        g = self._guard
        while data and not g.cut:
            room = g.max_bytes - g.body_bytes
            try:
                out = self._decoder.decompress(data, room + 1)
            except zlib.error as e:
                raise ValueError(f"reply body cannot be decoded: {e}") from None
            if len(out) > room:
                out = out[:room]
                g.cut = True
            g.body_bytes += len(out)
            if out:
                yield out
            data = self._decoder.unconsumed_tail

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


# ----- the model text ---------------------------------------------------------------------------------------------
def cap_text(text: str, limit: int = MAX_TEXT_BYTES) -> tuple[str, bool]:
    """``(text, cut)``: ``text`` cut to at most ``limit`` UTF-8 bytes at a character boundary (``cut`` True when
    anything was dropped)."""
    if len(text) * 4 <= limit:
        return text, False
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", "ignore"), True


def salvage_content(body: bytes) -> str | None:
    """The message text of a chat-completion body cut short (at :data:`MAX_REPLY_BYTES`): the JSON string that
    follows the first ``"content"`` key after the first ``"message"`` key, read up to its end or to the cut, in one
    linear pass; None when there is none (no ``message`` / ``content`` key before the cut, or a value that is not
    text). ``"content": null`` gives None."""
    text = body.decode("utf-8", "ignore")
    i = text.find('"message"')
    if i < 0:
        return None
    i = text.find('"content"', i)
    if i < 0:
        return None
    j = _skip_space(text, i + len('"content"'))
    if j >= len(text) or text[j] != ":":
        return None
    j = _skip_space(text, j + 1)
    if j >= len(text) or text[j] != '"':
        return None
    scan = json.decoder.scanstring
    try:
        return scan(text, j + 1, False)[0]
    except ValueError:
        pass
    tail = text[j + 1:]
    # Cut inside the string: close it. A cut inside an escape (a lone backslash, half a \\uXXXX) is dropped.
    for drop in range(0, 7):
        try:
            return scan('"' + tail[:len(tail) - drop] + '"', 1, False)[0]
        except ValueError:
            continue
    return None


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


# ----- token counts -----------------------------------------------------------------------------------------------
def sane_usage(usage) -> tuple[dict | None, str | None]:
    """``(counts, problem)`` from a reply's usage block (a dict or an object with attributes): ``counts`` is
    ``{"prompt_tokens", "completion_tokens"}`` as ints when the block is sane — each count absent or null (read as
    0, as servers that count nothing send it), or a whole number from 0 to :data:`MAX_USAGE_TOKENS` (a float such
    as ``12.0`` is read as 12) — else None, with ``problem`` naming the first bad field and its value (at most 40
    characters). No usage block at all is ``({0, 0}, None)``."""
    counts = {}
    for name in ("prompt_tokens", "completion_tokens"):
        if usage is None:
            v = None
        elif isinstance(usage, dict):
            v = usage.get(name)
        else:
            v = getattr(usage, name, None)
        if v is None:
            counts[name] = 0
            continue
        n = _whole(v)
        if n is None or not 0 <= n <= MAX_USAGE_TOKENS:
            return None, f"{name}={str(v)[:40]!r}" if isinstance(v, str) else f"{name}={v!r:.40}"
        counts[name] = n
    return counts, None


def _whole(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        return int(v)
    return None


# ----- Retry-After --------------------------------------------------------------------------------------------------
#: The longest wait a ``Retry-After`` is honoured with (seconds); a reply that asks for longer is not retried (the
#: episode fails with ``api_error``, asked again when the same command is rerun).
MAX_RETRY_AFTER_S = 300.0


def retry_after(headers, now: float | None = None) -> float | None:
    """Seconds a reply asks the client to wait before it retries, or None when it says nothing usable: the
    ``retry-after-ms`` header (milliseconds, as OpenAI sends it) first, then ``retry-after`` as seconds or as an HTTP
    date (RFC 9110 section 10.2.3; a date in the past is 0). ``headers``: any mapping with ``get`` (case-insensitive
    as ``httpx``'s are, or lower-case keys)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        text = str(raw).strip()[:64]
        try:
            x = float(text)
        except ValueError:
            if scale != 1.0:
                continue
            from email.utils import parsedate_to_datetime

            try:
                when = parsedate_to_datetime(text)
            except (TypeError, ValueError, IndexError):
                continue
            if when is None or when.tzinfo is None:
                continue
            x = when.timestamp() - (time.time() if now is None else now)
            return max(0.0, x)
        if math.isfinite(x) and x >= 0:
            return x * scale
    return None


# ----- the request gate -------------------------------------------------------------------------------------------
class GateClosed(RuntimeError):
    """The run that owns the gate stopped: no further request is sent."""


#: The outcomes a gate is told about (``RequestGate.release``).
OUTCOMES = ("ok", "rate_limited", "server_error", "connection", "timeout", "client_error", "malformed")
#: Adaptive concurrency: a window of completed requests is judged once it holds ``max(WINDOW_MIN, 2 x limit)``.
WINDOW_MIN = 16
#: ... lowered (x DECREASE) when this share of the window was rate-limited (429), or failed (5xx, connection,
#: timeout), or when the window's median latency is above LATENCY_RISE x the best window's (and 0.5 s more) ...
UNHEALTHY_SHARE = 0.15
LATENCY_RISE = 2.0
DECREASE = 0.75
#: ... and raised (by a quarter, at least one) when both shares are below half of UNHEALTHY_SHARE and the median
#: latency is within 1.5 x the best; doubled (at most to the ceiling) when no request of the window was
#: rate-limited or failed. Only requests let through after the last change are judged (the ones sent before it
#: tell of the old limit: a storm's last 429s would lower it again after the storm ended).
INCREASE = 0.25


class _Bucket:
    """A token bucket: ``rate`` per minute, holding at most one second's worth (at least one request's cost); a
    cost is taken once the level covers it (or the whole capacity), so a request larger than the capacity still
    goes, and the level may go below zero (later requests wait for the debt)."""

    def __init__(self, per_minute: float, clock):
        self.rate = float(per_minute) / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.clock = clock
        self.t = clock()

    def _fill(self) -> None:
        now = self.clock()
        self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
        self.t = now

    def wait(self, cost: float) -> float:
        """Seconds until ``cost`` may be taken (0: now)."""
        self._fill()
        need = min(cost, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, cost: float) -> None:
        self._fill()
        self.level -= cost


class Ticket:
    """One request let through a :class:`RequestGate`: when it started, the tokens reserved for it, and its number
    (requests let through so far, this one included)."""

    __slots__ = ("start", "tokens", "released", "number")

    def __init__(self, start: float, tokens: float, number: int = 0):
        self.start, self.tokens, self.released, self.number = start, tokens, False, number


class RequestGate:
    """Model requests in flight across the threads of one process (``eval --concurrency``; docs/evaluation.md,
    "Many requests in flight").

    At most ``limit`` requests are in flight at once. ``limit`` starts at ``max_concurrency`` and adapts (AIMD, as
    lmms-eval's ``async_openai`` model): every window of completed requests (:data:`WINDOW_MIN` or twice the limit,
    whichever is more) it is lowered by :data:`DECREASE` when the window was unhealthy — rate-limited (429) or failing
    (5xx, connection, timeout) in :data:`UNHEALTHY_SHARE` of its requests or more, or slower than
    :data:`LATENCY_RISE` x the best window's median latency — and raised again by :data:`INCREASE` (at least one)
    while healthy, doubled after a window with no 429 and no failure, never above ``max_concurrency`` nor below 1;
    only requests let through after the last change are judged. ``max_rpm`` / ``max_tpm``: token buckets (requests,
    and prompt + completion tokens, per minute) shared by the threads; a request's tokens are not known before its
    reply, so the mean of the replies so far is reserved and the difference settled after (the first request goes
    alone until its reply says how many tokens a request takes). The gate never retries anything: the agent's
    ``max_retries`` bound the attempts; a retry waiting out its backoff or ``Retry-After`` holds no place.

    ``acquire()`` blocks until a request may go and returns a :class:`Ticket`; ``release(ticket, outcome, latency,
    tokens)`` reports how it ended (:data:`OUTCOMES`). ``close()`` wakes every waiter with :class:`GateClosed`.
    ``snapshot()`` gives the figures a progress bar and a run summary show. Times in seconds (``clock``: monotonic).
    """

    def __init__(self, max_concurrency: int = 16, max_rpm: float | None = None, max_tpm: float | None = None,
                 adaptive: bool = True, clock=time.monotonic):
        self.max_concurrency = max(1, int(max_concurrency))
        self.limit = float(self.max_concurrency)
        self.adaptive = bool(adaptive)
        self.clock = clock
        self._cond = threading.Condition()
        self._rpm = _Bucket(max_rpm, clock) if max_rpm else None
        self._tpm = _Bucket(max_tpm, clock) if max_tpm else None
        self.max_rpm, self.max_tpm = max_rpm, max_tpm
        self._tokens_seen = 0.0
        self._replies_with_tokens = 0
        self._window: list[tuple[str, float]] = []
        self._changed_after = 0  # the number of requests let through when the limit last changed
        self._best_median: float | None = None
        self.closed = False
        self.in_flight = 0
        self.counts = {"requests": 0, "peak_in_flight": 0, "retries": 0, "lowered": 0, "raised": 0,
                       "lowest_limit": self.max_concurrency, "waited_s": 0.0, **{o: 0 for o in OUTCOMES}}

    # ----- letting requests through -----------------------------------------------------------------------------
    def _estimate(self) -> float:
        return self._tokens_seen / self._replies_with_tokens if self._replies_with_tokens else 0.0

    def _rate_wait(self, est: float) -> float | None:
        """Seconds the rate budgets ask a request to wait (0: go now); None: wait for a reply (the first request
        under ``max_tpm`` goes alone)."""
        if self._tpm is not None and not self._replies_with_tokens and not self.counts["ok"] and self.in_flight:
            return None
        w = 0.0
        if self._rpm is not None:
            w = max(w, self._rpm.wait(1.0))
        if self._tpm is not None and est > 0:
            w = max(w, self._tpm.wait(est))
        return w

    def acquire(self, retry: bool = False) -> Ticket:
        """Wait for a place (and the rate budgets); ``retry``: this is a retry of a request (counted)."""
        t0 = self.clock()
        with self._cond:
            while True:
                if self.closed:
                    raise GateClosed("the run stopped: no further request is sent")
                wait = None
                if self.in_flight < max(1, int(self.limit)):
                    est = self._estimate()
                    wait = self._rate_wait(est)
                    if wait == 0.0:
                        if self._rpm is not None:
                            self._rpm.take(1.0)
                        if self._tpm is not None:
                            self._tpm.take(est)
                        self.in_flight += 1
                        c = self.counts
                        c["requests"] += 1
                        c["retries"] += int(bool(retry))
                        c["peak_in_flight"] = max(c["peak_in_flight"], self.in_flight)
                        now = self.clock()
                        c["waited_s"] += now - t0
                        return Ticket(now, est, c["requests"])
                self._cond.wait(timeout=wait)  # None: until a request ends (or the gate closes)

    def release(self, ticket: Ticket, outcome: str, latency: float | None = None, tokens: float | None = None) -> None:
        """A request let through by :meth:`acquire` ended with ``outcome`` (:data:`OUTCOMES`) after ``latency``
        seconds (default: since it was let through), its reply counting ``tokens`` (prompt + completion; None:
        unknown)."""
        if ticket.released:
            return
        ticket.released = True
        latency = self.clock() - ticket.start if latency is None else float(latency)
        with self._cond:
            self.in_flight = max(0, self.in_flight - 1)
            self.counts[outcome if outcome in OUTCOMES else "malformed"] += 1
            if tokens is not None and tokens > 0:
                self._tokens_seen += float(tokens)
                self._replies_with_tokens += 1
            if self._tpm is not None:  # settle the reservation: a failed request used no tokens
                self._tpm.level += ticket.tokens - (float(tokens or 0) if outcome == "ok" else 0.0)
                self._tpm.level = min(self._tpm.level, self._tpm.capacity)
            if self.adaptive and ticket.number > self._changed_after:
                self._judge(outcome, latency)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    # ----- adaptive concurrency -------------------------------------------------------------------------------
    def _judge(self, outcome: str, latency: float) -> None:
        self._window.append((outcome, latency))
        if len(self._window) < max(WINDOW_MIN, 2 * math.ceil(self.limit)):
            return
        win, self._window = self._window, []
        n = len(win)
        limited = sum(o == "rate_limited" for o, _ in win) / n
        failing = sum(o in ("server_error", "connection", "timeout") for o, _ in win) / n
        ok = sorted(lat for o, lat in win if o == "ok")
        median = ok[len(ok) // 2] if ok else None
        best = self._best_median
        slow = median is not None and best is not None and median > LATENCY_RISE * best and median - best > 0.5
        if median is not None and (best is None or median < best):
            self._best_median = median
        c = self.counts
        if limited >= UNHEALTHY_SHARE or failing >= UNHEALTHY_SHARE or slow:
            new = max(1.0, math.floor(self.limit * DECREASE))
            if new < self.limit:
                self.limit = new
                self._changed_after = c["requests"]
                c["lowered"] += 1
                c["lowest_limit"] = min(c["lowest_limit"], int(new))
        elif limited < UNHEALTHY_SHARE / 2 and failing < UNHEALTHY_SHARE / 2 and \
                (median is None or best is None or median <= 1.5 * best):
            step = self.limit if not limited and not failing else max(1.0, math.floor(self.limit * INCREASE))
            new = min(float(self.max_concurrency), self.limit + step)
            if new > self.limit:
                self.limit = new
                self._changed_after = c["requests"]
                c["raised"] += 1

    def snapshot(self) -> dict:
        """The gate's figures now: ``in_flight``, ``limit`` (the adaptive concurrency), ``max_concurrency``,
        ``requests`` (attempts let through), ``retries``, ``peak_in_flight``, ``lowest_limit``, ``lowered`` /
        ``raised`` (adaptive changes), ``waited_s`` (summed time requests waited for a place or a budget), and a
        count per outcome (:data:`OUTCOMES`)."""
        with self._cond:
            return {"in_flight": self.in_flight, "limit": int(self.limit), "max_concurrency": self.max_concurrency,
                    **dict(self.counts), "waited_s": round(self.counts["waited_s"], 3)}


_GATE: list = [None]


def current_gate() -> RequestGate | None:
    """The gate this process's API agents send their requests through (None: no gate, nothing limited)."""
    return _GATE[0]


def install_gate(gate: RequestGate | None) -> RequestGate | None:
    """Send this process's API requests through ``gate`` from now on (None: no gate); returns the one before."""
    before, _GATE[0] = _GATE[0], gate
    return before


@contextmanager
def use_gate(gate: RequestGate | None):
    """Send this process's API requests through ``gate`` inside the block (the runner's, for the threads of a
    run); the gate is closed at the end."""
    before = install_gate(gate)
    try:
        yield gate
    finally:
        _GATE[0] = before
        if gate is not None:
            gate.close()
