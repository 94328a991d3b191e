"""Eval client concurrency against an endpoint, printed as JSON.

A TIR-Bench-sized run (1,215 items, the real per-task counts, generated images in the official
layout) against a loopback OpenAI-compatible server (``testing.fake_endpoint``, a real HTTP server
in its own process, as vLLM would be) that answers every request after ``--latencies`` seconds
(default 1 and 0.2, as a real VLM endpoint answers in 0.5-5 s) with the item's gold answer. For
each latency the whole benchmark runs ``--repeats`` times with ``--concurrency`` episodes in flight,
each run a fresh client process (after a 64-item warm-up); with ``--baseline DIR`` (another
checkout's root, e.g. ``git archive <commit>``) its client code runs too, alternating with ours
against the same server, and both must return the same predictions.

Per run: items/s and its share of the ideal (concurrency / latency); "mean in flight", the
server's busy time (the sum of every request's time inside it) over the run's wall time, with the
server's mean time per request beside it (a server answering late inflates it); the client's and
the server's CPU. Medians with [min, max] over the repeats. Timings cover the agent loop and the
prediction file (``run_benchmark``).

    python bench/bench_eval.py [--photos] [--concurrency 64] [--latencies 1 0.2] [--repeats 3] [--baseline DIR]

``--photos`` makes every image a 1600x1200 photo-like JPEG (~200 KB), the size of real TIR-Bench
images.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import multiprocessing
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _serve(gold: dict[str, str], latency: float, conn) -> None:
    """The endpoint, in its own process as a real server would be (it must not share our GIL)."""
    sys.path.insert(0, str(ROOT))  # testing/ is not installed: from this checkout
    from testing.fake_endpoint import FakeEndpoint

    def respond(request, attempt):
        user = next(m for m in request["messages"] if m["role"] == "user")
        text = "".join(p.get("text", "") for p in user["content"] if p.get("type") == "text")
        return {"content": "Looked closely. " + gold.get(text.split("\nImage sizes:")[0], "<answer>?</answer>")}

    with FakeEndpoint(respond, delay=latency) as endpoint:
        conn.send(endpoint.url)
        while conn.recv() == "stats":
            conn.send({"requests": endpoint.requests, "max_in_flight": endpoint.max_in_flight,
                       "busy_seconds": endpoint.busy_seconds, "cpu_s": time.process_time()})


class _Server:
    """The loopback endpoint in a child process, and its counters."""

    def __init__(self, gold: dict[str, str], latency: float) -> None:
        context = multiprocessing.get_context("fork")
        self._conn, theirs = context.Pipe()
        self._process = context.Process(target=_serve, args=(gold, latency, theirs), daemon=True)
        self._process.start()
        if not self._conn.poll(120):  # a server that died starting must not leave us waiting forever
            raise SystemExit("error: the loopback endpoint did not start (its traceback is above)")
        self.url = self._conn.recv()

    def stats(self) -> dict:
        self._conn.send("stats")
        return self._conn.recv()

    def stop(self) -> None:
        self._conn.send("stop")
        self._process.join(5)


def import_lookcloser_from(tree: Path) -> None:
    """Make ``lookcloser`` and its layers (``lookcloser.agent`` = ``tree/agent``, ...) ``tree``'s code.

    The editable install maps those names to its own checkout whatever ``PYTHONPATH`` says, so
    without this a baseline checkout's client silently ran ours (``client`` reports the files it ran).
    """
    import importlib.util

    folders = {"lookcloser": tree / "lookcloser"} | {f"lookcloser.{layer}": tree / layer for layer in
                                                     ("rewards", "data_builders", "agent", "train", "eval", "looktools")}

    class TreeFinder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            folder = folders.get(name)
            if folder is None or not (folder / "__init__.py").is_file():
                return None
            return importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                          submodule_search_locations=[str(folder)])

    sys.meta_path.insert(0, TreeFinder)


def client(url: str, data: str, concurrency: int, limit: int, out: str) -> None:
    """One timed client run, in its own process (``--client``); the code is the checkout in the
    working directory (ours or ``--baseline``), its policy built as ``python -m eval`` builds it.
    Prints its JSON result."""
    import_lookcloser_from(Path.cwd())
    from lookcloser.eval import runner
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.loaders import load_benchmark

    items = load_benchmark("tir_bench", data)[:limit]
    cfg = EvalConfig(model=url, concurrency=concurrency, save_trajectories=False, request_timeout=30.0)
    policy = runner.build_policy(cfg)

    def run(items, out: Path) -> dict:
        return runner.run_benchmark("tir_bench", items, policy, cfg, out, runner.env_factory("tir_bench", cfg))

    run(items[:64], Path(out) / "warmup")  # imports, caches
    print("ready", flush=True)
    sys.stdin.readline()  # the parent reads the server's counters, then says go
    cpu, begin = time.process_time(), time.perf_counter()
    predictions = run(items, Path(out) / "run")
    seconds, cpu = time.perf_counter() - begin, time.process_time() - cpu
    records = {k: {"status": r["status"], "response": r["response"]} for k, r in predictions.items()}
    print(json.dumps({"seconds": seconds, "client_cpu_s": cpu, "items": len(items), "records": records,
                      "code": [runner.__file__, sys.modules[type(policy).__module__].__file__],
                      "predictions_sha1": hashlib.sha1(json.dumps(sorted(records.items())).encode()).hexdigest()}),
          flush=True)


def _check_ran(tree: Path, files: list[str]) -> None:
    """Refuse a run whose code came from outside ``tree`` (the checkout it was meant to measure)."""
    if not all(Path(path).resolve().is_relative_to(tree.resolve()) for path in files):
        raise SystemExit(f"error: the client meant to run {tree} ran other code")


def measure(server: _Server, tree: Path, data: Path, concurrency: int, limit: int, out: Path) -> dict:
    """A client run of ``tree``'s code in a fresh process, with the server's counters around it."""
    command = [sys.executable, str(Path(__file__).resolve()), "--client", server.url, str(data), str(concurrency),
               str(limit), str(out)]
    with subprocess.Popen(command, cwd=tree, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:
        ready = child.stdout.readline()
        before = server.stats()  # after the client's warm-up, before its timed run
        child.stdin.write("go\n")
        child.stdin.flush()
        result = child.stdout.readline()
        after = server.stats()
        errors = child.stderr.read()
    if ready.strip() != "ready" or child.returncode:
        raise SystemExit(f"error: the client of {tree} failed:\n{errors[-3000:]}")
    run = json.loads(result)
    _check_ran(tree, run.pop("code"))
    requests = max(1, after["requests"] - before["requests"])
    busy = after["busy_seconds"] - before["busy_seconds"]
    run.update(items_per_s=run["items"] / run["seconds"], in_flight=busy / run["seconds"],
               client_cpu_ms_per_item=1000 * run["client_cpu_s"] / run["items"],
               server_cpu_ms_per_request=1000 * (after["cpu_s"] - before["cpu_s"]) / requests,
               server_ms_per_request=1000 * busy / requests)
    return run


def _spread(runs: list[dict], key: str, digits: int = 1) -> list:
    """[median, min, max] of ``key`` over the runs."""
    values = [r[key] for r in runs]
    return [round(statistics.median(values), digits), round(min(values), digits), round(max(values), digits)]


def at_latency(latency: float, gold: dict, data: Path, n_items: int, args, tmp: Path) -> dict:
    trees = {"ours": ROOT} | ({"baseline": Path(args.baseline).resolve()} if args.baseline else {})
    server = _Server(gold, latency)
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    try:
        for repeat in range(args.repeats):
            order = list(trees) if repeat % 2 == 0 else list(trees)[::-1]  # interleaved, alternating first
            for name in order:
                runs[name].append(measure(server, trees[name], data, args.concurrency, n_items,
                                          tmp / f"{name}_{latency}_{repeat}"))
    finally:
        server.stop()
    ideal = args.concurrency / latency
    result = {"endpoint_latency_s": latency, "concurrency": args.concurrency, "ideal_items_per_s": round(ideal, 1)}
    for name, these in runs.items():
        result[name] = {
            "items_per_s": _spread(these, "items_per_s"),
            "share_of_ideal_items_per_s": [round(v / ideal, 3) for v in _spread(these, "items_per_s")],
            "mean_requests_in_flight": _spread(these, "in_flight"),
            "server_ms_per_request": _spread(these, "server_ms_per_request", 2),
            "client_cpu_ms_per_item": _spread(these, "client_cpu_ms_per_item", 2),
            "server_cpu_ms_per_request": _spread(these, "server_cpu_ms_per_request", 3),
        }
    digests = {r["predictions_sha1"] for these in runs.values() for r in these}
    result["same_predictions_every_run"] = len(digests) == 1
    result["_records"] = runs["ours"][0]["records"]
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, data, concurrency, limit, out = sys.argv[2:7]
        logging.basicConfig(level=logging.WARNING)
        client(url, data, int(concurrency), int(limit), out)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latencies", type=float, nargs="+", default=[1.0, 0.2])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per client and latency")
    parser.add_argument("--baseline", default=None,
                        help="root of another checkout whose client runs alternately with ours")
    parser.add_argument("--items", type=int, default=None,
                        help="the first N items only (a quick check; the figures are for all 1,215)")
    parser.add_argument("--photos", action="store_true",
                        help="every image file is a 1600x1200 photo-like JPEG (~200 KB, as real TIR-Bench "
                             "images are) instead of the fixture's small drawings")
    args = parser.parse_args()
    if args.baseline and not (Path(args.baseline) / "eval" / "runner.py").is_file():
        parser.error(f"--baseline {args.baseline}: no eval/runner.py there")
    if args.items is not None and args.items < 1:
        parser.error(f"--items {args.items}: must be at least 1")
    logging.basicConfig(level=logging.WARNING)

    from lookcloser.eval.fixtures import TIR_TASK_COUNTS, write_tir_bench
    from lookcloser.eval.loaders import load_benchmark
    from lookcloser.eval.scoring import aggregate, gold_response, score_predictions

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        write_tir_bench(tmp / "tir_bench", TIR_TASK_COUNTS)
        if args.photos:
            _photos(tmp / "tir_bench")
        items = load_benchmark("tir_bench", tmp / "tir_bench")[:args.items]
        load_s = time.perf_counter() - start
        # The prompts are unique ("[n] ..."): the server answers each with its gold answer.
        gold = {it.example["question"]: gold_response(it) for it in items}
        runs = []
        for latency in args.latencies:
            result = at_latency(latency, gold, tmp / "tir_bench", len(items), args, tmp)
            predictions = {k: {"id": k, **r} for k, r in result.pop("_records").items()}
            metrics = aggregate("tir_bench", score_predictions(items, predictions))
            result.update({"accuracy_of_gold_replies": metrics["overall"]["accuracy"], "failed": metrics["n_failed"]})
            runs.append(result)

    print(_compact(json.dumps({
        "benchmark": "eval client: TIR-Bench-sized run against a loopback OpenAI-compatible endpoint",
        "images": "1600x1200 JPEG photos" if args.photos else "the fixture's small drawings",
        "items": len(items),
        "format": "[median, min, max] over the repeats",
        "runs": runs,
        "goal_share_of_ideal_items_per_s": 0.9,
        "write_and_load_dataset_s": round(load_s, 2),
        "load_average_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
    }, indent=1)))


def _photos(root: Path) -> None:
    """Overwrite every image of the benchmark with one 1600x1200 photo-like JPEG (the server
    answers by the question's text, so what the picture shows does not matter)."""
    import io

    import numpy as np
    from PIL import Image, ImageFilter

    noise = (np.random.default_rng(0).random((1200, 1600, 3)) * 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(noise).filter(ImageFilter.GaussianBlur(3)).save(buffer, format="JPEG", quality=88)
    for path in (root / "data").rglob("*.*"):
        path.write_bytes(buffer.getvalue())


def _compact(text: str) -> str:
    """One line per [median, min, max]."""
    return re.sub(r"\[\s+([-\d.e, \n]+?)\s+\]", lambda m: "[" + ", ".join(v.strip() for v in m.group(1).split(",")) + "]",
                  text)


if __name__ == "__main__":
    main()
