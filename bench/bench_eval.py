"""Eval throughput against an endpoint, printed as JSON.

A TIR-Bench-sized run (1,215 items, the real per-task counts, generated images in the official
layout) against a loopback OpenAI-compatible server (``eval.fake_endpoint``, a real HTTP server in
its own process, as vLLM would be) that answers every request after ``--latency`` seconds
(default 0.2) with the item's gold answer. The whole benchmark runs
with ``--concurrency`` episodes in flight; the sequential time (concurrency 1) is measured on the
first ``--sequential-items`` items and extrapolated linearly to 1,215 (said so in the JSON).
Timings cover the agent loop and the prediction file (``run_benchmark``); loading and scoring
are reported separately.

    python bench/bench_eval.py [--concurrency 64] [--latency 0.2] [--sequential-items 40]
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import platform
import tempfile
import time
from pathlib import Path


def _serve(gold: dict[str, str], latency: float, conn) -> None:
    """The endpoint, in its own process as a real server would be (it must not share our GIL)."""
    from eval.fake_endpoint import FakeEndpoint

    def respond(request, attempt):
        user = next(m for m in request["messages"] if m["role"] == "user")
        text = "".join(p.get("text", "") for p in user["content"] if p.get("type") == "text")
        return {"content": "Looked closely. " + gold.get(text.split("\nImage sizes:")[0], "<answer>?</answer>")}

    with FakeEndpoint(respond, delay=latency) as endpoint:
        conn.send(endpoint.url)
        while conn.recv() == "stats":
            conn.send({"requests": endpoint.requests, "max_in_flight": endpoint.max_in_flight})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--sequential-items", type=int, default=40)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from eval.fixtures import TIR_TASK_COUNTS, write_tir_bench
    from eval.loaders import load_benchmark
    from eval.scoring import gold_response

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        write_tir_bench(tmp / "tir_bench", TIR_TASK_COUNTS)
        items = load_benchmark("tir_bench", tmp / "tir_bench")
        load_s = time.perf_counter() - start
        # The prompts are unique ("[n] ..."): the server answers each with its gold answer.
        gold = {it.example["question"]: gold_response(it) for it in items}
        ours, theirs = multiprocessing.get_context("fork").Pipe()
        server = multiprocessing.get_context("fork").Process(target=_serve, args=(gold, args.latency, theirs),
                                                             daemon=True)
        server.start()
        url = ours.recv()

        from agent.openai_policy import OpenAIPolicy
        from eval.config import EvalConfig
        from eval.runner import env_factory, run_benchmark
        from eval.scoring import aggregate, score_predictions

        def run(subset, concurrency, out):
            cfg = EvalConfig(model=url, concurrency=concurrency, save_trajectories=False, request_timeout=30.0)
            policy = OpenAIPolicy(url, "fake-model", timeout=30.0, max_workers=1)
            begin = time.perf_counter()
            predictions = run_benchmark("tir_bench", subset, policy, cfg, out, env_factory("tir_bench", cfg))
            return time.perf_counter() - begin, predictions

        run(items[:8], 8, tmp / "warmup")  # imports and first connections out of the timings
        concurrent_s, predictions = run(items, args.concurrency, tmp / "concurrent")
        ours.send("stats")
        max_in_flight = ours.recv()["max_in_flight"]
        subset = items[: args.sequential_items]
        sequential_subset_s, _ = run(subset, 1, tmp / "sequential")
        ours.send("stop")
        server.join(5)
        start = time.perf_counter()
        metrics = aggregate("tir_bench", score_predictions(items, predictions))
        score_s = time.perf_counter() - start

    sequential_s = sequential_subset_s * len(items) / len(subset)
    print(json.dumps({
        "benchmark": "eval: TIR-Bench-sized run against a loopback OpenAI-compatible endpoint",
        "items": len(items),
        "endpoint_latency_s": args.latency,
        "concurrency": args.concurrency,
        "concurrent_run_s": round(concurrent_s, 2),
        "concurrent_items_per_s": round(len(items) / concurrent_s, 1),
        "max_requests_in_flight": max_in_flight,
        "sequential_measured_items": len(subset),
        "sequential_measured_s": round(sequential_subset_s, 2),
        "sequential_run_s_extrapolated": round(sequential_s, 1),
        "sequential_note": f"sequential time measured on {len(subset)} items and extrapolated linearly to "
                           f"{len(items)}",
        "speedup": round(sequential_s / concurrent_s, 1),
        "goal_speedup": 20,
        "accuracy_of_gold_replies": metrics["overall"]["accuracy"],
        "failed": metrics["n_failed"],
        "write_and_load_dataset_s": round(load_s, 2),
        "scoring_s": round(score_s, 3),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }, indent=1))


if __name__ == "__main__":
    main()
