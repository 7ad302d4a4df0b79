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

A guard serves one request at a time (an agent answers one turn at a time; the runner's workers are processes).

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
           "salvage_content", "sane_usage"]

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
