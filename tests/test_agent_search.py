"""Web search: the offline BM25 corpus, and the SearXNG-style backend against a real HTTP server on loopback."""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit

import pytest
from PIL import Image

from lookcloser.agent.environments import WebImageEnv
from lookcloser.agent.search import CorpusBackend, SearxngBackend, search_backend_from_env
from lookcloser.agent.toolkit import is_error
from testing.agent_fixtures import make_search_corpus


class FakeSearx(BaseHTTPRequestHandler):
    """Answers /search like SearXNG; /flaky fails once (500), /slow once hangs; /page serves HTML."""

    state: ClassVar[dict] = {}

    def log_message(self, *args):  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json", headers: dict | None = None):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        counts = self.state.setdefault("hits", {})
        counts[url.path] = counts.get(url.path, 0) + 1
        self.state.setdefault("auth", []).append(self.headers.get("Authorization"))
        if url.path == "/search":
            mode = self.state.get("mode", "ok")
            if mode == "flaky" and counts[url.path] == 1:
                return self._send(500, b"oops")
            if mode == "slow" and counts[url.path] == 1:
                time.sleep(1.5)
            if mode == "garbage":
                return self._send(200, b"<html>not json</html>", "text/html")
            results = [{"url": f"https://example.org/{query['q'][0].replace(' ', '-')}/{i}", "title": f"Result {i}",
                        "content": "snippet " * 3} for i in range(8)]
            return self._send(200, json.dumps({"query": query["q"][0], "results": results}).encode())
        if url.path == "/page":
            page = "<html><head><title>Landmarks</title><style>p{}</style></head><body><h1>Towers</h1>" \
                   "<p>The Eiffel Tower is 330 m tall.</p>" + "<p>filler text</p>" * 2000 + "</body></html>"
            return self._send(200, page.encode(), "text/html; charset=utf-8")
        if url.path == "/moved":
            return self._send(302, b"", headers={"Location": "/page"})
        return self._send(404, b"missing")


@pytest.fixture
def server():
    FakeSearx.state = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeSearx)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def backend(base: str, **kwargs) -> SearxngBackend:
    return SearxngBackend(base, backoff=0.01, allow_private_hosts=True, **kwargs)


def test_corpus_backend_ranks_with_bm25(tmp_path):
    corpus = CorpusBackend(make_search_corpus(tmp_path / "corpus.jsonl"))
    hits = corpus.search("how tall is the tower in Paris", 3)
    assert hits[0].url == "https://example.org/eiffel"
    assert all("sourdough" not in h.url for h in hits)
    assert corpus.search("the of and", 3) == []  # stop words only
    assert corpus.fetch("HTTPS://example.org/eiffel/")[0] == "Eiffel Tower"


def test_web_image_env_with_offline_corpus(tmp_path):
    corpus = make_search_corpus(tmp_path / "corpus.jsonl")
    env = WebImageEnv()
    env.reset(image=Image.new("RGB", (64, 64)), search_corpus=str(corpus))
    listing = env.web_search(query="Brandenburg Gate Berlin")
    assert listing.startswith("1. Brandenburg Gate\n   https://example.org/brandenburg")
    page = env.fetch_page(url="https://example.org/brandenburg")
    assert "built in 1791" in page
    assert not is_error(env.crop(image_index=0, box=[0, 0, 0.5, 0.5]))
    for result, message in [
        (env.fetch_page(url="https://example.org/unknown"), "not in the offline corpus"),
        (env.web_search(query=""), "empty"),
        (env.web_search(query="x" * 600), "longer than 500"),
        (env.web_search(query=["a", "b"]), "string"),
    ]:
        assert is_error(result) and message in result, result
    assert (env.tool_calls, env.tool_errors) == (7, 4)


def test_unconfigured_search_is_an_error_observation(monkeypatch):
    monkeypatch.delenv("LOOKCLOSER_SEARXNG_URL", raising=False)
    monkeypatch.delenv("LOOKCLOSER_SEARCH_CORPUS", raising=False)
    env = WebImageEnv()
    env.reset(images=[Image.new("RGB", (32, 32))])
    assert env.web_search(query="anything") == "Error: web search is not configured for this run"


def test_searxng_search_over_real_http(server, monkeypatch, caplog):
    monkeypatch.setenv("TEST_SEARX_KEY", "s3cr3t-key")
    monkeypatch.setenv("LOOKCLOSER_SEARXNG_URL", server)
    monkeypatch.setenv("LOOKCLOSER_SEARXNG_KEY", "s3cr3t-key")
    assert isinstance(search_backend_from_env(), SearxngBackend)
    env = WebImageEnv(search_backend=backend(server, api_key_env="TEST_SEARX_KEY"), max_results=3)
    env.reset(images=[Image.new("RGB", (32, 32))])
    with caplog.at_level(logging.DEBUG):
        listing = env.web_search(query="eiffel tower")
    assert listing.count("https://example.org/eiffel-tower/") == 3 and "4." not in listing
    assert FakeSearx.state["auth"] == ["Bearer s3cr3t-key"]
    assert "s3cr3t" not in caplog.text and "s3cr3t" not in repr(env._search_backend)


def test_searxng_retries_a_500_and_a_timeout(server):
    FakeSearx.state["mode"] = "flaky"
    results = backend(server).search("retry me", 5)
    assert len(results) == 5 and FakeSearx.state["hits"]["/search"] == 2
    FakeSearx.state.clear()
    FakeSearx.state["mode"] = "slow"
    started = time.monotonic()
    results = backend(server, timeout=0.5).search("slow", 5)
    assert len(results) == 5 and FakeSearx.state["hits"]["/search"] == 2
    assert time.monotonic() - started < 1.4  # the hung attempt was abandoned at the timeout


def test_searxng_gives_up_with_an_error_observation(server):
    FakeSearx.state["mode"] = "garbage"
    env = WebImageEnv(search_backend=backend(server))
    env.reset(images=[Image.new("RGB", (32, 32))])
    assert "not JSON" in env.web_search(query="x")
    dead = WebImageEnv(search_backend=SearxngBackend("http://127.0.0.1:9", retries=1, backoff=0.01, timeout=0.5))
    dead.reset(images=[Image.new("RGB", (32, 32))])
    result = dead.web_search(query="x")
    assert result.startswith("Error: request failed after 2 attempts")
    assert (dead.tool_calls, dead.tool_errors) == (1, 1)


def test_fetch_page_caps_text_follows_redirects_and_guards_hosts(server):
    env = WebImageEnv(search_backend=backend(server), max_page_chars=500)
    env.reset(images=[Image.new("RGB", (32, 32))])
    page = env.fetch_page(url=f"{server}/moved")
    assert page.startswith("Landmarks\n") and "The Eiffel Tower is 330 m tall." in page
    assert "p{}" not in page and "more characters]" in page and len(page) < 700
    assert FakeSearx.state["auth"][-1] is None  # the search key never goes to pages
    assert "HTTP 404" in env.fetch_page(url=f"{server}/nothing")
    assert "only http and https" in env.fetch_page(url="file:///etc/passwd")
    guarded = WebImageEnv(search_backend=SearxngBackend(server))
    guarded.reset(images=[Image.new("RGB", (32, 32))])
    assert "private network" in guarded.fetch_page(url=f"{server}/page")
