"""The eval client's fast paths keep its results: images sent as their files' own bytes only when
those decode to the very pixels we hold, kept-alive connections the server closed are reopened
without costing an attempt, request bodies equal ``json.dumps``, and the prediction file written
through one open handle still heals a torn line. Real files, real loopback server."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import time

import numpy as np
import pytest
from PIL import Image

from lookcloser.agent.episode import Episode
from lookcloser.agent.images import open_image
from lookcloser.agent.openai_policy import OpenAIPolicy, image_data_url, image_url
from lookcloser.eval.runner import PredictionStore
from testing.fake_endpoint import FakeEndpoint

BUDGET = 2048 * 2048


def _decode(url: str) -> tuple[bytes, Image.Image]:
    data = base64.b64decode(url.split(",", 1)[1])
    return data, Image.open(io.BytesIO(data))


def _photo(size=(96, 64)) -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))


def test_images_travel_as_their_files_only_when_the_pixels_are_the_same(tmp_path):
    photo = _photo()
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90": servers differ in applying it
    files = {
        "plain.png": lambda p: photo.save(p), "plain.jpg": lambda p: photo.save(p, quality=80),
        "lossy.webp": lambda p: photo.save(p, quality=70),
        "alpha.png": lambda p: photo.convert("RGBA").save(p), "grey.jpg": lambda p: photo.convert("L").save(p),
        "rotated.jpg": lambda p: photo.save(p, exif=exif), "big.png": lambda p: _photo((300, 300)).save(p),
        "icc.png": lambda p: photo.save(p, icc_profile=b"\0" * 128),
    }
    for name, write in files.items():
        write(tmp_path / name)
    for name in files:
        image = open_image(tmp_path / name)
        url = image_url(image, 200 * 200)
        sent, decoded = _decode(url)
        if name.startswith(("plain", "lossy")):
            assert sent == (tmp_path / name).read_bytes(), name  # the file itself, not re-encoded
            assert url.startswith({"png": "data:image/png", "jpg": "data:image/jpeg", "webp": "data:image/webp"}
                                  [name.rsplit(".", 1)[1]])
            assert np.array_equal(np.asarray(decoded.convert("RGB")), np.asarray(image)), name
        else:  # anything a server could decode differently: re-encoded, as before
            assert url == image_data_url(image, 200 * 200), name
            assert decoded.format == "PNG"


def _episode(text: str) -> Episode:
    return Episode(index=0, env=None, tools=[], messages=[{"role": "user", "content": [{"type": "text", "text": text}]}])


WAYS = ["thread", "event_loop"]


def _turns(policy: OpenAIPolicy, texts: list[str], way: str, between=None) -> list:
    """One episode's turn per text, one after another: from this thread (``generate``) or on one
    event loop (``agenerate``, as ``eval.runner`` plays them), ``between()`` after each."""
    if way == "thread":
        turns = []
        for text in texts:
            turns.append(policy.generate([_episode(text)], 8)[0])
            if between:
                between()
                time.sleep(0.05)
        return turns

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


@pytest.mark.parametrize("way", WAYS)
def test_a_kept_alive_connection_the_server_closed_is_reopened_without_a_failed_attempt(way):
    with FakeEndpoint(lambda request, attempt: {"content": "<answer>A</answer>"}) as endpoint:
        policy = OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0)  # no retry to hide a failure
        # ``between``: the server's keep-alive timeout ran out
        turns = _turns(policy, [f"q{k}" for k in range(3)], way, between=endpoint.close_idle_connections)
        assert [t.error for t in turns] == [None] * 3
        assert endpoint.requests == 3 and endpoint.connections == 3
        assert _turns(policy, ["a", "b"], way) == _turns(policy, ["a", "b"], way)
        # Two turns, one connection: a thread keeps its own across calls; an event loop's pool ends with the loop.
        assert endpoint.connections == 3 + {"thread": 1, "event_loop": 2}[way]


def test_request_bodies_equal_json_dumps():
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m", extra_body={"top_p": 0.9})
    tools = [{"type": "function", "function": {"name": "crop", "parameters": {"type": "object"}}}]
    payload = {"model": "m", "messages": [{"role": "user", "content": "é?"}], "max_tokens": 4, "top_p": 0.9}
    for _ in range(2):  # the second time from the cached schemas, handed over as a fresh copy
        assert policy._body(dict(payload), json.loads(json.dumps(tools))) == json.dumps({**payload, "tools": tools}).encode()
    assert policy._body(dict(payload), []) == json.dumps(payload).encode()
    # extra_body naming "tools" too: the episode's schemas win, where the key stood
    assert policy._body({**payload, "tools": "x", "n": 1}, tools) == json.dumps({**payload, "tools": tools, "n": 1}).encode()


def test_request_bodies_with_images_spliced_in_equal_json_dumps(tmp_path):
    """The images' data URLs are spliced into the request after the rest is serialized: the body is
    still byte for byte ``json.dumps`` of the conversation with the URLs in place."""
    _photo().save(tmp_path / "photo.jpg", quality=85)
    photo, drawn = open_image(tmp_path / "photo.jpg"), _photo((30, 20))  # a file's bytes; PNG-encoded
    tools = [{"type": "function", "function": {"name": "crop", "parameters": {"type": "object"}}}]
    messages = [
        {"role": "user", "content": [{"type": "image", "image": photo}, {"type": "text", "text": 'a "quote" \\ é'}]},
        {"role": "assistant", "content": "Look.", "tool_calls": [
            {"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0}}}]},
        {"role": "tool", "name": "crop", "content": [{"type": "text", "text": "cropped"}, {"type": "image", "image": drawn}]},
        {"role": "user", "content": [{"type": "image", "image": photo}, {"type": "text", "text": "again"}]},
    ]
    for tool_images_as in ("tool", "user"):
        policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m", extra_body={"top_p": 0.9}, tool_images_as=tool_images_as)
        episode = Episode(index=0, env=None, tools=tools, messages=messages)
        body = policy._request_body(episode, 8)
        expected = {"model": "m", "messages": policy.to_openai_messages(messages), "max_tokens": 8,
                    "temperature": 0.0, "top_p": 0.9, "tools": tools}
        assert body == json.dumps(expected).encode()
        assert body.count(b"data:image/jpeg;base64,") == 2 and body.count(b"data:image/png;base64,") == 1
        assert policy._url_mark.encode() not in body


def _scripted_server(replies: list[tuple[bytes, bool]]):
    """A raw loopback TCP server answering request k with ``replies[k]`` (bytes, then close or not):
    replies no HTTP library on the server side writes. Returns (port, requests seen, connections)."""
    import re
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    seen, connections, pending = [], [], list(replies)

    def serve():
        with listener:
            while pending:
                conn, _ = listener.accept()
                connections.append(conn)
                with conn, conn.makefile("rb") as reader:
                    while pending:
                        head = b""
                        while (line := reader.readline()) not in (b"\r\n", b""):
                            head += line
                        if not head:
                            break  # the client closed this connection
                        seen.append((head, reader.read(int(re.search(rb"Content-Length: (\d+)", head)[1]))))
                        reply, close = pending.pop(0)
                        conn.sendall(reply)
                        if close:
                            break

    threading.Thread(target=serve, daemon=True).start()
    return listener.getsockname()[1], seen, connections


@pytest.mark.parametrize("way", WAYS)
def test_replies_in_chunks_after_1xx_to_the_close_and_broken_ones(way):
    """The client's own HTTP/1.1 reply reader on replies a vLLM behind a proxy may send, and on
    broken ones (an error naming what broke, never a hang)."""
    def reply(body: bytes, *lines: str, status: str = "HTTP/1.1 200 OK") -> bytes:
        return ("\r\n".join([status, "Content-Type: application/json", *lines]) + "\r\n\r\n").encode() + body

    def answer(text: str) -> bytes:
        return json.dumps({"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}).encode()

    chunked = answer("one")
    chunks = b"".join(b"%x;ext=1\r\n%s\r\n" % (len(chunked[i:i + 7]), chunked[i:i + 7])
                      for i in range(0, len(chunked), 7)) + b"0\r\nX-Trailer: t\r\n\r\n"
    port, seen, connections = _scripted_server([
        (reply(chunks, "Transfer-Encoding: chunked"), False),
        (b"HTTP/1.1 100 Continue\r\n\r\n" + reply(answer("two"), f"Content-Length: {len(answer('two'))}"), False),
        (reply(answer("three"), f"Content-Length: {len(answer('three'))}", "Connection: close"), True),
        (reply(answer("four"), status="HTTP/1.0 200 OK"), True),  # no length: the body ends at the close
        (b"HTTP/1.1 2x0 OK\r\n\r\n", True),
        (reply(answer("six")[:20], "Content-Length: 999"), True),
        (reply(answer("seven"), f"Content-Length: {len(answer('seven'))}"), False),
    ])
    policy = OpenAIPolicy(f"http://127.0.0.1:{port}/v1", "m", api_key_env="", retries=0, timeout=5)
    turns = _turns(policy, [f"q{k}" for k in range(7)], way)
    assert [t.message["content"] for t in turns[:4]] == ["one", "two", "three", "four"]
    assert [t.error for t in turns[:4]] == [None] * 4
    assert "BadStatusLine" in turns[4].error and "IncompleteRead" in turns[5].error
    assert turns[6].error is None and turns[6].message["content"] == "seven"
    assert len(connections) == 5  # kept alive until a reply said otherwise or broke
    head, body = seen[0]
    assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{port}\r\n".encode() in head and b"Accept-Encoding: identity\r\n" in head
    assert json.loads(body)["messages"][0]["content"] == [{"type": "text", "text": "q0"}]


def test_prediction_store_appends_through_one_handle_and_heals_a_torn_line(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "1", "status": "ok"}\n{"id": "2", "sta', encoding="utf-8")  # killed mid-write
    store = PredictionStore(path)
    store.append({"id": "2", "status": "ok"})
    store.append({"id": "3", "status": "failed"})
    assert path.read_text(encoding="utf-8").endswith('"failed"}\n')  # flushed before close
    store.close()
    store.append({"id": "3", "status": "ok"})  # reopens after close
    store.close()
    assert {k: r["status"] for k, r in PredictionStore(path).load().items()} == {"1": "ok", "2": "ok", "3": "ok"}


def test_a_prediction_that_cannot_be_written_stops_the_run(tmp_path):
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.fixtures import write_tir_bench
    from lookcloser.eval.loaders import load_benchmark
    from lookcloser.eval.runner import env_factory, run_benchmark

    items = load_benchmark("tir_bench", write_tir_bench(tmp_path / "tir"))
    (tmp_path / "out" / "predictions.jsonl").mkdir(parents=True)  # a folder where the file should be
    with FakeEndpoint(lambda request, attempt: {"content": "<answer>A</answer>"}) as endpoint:
        cfg = EvalConfig(model=endpoint.url, concurrency=4, save_trajectories=False)
        policy = OpenAIPolicy(endpoint.url, "m", api_key_env="", max_workers=1)
        with pytest.raises(IsADirectoryError):
            run_benchmark("tir_bench", items, policy, cfg, tmp_path / "out", env_factory("tir_bench", cfg))
        assert endpoint.requests < len(items)  # stopped early, did not run everything unrecorded


@pytest.mark.parametrize("way", WAYS)
def test_https_verifies_the_servers_certificate_with_the_environments_ca_bundle(tmp_path, monkeypatch, way):
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
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    with FakeEndpoint(lambda request, attempt: {"content": "<answer>A</answer>"}, ssl_context=context) as endpoint:
        assert endpoint.url.startswith("https://")
        # Control: the default CA bundle does not know this certificate.
        monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
        (turn,) = _turns(OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0), ["q"], way)
        assert turn.error and "SSLCertVerificationError" in turn.error
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
        policy = OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0)
        for turn in _turns(policy, ["q0", "q1"], way):
            assert turn.error is None and turn.message["content"] == "<answer>A</answer>"
        assert endpoint.connections == 1  # one kept-alive connection (the refused handshake never counted)
