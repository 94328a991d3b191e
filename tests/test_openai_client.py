"""agent/openai_policy.py's client against the real loopback endpoint: kept-alive connections, images encoded once."""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor

from PIL import Image

from lookcloser.agent import openai_policy
from lookcloser.agent.episode import Episode
from lookcloser.agent.openai_policy import OpenAIPolicy
from testing.fake_endpoint import FakeEndpoint


def _episode(image: Image.Image, text: str) -> Episode:
    return Episode(index=0, env=None, tools=[],
                   messages=[{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}])


def test_requests_from_many_threads_share_kept_alive_connections():
    with FakeEndpoint(lambda request, attempt: {"content": "<answer>A</answer>"}) as endpoint:
        policy = OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0)
        image = Image.new("RGB", (8, 8), "red")
        for k in range(10):  # one thread, one after the other: one connection
            (turn,) = policy.generate([_episode(image, f"q{k}")], 16)
            assert turn.error is None and turn.message["content"] == "<answer>A</answer>"
        assert endpoint.requests == 10 and endpoint.connections == 1
        with ThreadPoolExecutor(4) as pool:  # 4 threads, 40 requests: at most one connection per thread
            turns = list(pool.map(lambda k: policy.generate([_episode(image, f"p{k}")], 16)[0], range(40)))
        assert all(t.error is None for t in turns)
        assert endpoint.requests == 50 and endpoint.connections <= 1 + 4
        # Control: a fresh policy (its own pool) needs its own connection.
        OpenAIPolicy(endpoint.url, "m", api_key_env="", retries=0).generate([_episode(image, "x")], 16)
        assert endpoint.connections >= 2


def test_an_image_is_encoded_once_and_forgotten_when_freed(monkeypatch):
    encoded = []
    real = openai_policy.image_data_url
    monkeypatch.setattr(openai_policy, "image_data_url", lambda image, budget: encoded.append(image.size) or real(image, budget))
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", "m")
    first, second = Image.new("RGB", (4, 4), "red"), Image.new("RGB", (6, 6), "blue")
    messages = [{"role": "user", "content": [{"type": "image", "image": first}, {"type": "text", "text": "?"}]},
                {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "crop", "arguments": {}}}]},
                {"role": "tool", "content": [{"type": "image", "image": second}]}]
    urls = [policy.to_openai_messages(messages) for _ in range(3)]  # three turns re-send the conversation
    assert encoded == [(4, 4), (6, 6)]
    assert urls[0] == urls[2] and urls[0][0]["content"][0]["image_url"]["url"] == real(first, policy.max_image_pixels)
    assert len(policy._urls) == 2
    del first, messages, urls
    gc.collect()
    assert len(policy._urls) == 1  # the freed image's entry went with it; the live one stays
