"""What the API agents read from the wire, bounded: a total deadline per request, and the sanity of a reply's token
counts.

The ``openai`` client's ``timeout`` is per read, so a server that drips its reply one byte at a time never times
out. :class:`ReplyGuard` gives an ``httpx`` client (the one the ``openai`` client is built on) a request hook that
asks the connection layer (``httpcore``'s ``trace`` extension) for each socket it opens; a watchdog timer started by
:meth:`ReplyGuard.deadline` shuts those sockets down when the request's total time runs out, which ends any read in
progress (headers or body) — the request fails and the guard says it :attr:`~ReplyGuard.expired`.

A guard serves one request at a time (an agent answers one turn at a time; the runner's workers are processes).

Limits (documented in docs/agents.md): :data:`MAX_USAGE_TOKENS` (10⁸) tokens a sane usage block may count for one
request.
"""

from __future__ import annotations

import math
import socket
import threading
import time
import weakref
from contextlib import contextmanager

__all__ = ["MAX_USAGE_TOKENS", "ReplyGuard", "sane_usage"]

#: The most tokens a usage count may state for one request; more is not believed (no model reads or writes 10⁸
#: tokens in one request).
MAX_USAGE_TOKENS = 10 ** 8


class ReplyGuard:
    """The total deadline of one client's requests (see the module doc).

    ``hooks()`` gives the ``event_hooks`` of an ``httpx`` client; ``with guard.deadline(seconds): ...`` runs one
    request under a total deadline. After it, :attr:`expired` says whether the deadline passed (the request was
    abandoned)."""

    def __init__(self):
        self._sockets: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()
        self._until: float | None = None
        self.expired = False

    # ----- the deadline ---------------------------------------------------------------------------------------
    @contextmanager
    def deadline(self, seconds: float):
        """Run one request: a watchdog shuts its sockets down ``seconds`` after the start."""
        self.expired = False
        self._until = time.monotonic() + float(seconds)
        timer = threading.Timer(float(seconds), self._fire)
        timer.daemon = True
        timer.start()
        try:
            yield self
        finally:
            timer.cancel()
            self._until = None

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
            except Exception:  # a connection layer without it
                sock = None
            if isinstance(sock, socket.socket):
                with self._lock:
                    self._sockets.add(sock)

    # ----- client hooks -------------------------------------------------------------------------------------
    def hooks(self) -> dict:
        """``event_hooks`` for an ``httpx`` client."""
        return {"request": [self._on_request]}

    def _on_request(self, request) -> None:
        ext = dict(request.extensions)
        ext["trace"] = self._trace
        request.extensions = ext


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
