"""Web search backends for ``web_search`` / ``fetch_page``: an offline corpus and a SearXNG-style HTTP API.

- ``CorpusBackend``: JSONL documents ``{"url", "title", "text"}`` ranked with BM25 (``bm25s``);
  ``fetch`` returns a document of the corpus by URL. Offline and deterministic: tests and
  training.
- ``SearxngBackend``: ``GET {base}/search?q=...&format=json`` on a self-hosted SearXNG (or any
  API answering the same JSON), pages fetched over HTTP(S) through ``lookcloser.http_client``
  (timeouts, retries with backoff on timeouts / connection errors / 429 / 5xx), response-size
  caps; an optional key is read from an environment variable and sent as a bearer header, never
  logged. ``fetch`` refuses non-HTTP
  URLs and, unless ``allow_private_hosts``, hosts on loopback or private networks (the URL is the
  model's choice).

``search_backend_from_env()`` picks one from ``LOOKCLOSER_SEARXNG_URL`` (+ ``LOOKCLOSER_SEARXNG_KEY``
holding the key) or ``LOOKCLOSER_SEARCH_CORPUS``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urljoin, urlsplit

import httpx2
from bs4 import BeautifulSoup

from lookcloser import http_client
from lookcloser.agent.toolkit import ToolError

logger = logging.getLogger(__name__)


@dataclass
class SearchResult:
    url: str
    title: str
    snippet: str


class SearchBackend(Protocol):
    def search(self, query: str, max_results: int) -> list[SearchResult]: ...

    def fetch(self, url: str) -> tuple[str, str]: ...


class CorpusBackend:
    """BM25 over a JSONL corpus of ``{"url", "title", "text"}`` documents."""

    def __init__(self, path: str | Path) -> None:
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG: a stray line

        from lookcloser.data_builders.records import RecordError, iter_jsonl

        self.path = Path(path)
        self.docs: list[dict] = []
        for i, doc in enumerate(iter_jsonl(self.path)):
            if not isinstance(doc, dict) or not isinstance(doc.get("url"), str) or not isinstance(doc.get("text"), str):
                raise RecordError(self.path, f"line {i + 1}", "url", "each document needs string 'url' and 'text'")
            self.docs.append({"url": doc["url"], "title": str(doc.get("title") or ""), "text": doc["text"]})
        self.by_url = {_norm_url(d["url"]): d for d in self.docs}
        self._retriever = bm25s.BM25()
        if self.docs:
            tokens = bm25s.tokenize([f"{d['title']}\n{d['text']}" for d in self.docs], stopwords="en",
                                    show_progress=False)
            self._retriever.index(tokens, show_progress=False)

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        import bm25s

        terms = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not self.docs or not terms[0]:
            return []
        docs, scores = self._retriever.retrieve(terms, k=min(max_results, len(self.docs)), show_progress=False)
        return [SearchResult(self.docs[i]["url"], self.docs[i]["title"], self.docs[i]["text"])
                for i, score in zip(docs[0], scores[0]) if score > 0]

    def fetch(self, url: str) -> tuple[str, str]:
        doc = self.by_url.get(_norm_url(url))
        if doc is None:
            raise ToolError(f"page {url!r} is not in the offline corpus; fetch a URL from web_search results")
        return doc["title"], doc["text"]


class SearxngBackend:
    """SearXNG JSON search plus direct page fetching, with timeouts, retries and size caps.

    Args:
        base_url: Instance root, e.g. ``http://127.0.0.1:8888``.
        api_key_env: Name of an environment variable holding a key for a gateway in front of it.
        timeout: Seconds per HTTP attempt (connect and read).
        retries: Extra attempts after a timeout, connection error, 429 or 5xx.
        backoff: First retry delay in seconds; doubles each retry.
        max_bytes: Largest response body read (the rest is cut off).
        allow_private_hosts: Let ``fetch`` reach loopback/private addresses (tests, intranets).
    """

    def __init__(self, base_url: str, *, api_key_env: str | None = None, timeout: float = 10.0, retries: int = 2,
                 backoff: float = 0.5, max_bytes: int = 2_000_000, allow_private_hosts: bool = False) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key_env, self.timeout, self.retries = api_key_env, timeout, retries
        self.backoff, self.max_bytes, self.allow_private_hosts = backoff, max_bytes, allow_private_hosts
        self._http = None  # made on first use; shared by the tool threads (httpx2 clients are thread-safe)

    def __repr__(self) -> str:  # never shows the key
        return f"SearxngBackend({self.base_url!r}, api_key_env={self.api_key_env!r})"

    def _headers(self) -> dict[str, str]:
        return {"User-Agent": "lookcloser-agent/0.1", "Accept": "application/json, text/html;q=0.9, */*;q=0.5",
                **http_client.bearer(self.api_key_env)}

    def _get(self, url: str, params: dict | None = None, headers: dict | None = None) -> tuple:
        """GET with retries, redirects not followed; (status, headers, body cut at ``max_bytes``)."""
        if self._http is None:
            self._http = http_client.client(self.timeout)
        try:
            request = self._http.build_request("GET", url, params=params, headers=headers or {})
            reply = http_client.send(self._http, request, self.retries, self.backoff, stream=True)
            try:
                body = b""
                for chunk in reply.iter_bytes():
                    body += chunk
                    if len(body) >= self.max_bytes:
                        break
            finally:
                reply.close()
        except http_client.RequestFailed as err:
            raise ToolError(str(err)) from None
        except httpx2.HTTPError as err:  # the body broke off after the headers
            raise ToolError(f"reading {url} failed ({type(err).__name__})") from None
        return reply.status_code, reply.headers, body[:self.max_bytes]  # headers: case-insensitive

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        status, _, body = self._get(f"{self.base_url}/search", {"q": query, "format": "json"}, self._headers())
        if status != 200:
            raise ToolError(f"search failed with HTTP {status}")
        try:
            results = json.loads(body.decode("utf-8", errors="replace")).get("results", [])
        except (json.JSONDecodeError, AttributeError):
            raise ToolError("the search service returned something that is not JSON") from None
        out = []
        for item in results if isinstance(results, list) else []:
            if isinstance(item, dict) and isinstance(item.get("url"), str):
                out.append(SearchResult(item["url"], str(item.get("title") or ""), str(item.get("content") or "")))
        return out[:max_results]

    def fetch(self, url: str, max_redirects: int = 5) -> tuple[str, str]:
        for _ in range(max_redirects + 1):
            check_public_url(url, self.allow_private_hosts)
            # The search key is for the search service only: pages get no Authorization header.
            status, headers, body = self._get(url, headers={"User-Agent": "lookcloser-agent/0.1"})
            if status in (301, 302, 303, 307, 308) and headers.get("Location"):
                url = urljoin(url, headers["Location"])
                continue
            if status != 200:
                raise ToolError(f"fetching {url} failed with HTTP {status}")
            text = body.decode(_charset(headers.get("Content-Type", "")), errors="replace")
            if "html" in headers.get("Content-Type", "html").lower() or text.lstrip().startswith("<"):
                return html_to_text(text)
            return "", text
        raise ToolError(f"too many redirects fetching {url}")


def _charset(content_type: str) -> str:
    match = re.search(r"charset=([\w-]+)", content_type)
    return match.group(1) if match else "utf-8"


def _norm_url(url: str) -> str:
    """
    >>> _norm_url("HTTPS://Example.org/a/") == _norm_url("https://example.org/a")
    True
    """
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}{'?' + parts.query if parts.query else ''}"


def check_public_url(url: str, allow_private: bool = False) -> None:
    """Refuse URLs a page fetch must not follow: non-HTTP schemes, and private hosts unless allowed.

    >>> check_public_url("file:///etc/passwd")
    Traceback (most recent call last):
    ...
    lookcloser.agent.toolkit.ToolError: only http and https URLs can be fetched, got 'file:///etc/passwd'
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ToolError(f"only http and https URLs can be fetched, got {url!r}")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 80, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        raise ToolError(f"cannot resolve host {parts.hostname!r}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise ToolError(f"host {parts.hostname!r} is on a private network and cannot be fetched")


# Tags whose text a reader never sees, and tags that start a new line of text.
_HIDDEN = ["script", "style", "noscript", "template", "svg", "head"]
_BLOCKS = ["p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "table", "ul",
           "ol", "pre", "blockquote", "header", "footer"]


def html_to_text(page: str) -> tuple[str, str]:
    """(title, readable text) of an HTML page (BeautifulSoup); scripts and styles dropped, a line per
    block, whitespace collapsed.

    >>> html_to_text("<html><head><title>T</title><script>x()</script></head><body><p>a  <b>b</b></p><p>c</p></body>")
    ('T', 'a b\\nc')
    """
    soup = BeautifulSoup(page, "html.parser")
    title = soup.title.get_text().strip() if soup.title else ""
    for tag in soup(_HIDDEN):
        tag.decompose()
    for tag in soup(_BLOCKS):
        tag.insert_before("\n")
    lines = (re.sub(r"\s+", " ", line).strip() for line in soup.get_text().split("\n"))
    return title, "\n".join(line for line in lines if line)


def search_backend_from_env() -> SearchBackend | None:
    """A backend configured by environment variables, or None."""
    if os.environ.get("LOOKCLOSER_SEARXNG_URL"):
        return SearxngBackend(os.environ["LOOKCLOSER_SEARXNG_URL"], api_key_env="LOOKCLOSER_SEARXNG_KEY")
    if os.environ.get("LOOKCLOSER_SEARCH_CORPUS"):
        return CorpusBackend(os.environ["LOOKCLOSER_SEARCH_CORPUS"])
    return None
