"""The whole pipeline in one command (slow): recipes/mir_curriculum.yaml from nothing to its held-out table.

One run (module fixture) of the recipe through ``train.curriculum.run``, moved under a temporary folder and
cut down for CI's 45 minutes (``testing.pipeline_run.REDUCED``: fewer steps in the photo warm-up, the mixed
cold start and GRPO; fewer held-out items and rows in the eval stage): the photo-search warm-up,
ImageNet-Think, MIR stages 1-4, the crop look, the mixed cold start, one GRPO run over all four kinds of
task, and the eval on held-out seed 9009 with its gray-image and tools-off controls.

Asserted here: every stage ran; the table has every column and its rows; the learning targets the reduced
run meets (``HELD_WHEN_REDUCED``: MIR ≥ 0.75 above its gray-image control, the untrained row near each
column's reference). The rest of issue 25's targets (DISBench and ImageMining ≥ 0.5, the crop and the
searches above their controls) need the recipe's steps: ``python bench/bench_pipeline.py`` runs it as written
and reports every target by name (docs/benchmarks.md records that run).
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow

EVALUATED = ["tir_bench", "mir", "disbench", "imagemining"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, tiny_model_dir):
    from testing.pipeline_run import REDUCED, run_pipeline

    return run_pipeline(tmp_path_factory.mktemp("pipeline"), str(tiny_model_dir), REDUCED)


def test_every_stage_ran_and_the_table_has_every_column_and_row(pipeline):
    import yaml

    from lookcloser.eval.benchmarks import DEFAULT_BENCHMARKS
    from lookcloser.train.curriculum import closing_line, plan
    from testing.pipeline_run import RECIPE

    recipe = yaml.safe_load(RECIPE.read_text())
    stages = [s["name"] for s in recipe["stages"]]
    assert all((pipeline["root"] / name / "curriculum_done.json").is_file() for name in stages)
    # the recipe leaves the columns to the registry (tests/test_curriculum.py): its default run, in its order
    assert pipeline["table"]["columns"] == list(DEFAULT_BENCHMARKS) == EVALUATED
    assert list(pipeline["rows"]) == ["untrained", "mir_stage4", "sft", "grpo", "grpo, gray images",
                                      "grpo, tools off"]
    assert closing_line(plan(pipeline["recipe"])).endswith(f"reports: {pipeline['root'] / 'eval' / 'comparison.md'}")
    text = (pipeline["root"] / "eval" / "comparison.md").read_text()
    assert "DISBench F1" in text and "ImageMining acc" in text and (pipeline["root"] / "eval" / "comparison.png").is_file()


def test_the_reduced_run_meets_the_targets_it_can_hold(pipeline):
    from testing.pipeline_run import HELD_WHEN_REDUCED, figures, targets

    met = targets(pipeline["table"])
    assert set(HELD_WHEN_REDUCED) <= set(met)
    missed = [name for name in HELD_WHEN_REDUCED if not met[name]]
    rows = figures(pipeline["table"])
    print(json.dumps({"targets": met, "table": rows}, indent=1))  # in CI's log (-rP): the reduced run's figures
    assert not missed, (missed, rows)


def test_the_checkpoints_are_plain_transformers_folders(pipeline):
    from transformers import AutoConfig

    for name in ("photo_warmup", "mir_stage4", "sft", "grpo"):
        assert AutoConfig.from_pretrained(pipeline["root"] / name).model_type == "qwen3_vl", name
