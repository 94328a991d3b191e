"""The cold start a GRPO recipe can build for itself: SFT on the synthetic tasks' oracle tool trajectories.

A random-weight model writes no well-formed tool call, so every GRPO group is constant and
nothing trains (reward 0, grad_norm 0). With ``cold_start_steps > 0`` and synthetic data,
``train/grpo.py`` first trains ``train/sft.py`` for that many steps on the oracle trajectories
written beside the GRPO prompts (``<synthetic data>/sft``) and starts GRPO from the result. The
checkpoint is cached under ``<synthetic data>/coldstart-<key>`` (key: the starting model, the data
folder, steps, learning rate, seed), so a rerun goes straight to GRPO.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

logger = logging.getLogger(__name__)


def cold_start_dir(data_dir: Path, model: str, steps: int, learning_rate: float, seed: int) -> Path:
    key = json.dumps({"model": str(model), "data": str(Path(data_dir).resolve()), "steps": steps,
                      "lr": learning_rate, "seed": seed}, sort_keys=True)
    return Path(data_dir) / f"coldstart-{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def cold_start(script_args, training_args, model_args, data_dir: Path) -> str:
    """Train (or reuse) the cold-start checkpoint; return its folder (every rank calls it, as any Trainer)."""
    from lookcloser.train import sft

    steps, lr = int(script_args.cold_start_steps), float(script_args.cold_start_learning_rate)
    target = cold_start_dir(data_dir, model_args.model_name_or_path, steps, lr, training_args.seed)
    if (target / "config.json").is_file():
        logger.info("cold start: reusing %s", target)
        return str(target)
    logger.info("cold start: %d SFT steps on the oracle trajectories %s -> %s", steps, data_dir / "sft", target)
    argv = ["--model_name_or_path", str(model_args.model_name_or_path), "--dtype", model_args.dtype or "float32",
            "--dataset_path", str(data_dir / "sft"), "--output_dir", str(target), "--assistant_only_loss", "true",
            "--max_length", "8192",
            "--max_steps", str(steps), "--per_device_train_batch_size", "8", "--learning_rate", str(lr),
            "--lr_scheduler_type", "cosine", "--warmup_steps", "0.05", "--weight_decay", "0.0",
            "--bf16", str(bool(training_args.bf16)).lower(), "--seed", str(training_args.seed),
            "--logging_steps", str(max(1, steps // 10)), "--save_strategy", "no", "--report_to", "none",
            "--dataloader_num_workers", "0", "--use_cpu", str(bool(training_args.use_cpu)).lower()]
    sft.main(*sft.parse_args(argv))
    return str(target)
