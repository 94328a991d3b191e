"""Eval never reports numbers it did not measure (issue 13).

A checkpoint retrained in place is not resumed from old predictions; a dead endpoint stops in
seconds naming its URL; a run where every call failed exits non-zero; progress lines carry an
ETA; the W&B run logs its config, tables and charts under ``WANDB_DIR``. Real tiny model, real
loopback HTTP server (testing/fake_endpoint.py), real files.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import socket
import time

import pytest

from lookcloser.eval.config import EvalConfig
from lookcloser.eval.loaders import EvalError
from lookcloser.eval.pipeline import evaluate
from lookcloser.eval.runner import PredictionStore
from testing.fake_endpoint import FakeEndpoint


def _attempts(out) -> dict[str, int]:
    return {k: r["attempt"] for k, r in PredictionStore(out / "mir" / "predictions.jsonl").load().items()}


def test_a_checkpoint_retrained_in_place_is_never_resumed(tiny_model_dir, tmp_path, caplog):
    from safetensors.torch import load_file, save_file

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_model_dir, ckpt)
    out = tmp_path / "eval"
    cfg = EvalConfig(model=str(ckpt), benchmarks="mir", limit=3, out=str(out), tools=False,
                     max_new_tokens_per_turn=4, save_trajectories=False)
    with caplog.at_level(logging.INFO, logger="lookcloser.eval.runner"):
        evaluate(cfg)
    assert any("ETA" in r.getMessage() for r in caplog.records if "[mir]" in r.getMessage())  # progress with ETA
    assert _attempts(out) and set(_attempts(out).values()) == {1}

    evaluate(cfg)  # same weights, same settings: resumes, nothing runs again
    assert set(_attempts(out).values()) == {1}

    # "Retrain" in place: same path, other weights.
    weights = load_file(ckpt / "model.safetensors")
    name = min(weights)
    weights[name] = weights[name] + 0.5
    save_file(weights, ckpt / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(EvalError, match=r"the model at .*ckpt changed \(weights or config\).*--resume false"):
        evaluate(cfg)
    # A setting that changes the answers refuses the same way.
    with pytest.raises(EvalError, match=r"max_new_tokens_per_turn: 4 -> 5"):
        evaluate(dataclasses.replace(cfg, max_new_tokens_per_turn=5))

    evaluate(dataclasses.replace(cfg, resume=False))  # starts over on the new weights
    assert set(_attempts(out).values()) == {1} and len(_attempts(out)) == 3
    evaluate(cfg)  # and now resumes against the new fingerprint
    assert set(_attempts(out).values()) == {1}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_dead_endpoint_stops_in_seconds_naming_the_url(tmp_path):
    url = f"http://127.0.0.1:{_free_port()}/v1"  # nothing listens there
    cfg = EvalConfig(model=url, benchmarks="mir", limit=2, out=str(tmp_path / "out"), request_retries=3)
    start = time.monotonic()
    with pytest.raises(EvalError, match=rf"cannot reach the endpoint {url}"):
        evaluate(cfg)
    assert time.monotonic() - start < 10
    assert not (tmp_path / "out" / "mir" / "predictions.jsonl").exists()


def test_a_run_where_every_call_failed_exits_non_zero(tmp_path):
    with FakeEndpoint(lambda request, attempt: {"status": 500}) as endpoint:
        cfg = EvalConfig(model=endpoint.url, benchmarks="mir", limit=3, out=str(tmp_path / "out"),
                         request_retries=0, retry_backoff=0.01)
        with pytest.raises(EvalError, match=rf"every one of the 3 episodes failed for model {endpoint.url}.*HTTP 500"):
            evaluate(cfg)
    assert (tmp_path / "out" / "report.md").exists()  # the failures are still listed


def test_eval_wandb_run_logs_config_tables_and_charts_under_wandb_dir(tmp_path, monkeypatch):
    from lookcloser.eval.scoring import gold_response
    from testing.wandb_offline import read_offline_run

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb_dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    with FakeEndpoint(lambda request, attempt: {"content": "B"}) as endpoint:
        cfg = EvalConfig(model=endpoint.url, benchmarks="mir", limit=2, out=str(tmp_path / "out"), wandb=True)
        evaluate(cfg)
    assert gold_response  # scored against the gold answers (whatever they are); W&B is what is checked here
    runs = list((tmp_path / "wandb_dir").rglob("offline-run-*"))
    assert len(runs) == 1 and not list((tmp_path / "out").rglob("offline-run-*"))
    # Offline runs keep their config inside the run's protobuf log (read back once wandb wrote it out).
    config = read_offline_run(next(runs[0].glob("run-*.wandb"))).config
    assert config["model"] == endpoint.url and "max_new_tokens_per_turn" in config
    assert "bundled fixtures" in config["data"]
    assert "checkpoint_digest" not in config  # an endpoint has no checkpoint folder to digest
    media = [p.relative_to(runs[0]).as_posix() for p in (runs[0] / "files" / "media").rglob("*") if p.is_file()]
    assert any("/table/" in p for p in media) and any("/images/" in p for p in media), media
