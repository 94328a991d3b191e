"""Learning proof on CPU with the tiny model (slow): GRPO raises a reward, and a cold-started model uses crop.

The tiny model has random weights, so both runs start from a short SFT, as a real run does:
(a) MIR stage-1 SFT so that it answers with an option letter, then GRPO with the ``mir`` reward on
four bundled colour questions; (b) SFT on the synthetic oracle trajectories (the cold start), then
GRPO with the image tools, where it must emit real ``crop`` calls that TRL's loop executes.
"""

from __future__ import annotations

import json

import pytest
import torch

from train import grpo, sft

pytestmark = pytest.mark.slow

FAST = ["--bf16", "false", "--gradient_checkpointing", "false", "--use_cpu", "true", "--save_strategy", "no",
        "--report_to", "none", "--dataloader_num_workers", "0"]


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # oversubscribed shared CPUs: OpenMP spin-waits cost 20x here
    yield
    torch.set_num_threads(threads)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def test_grpo_raises_the_mean_reward_on_bundled_mir_questions(tiny_model_dir, tmp_path):
    warm = tmp_path / "sft"
    sft.main(*sft.parse_args(["recipes/mir_stage1.yaml", "--model_name_or_path", str(tiny_model_dir),
                              "--output_dir", str(warm), "--max_steps", "60", "--logging_steps", "100",
                              "--use_cpu", "true"]))
    script, config, model_args = grpo.parse_args([
        "--model_name_or_path", str(warm), "--dataset_path", "data/mir_sample/all_data_rel.json", "--mir_stage", "1",
        "--max_train_samples", "4", "--environment", "none", "--reward_funcs", "mir", "--num_generations", "8",
        "--per_device_train_batch_size", "32", "--max_completion_length", "8", "--max_steps", "50",
        "--learning_rate", "1e-3", "--lr_scheduler_type", "constant", "--beta", "0", "--loss_type", "dapo",
        "--filter_groups", "true", "--mask_out_of_length", "false", "--seed", "0", "--logging_steps", "1",
        "--output_dir", str(tmp_path / "grpo"), *FAST])
    trainer = grpo.build_trainer(script, config, model_args)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "rewards/mir/mean" in entry]
    reward = [entry["rewards/mir/mean"] for entry in logs]
    first, last = _mean(reward[:10]), _mean(reward[-10:])
    print(f"mean mir reward: first 10 steps {first:.3f}, last 10 steps {last:.3f}")
    assert len(reward) == 50
    assert last >= first + 0.15, (first, last)
    assert all(0 <= entry["groups/dropped_ratio"] <= 1 for entry in logs)


def test_cold_started_model_makes_real_crop_calls(tiny_model_dir, tmp_path):
    from trl import SFTConfig, SFTTrainer
    from trl.chat_template_utils import get_training_chat_template

    from agent.models import load_processor
    from data_builders.output import load_output
    from data_builders.tool_sft import ToolTrajectoryCollator
    from train.grpo_data import synthetic_dataset

    tasks = ["visual_search", "ocr"]  # the zoom tasks: the oracle crops, then answers
    synthetic_dataset(tmp_path / "data", count=16, seed=0, tasks=tasks)
    (trajectories,) = [load_output(p.parent / "sft") for p in (tmp_path / "data").glob("*/settings.json")]
    processor = load_processor(str(tiny_model_dir))
    cold = tmp_path / "cold"
    args = SFTConfig(output_dir=str(cold), max_steps=140, per_device_train_batch_size=2, learning_rate=5e-3,
                     lr_scheduler_type="constant", assistant_only_loss=True, remove_unused_columns=False,
                     max_length=None, report_to="none", save_strategy="no", use_cpu=True, bf16=False, seed=0,
                     logging_steps=20)
    collator = ToolTrajectoryCollator(processor=processor, assistant_only_loss=True,
                                      chat_template=get_training_chat_template(processor))
    trainer = SFTTrainer(model=str(tiny_model_dir), args=args, train_dataset=trajectories,
                         processing_class=processor, data_collator=collator)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert losses[-1] < losses[0] / 4
    trainer.save_model(str(cold))
    processor.save_pretrained(str(cold))

    script, config, model_args = grpo.parse_args([
        "recipes/grpo_synthetic.yaml", "--model_name_or_path", str(cold), "--output_dir", str(tmp_path / "grpo"),
        "--synthetic_dir", str(tmp_path / "data"), "--synthetic_count", "16", "--synthetic_tasks", *tasks,
        "--max_steps", "2", "--temperature", "0.5", "--max_turn_tokens", "160", "--max_completion_length", "400",
        *FAST])
    grpo_trainer = grpo.build_trainer(script, config, model_args)
    grpo_trainer.train()
    logs = [entry for entry in grpo_trainer.state.log_history if "tools/call_frequency" in entry]
    crops = [entry["tools/crop/call_frequency"] for entry in logs]
    print("tools/call_frequency", [e["tools/call_frequency"] for e in logs], "crop", crops,
          "tools/failure_frequency", [e["tools/failure_frequency"] for e in logs])
    assert len(logs) == 2 and max(crops) > 0
    assert all(0 <= entry["tools/failure_frequency"] <= 1 for entry in logs)
    rows = [json.loads(line) for path in sorted((tmp_path / "grpo/completions").glob("*.jsonl")) for line in path.open()]
    crop_results = [line for row in rows for line in row["completion"].splitlines() if line.startswith("[tool crop]")]
    assert crop_results  # TRL's loop ran the environment's crop (an image, or an Error: the model can read)
