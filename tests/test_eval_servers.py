"""Eval against endpoints that behave as real servers do (issue 41, item 3), on the project's fake
endpoint (testing/fake_endpoint.py: a real HTTP server on loopback) configured as each one answers:

- ``transformers serve``: pinned to one model, HTTP 500 on ``GET /v1/models``, HTTP 400 for a chat
  request naming another model;
- vLLM's server: lists its one model, refuses another name;
- a server that lists no model.

With ``--served_model_name`` the model list is optional; without it, a list that failed or is empty
is one clear error naming the flag and the HTTP status as what it is (not "is the server up?").
"""

from __future__ import annotations

import pytest

from lookcloser.eval.config import EvalConfig
from lookcloser.eval.loaders import EvalError
from lookcloser.eval.pipeline import evaluate
from testing.fake_endpoint import FakeEndpoint

PINNED = "outputs/mir_stage1"  # what `transformers serve` calls a local checkpoint it serves


def _answer(request: dict, attempt: int) -> dict:
    return {"content": "<answer>A</answer>"}


def _cfg(endpoint: FakeEndpoint, tmp_path, **kwargs) -> EvalConfig:
    return EvalConfig(**{"model": endpoint.url, "benchmarks": "mir", "limit": 2, "out": str(tmp_path / "out"),
                         "request_retries": 0, "retry_backoff": 0.01, **kwargs})


def _models_asked(endpoint: FakeEndpoint) -> int:
    return sum(t.rstrip("/").endswith("/models") for t in endpoint.targets)


def test_transformers_serve_pinned_model_500_on_models_works_with_the_name(tmp_path):
    with FakeEndpoint(_answer, models=500, serves=PINNED) as endpoint:
        metrics = evaluate(_cfg(endpoint, tmp_path, served_model_name=PINNED))
        assert endpoint.requests >= 2 and _models_asked(endpoint) == 1  # asked once: reachable, then optional
    assert metrics["benchmarks"]["mir"]["n_failed"] == 0, metrics


def test_a_failed_model_list_without_the_name_is_one_error_naming_the_status_and_the_flag(tmp_path):
    with FakeEndpoint(_answer, models=500, serves=PINNED) as endpoint:
        with pytest.raises(EvalError) as err:
            evaluate(_cfg(endpoint, tmp_path))
        assert endpoint.requests == 0  # stopped before any item
    message = str(err.value)
    assert message == (f"GET {endpoint.url}/models answered HTTP 500 Internal Server Error: name the served model "
                       "with --served_model_name NAME"), message
    assert "is the server up" not in message


def test_an_empty_model_list_is_an_error_naming_served_model_name(tmp_path):
    with FakeEndpoint(_answer, models=()) as endpoint, pytest.raises(EvalError) as err:
        evaluate(_cfg(endpoint, tmp_path))
    assert str(err.value) == (f"the endpoint {endpoint.url} lists no models (GET {endpoint.url}/models): name the "
                              "served model with --served_model_name NAME")


def test_vllm_lists_its_model_and_a_name_it_does_not_serve_is_refused_before_any_item(tmp_path):
    served = "Qwen/Qwen3-VL-8B-Instruct"
    with FakeEndpoint(_answer, models=(served,), serves=served) as endpoint:
        metrics = evaluate(_cfg(endpoint, tmp_path))  # the listed model, asked by its name
        assert metrics["benchmarks"]["mir"]["n_failed"] == 0, metrics
        with pytest.raises(EvalError, match=f"--served_model_name qwen3-vl: the endpoint .* serves {served}"):
            evaluate(_cfg(endpoint, tmp_path, served_model_name="qwen3-vl", out=str(tmp_path / "other")))


def test_a_wrong_name_on_a_server_that_lists_nothing_fails_with_the_servers_400(tmp_path):
    with FakeEndpoint(_answer, models=500, serves=PINNED) as endpoint, pytest.raises(EvalError) as err:
        evaluate(_cfg(endpoint, tmp_path, served_model_name="default"))
    assert "HTTP 400" in str(err.value) and f"this server serves '{PINNED}'" in str(err.value), str(err.value)
