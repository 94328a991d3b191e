"""recipes/tool_curriculum.yaml plans as documented: a data stage outside the checkpoint chain, a model override."""

from __future__ import annotations

from lookcloser.train.curriculum import check_inputs, plan


def test_tool_curriculum_plan_and_model_override(tmp_path):
    stages = plan("recipes/tool_curriculum.yaml")
    data, look, sft, grpo = stages
    assert [s.name for s in stages] == ["data", "look", "sft", "grpo"] and not data.makes_model
    assert look.config["model_name_or_path"] == "lookcloser/tiny-qwen3-vl"  # not chained to the data stage
    assert sft.config["model_name_or_path"] == str(look.output_dir)  # the cold start starts from the look stage
    assert grpo.config["model_name_or_path"] == str(sft.output_dir) and grpo.config["environment"] == "crop"
    assert all(s.config["dataset_path"].startswith(str(data.output_dir)) for s in (look, sft, grpo))
    check_inputs(stages, pending={s.name for s in stages})  # the pending data stage writes their data

    other = plan("recipes/tool_curriculum.yaml", model="/models/qwen3-vl-2b")
    assert other[0].config["model_name_or_path"] == other[1].config["model_name_or_path"] == "/models/qwen3-vl-2b"
    assert other[3].config["model_name_or_path"] == str(other[2].output_dir)


def test_data_stage_builds_train_and_held_out_roots(tmp_path, tiny_model_dir):
    import json

    from lookcloser.eval.loaders import load_tir_bench
    from lookcloser.train.grpo_tasks import ToolTaskArguments, build

    built = build(ToolTaskArguments(output_dir=str(tmp_path), count=3, heldout_count=2,
                                    model_name_or_path=str(tiny_model_dir)))
    items = load_tir_bench(built["heldout"])  # what python -m eval --benchmarks tir_bench reads
    assert len(items) == 2 and items[0].tags["task"] == ["visual_search"]
    seeds = [json.loads((built[s] / "settings.json").read_text())["seed"] for s in ("train", "heldout")]
    assert seeds == [1, 1001] and (built["train"] / "sft").is_dir() and (built["train"] / "grpo").is_dir()
