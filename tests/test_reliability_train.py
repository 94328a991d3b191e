"""Training runs that never race, never go stale and never lose work (issue 13; issue 11 point 4).

The embedded default builds atomically under concurrent first use; a curriculum stage trains again
when its recipe, starting checkpoint or data changed, and so does every later stage, with the
thread settings ``accelerate launch`` would give; a LoRA output is a checkpoint that eval, GRPO
and the next stage load; W&B records our arguments and the recipe; a run killed with SIGKILL
after a checkpoint resumes to the same losses; under ``accelerate launch`` a user error is the
last line. Real tiny model, real files, real processes where a process is the point.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"
TINY_SFT = ["--max_train_samples", "2", "--per_device_train_batch_size", "2", "--logging_steps", "1",
            "--report_to", "none", "--num_train_epochs", "1"]


pytestmark = pytest.mark.usefixtures("repo_cwd")  # recipes name data relative to the repo root


def test_embedded_default_builds_atomically_when_several_start_at_once(tmp_path):
    from lookcloser.agent.models import resolve_model_path
    from lookcloser.agent.tiny_qwen3_vl import build_tiny_qwen3_vl

    # Three builders on an empty cache at once (what the ranks of a fresh `accelerate launch` do).
    target = tmp_path / "cache" / "tiny-qwen3-vl"
    errors: list[BaseException] = []

    def build():
        try:
            build_tiny_qwen3_vl(target)
        except BaseException as err:  # noqa: BLE001 - collected and asserted below
            errors.append(err)

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert [p.name for p in target.parent.iterdir()] == ["tiny-qwen3-vl"]  # no temporary folder left
    assert (target / "config.json").is_file() and (target / "tokenizer_config.json").is_file()
    from lookcloser.agent.models import load_model

    assert load_model(resolve_model_path(str(target))).config.model_type == "qwen3_vl"


def _curriculum(tmp_path: Path, data: Path, lr: float = 1e-3) -> Path:
    recipe = {
        "output_dir": str(tmp_path / "run"),
        "defaults": {"model_name_or_path": "lookcloser/tiny-qwen3-vl", "dtype": "float32", "images_root": str(SAMPLE),
                     "dataset_path": str(data), "max_train_samples": 2, "max_steps": 1,
                     "per_device_train_batch_size": 2, "learning_rate": 1e-3, "max_length": 1024,
                     "save_strategy": "no", "report_to": "none", "use_cpu": True, "dataloader_num_workers": 0},
        "stages": [{"name": "think", "mir_stage": 1}, {"name": "mir", "mir_stage": 2, "learning_rate": lr}],
    }
    path = tmp_path / "curriculum.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def test_curriculum_reruns_a_stage_whose_inputs_changed_and_every_later_one(tmp_path, capsys, monkeypatch):
    from lookcloser.train.curriculum import main

    data = tmp_path / "mir.json"
    shutil.copy(SAMPLE / "all_data_rel.json", data)
    recipe = _curriculum(tmp_path, data)
    # In-process stages get accelerate's thread setting: OMP_NUM_THREADS (unset: 1) for torch too.
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert main([str(recipe), "--skip", "think"]) == 0
        assert torch.get_num_threads() == 1 and os.environ["OMP_NUM_THREADS"] == "1"
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    assert "mir: finished" in out and "(1/1 trained" in out

    def plan_lines(*args: str) -> dict[str, str]:
        assert main([str(recipe), "--dry_run", *args]) == 0
        lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("[curriculum] ") and ": " in line]
        return {line.split()[2].rstrip(":"): line for line in lines if "/" in line.split()[1]}

    assert "(done, skipped)" in plan_lines("--skip", "think")["mir"]
    # The stage left out before now joins: it trains, and the finished stage after it trains again.
    lines = plan_lines()
    assert "(to train)" in lines["think"] and "starts after 'think', which trains" in lines["mir"]
    # A changed recipe key, or changed data, makes the stage train again (and says why).
    _curriculum(tmp_path, data, lr=2e-3)
    assert "its recipe changed (learning_rate)" in plan_lines("--skip", "think")["mir"]
    _curriculum(tmp_path, data)
    records = json.loads(data.read_text())
    data.write_text(json.dumps(records[:-1]))
    assert f"its data {data} changed" in plan_lines("--skip", "think")["mir"]


def test_grpo_wandb_config_holds_our_arguments_and_the_recipe():
    from lookcloser.train.entry import run_config
    from lookcloser.train.grpo import parse_args

    script_args, _, model_args = parse_args(["recipes/grpo_synthetic.yaml", "--tool_bonus_cap", "2"])
    config = run_config((script_args, model_args))
    assert config["environment"] == script_args.environment and config["tool_bonus_cap"] == 2
    assert config["reward_funcs"] == script_args.reward_funcs and "dataset_path" in config
    assert config["recipe_text"] == (REPO / "recipes" / "grpo_synthetic.yaml").read_text()
    assert config["ModelConfig"]["model_name_or_path"] == model_args.model_name_or_path


@pytest.mark.slow
def test_lora_output_is_a_checkpoint_for_eval_grpo_and_the_next_stage(tmp_path, monkeypatch):
    from lookcloser.agent.models import load_model
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.pipeline import evaluate
    from lookcloser.train import grpo, sft

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "lora"
    sft.main(*sft.parse_args(["recipes/mir_stage1.yaml", *TINY_SFT, "--max_steps", "1", "--use_peft", "true",
                              "--warmup_steps", "0", "--lr_scheduler_type", "constant", "--merge_adapter", "true",
                              "--output_dir", str(out), "--report_to", "wandb"]))
    assert (out / "adapter_config.json").is_file() and not (out / "config.json").exists()
    assert (out / "merged" / "config.json").is_file()

    # W&B: our own arguments and the recipe file's text, beside TRL's, in the run's config.
    import wandb

    config = dict(wandb.run.config)
    assert config["recipe_text"] == (REPO / "recipes" / "mir_stage1.yaml").read_text()
    assert config["mir_stage"] == 1 and config["dataset_path"] == "data/mir_sample/all_data_rel.json"
    assert config["merge_adapter"] is True and config["ModelConfig"]["use_peft"] is True
    assert config["learning_rate"] == pytest.approx(3e-3)  # TRL's own arguments are still there
    wandb.finish()
    assert list((tmp_path / "wandb").glob("offline-run-*")), "an offline run under WANDB_DIR"

    # The adapter folder loads as base + adapter: the same weights as the merged checkpoint.
    from_adapter = dict(load_model(str(out)).named_parameters())
    merged = dict(load_model(str(out / "merged")).named_parameters())
    assert all(torch.equal(p, merged[n]) for n, p in from_adapter.items())
    base = dict(load_model("lookcloser/tiny-qwen3-vl").named_parameters())
    assert any(not torch.equal(p, base[n]) for n, p in from_adapter.items()), "the adapter must change weights"

    metrics = evaluate(EvalConfig(model=str(out), benchmarks="mir", limit=1, tools=False, out=str(tmp_path / "ev"),
                                  max_new_tokens_per_turn=2, save_trajectories=False))
    assert metrics["benchmarks"]["mir"]["n"] == 1 and metrics["benchmarks"]["mir"]["n_failed"] == 0

    trainer = grpo.build_trainer(*grpo.parse_args(["recipes/grpo_synthetic.yaml", "--model_name_or_path", str(out),
                                                   "--synthetic_count", "2", "--output_dir", str(tmp_path / "g"),
                                                   "--report_to", "none"]))
    assert all(torch.equal(p.detach().cpu(), merged[n]) for n, p in trainer.model.named_parameters())

    # The next curriculum stage starts from the adapter folder.
    nxt = sft.main(*sft.parse_args(["recipes/mir_stage1.yaml", *TINY_SFT, "--max_steps", "1", "--model_name_or_path",
                                    str(out), "--output_dir", str(tmp_path / "next"), "--mir_stage", "2"]))
    assert (Path(nxt) / "model.safetensors").is_file()


def _losses(output_dir: Path) -> dict[int, float]:
    state = json.loads((output_dir / "trainer_state.json").read_text())
    return {e["step"]: e["loss"] for e in state["log_history"] if "loss" in e}


_HOLD_AFTER_CHECKPOINT_2 = """
import sys, time
from pathlib import Path
from transformers import TrainerCallback
from lookcloser.train.entry import train_and_save
from lookcloser.train.sft import build_trainer, parse_args

class HoldAfterCheckpoint2(TrainerCallback):
    def on_save(self, args, state, control, **kwargs):  # runs once the checkpoint's files are written
        if state.global_step == 2:
            (Path(args.output_dir) / "held_after_checkpoint_2").touch()
            time.sleep(600)

script_args, training_args, model_args = parse_args(sys.argv[1:])
trainer = build_trainer(script_args, training_args, model_args)
trainer.add_callback(HoldAfterCheckpoint2())
train_and_save(trainer, training_args.output_dir)
"""


@pytest.mark.slow
def test_training_killed_after_a_checkpoint_resumes_to_the_same_losses(tmp_path):
    from lookcloser.train.sft import main, parse_args

    args = ["recipes/mir_stage1.yaml", "--max_train_samples", "8", "--per_device_train_batch_size", "2",
            "--max_steps", "6", "--logging_steps", "1", "--save_strategy", "steps", "--save_steps", "2",
            "--report_to", "none", "--seed", "7", "--learning_rate", "1e-3"]
    whole = tmp_path / "whole"
    main(*parse_args([*args, "--output_dir", str(whole)]))
    expected = _losses(whole)
    assert sorted(expected) == [1, 2, 3, 4, 5, 6]

    killed = tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    # The real training script's trainer, held still right after checkpoint-2 is saved, so the kill
    # lands between checkpoints however fast the steps run (a quiet machine trains all 6 in 0.3 s).
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_AFTER_CHECKPOINT_2, *args, "--output_dir", str(killed)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not (killed / "held_after_checkpoint_2").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint-2 before the run ended"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL and (killed / "checkpoint-2").is_dir()
    assert not (killed / "checkpoint-4").exists()
    last = max((p for p in killed.glob("checkpoint-*")), key=lambda p: int(p.name.split("-")[1]))
    from transformers import TrainerCallback

    from lookcloser.train.entry import train_and_save
    from lookcloser.train.sft import build_trainer

    trained: list[int] = []

    class Steps(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            trained.append(state.global_step)

    # resumed as a user does (the folder holds the killed run's checkpoint: without the flag it is refused)
    trainer = build_trainer(*parse_args([*args, "--output_dir", str(killed), "--resume_from_checkpoint", str(last)]))
    trainer.add_callback(Steps())
    train_and_save(trainer, str(killed), str(last))
    resumed = _losses(killed)
    step = int(last.name.split("-")[1])
    assert trained == list(range(step + 1, 7)), trained  # continued: the steps before the kill were not redone
    assert sorted(resumed) == [1, 2, 3, 4, 5, 6]
    for s in range(step + 1, 7):  # the steps trained after the kill
        assert resumed[s] == pytest.approx(expected[s], rel=1e-5, abs=1e-6), (s, resumed, expected)


@pytest.mark.slow
def test_user_error_under_accelerate_launch_is_the_last_line():
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    # -q, as the README runs several processes: accelerate's CalledProcessError traceback is not printed
    proc = subprocess.run(["accelerate", "launch", "-q", "--config_file", "accelerate_configs/cpu_1proc.yaml",
                           "train/sft.py", "recipes/mir_stage1.yaml", "--learnin_rate", "1e-3"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1] == "error: unknown flag --learnin_rate; did you mean --learning_rate?"
    assert "CalledProcessError" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.returncode == 1  # accelerate's own status for a failed child; never 137 (killed)
