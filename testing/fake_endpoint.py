"""A scripted OpenAI-compatible endpoint on loopback, for tests and benchmarks (not a model).

A real HTTP server (``ThreadingHTTPServer`` on 127.0.0.1, one thread per request) answering
``POST /v1/chat/completions`` and ``GET /v1/models``. ``respond(request, attempt)`` decides each
reply; ``attempt`` counts the requests seen for the same conversation so far (1 for the first),
so a script can fail the first tries and then succeed. A reply is a dict:

- ``{"content": "..."}``, optionally ``"tool_calls": [{"name": ..., "arguments": {...}}]``
- ``{"status": 500}`` (any HTTP error status)
- ``{"drop": True}``: close the connection without answering
- ``{"sleep": seconds, ...}``: wait first (longer than the client's timeout: a timeout)

The server counts requests, connections, the most requests in flight at once, and ``busy_seconds`` (the sum
of every request's time in the server): over a stretch of wall time, busy seconds / wall seconds
is the mean number of requests in flight.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


class FakeEndpoint:
    """Context manager running the scripted server; ``url`` is its ``/v1`` base."""

    def __init__(self, respond: Callable[[dict, int], dict], delay: float = 0.0) -> None:
        self.respond, self.delay = respond, delay
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.busy_seconds = 0.0
        self.connections = 0  # TCP connections accepted (kept-alive ones serve many requests)
        self.attempts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self):  # -> Self
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, a kept-alive connection waits for the
            # client's delayed ACK (~40 ms) before the body. Real servers (uvicorn) set TCP_NODELAY too.
            disable_nagle_algorithm = True

            def log_message(self, *args) -> None:  # quiet
                pass

            def setup(self) -> None:
                super().setup()
                with endpoint._lock:
                    endpoint.connections += 1

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                start = time.perf_counter()
                with endpoint._lock:
                    endpoint.requests += 1
                    endpoint.in_flight += 1
                    endpoint.max_in_flight = max(endpoint.max_in_flight, endpoint.in_flight)
                try:
                    self._answer(json.loads(body))
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer
                finally:
                    with endpoint._lock:
                        endpoint.in_flight -= 1
                        endpoint.busy_seconds += time.perf_counter() - start

            def _answer(self, request: dict) -> None:
                key = hashlib.sha1(conversation_key(request).encode()).hexdigest()
                with endpoint._lock:
                    endpoint.attempts[key] += 1
                    attempt = endpoint.attempts[key]
                reply = endpoint.respond(request, attempt)
                time.sleep(endpoint.delay + reply.get("sleep", 0.0))
                if reply.get("drop"):
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if reply.get("status", 200) != 200:
                    self._send(reply["status"], {"error": {"message": "scripted failure"}})
                    return
                message = {"role": "assistant", "content": reply.get("content", "")}
                if reply.get("tool_calls"):
                    message["tool_calls"] = [
                        {"id": f"call_{i}", "type": "function",
                         "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}}
                        for i, c in enumerate(reply["tool_calls"])]
                self._send(200, {"id": "cmpl-fake", "object": "chat.completion", "model": request.get("model"),
                                 "choices": [{"index": 0, "message": message,
                                              "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop"}]})

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 256  # many clients connect at once

        self._server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True, name="fake-endpoint").start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
