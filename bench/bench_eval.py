"""Eval client concurrency against an endpoint, printed as JSON.

A TIR-Bench-sized run (1,215 items, the real per-task counts, generated images in the official
layout) against a loopback OpenAI-compatible server (``testing/fake_endpoint.py``, a real HTTP server in
its own process, as vLLM would be) that answers every request after ``--latencies`` seconds
(default 0.2 and 0.02) with the item's gold answer. For each latency the whole benchmark runs with
``--concurrency`` episodes in flight, and the sequential client (concurrency 1) runs on the first
items for about ``--sequential-seconds`` (at least 50 items): both are measured rates, nothing is
extrapolated. "mean in flight" is the server's busy time (the sum of every request's time inside
the server) over the run's wall time; the ideal is ``--concurrency``. Timings cover the agent loop
and the prediction file (``run_benchmark``); loading and scoring are reported separately.

    python bench/bench_eval.py [--concurrency 64] [--latencies 0.2 0.02] [--sequential-seconds 20]
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/ (not installed) from the checkout


def _serve(gold: dict[str, str], latency: float, conn) -> None:
    """The endpoint, in its own process as a real server would be (it must not share our GIL)."""
    from testing.fake_endpoint import FakeEndpoint

    def respond(request, attempt):
        user = next(m for m in request["messages"] if m["role"] == "user")
        text = "".join(p.get("text", "") for p in user["content"] if p.get("type") == "text")
        return {"content": "Looked closely. " + gold.get(text.split("\nImage sizes:")[0], "<answer>?</answer>")}

    with FakeEndpoint(respond, delay=latency) as endpoint:
        conn.send(endpoint.url)
        while conn.recv() == "stats":
            conn.send({"requests": endpoint.requests, "max_in_flight": endpoint.max_in_flight,
                       "busy_seconds": endpoint.busy_seconds})


class _Server:
    """The loopback endpoint in a child process, and its counters."""

    def __init__(self, gold: dict[str, str], latency: float) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(gold, latency, theirs), daemon=True)
        self._process.start()
        self.url = self._conn.recv()

    def stats(self) -> dict:
        self._conn.send("stats")
        return self._conn.recv()

    def stop(self) -> None:
        self._conn.send("stop")
        self._process.join(5)


def measure(items, url: str, concurrency: int, out: Path) -> dict:
    """Run ``items`` at ``concurrency`` through ``run_benchmark``; time it and read the server's counters."""
    from lookcloser.agent.openai_policy import OpenAIPolicy
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.runner import env_factory, run_benchmark

    cfg = EvalConfig(model=url, concurrency=concurrency, save_trajectories=False, request_timeout=30.0)
    policy = OpenAIPolicy(url, "fake-model", timeout=30.0, max_workers=1)
    cpu = time.process_time()
    begin = time.perf_counter()
    predictions = run_benchmark("tir_bench", items, policy, cfg, out, env_factory("tir_bench", cfg))
    seconds = time.perf_counter() - begin
    return {"seconds": seconds, "predictions": predictions, "client_cpu_s": time.process_time() - cpu}


def at_latency(items, gold, latency: float, args, tmp: Path) -> tuple[dict, dict]:
    server = _Server(gold, latency)
    try:
        measure(items[:64], server.url, args.concurrency, tmp / f"warmup_{latency}")  # imports, connections
        before = server.stats()
        concurrent = measure(items, server.url, args.concurrency, tmp / f"concurrent_{latency}")
        after = server.stats()
        n_sequential = min(len(items), max(50, round(args.sequential_seconds / latency)))
        sequential = measure(items[:n_sequential], server.url, 1, tmp / f"sequential_{latency}")
    finally:
        server.stop()
    in_flight = (after["busy_seconds"] - before["busy_seconds"]) / concurrent["seconds"]
    rate = len(items) / concurrent["seconds"]
    sequential_rate = n_sequential / sequential["seconds"]
    return {
        "endpoint_latency_s": latency,
        "concurrency": args.concurrency,
        "concurrent_run_s": round(concurrent["seconds"], 2),
        "concurrent_items_per_s": round(rate, 1),
        "ideal_items_per_s": round(args.concurrency / latency, 1),
        "mean_requests_in_flight": round(in_flight, 1),
        "in_flight_share_of_ideal": round(in_flight / args.concurrency, 3),
        "max_requests_in_flight": after["max_in_flight"],  # since the server started (warm-up included)
        "requests": after["requests"] - before["requests"],
        "client_cpu_ms_per_item": round(1000 * concurrent["client_cpu_s"] / len(items), 2),
        "sequential_items_measured": n_sequential,
        "sequential_s": round(sequential["seconds"], 2),
        "sequential_items_per_s": round(sequential_rate, 2),
        "speedup_over_sequential": round(rate / sequential_rate, 1),
    }, concurrent["predictions"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.2, 0.02])
    parser.add_argument("--sequential-seconds", type=float, default=20.0,
                        help="the sequential baseline runs max(50, this / latency) items, measured")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    from lookcloser.eval.fixtures import TIR_TASK_COUNTS, write_tir_bench
    from lookcloser.eval.loaders import load_benchmark
    from lookcloser.eval.scoring import aggregate, gold_response, score_predictions

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        write_tir_bench(tmp / "tir_bench", TIR_TASK_COUNTS)
        items = load_benchmark("tir_bench", tmp / "tir_bench")
        load_s = time.perf_counter() - start
        # The prompts are unique ("[n] ..."): the server answers each with its gold answer.
        gold = {it.example["question"]: gold_response(it) for it in items}
        runs = []
        for latency in args.latencies:
            result, predictions = at_latency(items, gold, latency, args, tmp)
            start = time.perf_counter()
            metrics = aggregate("tir_bench", score_predictions(items, predictions))
            result.update({"accuracy_of_gold_replies": metrics["overall"]["accuracy"], "failed": metrics["n_failed"],
                           "scoring_s": round(time.perf_counter() - start, 3)})
            runs.append(result)

    print(json.dumps({
        "benchmark": "eval client: TIR-Bench-sized run against a loopback OpenAI-compatible endpoint",
        "items": len(items),
        "runs": runs,
        "goal_in_flight_share": 0.9,
        "write_and_load_dataset_s": round(load_s, 2),
        "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }, indent=1))


if __name__ == "__main__":
    main()
