"""What every training entry script does the same way: model and processor, PEFT, train and save, and
on Ctrl-C remove what was half-made and say what was kept (``lookcloser.cli`` prints it)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lookcloser.cli import Interrupted, interrupt_stays_an_interrupt

# LoRA targets when a recipe sets use_peft but no lora_target_modules: every projection of the
# language model's attention and MLP (PEFT knows no default for Qwen3-VL and would stop).
DEFAULT_LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


# Fields that say where a run writes or reports, not what it trains: the same run may change them.
NOT_RUN_SETTINGS = {"output_dir", "logging_dir", "resume_from_checkpoint", "overwrite_output_dir", "report_to",
                    "run_name", "logging_steps", "save_steps", "save_strategy", "save_total_limit", "push_to_hub",
                    "hub_model_id", "hub_token", "hub_strategy", "hub_private_repo"}


@dataclass
class OutputFolderArguments:
    """Whether a run may write over another run's checkpoint (``check_output_dir``)."""

    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Train into an output_dir that holds another run's checkpoint, replacing it (without it "
                          "that is an error: another folder, or --resume_from_checkpoint to continue a run)."},
    )
    run_settings: dict | None = field(default=None, init=False, repr=False)  # as parsed; see run_settings()


def run_settings(configs) -> dict:
    """What a run trains with (every field of its configs but where it writes or reports), as JSON values:
    recorded beside its checkpoint so that a later run into the same folder can tell itself from another."""
    values = {}
    for cfg in configs:
        for f in dataclasses.fields(cfg):
            if f.init and f.name not in NOT_RUN_SETTINGS:
                values[f.name] = getattr(cfg, f.name)
    return json.loads(json.dumps(values, sort_keys=True, default=str))


def holds_checkpoint(folder: Path) -> bool:
    """A finished checkpoint (a model or an adapter) or a Trainer checkpoint-N is in ``folder``."""
    return folder.is_dir() and (any((folder / name).is_file() for name in ("config.json", "adapter_config.json"))
                                or last_checkpoint(folder) is not None)


def check_output_dir(script_args, training_args, model_args) -> None:
    """A run never silently writes over another run's checkpoint: the folder must be empty, hold this
    same run (the settings recorded in its ``lookcloser_run.json`` equal these: training again gives
    the same checkpoint), or be resumed (``--resume_from_checkpoint``) or given up
    (``--overwrite_output_dir true``). Sets ``script_args.run_settings`` (recorded when saved)."""
    from lookcloser.errors import RecipeError
    from lookcloser.train.run_records import read_run_record

    script_args.run_settings = run_settings((script_args, training_args, model_args))
    out = Path(training_args.output_dir or "").expanduser()
    resume = training_args.resume_from_checkpoint
    if script_args.overwrite_output_dir or (resume and str(resume).lower() != "false") or not holds_checkpoint(out):
        return
    recorded = read_run_record(out).get("settings")
    if recorded == script_args.run_settings:
        return
    if isinstance(recorded, dict):
        changed = sorted(k for k in set(recorded) | set(script_args.run_settings)
                         if recorded.get(k) != script_args.run_settings.get(k))
        what = f"trained with other settings ({', '.join(changed[:4])}{', ...' if len(changed) > 4 else ''})"
    else:
        what = "not written by this command"
    raise RecipeError(f"output_dir: {out} holds another run's checkpoint ({what}); give another --output_dir, "
                      "--overwrite_output_dir true to replace it, or --resume_from_checkpoint to continue it")


def match_launcher_threads() -> None:
    """Give a run started without a launcher (``python train/sft.py``, a curriculum's in-process stage)
    the threads ``accelerate launch`` gives its processes: ``OMP_NUM_THREADS``, 1 when unset.

    Why: torch's own default (one thread per core) oversubscribes a shared CPU: OpenMP threads spin
    waiting for each other (a GRPO stage 3.6x, a loaded 2-core machine's SFT steps up to 40x slower).
    ``OMP_NUM_THREADS=N python train/sft.py ...`` uses N.
    """
    if "LOCAL_RANK" in os.environ or "ACCELERATE_MIXED_PRECISION" in os.environ:
        return  # started by a launcher: it already chose
    threads = os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(max(1, int(threads)))


def peft_config(model_args):
    """TRL's ``get_peft_config`` with our default LoRA targets (None when use_peft is off)."""
    from trl import get_peft_config

    if model_args.use_peft and not model_args.lora_target_modules:
        model_args.lora_target_modules = list(DEFAULT_LORA_TARGETS)
    return get_peft_config(model_args)


def model_and_processor(model_args, training_args, chat_template_path: str | None = None) -> tuple[str, object]:
    """The model to train (a hub id, a local folder, or the reserved tiny name, built offline and
    cached) and its processor (``chat_template_path``: the user's template instead of the checkpoint's);
    the trainer loads the weights from ``model_init_kwargs``, set here."""
    from lookcloser.agent.models import load_processor, resolve_model_path
    from lookcloser.agent.template_files import read_template

    model_path = resolve_model_path(model_args.model_name_or_path)
    training_args.model_init_kwargs = {
        "dtype": model_args.dtype or "float32",
        "attn_implementation": model_args.attn_implementation,
        "revision": model_args.model_revision,
        **(training_args.model_init_kwargs or {}),
    }
    return model_path, load_processor(model_path, chat_template=read_template(chat_template_path),
                                      revision=model_args.model_revision)


def run_config(configs) -> dict:
    """What W&B records beside TRL's training arguments: our script's arguments and the recipe's text."""
    import dataclasses

    from lookcloser.recipes import own_fields

    config = {}
    for cfg in configs:
        values = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg) if f.init}
        config[type(cfg).__name__] = values
        config.update({f.name: values[f.name] for f in own_fields([type(cfg)])})  # top level: easy to filter on
        if getattr(cfg, "recipe_text", None) is not None:  # set by parse_recipe (lookcloser.recipes.RecipeRecord)
            config["recipe_file"], config["recipe_text"] = cfg.recipe_file, cfg.recipe_text
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
    from lookcloser.checkpoints import check_whole_checkpoint

    if configs:
        trainer.add_callback(_log_config_callback(configs))
    result = trainer.train(resume_from_checkpoint=resume_from_checkpoint)
    saving = time.time()
    try:
        with interrupt_stays_an_interrupt():
            trainer.log_metrics("train", result.metrics)
            trainer.save_metrics("train", result.metrics)
            trainer.save_state()

            # Under ZeRO-3 saving is collective: every rank must call it.
            trainer.save_model(output_dir)
            if trainer.accelerator.is_main_process:
                # Save the processor as it was loaded, not with the truncation TRL set while training.
                without_truncation(trainer.processing_class).save_pretrained(output_dir)
                check_whole_checkpoint(output_dir)  # e.g. ZeRO-3 shards saved ungathered: said now, not at the next load
            trainer.accelerator.wait_for_everyone()
    except KeyboardInterrupt:  # the final save was cut: files it wrote are no checkpoint
        for path in Path(output_dir).iterdir() if Path(output_dir).is_dir() else ():
            if path.is_file() and path.stat().st_mtime >= saving:
                path.unlink()
        raise
    trainer.accelerator.print(f"Checkpoint saved to {Path(output_dir).resolve()}")
    if merge_adapter and (Path(output_dir) / "adapter_config.json").is_file():
        if trainer.accelerator.is_main_process:
            from lookcloser.agent.models import merge_adapter as merge

            merged = merge(output_dir, Path(output_dir) / "merged")
            trainer.accelerator.print(f"Adapter merged into its base: {Path(merged).resolve()}")
        trainer.accelerator.wait_for_everyone()
    trainer.end()
    return output_dir


def last_checkpoint(folder: str | Path) -> Path | None:
    """The newest whole ``checkpoint-N`` in ``folder``: the Trainer writes ``trainer_state.json`` last,
    so a checkpoint without it was cut short (a killed run) and is not resumed from."""
    checkpoints = [p for p in Path(folder).glob("checkpoint-*")
                   if p.name.split("-")[-1].isdigit() and (p / "trainer_state.json").is_file()]
    return max(checkpoints, key=lambda p: int(p.name.split("-")[-1]), default=None)


@contextlib.contextmanager
def removed_when_interrupted(output_dir: str | Path) -> Iterator[None]:
    """Ctrl-C while building or training: remove half-written checkpoints, and the output folder when
    that leaves it empty (the Trainer makes it when built), then raise ``Interrupted`` saying which
    checkpoint is kept and the flag that resumes from it."""
    out = Path(output_dir)
    try:
        with interrupt_stays_an_interrupt():
            yield
    except KeyboardInterrupt:
        for partial in out.glob("checkpoint-*") if out.is_dir() else ():
            if partial.is_dir() and not (partial / "trainer_state.json").is_file():
                shutil.rmtree(partial, ignore_errors=True)
        if out.is_dir() and not any(out.iterdir()):
            out.rmdir()
        kept = last_checkpoint(out) if out.is_dir() else None
        if kept is None:
            left = f" ({out} holds nothing of this run)" if out.exists() else ""
            raise Interrupted(f"no checkpoint was saved yet, nothing is kept{left}") from None
        raise Interrupted(f"{kept} is whole", ["--resume_from_checkpoint", str(kept)]) from None
