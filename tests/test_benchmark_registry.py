"""Walk the benchmark registry: eval, the TRL rewards, the verl adapter, compare, prepare and heldout
serve every registered benchmark (eval/benchmarks/, rewards/benchmarks/, data_builders/scenes/)."""

from __future__ import annotations

import json
import shutil

import pytest

from lookcloser.agent.environments import BENCHMARK_OF_ENVIRONMENT, ENVIRONMENTS
from lookcloser.data_builders.heldout import GENERATED, check_benchmarks
from lookcloser.eval import compare, prepare, report
from lookcloser.eval.benchmarks import SPECS, spec
from lookcloser.eval.config import EvalConfig, benchmark_names
from lookcloser.eval.loaders import find_benchmark_dir, load_benchmark, write_fixtures
from lookcloser.eval.scoring import METRICS, aggregate, answer_prior, gold_response, score_predictions
from lookcloser.rewards import REGISTRY, get_reward_funcs, scoring, verl
from lookcloser.rewards.benchmarks import SCORERS


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return write_fixtures(tmp_path_factory.mktemp("fixtures"))


def test_the_two_halves_of_every_spec_agree():
    assert list(SPECS)[:4] == ["tir_bench", "mir", "disbench", "imagemining"]
    for name, s in SPECS.items():
        assert s.scorer is SCORERS[s.scorer.name], name
        assert spec(name.upper().replace("_", "-")) is s
    # every scorer is some benchmark's (no orphan data_source), every environment's benchmark is scored
    assert {s.scorer.name for s in SPECS.values()} == set(SCORERS)
    assert set(BENCHMARK_OF_ENVIRONMENT.values()) <= set(SCORERS)
    with pytest.raises(KeyError, match="unknown benchmark 'nope'"):
        spec("nope")


@pytest.mark.parametrize("name", list(SPECS))
def test_every_consumer_serves_the_benchmark(name, fixtures):
    s = SPECS[name]
    source = s.scorer.name
    # eval: config, the fixture in its official layout, the scorer on every metric, the reports
    assert benchmark_names(name) == [name] and EvalConfig(benchmarks=name).turns(name) == s.max_turns
    items = load_benchmark(name, find_benchmark_dir(name, fixtures))
    assert items and all(not it.bad and it.benchmark == name for it in items)
    rows = score_predictions(items, {it.id: {"status": "ok", "response": gold_response(it)} for it in items})
    metrics = aggregate(name, rows)
    assert metrics["overall"] == dict.fromkeys(METRICS[name], 1.0)
    wrong = aggregate(name, score_predictions(items, {it.id: {"status": "ok", "response": "<answer>?</answer>"}
                                                      for it in items}))
    assert wrong["overall"][metrics["primary"]] < 0.5
    assert 0.0 < answer_prior(items) <= 1.0
    assert set(report.SHOWN[name]) <= set(METRICS[name]) and f"## {name}" in report.markdown(
        {"run": {"model": "m", "data": "d"}, "benchmarks": {name: metrics}})
    assert s.environment in ENVIRONMENTS
    # the TRL reward of the same name and the verl adapter, on the gold in the one shape
    it = items[0]
    info = s.to_info(it.gold)
    assert REGISTRY[source].__name__ == source and get_reward_funcs([source])[0] is REGISTRY[source]
    reward = REGISTRY[source]([gold_response(it), "<answer>?</answer>"], data_source=[name, name],
                              reward_info=[json.dumps(info)] * 2)
    assert reward[0] == 1.0 and reward[1] < 1.0
    assert REGISTRY["accuracy"]([gold_response(it)], data_source=[name], reward_info=[info]) == [1.0]
    assert source in verl.SOURCES and verl.compute_score(name, gold_response(it), info) == 1.0
    assert scoring.score(name, gold_response(it), info) == 1.0
    # compare's column, prepare's source, heldout's generator
    assert name in [c[0] for c in compare.COLUMNS] and compare.TITLES[name]
    assert prepare.SOURCES[name].startswith(("hf:", "git:"))
    assert prepare.parse_sources([f"{name}=hf:someone/copy"])[name] == "hf:someone/copy"
    assert name in GENERATED
    check_benchmarks([name])


def test_a_cached_fixture_folder_gets_a_newly_registered_benchmark(tmp_path):
    from lookcloser.eval.loaders import ensure_fixtures

    root = ensure_fixtures(tmp_path / "fx")
    newest = list(SPECS)[-1]
    kept = (root / "mir" / "all_data_rel.json").stat().st_mtime_ns
    shutil.rmtree(root / newest)  # as a copy cached before that benchmark was registered
    ensure_fixtures(root)
    assert load_benchmark(newest, find_benchmark_dir(newest, root))
    assert (root / "mir" / "all_data_rel.json").stat().st_mtime_ns == kept  # the others are not rewritten
