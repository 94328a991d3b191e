"""The one HTTP client: every request lookcloser makes (an OpenAI-compatible endpoint, the LLM judge,
web search, eval's endpoint check) goes through an ``httpx2`` client built here.

``httpx2`` is httpx's API, maintained (huggingface_hub's client too). Plain httpx 0.28 (httpcore
1.0) rechecks every pooled connection against every other on each request: with the 64 kept-alive
connections of ``python -m eval --concurrency 64`` it took ~10 ms of CPU per request here, against
~1 ms for httpx2, whose pool does one pass (docs/benchmarks.md, "Eval client").

- Proxy and CA bundle come from the environment (``trust_env``: ``HTTPS_PROXY``, ``HTTP_PROXY``,
  ``ALL_PROXY``, ``NO_PROXY``, ``SSL_CERT_FILE``, ``SSL_CERT_DIR``).
- ``timeout`` bounds each phase of a request (connect, send, each read, waiting for a connection).
- Connections are kept alive; the caller bounds how many requests are in flight.
- ``send`` / ``asend`` retry timeouts, transport errors (refused, reset, dropped, a malformed reply)
  and 429 / 5xx replies, after ``Retry-After`` when the reply gives one (at most
  ``MAX_RETRY_AFTER`` seconds), else after an exponential backoff.
- An API key is read from the environment into a header (``bearer``): httpx2 logs request lines,
  never headers, and its one INFO line per request is kept out of our logs.
"""

from __future__ import annotations

import asyncio
import email.utils
import itertools
import logging
import os
import time
from urllib.parse import urlsplit, urlunsplit

import httpx2
import orjson

MAX_RETRY_AFTER = 60.0
_LIMITS = httpx2.Limits(max_connections=None, max_keepalive_connections=None)  # callers bound their concurrency
logging.getLogger("httpx2").setLevel(logging.WARNING)


class RequestFailed(RuntimeError):
    """No usable reply after every attempt; ``why`` says what the last attempt got."""

    def __init__(self, attempts: int, why: str, status: int | None = None) -> None:
        super().__init__(f"request failed after {attempts} attempt{'s' if attempts > 1 else ''} ({why})")
        self.why, self.status = why, status  # status: the last reply's HTTP status (None: no reply)


def client(timeout: float) -> httpx2.Client:
    return httpx2.Client(timeout=timeout, limits=_LIMITS, trust_env=True)


def async_clients(timeout: float, count: int) -> list[httpx2.AsyncClient]:
    """``count`` clients sharing one TLS context (building a context reads the CA bundle: ~20 ms)."""
    tls = httpx2.create_ssl_context(trust_env=True)
    return [httpx2.AsyncClient(timeout=timeout, limits=_LIMITS, trust_env=True, verify=tls) for _ in range(count)]


def json_post(http: httpx2.Client | httpx2.AsyncClient, url: str, payload: dict, headers: dict,
              timeout: float | None = None) -> httpx2.Request:
    """A POST of ``payload`` as JSON, encoded by orjson: a photo's ~270 KB data URL took ``json.dumps``
    2-3 ms a request on the 2-core machine, the most CPU of an endpoint episode; orjson takes ~0.2 ms."""
    kwargs = {} if timeout is None else {"timeout": timeout}
    return http.build_request("POST", url, content=orjson.dumps(payload),
                              headers={"Content-Type": "application/json", **headers}, **kwargs)


def bearer(api_key_env: str | None) -> dict[str, str]:
    """The ``Authorization`` header for the key in environment variable ``api_key_env``; none when unset."""
    key = os.environ.get(api_key_env) if api_key_env else None
    return {"Authorization": f"Bearer {key}"} if key else {}


def api_base(url: str) -> str:
    """An OpenAI-compatible API's base from a URL a user gave: a trailing ``/chat/completions``
    dropped, ``/v1`` added to a bare host, the query string (``?api-version=``) kept.

    >>> api_base("http://127.0.0.1:8000"), api_base("http://h/v1/chat/completions")
    ('http://127.0.0.1:8000/v1', 'http://h/v1')
    >>> api_base("https://x/openai/deployments/d/?api-version=2024-06-01")
    'https://x/openai/deployments/d?api-version=2024-06-01'
    """
    parts = urlsplit(url)
    path = parts.path.rstrip("/").removesuffix("/chat/completions")
    return urlunsplit(parts._replace(path=path or "/v1"))


def api_url(base: str, path: str) -> str:
    """``path`` under an API ``base``, the base's query string kept.

    >>> api_url("https://x/openai/deployments/d?api-version=2024-06-01", "chat/completions")
    'https://x/openai/deployments/d/chat/completions?api-version=2024-06-01'
    """
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/{path}"))


def _retry_after(value: str | None) -> float | None:
    """Seconds asked by a ``Retry-After`` header (seconds or an HTTP date), at most ``MAX_RETRY_AFTER``.

    >>> _retry_after("2"), _retry_after("soon"), _retry_after("Wed, 21 Oct 2015 07:28:00 GMT")
    (2.0, None, 0.0)
    """
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _wait(outcome: httpx2.Response | Exception, attempt: int, retries: int, backoff: float) -> float | None:
    """None when ``outcome`` is the reply to return; else seconds before the next attempt, or
    ``RequestFailed`` when none is left."""
    if isinstance(outcome, httpx2.Response):
        if outcome.status_code != 429 and outcome.status_code < 500:
            return None
        why, asked = f"HTTP {outcome.status_code}", _retry_after(outcome.headers.get("Retry-After"))
        status = outcome.status_code
    else:
        why, asked = f"{type(outcome).__name__}: {outcome}" if str(outcome) else type(outcome).__name__, None
        status = None
    if attempt >= retries:
        raise RequestFailed(retries + 1, why, status)
    return backoff * 2 ** attempt if asked is None else asked


def send(http: httpx2.Client, request: httpx2.Request, retries: int, backoff: float,
         stream: bool = False) -> httpx2.Response:
    """``request``'s reply, with the retries above (``stream``: the body left to the caller to read and close)."""
    for attempt in itertools.count():
        try:
            outcome = http.send(request, stream=stream)
        except httpx2.RequestError as err:
            outcome = err
        wait = _wait(outcome, attempt, retries, backoff)
        if wait is None:
            return outcome
        if isinstance(outcome, httpx2.Response):
            outcome.close()
        time.sleep(wait)


async def asend(http: httpx2.AsyncClient, request: httpx2.Request, retries: int, backoff: float) -> httpx2.Response:
    """``send`` on the running event loop."""
    for attempt in itertools.count():
        try:
            outcome = await http.send(request)
        except httpx2.RequestError as err:
            outcome = err
        wait = _wait(outcome, attempt, retries, backoff)
        if wait is None:
            return outcome
        await asyncio.sleep(wait)
