"""What every entry script does the same way: train, save, and report a user's mistake in one line."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

# LoRA targets when a recipe sets use_peft but no lora_target_modules: every projection of the
# language model's attention and MLP (PEFT knows no default for Qwen3-VL and would stop).
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def peft_config(model_args):
    """TRL's ``get_peft_config`` with our default LoRA targets (None when use_peft is off)."""
    from trl import get_peft_config

    if model_args.use_peft and not model_args.lora_target_modules:
        model_args.lora_target_modules = list(DEFAULT_LORA_TARGETS)
    return get_peft_config(model_args)


def model_and_processor(model_args, training_args) -> tuple[str, object]:
    """The model to train (a hub id, a local folder, or the reserved tiny name, built offline and
    cached) and its processor; the trainer loads the weights from ``model_init_kwargs``, set here."""
    from lookcloser.agent.models import load_processor, resolve_model_path

    model_path = resolve_model_path(model_args.model_name_or_path)
    training_args.model_init_kwargs = {
        "dtype": model_args.dtype or "float32",
        "attn_implementation": model_args.attn_implementation,
        "revision": model_args.model_revision,
        **(training_args.model_init_kwargs or {}),
    }
    return model_path, load_processor(model_path, revision=model_args.model_revision)


def run_config(configs) -> dict:
    """What W&B records beside TRL's training arguments: our script's arguments and the recipe's text."""
    import dataclasses

    from lookcloser.recipes import last_recipe, own_fields

    config = {}
    for cfg in configs:
        values = dataclasses.asdict(cfg)
        config[type(cfg).__name__] = values
        config.update({f.name: values[f.name] for f in own_fields([type(cfg)])})  # top level: easy to filter on
    recipe = last_recipe()
    if recipe is not None and recipe.is_file():
        config["recipe_file"] = str(recipe)
        config["recipe_text"] = recipe.read_text(encoding="utf-8")
    return config


def _log_config_callback(configs):
    from transformers import TrainerCallback

    class LogRunConfig(TrainerCallback):
        """Runs after TRL's W&B callback started the run (callbacks run in the order added)."""

        def on_train_begin(self, args, state, control, **kwargs):
            wandb = sys.modules.get("wandb")
            if wandb is not None and getattr(wandb, "run", None) is not None:
                wandb.run.config.update(run_config(configs), allow_val_change=True)

    return LogRunConfig()


def train_and_save(trainer, output_dir: str, resume_from_checkpoint=None, configs=(),
                   merge_adapter: bool = False) -> str:
    """Train, log the metrics, and save a checkpoint that ``from_pretrained`` reloads as is.

    ``configs``: the script's own argument dataclasses, logged to W&B with the recipe text.
    ``merge_adapter``: a LoRA run also writes base + adapter merged to ``output_dir/merged``.
    """
    from lookcloser.agent.models import without_truncation

    if configs:
        trainer.add_callback(_log_config_callback(configs))
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
    if merge_adapter and (Path(output_dir) / "adapter_config.json").is_file():
        if trainer.accelerator.is_main_process:
            from lookcloser.agent.models import merge_adapter as merge

            merged = merge(output_dir, Path(output_dir) / "merged")
            trainer.accelerator.print(f"Adapter merged into its base: {Path(merged).resolve()}")
        trainer.accelerator.wait_for_everyone()
    trainer.end()
    return output_dir


def _launcher_pid() -> int | None:
    """The ``accelerate launch`` process that started this one, if any (Linux /proc)."""
    ppid = os.getppid()
    try:
        argv = Path(f"/proc/{ppid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    joined = " ".join(argv)
    if "accelerate" not in joined or "launch" not in argv:
        return None
    script = next((i for i, a in enumerate(argv) if a.endswith(".py") and "accelerate" not in a), len(argv))
    quiet = {"-q", "--quiet"} & set(argv[:script])
    return None if quiet else ppid  # `accelerate launch -q` exits 1 without a traceback by itself


def user_error_classes(extra: tuple[type[BaseException], ...] = ()) -> tuple[type[BaseException], ...]:
    """Exceptions that mean "the user asked for something wrong": one line, exit 2, no traceback."""
    from lookcloser.agent.models import ModelPathError
    from lookcloser.data_builders.records import RecordError
    from lookcloser.recipes import RecipeError

    return (RecordError, RecipeError, ModelPathError, *extra)


def report_error(message: object) -> int:
    """Print one ``error:`` line (first rank only) and return the exit status 2 -- also under
    ``accelerate launch``, where the launcher is ended first (it never returns then).

    Why the launcher is ended: ``accelerate launch`` answers any non-zero exit with an 11-line
    ``CalledProcessError`` traceback printed after ours, so the useful line would not be what the
    user sees last. Every rank hits the same mistake, so the launcher has nothing left to do; the
    shell then reports it as killed (status 137). ``LOOKCLOSER_KEEP_LAUNCHER=1`` turns this off.
    """
    line = "error: " + " ".join(str(message).split())
    first_rank = os.environ.get("LOCAL_RANK", "0") == "0" and os.environ.get("RANK", "0") == "0"
    launcher = _launcher_pid() if os.environ.get("LOOKCLOSER_KEEP_LAUNCHER") != "1" else None
    if not first_rank:
        if launcher is not None:
            time.sleep(10)  # stay quiet: a rank that exits first makes the launcher stop every rank, loudly
            os._exit(2)
        return 2
    if launcher is not None and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        time.sleep(1.5)  # the other ranks reach the same mistake: let their start-up lines come first
    print(line, file=sys.stderr, flush=True)
    if launcher is not None:
        sys.stdout.flush()
        os.kill(launcher, signal.SIGKILL)
        os._exit(2)
    return 2


def fail(message: object) -> NoReturn:
    """``report_error`` and exit."""
    sys.exit(report_error(message))


def run(main: Callable, parse_args: Callable, extra_errors: tuple[type[BaseException], ...] = ()) -> None:
    """Run a script's ``main``; a user's mistake (bad data, recipe, flag, model path) is one ``error:`` line."""
    errors = user_error_classes(extra_errors)
    try:
        main(*parse_args())
    except errors as err:
        fail(err)
