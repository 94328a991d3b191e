"""Endpoint episodes run as coroutines on one event loop (``agent.loop.play``, ``eval.runner``):
the concurrency holds with no thread per episode, kept-alive connections are shared and bounded
by the requests in flight, a tool turn leaves the loop free, and a run started where an event loop
already runs (a notebook) still completes. Real loopback server, real files."""

from __future__ import annotations

import asyncio
import threading

from lookcloser.agent.openai_policy import OpenAIPolicy
from lookcloser.eval.config import EvalConfig
from lookcloser.eval.fixtures import write_tir_bench
from lookcloser.eval.loaders import load_benchmark
from lookcloser.eval.runner import env_factory, run_benchmark
from lookcloser.eval.scoring import gold_response
from testing.fake_endpoint import FakeEndpoint, conversation_key


def _run(items, endpoint, out, concurrency):
    cfg = EvalConfig(model=endpoint.url, concurrency=concurrency, save_trajectories=False)
    policy = OpenAIPolicy(endpoint.url, "m", api_key_env="")
    return run_benchmark("tir_bench", items, policy, cfg, out, env_factory("tir_bench", cfg))


def test_endpoint_episodes_keep_their_concurrency_without_a_thread_each(tmp_path):
    items = load_benchmark("tir_bench", write_tir_bench(tmp_path / "tir"))
    gold = {it.example["question"]: gold_response(it) for it in items}
    tool_user = items[0].example["question"]
    threads_seen = []

    def respond(request, attempt):
        threads_seen.append(threading.active_count())  # the server's thread is in this process too
        key = conversation_key(request).split("\nImage sizes:")[0]
        if key == tool_user and attempt == 1:  # one episode crops: its tool turn runs off the loop
            return {"content": "Let me look.", "tool_calls": [
                {"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}]}
        return {"content": gold.get(key, "<answer>?</answer>")}

    before = threading.active_count()
    with FakeEndpoint(respond, delay=0.1) as endpoint:
        records = _run(items, endpoint, tmp_path / "out", concurrency=8)
        assert endpoint.max_in_flight == 8  # the concurrency asked for
        assert endpoint.connections <= 8  # shared kept-alive connections, at most one per request in flight
        assert endpoint.requests == len(items) + 1
    assert len(records) == len(items) and all(r["status"] == "ok" for r in records.values())
    assert sum(r["tool_images"] for r in records.values()) == 1
    # The server's thread and at most one tool thread beside ours: a thread per episode would add 8.
    assert max(threads_seen) <= before + 2, (before, max(threads_seen))


def test_a_run_started_inside_a_running_event_loop_completes(tmp_path):
    items = load_benchmark("tir_bench", write_tir_bench(tmp_path / "tir"))[:6]

    async def notebook_cell():
        return _run(items, endpoint, tmp_path / "out", concurrency=3)

    with FakeEndpoint(lambda request, attempt: {"content": "<answer>A</answer>"}) as endpoint:
        records = asyncio.run(notebook_cell())
        assert endpoint.requests == 6
    assert sorted(records) == sorted(it.id for it in items)
