"""GRPO with multi-turn tool use on images, rewarded by the benchmarks' own scorers.

    python train/grpo.py recipes/grpo_synthetic.yaml
    accelerate launch --config_file accelerate_configs/zero3.yaml train/grpo.py recipes/mir_curriculum_grpo.yaml \
        --model_name_or_path outputs/mir_curriculum/sft --dataset_path outputs/mir_curriculum/grpo_data

The policy talks to one of the agent's environments (``environment: tir_bench`` -> the image
tools) through TRL's ``environment_factory``; rewards come from the ``rewards`` registry by name
(``reward_funcs: [accuracy, format, tool_use]`` with ``reward_weights``). With no data set
named, seeded synthetic tool tasks are generated from the bundled images, so the recipe runs
offline. docs/grpo.md describes the recipe keys and the additions to TRL.
"""

from __future__ import annotations

import logging
import os

from trl import ModelConfig

from lookcloser.recipes import parse_recipe
from lookcloser.train.checks import check_grpo
from lookcloser.train.entry import (
    match_launcher_threads,
    model_and_processor,
    peft_config,
    removed_when_interrupted,
    train_and_save,
)
from lookcloser.train.fused_kernels import apply_fused_kernels
from lookcloser.train.grpo_lib.configs import GRPOScriptArguments, LookcloserGRPOConfig
from lookcloser.train.grpo_lib.data import load_grpo_dataset
from lookcloser.train.grpo_lib.environment import environment_factory
from lookcloser.train.grpo_lib.prompting import write_prompting_record
from lookcloser.train.grpo_lib.rewards import build_reward_funcs, check_reward_rows
from lookcloser.train.grpo_lib.trainer import LookcloserGRPOTrainer
from lookcloser.train.run_records import record_run
from lookcloser.train.wandb_logging import add_wandb_dashboards

logger = logging.getLogger(__name__)


def parse_args(argv=None, planned=()):
    """The recipe and flags (``argv``: a list, or a ``CommandLine``), checked (``train/checks.py``; ``planned``:
    folders earlier curriculum stages will write)."""
    parsed = parse_recipe((GRPOScriptArguments, LookcloserGRPOConfig, ModelConfig), argv, description=__doc__)
    check_grpo(*parsed, planned=planned)
    return parsed


def _init_cpu_deepspeed(training_args) -> None:
    """ZeRO-3 with a separate reference model needs DeepSpeed's process group up before the model loads;
    on CPU it must be gloo (measured; see platform notes)."""
    if training_args.use_cpu and os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true":
        import deepspeed  # here: an optional dependency, needed only under DeepSpeed on CPU

        deepspeed.init_distributed(dist_backend="gloo")


def build_trainer(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig, model_args: ModelConfig):
    """Model, processor, data, environment and rewards as the recipe says, in a LookcloserGRPOTrainer."""
    _init_cpu_deepspeed(training_args)
    dataset = load_grpo_dataset(script_args, training_args)
    check_reward_rows(dataset, script_args.reward_funcs, script_args.dataset_path or script_args.dataset_name)
    env_factory = environment_factory(script_args, dataset)  # per_row: the column checked before the model loads
    model_path, processor = model_and_processor(model_args, training_args, script_args.chat_template_path)
    logger.info("GRPO on %d prompts (%s), environment %s, rewards %s", len(dataset),
                script_args.dataset_path or script_args.dataset_name or "synthetic", script_args.environment,
                script_args.reward_funcs)
    training_args.remove_unused_columns = False  # the environments and rewards read the extra columns
    trainer = LookcloserGRPOTrainer(
        model=model_path,
        reward_funcs=build_reward_funcs(script_args, training_args),
        args=training_args,
        train_dataset=dataset,
        processing_class=processor,
        peft_config=peft_config(model_args),
        environment_factory=env_factory,
    )
    apply_fused_kernels(trainer, script_args.fused_kernels)
    add_wandb_dashboards(trainer, script_args, model_args, dataset, lambda args: load_grpo_dataset(args, training_args),
                         env_factory=env_factory,
                         max_turns=(training_args.max_tool_calling_iterations or 3) + 1)  # with report_to: wandb
    return trainer


def main(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig, model_args: ModelConfig) -> str:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is what this script is about
    if training_args.report_to and "wandb" in training_args.report_to:
        os.environ.setdefault("WANDB_PROJECT", "lookcloser")

    with removed_when_interrupted(training_args.output_dir):  # Ctrl-C: no half-made checkpoint or empty folder
        trainer = build_trainer(script_args, training_args, model_args)
        out = train_and_save(trainer, training_args.output_dir, training_args.resume_from_checkpoint,
                              configs=(script_args, model_args), merge_adapter=script_args.merge_adapter)
    if trainer.accelerator.is_main_process:
        record_run(trainer, out, model_args, script_args.run_settings)
        write_prompting_record(script_args, out, model_args.model_name_or_path, trainer.train_dataset)
    return out


if __name__ == "__main__":
    import sys  # the command line's own imports: nothing imports this entry's main block

    from lookcloser.cli import run

    match_launcher_threads()  # plain `python train/...` gets the threads `accelerate launch` would give
    sys.exit(run(main, parse_args))
