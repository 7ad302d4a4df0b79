"""A real HTTP server on loopback speaking /v1/chat/completions, answering from a script (for the real client).

Script entries, consumed one per request (when empty, a valid one-step answer):
``("ok", text)``; ``("status", code)`` (an error status with a JSON error body, ``retry-after: 0``);
``("sleep", seconds, text)``; ``("raw", body_bytes)`` (status 200, that body: a malformed reply);
``("echo_auth",)`` (a valid answer whose text contains the request's Authorization header);
``("drop",)`` (the connection is closed without a reply);
``("tool_calls", calls, text=None)`` (an assistant message with function calls; each call is ``(name, arguments)``
— arguments a JSON text, or any value sent as given — or a dict sent verbatim as the tool-call object, e.g. one
without an id); ``("usage", block, text)`` (a valid answer whose ``usage`` is ``block``, sent as given: text,
NaN, negative or huge counts); ``("null_content",)`` (a message whose content is null, no tool calls);
``("drip", seconds, text)`` (the headers of a valid answer at once, then its body one byte every ``seconds``);
``("drip_headers", seconds)`` (the status line and headers themselves one byte every ``seconds``);
``("encoded", body_bytes, encoding)`` (status 200, that body with ``content-encoding: encoding``, e.g. a gzip bomb).
When the script is empty and ``responder`` is set, ``responder(body)`` gives the action. ``("status", code,
retry_after)`` sends that ``retry-after`` header value instead of ``0`` (None: no header).

Load, for the concurrency tests and benchmarks (``FakeServer(latency=..., jitter=..., rate_429=..., seed=...)``):
when the script is empty and there is no responder, each request is answered after ``latency`` ± ``jitter``
seconds (uniform), and a share ``rate_429`` of them with a 429 carrying ``retry-after: <retry_after>`` instead
(seeded: the same draws for the same order of requests). ``in_flight`` / ``peak_in_flight`` count the requests being
answered at once (the peak since the start, or since ``reset_peak()``); ``spans`` holds each request's
(start, end) on ``time.monotonic()``.

A rate-limit storm (``start_storm(seconds, retry_after)``): from the next request on (or from ``at``, a
``time.monotonic()`` value), for ``seconds``, every request the load answers (nothing scripted, no responder) gets
a 429 at once carrying ``retry-after: <retry_after>``; ``storm_start`` is when it began (None: not yet) and
``storm_429`` counts the 429s it sent. After it, the load answers as before.

Counting, for the hostile tests: ``sent`` holds, per request in order, the body bytes the server managed to write
(for ``drip`` and ``drip_headers``: bytes of the whole response) and ``abandoned`` how many replies the client cut
off (a write failed); ``abandoned_event`` is set at the first.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "sk-test-DO-NOT-LEAK-4f1c9a"
DEFAULT_ANSWER = '{"actions": ["W"], "step_nums": [1]}'


class FakeServer:
    """Answers from ``script``; records every request (``requests``: path and JSON body) and its headers.
    ``keep_alive``: speak HTTP/1.1 and keep connections open between requests."""

    def __init__(self, usage=(321, 12), keep_alive: bool = False, latency: float = 0.0, jitter: float = 0.0,
                 rate_429: float = 0.0, retry_after: str | None = "1", seed: int = 0):
        import random

        self.latency, self.jitter, self.rate_429, self.retry_after = latency, jitter, rate_429, retry_after
        self.rng = random.Random(seed)
        self.storm_s, self.storm_retry_after, self.storm_start, self.storm_429 = 0.0, "1", None, 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self.spans: list[tuple[float, float]] = []
        self.script: list[tuple] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.usage = usage
        self.responder = None
        self.sent: list[int] = []
        self.abandoned = 0
        self.abandoned_event = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            # keep_alive: HTTP/1.1, connections reused between requests (the default closes each after its reply)
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def log_message(self, *a):  # quiet
                pass

            def _abandoned(self, slot: int, n: int):
                with server.lock:
                    server.sent[slot] = n
                    server.abandoned += 1
                server.abandoned_event.set()

            def _send(self, code: int, payload: bytes, extra=(), slot: int | None = None):
                try:
                    self.send_response(code)
                    self.send_header("content-type", "application/json")
                    for k, v in extra:
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    n = 0
                    for i in range(0, len(payload), 1 << 16):  # in pieces, so a client that stops reading is seen
                        self.wfile.write(payload[i:i + (1 << 16)])
                        n += len(payload[i:i + (1 << 16)])
                    if slot is not None:
                        server.sent[slot] = n
                except (BrokenPipeError, ConnectionResetError):
                    if slot is not None:
                        self._abandoned(slot, n)

            def _drip(self, data: bytes, seconds: float, slot: int):
                n = 0
                try:
                    for k in range(len(data)):
                        self.wfile.write(data[k:k + 1])
                        self.wfile.flush()
                        n += 1
                        with server.lock:
                            server.sent[slot] = n
                        time.sleep(seconds)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self._abandoned(slot, n)
                self.close_connection = True

            def _completion(self, body, message, finish="stop", usage=None) -> bytes:
                if usage is None:
                    p, c = server.usage
                    usage = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
                return json.dumps({
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage}).encode()

            def do_POST(self):
                t0 = time.monotonic()
                with server.lock:
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    self._post()
                finally:
                    with server.lock:
                        server.in_flight -= 1
                        server.spans.append((t0, time.monotonic()))

            def _post(self):
                n = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(n))
                with server.lock:
                    server.requests.append({"path": self.path, "body": body})
                    server.headers.append(dict(self.headers))
                    if server.script:
                        action = server.script.pop(0)
                    elif server.responder is not None:
                        action = server.responder(body)
                    else:
                        action = server.load_action()
                    slot = len(server.sent)
                    server.sent.append(0)
                if action[0] == "drip":
                    payload = self._completion(body, {"role": "assistant", "content": action[2]})
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.flush()
                    self._drip(payload, action[1], slot)
                    return
                if action[0] == "drip_headers":
                    payload = self._completion(body, {"role": "assistant", "content": DEFAULT_ANSWER})
                    head = (f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                            f"content-length: {len(payload)}\r\n\r\n").encode()
                    self._drip(head + payload, action[1], slot)
                    return
                if action[0] == "encoded":
                    self._send(200, action[1], [("content-encoding", action[2])], slot=slot)
                    return
                if action[0] == "usage":
                    self._send(200, self._completion(body, {"role": "assistant", "content": action[2]},
                                                     usage=action[1]), slot=slot)
                    return
                if action[0] == "null_content":
                    self._send(200, self._completion(body, {"role": "assistant", "content": None}), slot=slot)
                    return
                if action[0] == "status":
                    payload = json.dumps({"error": {"message": f"status {action[1]}", "type": "x"}}).encode()
                    ra = action[2] if len(action) > 2 else "0"
                    self._send(action[1], payload, [("retry-after", str(ra))] if ra is not None else [])
                    return
                if action[0] == "raw":
                    self._send(200, action[1], slot=slot)
                    return
                if action[0] == "drop":
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if action[0] == "sleep":
                    time.sleep(action[1])
                message = {"role": "assistant"}
                finish = "stop"
                if action[0] == "echo_auth":
                    auth = self.headers.get("Authorization", "")
                    message["content"] = f'{{"actions": ["W"], "step_nums": [1]}} (your header was {auth})'
                elif action[0] == "tool_calls":
                    message["content"] = action[2] if len(action) > 2 else None
                    message["tool_calls"] = [
                        c if isinstance(c, dict) else
                        {"id": f"call_{k}_{len(server.requests)}", "type": "function",
                         "function": {"name": c[0], "arguments": c[1]}}
                        for k, c in enumerate(action[1])]
                    finish = "tool_calls"
                else:
                    message["content"] = action[-1]
                self._send(200, self._completion(body, message, finish), slot=slot)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # many clients connecting at once (the concurrency tests) are not turned away

            def handle_error(self, request, client_address):  # a client that cut a reply off is no news
                import sys

                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def load_action(self) -> tuple:
        """The action of a request when nothing is scripted (called under ``lock``): see the module doc."""
        if self.storm_s:
            now = time.monotonic()
            if self.storm_start is None:
                self.storm_start = now
            if self.storm_start <= now < self.storm_start + self.storm_s:
                self.storm_429 += 1
                return ("status", 429, self.storm_retry_after)
        if self.rate_429 and self.rng.random() < self.rate_429:
            return ("status", 429, self.retry_after)
        if self.latency or self.jitter:
            return ("sleep", max(0.0, self.latency + self.rng.uniform(-self.jitter, self.jitter)), DEFAULT_ANSWER)
        return ("ok", DEFAULT_ANSWER)

    def start_storm(self, seconds: float, retry_after: str | None = "10", at: float | None = None) -> None:
        """Every load-answered request gets a 429 (``retry-after: retry_after``) for ``seconds`` from the next
        request (or from ``at`` on ``time.monotonic()``); ``seconds`` 0 ends a storm."""
        with self.lock:
            self.storm_s, self.storm_retry_after, self.storm_start, self.storm_429 = \
                float(seconds), retry_after, at, 0

    def reset_peak(self) -> None:
        with self.lock:
            self.peak_in_flight = self.in_flight

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port_url() -> str:
    """A loopback URL where nothing listens (a port bound, then released)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"
