"""python -m eval against a scripted OpenAI-compatible endpoint: a real HTTP server on 127.0.0.1.

Shows: gold replies score 1.0 on every benchmark end to end (loaders -> agent loop -> HTTP ->
rewards -> reports); requests run concurrently; 500s, timeouts and dropped connections are
retried; a request that keeps failing is recorded as failed, counted and listed; a rerun
continues where the last run stopped (also after a torn write) and nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
import time

import pytest
from PIL import Image

from lookcloser.agent.images import load_example_images
from lookcloser.agent.openai_policy import image_url
from lookcloser.eval.config import EvalConfig
from lookcloser.eval.loaders import EvalError, write_fixtures
from lookcloser.eval.pipeline import evaluate, load_items
from lookcloser.eval.runner import PredictionStore
from lookcloser.eval.scoring import answer_prior, gold_response
from testing.fake_endpoint import FakeEndpoint

MAX_IMAGE_PIXELS = 2048 * 2048  # OpenAIPolicy's default upload budget


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return write_fixtures(tmp_path_factory.mktemp("fixtures"))


def _config(fixtures, tmp_path, **kw) -> EvalConfig:
    base = {"model": "http://unused", "data_root": str(fixtures), "out": str(tmp_path / "out"),
            "photo_index_dir": str(tmp_path / "photo_index"), "concurrency": 8, "request_timeout": 10.0,
            "request_retries": 2, "retry_backoff": 0.05}
    return EvalConfig(**{**base, **kw})


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def _item_text(item) -> str:
    if "question" in item.example:
        return item.example["question"]
    return "".join(b.get("text", "") for b in item.example["prompt"][0]["content"] if b.get("type") == "text")


class Oracle:
    """Finds which item a request is about: its first user message's images and text."""

    def __init__(self, items) -> None:
        self.items = []
        for item in items:
            urls = tuple(_sha(image_url(img, MAX_IMAGE_PIXELS)) for img in load_example_images(item.example))
            self.items.append((urls, _item_text(item), item))

    def item(self, request: dict):
        user = next(m for m in request["messages"] if m["role"] == "user")
        parts = user["content"] if isinstance(user["content"], list) else [{"type": "text", "text": user["content"]}]
        urls = tuple(_sha(p["image_url"]["url"]) for p in parts if p["type"] == "image_url")
        text = "".join(p.get("text", "") for p in parts if p["type"] == "text")
        matches = [item for u, t, item in self.items if u == urls and t in text]
        assert len(matches) == 1, f"{len(matches)} items match request text {text[:80]!r}"
        return matches[0]


def test_gold_replies_score_one_on_every_benchmark_end_to_end(fixtures, tmp_path):
    cfg = _config(fixtures, tmp_path)
    items, _ = load_items(cfg)
    oracle = Oracle([it for its in items.values() for it in its])

    def respond(request, attempt):
        return {"content": "I looked closely.\n" + gold_response(oracle.item(request))}

    with FakeEndpoint(respond) as endpoint:
        cfg.model = endpoint.url
        metrics = evaluate(cfg)
    bench = metrics["benchmarks"]
    for name in ("tir_bench", "mir", "imagemining"):
        assert bench[name]["overall"] == {"accuracy": 1.0}, name
    assert bench["disbench"]["overall"] == {"em": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0, "iou": 1.0}
    assert all(m["n_failed"] == 0 for m in bench.values())
    jigsaw = [it for it in items["tir_bench"] if it.tags["task"] == ["jigsaw"]]
    assert bench["tir_bench"]["groups"]["task"]["jigsaw"] == {"n": 2, "accuracy": 1.0,
                                                             "answer_prior": answer_prior(jigsaw)}
    assert all(0 <= g["answer_prior"] <= 1 for b in ("tir_bench", "mir") for g in bench[b]["groups"]["task"].values())
    assert set(bench["disbench"]["groups"]["event_type"]) == {"intra-event", "inter-event"}
    assert set(bench["imagemining"]["groups"]) >= {"category", "reasoning_type", "need_image_before_search",
                                                   "need_image_during_search"}
    assert set(bench["disbench_retriever"]["overall"]) >= {"recall@1", "map@3", "ndcg@5", "recall@10"}
    out = tmp_path / "out"
    on_disk = json.loads((out / "metrics.json").read_text())
    assert on_disk["benchmarks"]["mir"]["overall"]["accuracy"] == 1.0
    report = (out / "report.md").read_text()
    assert "| disbench | 4 | 0 | em | 100.0 | 28.7 |" in report and "| disbench | 4 | 0 | f1 | 100.0 | 55.0 |" in report
    for name in bench:
        with Image.open(out / f"{name}.png") as chart:
            assert chart.width > 400 and chart.height > 100
    lines = (out / "tir_bench" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 26 and all(json.loads(line)["status"] == "ok" for line in lines)
    assert len(list((out / "mir" / "trajectories").glob("*.json"))) == 64
    assert endpoint.requests == 26 + 64 + 4 + 14


def test_concurrency_retries_and_failures_are_recorded_never_dropped(fixtures, tmp_path):
    cfg = _config(fixtures, tmp_path, benchmarks="tir_bench", request_timeout=1.5)
    items = load_items(cfg)[0]["tir_bench"]
    oracle = Oracle(items)
    flaky, dropped, slow, broken, tool_user = (items[i].id for i in (0, 1, 2, 3, 4))
    saw_tool_result = []
    healed = [False]

    def respond(request, attempt):
        item = oracle.item(request)
        if item.id == flaky and attempt == 1:
            return {"status": 500}
        if item.id == dropped and attempt == 1:
            return {"drop": True}
        if item.id == slow and attempt == 1:
            return {"sleep": 4.0, "content": "too late"}  # past the client's 1.5 s timeout
        if item.id == broken and not healed[0]:
            return {"status": 503}
        if item.id == tool_user and attempt == 1:
            return {"content": "Let me zoom.", "tool_calls": [
                {"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}]}
        if item.id == tool_user:
            saw_tool_result.append(any(m["role"] == "tool" for m in request["messages"]))
        return {"content": gold_response(item)}

    with FakeEndpoint(respond, delay=0.25) as endpoint:
        cfg.model = endpoint.url
        start = time.monotonic()
        metrics = evaluate(cfg)["benchmarks"]["tir_bench"]
        elapsed = time.monotonic() - start
        first_requests, max_in_flight = endpoint.requests, endpoint.max_in_flight

        # Concurrency: many requests were in flight at once, and the run beat the sequential time.
        assert max_in_flight >= 4, max_in_flight
        assert elapsed < 26 * 0.25 + 4.0, elapsed
        # Retries: each transient failure cost one more request; the permanent one used all 3 attempts.
        assert first_requests == 26 + 3 + 1 + 2, first_requests
        assert saw_tool_result == [True]
        assert metrics["n_failed"] == 1 and metrics["failed"][0]["id"] == broken
        assert "HTTP 503" in metrics["failed"][0]["error"]
        assert metrics["overall"]["accuracy"] == pytest.approx(25 / 26)
        records = PredictionStore(tmp_path / "out" / "tir_bench" / "predictions.jsonl").load()
        assert len(records) == 26 and records[broken]["status"] == "failed"
        assert records[tool_user]["tool_calls"] == 1 and records[tool_user]["num_turns"] == 2

        # Rerun: only the failed item runs again; now it succeeds and nothing else is requested.
        healed[0] = True
        metrics = evaluate(cfg)["benchmarks"]["tir_bench"]
        assert endpoint.requests == first_requests + 1
    assert metrics["n_failed"] == 0 and metrics["overall"]["accuracy"] == 1.0
    records = PredictionStore(tmp_path / "out" / "tir_bench" / "predictions.jsonl").load()
    assert records[broken]["status"] == "ok" and records[broken]["attempt"] == 2


def test_resume_continues_after_an_interrupted_run(fixtures, tmp_path):
    cfg = _config(fixtures, tmp_path, benchmarks="imagemining", limit=9)
    items = load_items(_config(fixtures, tmp_path, benchmarks="imagemining"))[0]["imagemining"]
    oracle = Oracle(items)
    asked: list[str] = []

    def respond(request, attempt):
        item = oracle.item(request)
        asked.append(item.id)
        return {"content": gold_response(item)}

    with FakeEndpoint(respond, models=("fake-model", "another-model")) as endpoint:
        cfg.model = endpoint.url
        evaluate(cfg)  # a first run that stopped after 9 items...
        path = tmp_path / "out" / "imagemining" / "predictions.jsonl"
        with open(path, "a") as fh:  # ...and was killed while writing the 10th
            fh.write(json.dumps({"id": items[9].id, "status": "ok", "response": gold_response(items[9])})[:40])
        cfg.limit = None
        metrics = evaluate(cfg)["benchmarks"]["imagemining"]
        with pytest.raises(EvalError, match="holds predictions of another model or settings"):
            evaluate(_config(fixtures, tmp_path, benchmarks="imagemining", model=endpoint.url,
                             served_model_name="another-model"))
    assert sorted(asked[:9]) == sorted(it.id for it in items[:9])
    assert sorted(asked[9:]) == sorted(it.id for it in items[9:])  # the torn one ran again, the done ones did not
    assert metrics["n"] == 14 and metrics["n_failed"] == 0 and metrics["overall"]["accuracy"] == 1.0
    assert set(PredictionStore(path).load()) == {it.id for it in items}


def test_cli_with_the_yaml_recipe(fixtures, tmp_path, capsys):
    from lookcloser.eval.__main__ import main

    items = load_items(_config(fixtures, tmp_path, benchmarks="mir", limit=4))[0]["mir"]
    oracle = Oracle(items)
    with FakeEndpoint(lambda request, attempt: {"content": gold_response(oracle.item(request))}) as endpoint:
        metrics = main(["recipes/eval_mir_stage1.yaml", "--model", endpoint.url, "--data_root", str(fixtures),
                        "--benchmarks", "mir", "--limit", "4", "--out", str(tmp_path / "cli")])
    assert metrics["benchmarks"]["mir"]["overall"]["accuracy"] == 1.0
    assert metrics["run"]["config"]["mir_prompt_stage"] == 1  # from the recipe
    assert "mir" in capsys.readouterr().out
    assert (tmp_path / "cli" / "report.md").exists()
