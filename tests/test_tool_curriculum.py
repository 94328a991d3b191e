"""recipes/tool_curriculum.yaml plans as documented: a data stage outside the checkpoint chain, a model override."""

from __future__ import annotations

import json

from lookcloser.train.curriculum import check_stages, plan


def test_tool_curriculum_plan_and_model_override(tmp_path):
    stages = plan("recipes/tool_curriculum.yaml")
    data, look, sft, grpo = stages
    assert [s.name for s in stages] == ["data", "look", "sft", "grpo"] and not data.makes_model
    assert look.config["model_name_or_path"] == "lookcloser/tiny-qwen3-vl"  # not chained to the data stage
    assert sft.config["model_name_or_path"] == str(look.output_dir)  # the cold start starts from the look stage
    assert grpo.config["model_name_or_path"] == str(sft.output_dir) and grpo.config["environment"] == "crop"
    assert all(s.config["dataset_path"].startswith(str(data.output_dir)) for s in (look, sft, grpo))
    check_stages(stages)  # every stage's settings: the data stage writes their data, look/sft their models

    other = plan("recipes/tool_curriculum.yaml", model="/models/qwen3-vl-2b")
    assert other[0].config["model_name_or_path"] == other[1].config["model_name_or_path"] == "/models/qwen3-vl-2b"
    assert other[3].config["model_name_or_path"] == str(other[2].output_dir)


def test_data_stage_builds_train_and_held_out_roots(tmp_path, tiny_model_dir):
    import json

    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments, build
    from lookcloser.eval.benchmarks.tir_bench import load_tir_bench

    built = build(ToolTaskArguments(output_dir=str(tmp_path), count=3, heldout_count=2,
                                    model_name_or_path=str(tiny_model_dir)))
    items = load_tir_bench(built["heldout"] / "tir_bench")  # what python -m eval --data_root heldout reads
    assert len(items) == 2 and items[0].tags["task"] == ["visual_search"]
    settings = {s: json.loads((built[s] / "settings.json").read_text()) for s in ("train", "heldout")}
    assert settings["train"]["seed"] == 1 and settings["heldout"]["heldout_seed"] == 1001
    assert (built["train"] / "sft").is_dir() and (built["train"] / "grpo").is_dir()
    assert not (built["heldout"] / "sft").exists()  # held out: evaluated, never a training set


def test_direct_ratio_mixes_answers_without_a_tool_into_the_training_cold_start(tmp_path, tiny_model_dir):
    import pytest
    from datasets import load_from_disk

    from lookcloser.agent.oracle import DIRECT_THINK
    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments, build

    built = build(ToolTaskArguments(output_dir=str(tmp_path), count=12, heldout_count=4, direct_ratio=0.5,
                                    model_name_or_path=str(tiny_model_dir)))
    train = load_from_disk(str(built["train"] / "sft"))
    answers = {str(r["id"]): r["answer"] for r in json.loads((built["train"] / "TIR-Bench.json").read_text())}
    direct = [r for r in train if len(r["messages"]) == 2]
    assert 0 < len(direct) < len(train) == 12  # both kinds, every task kept
    for r in direct:  # the question, then the oracle's answer at once, with the input picture only
        assert r["messages"][1]["content"] == f"<think>{DIRECT_THINK}</think><answer>{answers[r['id']]}</answer>"
        assert len(r["images"]) == 1 and not r["messages"][1].get("tool_calls")
    assert len(load_from_disk(str(built["train"] / "look"))) == 12  # the look warm-up keeps every task
    with pytest.raises(ValueError, match="direct_ratio must be between 0 and 1"):
        build(ToolTaskArguments(output_dir=str(tmp_path / "bad"), count=2, direct_ratio=1.5,
                                model_name_or_path=str(tiny_model_dir)))
    with pytest.raises(ValueError, match="copy_drills: no task a program solves in tasks"):
        ToolTaskArguments(tasks=["visual_search"], environment="crop+python", copy_drills=2)
    with pytest.raises(ValueError, match="reserved for held-out data"):
        build(ToolTaskArguments(output_dir=str(tmp_path / "bad"), count=2, seed=1001, heldout_seed=1002,
                                model_name_or_path=str(tiny_model_dir)))


def test_sft_share_leaves_part_of_a_kind_to_grpo_and_changes_nothing_else(tmp_path, tiny_model_dir):
    """``sft_share``: the cold start gets a share of a kind's trajectories; the GRPO prompts, the look
    records and the trajectories it keeps are those of the same build without it."""
    import pytest
    from datasets import load_from_disk

    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments, build

    def built(folder, **kw):
        out = build(ToolTaskArguments(output_dir=str(tmp_path / folder), count=12, heldout_count=0,
                                      model_name_or_path=str(tiny_model_dir), **kw))["train"]
        return {s: load_from_disk(str(out / s)) for s in ("sft", "grpo", "look")}

    every, part = built("every"), built("part", sft_share=["visual_search=0.5"])
    kept = {r["id"]: r["messages"] for r in part["sft"]}
    assert 0 < len(kept) < len(every["sft"]) == 12
    assert all(kept[r["id"]] == r["messages"] for r in every["sft"] if r["id"] in kept)
    assert len(part["grpo"]) == len(part["look"]) == 12 and part["grpo"]["prompt"] == every["grpo"]["prompt"]
    with pytest.raises(ValueError, match="sft_share: every task's share is 0"):
        ToolTaskArguments(sft_share=["visual_search=0"])


def test_replay_mixes_an_earlier_stage_s_records_in_after_the_stage_s_own(tmp_path, tiny_model_dir):
    """The pipeline's look and cold-start stages replay MIR stage 4: the tool records first, unchanged, then
    the replayed MIR records in the same columns, with no tool schemas (templated as their own stage was)."""
    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments, build
    from lookcloser.data_builders.mir import mir_sft_dataset
    from lookcloser.train.sft import SFTScriptArguments, load_sft_dataset

    built = build(ToolTaskArguments(output_dir=str(tmp_path), count=3, heldout_count=0,
                                    model_name_or_path=str(tiny_model_dir)))
    own = load_sft_dataset(SFTScriptArguments(dataset_path=str(built["train"] / "look")))
    mir = "data/mir_sample/all_data_rel.json"
    mixed = load_sft_dataset(SFTScriptArguments(dataset_path=str(built["train"] / "look"), replay_path=mir,
                                                replay_mir_stage=4, replay_count=2))
    assert len(mixed) == len(own) + 2 and mixed.column_names == own.column_names
    assert [mixed[k]["messages"] for k in range(len(own))] == [own[k]["messages"] for k in range(len(own))]
    stage4 = mir_sft_dataset(mir, None, stage=4)
    for k in range(2):
        replayed = mixed[len(own) + k]
        assert replayed["tools"] == "" and len(replayed["images"]) == len(stage4[k]["images"])
        assert replayed["messages"][-1]["content"][0]["text"] == stage4[k]["messages"][-1]["content"][0]["text"]


def test_code_curriculum_plan_offers_python_and_holds_out_a_reserved_seed():
    """recipes/code_curriculum.yaml (docs/grpo.md, "Code tool"): crop+python data, the copy drills before the
    cold start, GRPO with tool_set image+python, the held-out table on a reserved seed no stage trains on."""
    from lookcloser.agent.environments import with_tool_set
    from lookcloser.data_builders.heldout import HELDOUT_SEEDS

    data, copy, sft, grpo, evaluation = plan("recipes/code_curriculum.yaml")
    assert data.config["environment"] == "crop+python" and data.config["images"] == "procedural"
    assert data.config["tasks"] == ["spot_difference", "rotation_game", "jigsaw", "maze", "color"]
    assert data.config["copy_drills"] > 0 and copy.config["dataset_path"].endswith("data/train/copy")
    # Two kinds thinned in the cold start and every prompt in GRPO, so GRPO has them left to learn (item 5).
    assert data.config["sft_share"] == ["color=0.25", "maze=0.25"] and grpo.config["max_steps"] == 48
    assert sft.config["model_name_or_path"] == str(copy.output_dir)
    assert with_tool_set(grpo.config["environment"], grpo.config["tool_set"]) == "crop+python"
    assert grpo.config["model_name_or_path"] == str(sft.output_dir) and evaluation.config["stages"] == ["sft", "grpo"]
    assert evaluation.config["heldout_seed"] in HELDOUT_SEEDS and data.config["seed"] not in HELDOUT_SEEDS
    # Every kind trained on, and refcoco, held out of training entirely, on the same procedural pictures.
    assert evaluation.config["tir_tasks"] == [*data.config["tasks"], "refcoco"]
    assert evaluation.config["tir_pictures"] == "procedural"
