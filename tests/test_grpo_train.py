"""train/grpo.py end to end on the tiny model: recipes, data, TRL's real tool loop, filtering, W&B offline."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from PIL import Image

from lookcloser.train import grpo
from testing.wandb_offline import offline_runs
from tests.conftest import REPO

FAST = ["--bf16", "false", "--gradient_checkpointing", "false", "--use_cpu", "true", "--save_strategy", "no",
        "--logging_steps", "1", "--report_to", "none", "--dataloader_num_workers", "0"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _args(*argv: str):
    return grpo.parse_args([*argv, *FAST])


# -- recipes and data --

@pytest.mark.parametrize("recipe", ["grpo_synthetic", "grpo_disbench"])
def test_recipes_parse(recipe):
    extra = []
    if recipe == "grpo_disbench":  # its data (/data/DISBench) is not on this machine: the bundled fixture's layout
        from lookcloser.eval.loaders import ensure_fixtures

        root = ensure_fixtures() / "disbench"
        extra = ["--dataset_path", str(root / "queries.jsonl"), "--disbench_root", str(root)]
    script, config, model = _args(f"recipes/{recipe}.yaml", *extra)
    assert config.loss_type in ("dapo", "grpo", "dr_grpo") and config.num_generations >= 2
    assert config.max_tool_calling_iterations and config.max_turn_tokens and config.max_images
    assert len(config.reward_weights) == len(script.reward_funcs)
    assert config.filter_groups and model.model_name_or_path


def test_unknown_recipe_key_is_one_clear_error(tmp_path):
    from lookcloser.recipes import RecipeError

    recipe = tmp_path / "bad.yaml"
    recipe.write_text((REPO / "recipes/grpo_synthetic.yaml").read_text() + "max_turns: 3\n")
    with pytest.raises(RecipeError, match=r"bad.yaml: unknown recipe key\(s\) 'max_turns'"):
        grpo.parse_args([str(recipe)])


def test_reward_weights_must_match_reward_funcs():
    with pytest.raises(ValueError, match="reward_weights has 2 values for 3 reward_funcs"):
        _args("recipes/grpo_synthetic.yaml", "--reward_weights", "1.0", "0.5")  # checked as parsed
    script, config, _ = _args("recipes/grpo_synthetic.yaml")
    script.reward_funcs, config.reward_weights = ["accuracy", "overlong"], [1.0, 1.0]
    overlong = grpo.build_reward_funcs(script, config)[1]
    limit = config.max_completion_length  # sized to this run's budget: 0 up to 3/4 of it, -1 at the end
    assert overlong(["x", "y"], completion_ids=[[0] * (limit - limit // 4), [0] * limit]) == [0.0, -1.0]


def test_mir_questions_become_scored_prompts(sample_mir):
    from lookcloser.data_builders.mir import mir_grpo_dataset
    from lookcloser.rewards import REGISTRY

    rows = mir_grpo_dataset(sample_mir, stage=4)
    assert len(rows) == 64 and rows[0]["data_source"] == "mir" and rows[0]["task"] == "colour"
    first = rows[0]
    assert isinstance(first["images"][0], Image.Image)
    assert sum(b["type"] == "image" for b in first["prompt"][0]["content"]) == len(first["images"])
    assert "Reference Context" not in json.dumps(first["prompt"])  # stage 4: no context given
    gold = json.loads(first["reward_info"])["answer"]
    assert REGISTRY["accuracy"]([f"Answer: {gold}", "Answer: Z"], data_source=["mir"] * 2,
                                reward_info=[first["reward_info"]] * 2) == [1.0, 0.0]


def test_disbench_queries_open_their_collection(tmp_path):
    from lookcloser.agent.environments import PhotoCollectionEnv
    from lookcloser.data_builders.disbench import disbench_grpo_dataset
    from lookcloser.eval.fixtures import write_disbench
    from lookcloser.rewards import REGISTRY

    fixture = write_disbench(tmp_path / "DISBench")
    rows = disbench_grpo_dataset(fixture["root"] / "queries.jsonl", fixture["root"])
    row = rows[0]
    env = PhotoCollectionEnv(cache_dir=str(tmp_path / "index"))
    assert f"Photo collection of user {fixture['users'][0]}: 36 photos" in env.reset(**row)
    gold = json.loads(row["reward_info"])["answer"]
    answer = "<answer>" + json.dumps(gold) + "</answer>"
    assert REGISTRY["disbench"]([answer], data_source=[row["data_source"]], reward_info=[row["reward_info"]]) == [1.0]


def test_disbench_recipe_runs_on_a_generated_collection(tiny_model_dir, tmp_path):
    from lookcloser.eval.fixtures import write_disbench

    fixture = write_disbench(tmp_path / "DISBench")
    script, config, model_args = _args(
        "recipes/grpo_disbench.yaml", "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "run"),
        "--dataset_path", str(fixture["root"] / "queries.jsonl"), "--disbench_root", str(fixture["root"]),
        "--environment_kwargs", json.dumps({"cache_dir": str(tmp_path / "index"), "max_view": 2}),
        "--max_steps", "1", "--per_device_train_batch_size", "4", "--num_generations", "2",
        "--gradient_accumulation_steps", "1", "--max_turn_tokens", "16", "--max_completion_length", "48")
    trainer = grpo.build_trainer(script, config, model_args)
    assert {"ImageSearch", "FilterMetadata", "ViewPhotos"} <= {tool.__name__ for tool in trainer.tools}  # upstream names
    trainer.train()
    (log,) = [entry for entry in trainer.state.log_history if "trajectory/turns" in entry]
    assert log["trajectory/images"] == 0 and "accuracy/disbench" in log  # no input images; scored by F1


def test_synthetic_default_is_generated_once(tmp_path):
    from lookcloser.agent.oracle import build_synthetic
    from lookcloser.data_builders.grpo_rows import synthetic_dataset

    first = synthetic_dataset(tmp_path, build_synthetic, count=5, seed=3, canvas_size=384)
    marker = next(tmp_path.glob("*/settings.json"))
    stamp = marker.stat().st_mtime_ns
    again = synthetic_dataset(tmp_path, build_synthetic, count=5, seed=3, canvas_size=384)
    assert marker.stat().st_mtime_ns == stamp and again["reward_info"] == first["reward_info"]
    assert sorted(set(first["task"])) == ["jigsaw", "ocr", "rotation_game", "spot_difference", "visual_search"]
    assert (marker.parent / "sft").is_dir()  # the oracle trajectories for the cold start come with it


# -- TRL's real tool loop, driven by scripted replies inside the real generate --

def test_bad_tool_calls_become_error_observations_in_trl_loop(tiny_model_dir, tmp_path):
    from datasets import Dataset
    from transformers import LogitsProcessorList

    from lookcloser.agent.models import load_processor
    from lookcloser.train.grpo_lib.trainer import LookcloserGRPOTrainer
    from testing.scripted import ScriptedLogitsProcessor

    replies = ['<think>look</think><tool_call>{"name": "crop", "arguments": {</tool_call>',  # malformed JSON
               '<tool_call>\n{"name": "segment", "arguments": {"image_index": 0}}\n</tool_call>',  # unknown tool
               '<tool_call>\n{"name": "crop", "arguments": [0, 0, 1, 1]}\n</tool_call>',  # arguments not an object
               '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}\n</tool_call>',
               '<tool_call>\n{"name": "zoom", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}\n</tool_call>',
               "<think>It is red.</think><answer>A</answer>"]

    image = Image.new("RGB", (96, 64), (220, 30, 30))
    rows = [{"prompt": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Colour? A. red"}]}],
             "images": [image], "data_source": "mir", "reward_info": '{"answer": "A"}', "task": "colour"}] * 2
    script, config, _ = _args(
        "recipes/grpo_synthetic.yaml", "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path),
        "--max_steps", "1", "--per_device_train_batch_size", "2", "--num_generations", "2",
        "--max_tool_calling_iterations", "6", "--max_images", "2", "--max_turn_tokens", "128",
        "--max_completion_length", "1024", "--max_prompt_length", "8192", "--filter_groups", "false",
        "--environment", "tir_bench")
    trainer = LookcloserGRPOTrainer(
        model=str(tiny_model_dir), reward_funcs=grpo.build_reward_funcs(script, config), args=config,
        train_dataset=Dataset.from_list(rows), processing_class=load_processor(str(tiny_model_dir)),
        environment_factory=grpo.environment_factory(script))
    forcing = ScriptedLogitsProcessor(trainer.processing_class.tokenizer, lambda turn, _: replies[min(turn, 5)])
    trainer.model.generate = functools.partial(trainer.model.generate, logits_processor=LogitsProcessorList([forcing]))
    trainer.train()
    (log,) = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]
    assert log["tools/call_frequency"] == 5 and log["trajectory/turns"] == 6
    assert log["tools/failure_frequency"] == pytest.approx(4 / 5)  # malformed, unknown, bad arguments, budget
    assert log["tools/crop/call_frequency"] == 1 and log["tools/image_budget_refusals"] == 1
    assert log["trajectory/images"] == 2 and log["trajectory/masked_ratio"] == 0
    assert log["rewards/accuracy/mean"] == 1.0 and log["accuracy/mir/colour"] == 1.0
    assert log["rewards/format/mean"] == 1.0  # <think> read back from TRL's reasoning_content
    assert log["rewards/tool_use/mean"] == 1.0  # one successful tool result, right answer
    (row, *_) = [json.loads(line) for line in (tmp_path / "completions/completions_00001.jsonl").open()]
    tools = [line for line in row["completion"].splitlines() if line.startswith("[tool")]
    assert [t.split("]")[0] for t in tools] == ["[tool invalid_tool_call", "[tool segment", "[tool invalid_tool_call",
                                                "[tool crop", "[tool zoom"]
    assert "could not be parsed" in tools[0] and "unknown tool 'segment'" in tools[1]
    assert "must be a JSON object" in tools[2] and "<image>Image 1: crop of image 0" in tools[3]
    assert "image budget of 2 images" in tools[4]


# -- group filtering on real scored batches --

def _text(completion) -> str:
    return str(completion[-1].get("content") or "") if isinstance(completion, list) else str(completion)


def _odd_a_count(completions, **_):
    """A real, content-dependent reward with spread inside groups (the random model earns nothing else)."""
    return [float(_text(c).count("a") % 2) for c in completions]


def _rare_e(completions, **_):
    """Mostly earned: most groups are constant, so refilling runs out of rounds and fills with masked groups."""
    return [float(_text(c).count("e") >= 1) for c in completions]


def _first_round_constant(reward):
    """The first scoring round pays 0 everywhere (every group constant, so refilling must run
    whatever text the random model samples); later rounds are ``reward``'s."""
    calls = []

    def first_round_constant(completions, **kwargs):
        calls.append(len(completions))
        return [0.0] * len(completions) if len(calls) == 1 else reward(completions, **kwargs)

    return first_round_constant


@pytest.mark.parametrize("base_reward, rounds, seed", [(_odd_a_count, 3, 1), (_rare_e, 1, 0)])
def test_group_filtering_refills_the_batch(base_reward, rounds, seed, tiny_model_dir, tmp_path, sample_mir):
    from lookcloser.agent.models import load_processor
    from lookcloser.data_builders.mir import mir_grpo_dataset
    from lookcloser.train.grpo_lib.filtering import loss_tokens
    from lookcloser.train.grpo_lib.trainer import LookcloserGRPOTrainer

    _, config, _ = _args("--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path),
                         "--num_generations", "4", "--per_device_train_batch_size", "16", "--max_completion_length", "12",
                         "--filter_groups", "true", "--resample_rounds", str(rounds), "--mask_out_of_length", "false",
                         "--seed", str(seed))
    dataset = mir_grpo_dataset(sample_mir, stage=4)
    reward = _first_round_constant(base_reward)
    trainer = LookcloserGRPOTrainer(model=str(tiny_model_dir), reward_funcs=[reward], args=config,
                                    train_dataset=dataset, processing_class=load_processor(str(tiny_model_dir)))
    trainer.model.train()
    inputs = [dict(dataset[i]) for i in range(4) for _ in range(4)]
    calls = []
    original = trainer._score_round
    trainer._score_round = lambda rows: calls.append(len(rows)) or original(rows)
    batch = trainer._generate_and_score_completions(inputs)
    metrics = trainer._metrics["train"]
    assert batch["completion_ids"].size(0) == 16 and batch["advantages"].shape == (16,)
    assert int(batch["num_items_in_batch"]) == int(loss_tokens(batch))
    used = int(metrics["groups/resample_rounds"][-1])
    assert 1 <= used <= rounds  # the first round's groups are all constant
    assert calls == [16] * (1 + used) and len(metrics["groups/dropped_ratio"]) == 1 + used
    informative = metrics["groups/informative_ratio"][-1]
    loss_rows = (batch["completion_mask"] * batch["tool_mask"]).sum(dim=1) > 0
    groups = loss_rows.view(4, 4)
    kept = groups.any(dim=1)
    assert kept.float().mean().item() == pytest.approx(informative)
    for g in range(4):  # a kept group trains on its scored rows; a filler group is out of the loss entirely
        adv = batch["advantages"][g * 4:(g + 1) * 4]
        if kept[g]:
            assert adv.abs().sum() > 0
        else:
            assert adv.abs().sum() == 0


# -- a short run with everything on, logged to W&B offline and read back --

def test_short_run_logs_metrics_and_an_image_table_to_wandb_offline(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb-data"))
    monkeypatch.setenv("WANDB_PROJECT", "lookcloser-test")
    script, config, model_args = grpo.parse_args([
        "recipes/grpo_synthetic.yaml", "--model_name_or_path", str(tiny_model_dir), "--output_dir",
        str(tmp_path / "run"), "--synthetic_count", "6", "--synthetic_canvas_size", "384", "--max_steps", "2",
        "--environment", "tir_bench",  # six tools: prompts long enough to truncate
        "--per_device_train_batch_size", "4", "--num_generations", "2", "--max_turn_tokens", "24",
        "--max_completion_length", "64", "--max_prompt_length", "1960", "--rollout_chunk_size", "3",
        "--report_to", "wandb", "--run_name", "grpo-offline", *FAST[:-4]])
    trainer = grpo.build_trainer(script, config, model_args)
    trainer.train()
    trainer.end()
    import wandb

    wandb.finish()  # what the end of the script does (atexit); flushes the offline run file
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == 2
    for entry in logged:
        assert entry["trajectory/masked_ratio"] == pytest.approx(entry["trajectory/out_of_length_ratio"] +
                                                                 entry["trajectory/out_of_turns_ratio"], abs=1e-6)
        assert 0 <= entry["groups/dropped_ratio"] <= 1 and entry["trajectory/turns"] >= 1
    assert any(entry["prompt/truncated_ratio"] > 0 for entry in logged)

    (run,) = offline_runs(tmp_path)
    history, tables = run.history_keys, run.tables["completions"]
    for key in ("rewards/accuracy/mean", "rewards/format/mean", "rewards/tool_use/mean", "accuracy/tir_bench",
                "tools/call_frequency", "tools/failure_frequency", "tools/crop/call_frequency", "trajectory/turns",
                "trajectory/images", "groups/dropped_ratio", "timing/rollout_seconds"):
        assert f"train/{key}" in history, key
    assert any(key.startswith("train/accuracy/tir_bench/") for key in history)
    assert len(tables) == 2  # one completions table per logging step
    table = json.loads(Path(tables[-1]["completions.table.json"]).read_text())
    columns = table["columns"]
    assert columns[:3] == ["step", "prompt", "completion"] and columns[-1] == "images"
    assert len(table["data"]) == 4
    for row in table["data"]:
        assert row[1].startswith("[user] <image>") and isinstance(row[2], str)
        cell = row[-1]
        assert cell["_type"] == "image-file"
        with Image.open(tables[-1][cell["path"]]) as img:  # the picture is really there and decodes
            assert img.size == (cell["width"], cell["height"])
