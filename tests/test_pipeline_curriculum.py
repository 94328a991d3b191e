"""The whole pipeline in one command (slow): recipes/mir_curriculum.yaml from nothing to its held-out table.

One reduced run (module fixture) of the recipe's own stages through ``train.curriculum.run``, moved under a
temporary folder: a smaller ImageNet-Think sample and a smaller held-out set; every training stage as
the recipe writes it (the skills need their steps). The table must have every column, and the
controls must sit below the GRPO row: flat gray images (the pixels decide MIR and the crop) and tools
off (the crop decides visual_search). The untrained row stays near each column's measured reference.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

RECIPE = Path("recipes/mir_curriculum.yaml")


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, tiny_model_dir):
    import os

    import torch

    from lookcloser.train.curriculum import run

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as accelerate launch would: OpenMP spin-waits cost 20x on shared CPUs
    root = tmp_path_factory.mktemp("pipeline")
    recipe = yaml.safe_load(RECIPE.read_text())
    text = yaml.safe_dump(recipe, sort_keys=False).replace(recipe["output_dir"], str(root / "run"))
    moved = yaml.safe_load(text)
    for stage in moved["stages"]:
        if stage.get("recipe"):  # a base recipe sits beside the curriculum recipe
            stage["recipe"] = str(RECIPE.resolve().parent / stage["recipe"])
        if stage["name"] == "imagenet_think_data":
            stage["rows"] = 100
        if stage["name"] == "eval":
            stage.update(mir_per_family=8, tir_count=40)
    path = root / "recipe.yaml"
    path.write_text(yaml.safe_dump(moved, sort_keys=False))
    run(path, model=str(tiny_model_dir))
    torch.set_num_threads(threads)
    table = json.loads((root / "run" / "eval" / "comparison.json").read_text())
    return {"root": root / "run", "recipe": path, "table": table, "rows": {r["label"]: r for r in table["rows"]}}


def test_every_stage_ran_and_the_table_has_every_column_and_row(pipeline):
    stages = [s["name"] for s in yaml.safe_load(RECIPE.read_text())["stages"]]
    assert all((pipeline["root"] / name / "curriculum_done.json").is_file() for name in stages)
    assert pipeline["table"]["columns"] == ["tir_bench", "mir", "disbench", "imagemining"]
    assert list(pipeline["rows"]) == ["untrained", "imagenet_think", "mir_stage1", "mir_stage2", "mir_stage3",
                                      "mir_stage4", "look", "sft", "grpo", "grpo, gray images", "grpo, tools off"]
    from lookcloser.train.curriculum import closing_line, plan

    assert closing_line(plan(pipeline["recipe"])).endswith(f"reports: {pipeline['root'] / 'eval' / 'comparison.md'}")
    text = (pipeline["root"] / "eval" / "comparison.md").read_text()
    assert "DISBench F1" in text and "ImageMining acc" in text and (pipeline["root"] / "eval" / "comparison.png").is_file()


def test_controls_sit_below_the_grpo_row(pipeline):
    rows = pipeline["rows"]
    search = {label: rows[label]["values"]["tir_bench"]["per_task"]["visual_search"] for label in rows}
    mir = {label: rows[label]["values"]["mir"]["value"] for label in rows}
    assert search["grpo"] > search["grpo, gray images"] and search["grpo"] > search["grpo, tools off"], search
    assert mir["grpo"] > mir["grpo, gray images"], mir


def test_untrained_row_is_near_the_reference(pipeline):
    refs, untrained = pipeline["table"]["references"], pipeline["rows"]["untrained"]["values"]
    for bench in ("tir_bench", "mir"):
        assert untrained[bench]["value"] <= refs[bench] + 0.1, (bench, untrained[bench], refs[bench])
