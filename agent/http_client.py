"""The eval client's own HTTP/1.1: a POST in one write, its reply read by Content-Length, in chunks
or to the close, 1xx replies skipped; one reply reader (``_reply``) driven by a blocking socket
(``Connection``, one per thread) or by an event loop's streams (``AsyncConnections``, a pool that
many episodes in one thread share).

``http.client`` took ~0.15 ms of CPU per request here (headers and body in two writes, reply
headers parsed through the ``email`` package), this ~0.03 ms. Errors are ``OSError``,
``TimeoutError`` or ``http.client``'s own (``RemoteDisconnected``, ``BadStatusLine``,
``IncompleteRead``, ...), whichever driver read the reply.
"""

from __future__ import annotations

import asyncio
import http.client
import select
import socket
import ssl
import sys

MAX_LINE = 65536


def _reply():
    """Reads one reply: a generator that yields what it needs next, ("line", 0) (one line, with its
    end), ("exact", n) (n bytes, fewer at the close) or ("rest", 0) (up to the close), is sent those
    bytes, and returns (status, body, keep the connection)."""
    version, status, headers = yield from _head()
    while 100 <= status < 200:
        version, status, headers = yield from _head()
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if status in (204, 304):
        return status, b"", keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return status, (yield from _chunked()), keep
    if "content-length" in headers:
        length = int(headers["content-length"]) if headers["content-length"].isdigit() else -1
        if length < 0:
            raise http.client.HTTPException(f"bad Content-Length {headers['content-length']!r}")
        data = yield ("exact", length)
        if len(data) < length:
            raise http.client.IncompleteRead(data, length - len(data))
        return status, data, keep
    return status, (yield ("rest", 0)), False


def _line():
    line = yield ("line", 0)
    if len(line) > MAX_LINE:
        raise http.client.LineTooLong("reply line")
    return line


def _head():
    line = yield from _line()
    if not line:
        raise http.client.RemoteDisconnected("the server closed the connection without a reply")
    version, _, rest = line.decode("iso-8859-1").partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/") or not code.isdigit() or rest[3:4] not in ("", " ", "\r", "\n"):
        raise http.client.BadStatusLine(line.decode("iso-8859-1"))
    headers = {}
    for _ in range(100):
        line = yield from _line()
        if line in (b"\r\n", b"\n", b""):
            return version, int(code), headers
        name, _, value = line.decode("iso-8859-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    raise http.client.HTTPException("more than 100 reply headers")


def _chunked():
    parts = []
    while True:
        size = (yield from _line()).split(b";", 1)[0].strip()
        try:
            size = int(size, 16)
        except ValueError:
            raise http.client.IncompleteRead(b"".join(parts)) from None
        if size == 0:
            break
        part = yield ("exact", size)
        if len(part) < size:
            raise http.client.IncompleteRead(b"".join(parts) + part, size - len(part))
        parts.append(part)
        yield from _line()  # the CRLF after each chunk
    while (yield from _line()) not in (b"\r\n", b"\n", b""):  # trailers
        pass
    return b"".join(parts)


def _dropped(sock) -> bool:
    """An idle kept-alive socket with something to read was closed by the server (or is out of step)."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class Connection:
    """One kept-alive connection on a blocking socket (TLS with ``context``), for one thread."""

    def __init__(self, host: str, port: int, timeout: float, context: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout, self.context = host, port, timeout, context
        self.sock = self._reader = None

    def close(self) -> None:
        if self.sock is not None:
            self._reader.close()
            self.sock.close()
        self.sock = self._reader = None

    def post(self, request: bytes) -> tuple[int, bytes]:
        """Send a whole request (head and body); the reply's (status, body)."""
        if self.sock is not None and _dropped(self.sock):
            self.close()  # the server closed it while idle: reconnect, as urllib3 does
        if self.sock is None:
            sock = socket.create_connection((self.host, self.port), self.timeout)
            # Without it a reply's first write would wait for our delayed ACK (as urllib3 sets it).
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.context is not None:
                try:
                    sock = self.context.wrap_socket(sock, server_hostname=self.host)
                except BaseException:  # a refused handshake: the plain socket is ours to close
                    sock.close()
                    raise
            self.sock, self._reader = sock, sock.makefile("rb")
        self.sock.sendall(request)
        reader, reply = self._reader, _reply()
        want = next(reply)
        try:
            while True:
                kind, size = want
                want = reply.send(reader.readline(MAX_LINE + 1) if kind == "line"
                                  else reader.read(size) if kind == "exact" else reader.read())
        except StopIteration as done:
            status, data, keep = done.value
        if not keep:
            self.close()
        return status, data


async def _within(seconds: float, coroutine):
    """``coroutine``'s result, or ``TimeoutError`` after ``seconds`` (``asyncio.timeout`` is 3.11+)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await coroutine
    try:
        return await asyncio.wait_for(coroutine, seconds)
    except asyncio.TimeoutError:
        raise TimeoutError from None


class AsyncConnections:
    """Kept-alive connections that the episodes of one event loop take in turn: an exchange takes an
    idle one (or opens one) and gives it back after a reply that keeps it; at most one per request
    in flight. No thread per request: the loop's CPU per request is what a thread handoff cost."""

    def __init__(self, host: str, port: int, timeout: float, context: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout, self.context = host, port, timeout, context
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    def close(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()

    async def post(self, request: bytes) -> tuple[int, bytes]:
        """As ``Connection.post``; the whole exchange (connecting included) within the timeout."""
        return await _within(self.timeout, self._post(request))

    async def _post(self, request: bytes) -> tuple[int, bytes]:
        reader = writer = None
        while self._idle:
            reader, writer = self._idle.pop()
            if not reader.at_eof():  # else the server closed it while idle: the next one
                break
            writer.close()
            reader = writer = None
        if writer is None:
            reader, writer = await asyncio.open_connection(
                self.host, self.port, ssl=self.context, server_hostname=self.host if self.context else None,
                limit=MAX_LINE + 2)
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            writer.write(request)
            status, data, keep = await self._read(reader)
        except BaseException:  # out of step, broken or cancelled (a timeout): never reused
            writer.close()
            raise
        if keep:
            self._idle.append((reader, writer))
        else:
            writer.close()
        return status, data

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
        reply = _reply()
        want = next(reply)
        try:
            while True:
                kind, size = want
                if kind == "line":
                    try:
                        data = await reader.readuntil(b"\n")
                    except asyncio.IncompleteReadError as err:  # the close: what came, as readline gives it
                        data = err.partial
                    except asyncio.LimitOverrunError:
                        raise http.client.LineTooLong("reply line") from None
                elif kind == "exact":
                    try:
                        data = await reader.readexactly(size)
                    except asyncio.IncompleteReadError as err:
                        data = err.partial
                else:
                    data = await reader.read()
                want = reply.send(data)
        except StopIteration as done:
            return done.value
