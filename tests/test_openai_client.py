"""The endpoint policy's HTTP (``lookcloser.http_client``, httpx2) against the real loopback endpoint:
the base URL's query string kept, malformed replies retried or reported as a clean error,
``Retry-After`` honoured, kept-alive connections the server closed reopened, the proxy and CA
bundle taken from the environment, the key never logged, and an image encoded once."""

from __future__ import annotations

import asyncio
import gc
import logging
import time

import orjson
import pytest
from PIL import Image

from lookcloser.agent import openai_policy
from lookcloser.agent.episode import Episode
from lookcloser.agent.openai_policy import OpenAIPolicy
from testing.fake_endpoint import FakeEndpoint

ANSWER = {"content": "<answer>A</answer>"}


def _episode(text: str) -> Episode:
    return Episode(index=0, env=None, tools=[], messages=[{"role": "user", "content": [{"type": "text", "text": text}]}])


def _turns(policy: OpenAIPolicy, texts: list[str], between=None) -> list:
    """One episode's turn per text, one after another on one event loop (as ``agent.loop.play_all``
    plays them), ``between()`` after each."""
    async def play() -> list:
        turns = []
        for text in texts:
            turns.append(await policy.agenerate(_episode(text), 8))
            if between:
                between()
                await asyncio.sleep(0.05)  # the loop sees the close
        await policy.aclose()
        return turns

    return asyncio.run(play())


def test_the_base_urls_query_string_is_kept_and_the_key_never_shown(monkeypatch, caplog):
    """An Azure-style base (``?api-version=``) through ``python -m eval``'s own policy building:
    the models listing and every chat request keep the query; the key goes as a header only."""
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.runner import build_policy

    monkeypatch.setenv("LOOKCLOSER_TEST_KEY", "sk-very-secret")
    with FakeEndpoint(lambda request, attempt: ANSWER) as endpoint:
        cfg = EvalConfig(model=f"{endpoint.url}?api-version=2024-06-01", api_key_env="LOOKCLOSER_TEST_KEY")
        with caplog.at_level(logging.DEBUG):
            policy = build_policy(cfg)
            (turn,) = _turns(policy, ["q"])
    assert turn.error is None and turn.message["content"] == "<answer>A</answer>"
    assert endpoint.targets == ["/v1/models?api-version=2024-06-01", "/v1/chat/completions?api-version=2024-06-01"]
    assert policy.model == "fake-model"  # read from the listing
    assert "sk-very-secret" not in caplog.text and "sk-very-secret" not in repr(policy)


BAD_REPLIES = {  # replies no HTTP library on the server side would write
    "bad Content-Length": b'HTTP/1.1 200 OK\r\nContent-Length: \xc2\xb2\r\n\r\n{"choices": []}',
    "bad chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n",
    "cut short": b'HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n{"choices": [',
    "no status line": b"HTTP/1.1 2x0 OK\r\n\r\n",
}


@pytest.mark.parametrize("bad", list(BAD_REPLIES))
def test_a_malformed_reply_is_retried_then_reported_as_a_clean_error(bad):
    with FakeEndpoint(lambda request, attempt: {"raw": BAD_REPLIES[bad]} if attempt == 1 else ANSWER) as endpoint:
        (turn,) = _turns(OpenAIPolicy(endpoint.url, "m", api_key_env="", backoff=0.01), ["q"])
        assert turn.error is None and turn.message["content"] == "<answer>A</answer>"
        assert endpoint.requests == 2  # the malformed reply cost one attempt
    with FakeEndpoint(lambda request, attempt: {"raw": BAD_REPLIES[bad]}) as endpoint:
        (turn,) = _turns(OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=1, backoff=0.01), ["q"])
        assert turn.error.startswith("RequestFailed: request failed after 2 attempts (RemoteProtocolError"), turn.error
        assert endpoint.requests == 2


def test_429_waits_what_retry_after_asks():
    busy = b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n"
    with FakeEndpoint(lambda request, attempt: {"raw": busy} if attempt == 1 else ANSWER) as endpoint:
        start = time.monotonic()
        (turn,) = _turns(OpenAIPolicy(endpoint.url, "m", api_key_env="", backoff=0.01), ["q"])
        assert turn.error is None and endpoint.requests == 2
        assert time.monotonic() - start >= 1.0  # not the 0.01 s backoff


def test_a_kept_alive_connection_the_server_closed_is_reopened_without_a_failed_attempt():
    with FakeEndpoint(lambda request, attempt: ANSWER) as endpoint:
        policy = OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0)  # no retry to hide a failure
        # ``between``: the server's keep-alive timeout ran out
        turns = _turns(policy, [f"q{k}" for k in range(3)], between=endpoint.close_idle_connections)
        assert [t.error for t in turns] == [None] * 3
        assert endpoint.requests == 3 and endpoint.connections == 3
        assert [t.error for t in _turns(policy, ["a", "b"])] == [None, None]
        assert endpoint.connections == 4  # two turns, one kept-alive connection


def test_requests_go_through_the_environments_proxy(monkeypatch):
    """``HTTP_PROXY`` names the loopback endpoint, standing in for a forward proxy: the request for a
    host nobody can resolve reaches it in proxy form (the whole URL as the target) and is answered."""
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeEndpoint(lambda request, attempt: ANSWER) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
        (turn,) = _turns(OpenAIPolicy("http://endpoint.invalid/v1", "m", api_key_env="", retries=0), ["q"])
    assert turn.error is None and turn.message["content"] == "<answer>A</answer>"
    assert proxy.targets == ["http://endpoint.invalid/v1/chat/completions"]


def test_https_verifies_the_servers_certificate_with_the_environments_ca_bundle(tmp_path, monkeypatch):
    import shutil
    import ssl
    import subprocess

    if not shutil.which("openssl"):
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    with FakeEndpoint(lambda request, attempt: ANSWER, ssl_context=context) as endpoint:
        assert endpoint.url.startswith("https://")
        # Control: the default CA bundle does not know this certificate.
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        (turn,) = _turns(OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0), ["q"])
        assert turn.error and "CERTIFICATE_VERIFY_FAILED" in turn.error
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        for turn in _turns(OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0), ["q0", "q1"]):
            assert turn.error is None and turn.message["content"] == "<answer>A</answer>"
        assert endpoint.connections == 1  # one kept-alive connection (the refused handshake never counted)


def test_an_image_is_encoded_once_and_forgotten_when_freed(monkeypatch):
    encoded = []
    real = openai_policy.image_data_url
    monkeypatch.setattr(openai_policy, "image_data_url", lambda image, budget: encoded.append(image.size) or real(image, budget))
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m")
    first, second = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (6, 6), "blue")
    messages = [{"role": "user", "content": [{"type": "image", "image": first}, {"type": "text", "text": "?"}]},
                {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "crop", "arguments": {}}}]},
                {"role": "tool", "content": [{"type": "image", "image": second}]}]
    urls = [orjson.loads(orjson.dumps(policy.to_openai_messages(messages))) for _ in range(3)]  # three turns
    assert encoded == [(4, 4), (6, 6)]  # re-send the conversation; each image was encoded once
    assert urls[0] == urls[2] and urls[0][0]["content"][0]["image_url"]["url"] == real(first, policy.max_image_pixels)
    assert len(policy._urls) == 2
    del first, messages, urls
    gc.collect()
    assert len(policy._urls) == 1  # the freed image's entry went with it; the live one stays
