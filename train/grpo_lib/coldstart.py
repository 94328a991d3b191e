"""The cold start a GRPO recipe can build for itself: SFT on the synthetic tasks' oracle tool trajectories.

A random-weight model writes no well-formed tool call, so every GRPO group is constant and
nothing trains (reward 0, grad_norm 0). With ``cold_start_steps > 0`` and synthetic data,
``train/grpo.py`` first trains ``train/sft.py`` for that many steps on the oracle trajectories
written beside the GRPO prompts (``<synthetic data>/sft``) and starts GRPO from the result. The
checkpoint is cached under ``<synthetic data>/coldstart-<key>`` (key: the starting model, the data
folder, steps, learning rate, seed), so a rerun goes straight to GRPO. With ``cold_start_look_steps``
the trajectories' SFT starts from a warm-up on ``<synthetic data>/look`` (the question asked of the
oracle's crop alone): without it the tiny model learns the call but never reads the crop.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from lookcloser.recipes import RecipeError

logger = logging.getLogger(__name__)


def cold_start_dir(data_dir: Path, model: str, steps: int, learning_rate: float, seed: int,
                   look_steps: int = 0) -> Path:
    key = {"model": str(model), "data": str(Path(data_dir).resolve()), "steps": steps, "lr": learning_rate, "seed": seed}
    if look_steps:  # keyed only when used, so earlier caches stay valid
        key["look_steps"] = look_steps
    key = json.dumps(key, sort_keys=True)
    return Path(data_dir) / f"coldstart-{hashlib.sha1(key.encode()).hexdigest()[:10]}"


def cold_start(script_args, training_args, model_args, data_dir: Path) -> str:
    """Train (or reuse) the cold-start checkpoint; return its folder (every rank calls it, as any Trainer)."""
    steps, lr = int(script_args.cold_start_steps), float(script_args.cold_start_learning_rate)
    look_steps = int(script_args.cold_start_look_steps)
    target = cold_start_dir(data_dir, model_args.model_name_or_path, steps, lr, training_args.seed, look_steps)
    if (target / "config.json").is_file():
        logger.info("cold start: reusing %s", target)
        return str(target)
    start = str(model_args.model_name_or_path)
    if look_steps:
        if not (data_dir / "look").is_dir():  # a recipe mistake: one error line, before any training
            raise RecipeError(f"cold_start_look_steps: {data_dir / 'look'} is missing (only the visual_search "
                              "task writes look records; add it to synthetic_tasks or set cold_start_look_steps: 0)")
        logger.info("cold start: %d look steps on %s", look_steps, data_dir / "look")
        start = _sft(start, data_dir / "look", target.with_name(target.name + "-look"), look_steps, lr,
                     training_args, model_args)
    logger.info("cold start: %d SFT steps on the oracle trajectories %s -> %s", steps, data_dir / "sft", target)
    return _sft(start, data_dir / "sft", target, steps, lr, training_args, model_args)


def _sft(start: str, dataset: Path, target: Path, steps: int, lr: float, training_args, model_args) -> str:
    from lookcloser.train import sft

    argv = ["--model_name_or_path", start, "--dtype", model_args.dtype or "float32",
            "--dataset_path", str(dataset), "--output_dir", str(target), "--assistant_only_loss", "true",
            "--max_length", "8192",
            "--max_steps", str(steps), "--per_device_train_batch_size", "8", "--learning_rate", str(lr),
            "--lr_scheduler_type", "cosine", "--warmup_steps", "0.05", "--weight_decay", "0.0",
            "--bf16", str(bool(training_args.bf16)).lower(), "--seed", str(training_args.seed),
            "--logging_steps", str(max(1, steps // 10)), "--save_strategy", "no", "--report_to", "none",
            "--dataloader_num_workers", "0", "--use_cpu", str(bool(training_args.use_cpu)).lower()]
    sft.main(*sft.parse_args(argv))
    return str(target)
