"""A scripted OpenAI-compatible endpoint on loopback, for tests and benchmarks (not a model).

A real HTTP/1.1 server on 127.0.0.1 (asyncio, on its own thread) answering
``POST /v1/chat/completions`` and ``GET /v1/models``. ``respond(request, attempt)`` decides each
reply; ``attempt`` counts the requests seen for the same conversation so far (1 for the first),
so a script can fail the first tries and then succeed. A reply is a dict:

- ``{"content": "..."}``, optionally ``"tool_calls": [{"name": ..., "arguments": {...}}]``
- ``{"status": 500}`` (any HTTP error status)
- ``{"drop": True}``: close the connection without answering
- ``{"raw": b"..."}``: these bytes as the whole reply, then close (a malformed reply)
- ``{"sleep": seconds, ...}``: wait first (longer than the client's timeout: a timeout)

``models`` is what ``GET /v1/models`` answers: the listed model ids (empty: an empty list), or an
HTTP status (``transformers serve`` has answered 500 there). ``serves``: the one model the server
is pinned to; a chat request for another gets HTTP 400 with the server's message, as ``transformers
serve`` answers (vLLM: 404).

The server records each request's target (``targets``: path and query) and ``Authorization``
header (``authorizations``), and counts requests, connections, the most requests in flight at
once, and ``busy_seconds`` (the sum of every request's time in the server): over a stretch of wall
time, busy seconds / wall seconds is the mean number of requests in flight. It must not be what limits a benchmark of a client: an
event loop waits out the latency with a timer, not a thread per request, so a request costs the
server ~0.1 ms of CPU (a ``ThreadingHTTPServer`` took ~0.5 ms; ``bench/bench_eval.py`` prints it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http import HTTPStatus

logger = logging.getLogger(__name__)


def conversation_key(request: dict) -> str:
    """Identifies a conversation by its first user message's text (images left out)."""
    for message in request.get("messages", []):
        if message.get("role") == "user":
            return user_text(message)
    return ""


def user_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content or "")


class _Connection(asyncio.Protocol):
    """One client connection: requests one at a time (kept alive), each answered after its delay."""

    def __init__(self, endpoint: FakeEndpoint) -> None:
        self.endpoint, self.transport, self.buffer = endpoint, None, bytearray()
        self.busy, self.keep_alive = False, True

    def connection_made(self, transport) -> None:
        self.transport = transport
        # Headers and body must not wait for the client's delayed ACK (~40 ms); real servers set it too.
        transport.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.endpoint.connections += 1
        self.endpoint._open.add(transport)

    def connection_lost(self, exc) -> None:
        self.endpoint._open.discard(self.transport)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next()

    def _next(self) -> None:
        """Parse the next whole request in the buffer, if any and none is being answered."""
        end = self.buffer.find(b"\r\n\r\n")
        if self.busy or self.transport is None or end < 0:
            return
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        try:
            method, path, version = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
            length = int(headers.get("content-length") or 0)
        except ValueError:
            self.keep_alive = False
            self.send(400, {"error": "bad request"})
            return
        if len(self.buffer) < end + 4 + length:
            return  # the body is still coming
        body = bytes(self.buffer[end + 4:end + 4 + length])
        del self.buffer[:end + 4 + length]
        self.keep_alive = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        self.busy = True
        self.endpoint.targets.append(path)
        self.endpoint.authorizations.append(headers.get("authorization"))
        if method == "POST":
            self.endpoint._post(self, body)
        elif method == "GET" and path.partition("?")[0].rstrip("/").endswith("/models"):
            models = self.endpoint.models
            if isinstance(models, int):
                self.send(models, {"error": {"message": "scripted failure"}})
            else:
                self.send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in models]})
        else:
            self.send(404, {"error": "not found"})

    def send(self, status: int, body: dict) -> None:
        if self.transport is None or self.transport.is_closing():
            return  # the client gave up (timeout): nothing to answer
        data = json.dumps(body).encode()
        head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n" + ("" if self.keep_alive else "Connection: close\r\n") + "\r\n")
        self.transport.write(head.encode() + data)
        if not self.keep_alive:
            self.transport.close()
            return
        self.busy = False
        self._next()


class FakeEndpoint:
    """Context manager running the scripted server; ``url`` is its ``/v1`` base."""

    def __init__(self, respond: Callable[[dict, int], dict], delay: float = 0.0, ssl_context=None,
                 models: tuple[str, ...] | int = ("fake-model",), serves: str | None = None) -> None:
        self.respond, self.delay, self.ssl_context = respond, delay, ssl_context  # a context: https
        self.models, self.serves = models, serves
        self.requests = 0
        self.targets: list[str] = []
        self.authorizations: list[str | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.busy_seconds = 0.0
        self.connections = 0  # TCP connections accepted (kept-alive ones serve many requests)
        self.attempts: Counter[str] = Counter()
        self._open: set = set()  # transports of open connections, closed on exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._address: tuple[str, int] | None = None

    @property
    def url(self) -> str:
        host, port = self._address
        return f"{'https' if self.ssl_context else 'http'}://{host}:{port}/v1"

    def __enter__(self):  # -> Self
        self._loop = asyncio.new_event_loop()
        server = self._loop.run_until_complete(
            self._loop.create_server(lambda: _Connection(self), "127.0.0.1", 0, backlog=256, ssl=self.ssl_context))
        self._server, self._address = server, server.sockets[0].getsockname()[:2]
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="fake-endpoint")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        def stop() -> None:
            self._server.close()
            for transport in list(self._open):
                transport.abort()
            self._loop.stop()

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(5)
        self._loop.run_until_complete(asyncio.sleep(0))  # let the aborted connections finish closing
        self._loop.close()

    def close_idle_connections(self) -> None:
        """Close every kept-alive connection with no request in progress, as a server does when its
        keep-alive timeout runs out."""
        def close() -> None:
            for transport in list(self._open):
                if not transport.get_protocol().busy:
                    transport.close()

        self._loop.call_soon_threadsafe(close)

    # -- on the event loop's thread: no locks needed --

    def _post(self, conn: _Connection, body: bytes) -> None:
        start = time.perf_counter()
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            request = json.loads(body)
            key = hashlib.sha1(conversation_key(request).encode()).hexdigest()
            self.attempts[key] += 1
            if self.serves is not None and request.get("model") != self.serves:
                reply = {"status": 400, "message": f"model {request.get('model')!r} is not served here "
                                                    f"(this server serves {self.serves!r})"}
            else:
                reply = self.respond(request, self.attempts[key])
        except Exception:  # a broken script or request: the client sees a dropped connection
            logger.exception("the fake endpoint could not answer")
            request, reply = {}, {"drop": True}
        self._loop.call_later(self.delay + reply.get("sleep", 0.0), self._finish, conn, request, reply, start)

    def _finish(self, conn: _Connection, request: dict, reply: dict, start: float) -> None:
        try:
            if reply.get("drop") or reply.get("raw"):
                if conn.transport is not None:
                    conn.transport.write(reply.get("raw", b""))
                    conn.transport.close()
            elif reply.get("status", 200) != 200:
                conn.send(reply["status"], {"error": {"message": reply.get("message", "scripted failure")}})
            else:
                message = {"role": "assistant", "content": reply.get("content", "")}
                if reply.get("tool_calls"):
                    message["tool_calls"] = [
                        {"id": f"call_{i}", "type": "function",
                         "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                        for i, c in enumerate(reply["tool_calls"])]
                conn.send(200, {"id": "cmpl-fake", "object": "chat.completion", "model": request.get("model"),
                                "choices": [{"index": 0, "message": message,
                                             "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}]})
        finally:
            self.in_flight -= 1
            self.busy_seconds += time.perf_counter() - start
