"""What every training entry script does the same way: train, save, and report bad input in one line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def train_and_save(trainer, output_dir: str, resume_from_checkpoint=None) -> str:
    """Train, log the metrics, and save a checkpoint that ``from_pretrained`` reloads as is."""
    from agent.models import without_truncation

    result = trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    trainer.log_metrics("train", result.metrics)
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()

    # Under ZeRO-3 saving is collective: every rank must call it.
    trainer.save_model(output_dir)
    if trainer.accelerator.is_main_process:
        # Save the processor as it was loaded, not with the truncation TRL set while training.
        without_truncation(trainer.processing_class).save_pretrained(output_dir)
    trainer.accelerator.wait_for_everyone()
    trainer.accelerator.print(f"Checkpoint saved to {Path(output_dir).resolve()}")
    trainer.end()
    return output_dir


def run(main: Callable, parse_args: Callable) -> None:
    """Run a script's ``main``; bad data or a bad recipe ends with one ``error:`` line, no traceback."""
    from data_builders.records import RecordError
    from train.recipes import RecipeError

    try:
        main(*parse_args())
    except (RecordError, RecipeError) as err:
        sys.exit(f"error: {err}")
