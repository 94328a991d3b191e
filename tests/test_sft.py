"""train/sft.py on the tiny model and the bundled sample: loss goes down, masks are exact, checkpoints reload."""

from __future__ import annotations

import json

import pytest
import torch

from lookcloser.agent.models import load_model
from lookcloser.train.sft import build_trainer, main, parse_args


def _args(tiny_model_dir, tmp_path, *extra):
    return parse_args([
        "recipes/mir_stage1.yaml",
        "--model_name_or_path", str(tiny_model_dir),
        "--output_dir", str(tmp_path / "out"),
        "--report_to", "none",
        *extra,
    ])


pytestmark = pytest.mark.usefixtures("repo_cwd")  # recipes name data relative to the repo root


def test_assistant_only_mask_covers_exactly_the_assistant_tokens(tiny_model_dir, tmp_path):
    trainer = build_trainer(*_args(tiny_model_dir, tmp_path, "--max_steps", "1"))
    examples = [trainer.train_dataset[i] for i in range(4)]
    batch = trainer.data_collator(examples)
    tokenizer = trainer.processing_class.tokenizer
    from lookcloser.data_builders.mir import build_stage, load_mir_records
    from tests.conftest import SAMPLE_MIR

    records = load_mir_records(SAMPLE_MIR)
    for row in range(4):
        labels = batch["labels"][row]
        trained = labels[labels != -100]
        target = build_stage(records[row], 1)["messages"][1]["content"][0]["text"]
        # Exactly the assistant's text and its end of turn (TRL's training template keeps the
        # newline after <|im_end|> in the span): no prompt, image or padding token.
        assert tokenizer.decode(trained) == target + "<|im_end|>\n"
        positions = (labels != -100).nonzero().flatten()
        assert torch.all(positions[1:] - positions[:-1] == 1), "the trained span must be contiguous"
        assert int(positions[-1]) < int(batch["attention_mask"][row].nonzero().max()) + 1
    assert len(trainer.train_dataset) == 64


def test_sft_lowers_the_loss_and_saves_a_reloadable_checkpoint(tiny_model_dir, tmp_path):
    script_args, training_args, model_args = _args(
        tiny_model_dir, tmp_path, "--num_train_epochs", "4", "--logging_steps", "4"
    )
    out = main(script_args, training_args, model_args)
    state = json.loads((tmp_path / "out" / "trainer_state.json").read_text())
    losses = [entry["loss"] for entry in state["log_history"] if "loss" in entry]
    assert len(losses) >= 4
    assert losses[-1] < 0.6 * losses[0], losses
    model = load_model(out)
    assert model.config.model_type == "qwen3_vl"
    assert (tmp_path / "out" / "processor_config.json").exists()
    # The truncation TRL applies while training must not be saved into the checkpoint's tokenizer.
    assert json.loads((tmp_path / "out" / "tokenizer.json").read_text())["truncation"] is None


def test_wandb_offline_logging_when_asked(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    main(*_args(tiny_model_dir, tmp_path, "--max_steps", "2", "--logging_steps", "1", "--report_to", "wandb"))
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and list(runs[0].glob("*.wandb")), "an offline W&B run with its log file"


def test_no_wandb_unless_asked(tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    main(*_args(tiny_model_dir, tmp_path, "--max_steps", "1"))
    assert not (tmp_path / "wandb").exists()
