"""Supervised fine-tuning of a vision-language model on staged MIR (or any TRL-conversational) data.

    python train/sft.py recipes/mir_stage1.yaml
    accelerate launch --config_file accelerate_configs/zero3.yaml train/sft.py recipes/mir_stage1.yaml \
        --model_name_or_path Qwen/Qwen3-VL-8B-Instruct --dataset_path /data/MIR/all_data_rel.json \
        --images_root /data/MIR/images

The recipe names the model the way one names any checkpoint: a hub id, a local folder, or the
reserved ``lookcloser/tiny-qwen3-vl`` (a tiny random Qwen3-VL built offline on first use).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from trl import ModelConfig, ScriptArguments, SFTConfig

from lookcloser.recipes import RecipeError, RecipeRecord
from lookcloser.train.entry import (
    OutputFolderArguments,
    match_launcher_threads,
    model_and_processor,
    peft_config,
    removed_when_interrupted,
    train_and_save,
)
from lookcloser.train.fused_kernels import FusedKernelsArguments, apply_fused_kernels
from lookcloser.train.wandb_logging import DashboardArguments, add_wandb_dashboards

logger = logging.getLogger(__name__)


@dataclass
class SFTScriptArguments(FusedKernelsArguments, ScriptArguments, DashboardArguments, OutputFolderArguments,
                         RecipeRecord):
    """Where the data comes from. ``dataset_path`` covers local files; ``dataset_name`` a hub id."""

    dataset_path: str | None = field(
        default=None,
        metadata={"help": "An MIR JSON file (converted to the chosen stage on the fly), a folder written by "
                          "`python -m data_builders` (save_to_disk), or a parquet/JSONL file of SFT records."},
    )
    images_root: str | None = field(
        default=None, metadata={"help": "Root that MIR image paths are relative to (default: the JSON's folder)."}
    )
    mir_stage: int = field(default=1, metadata={"help": "MIR curriculum stage 0-4 when dataset_path is MIR JSON."})
    faithful_upstream: bool = field(
        default=False, metadata={"help": "Reproduce upstream MIR preprocessing, img2img leak included."}
    )
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N records."})
    replay_path: str | None = field(default=None, metadata={
        "help": "Records of an earlier stage mixed into this one so that its skill is kept (replay): an MIR JSON "
                "(at replay_mir_stage) or any dataset_path form."})
    replay_mir_stage: int = field(default=4, metadata={"help": "MIR stage of replay_path when it is MIR JSON."})
    replay_count: int | None = field(default=None, metadata={"help": "Replay records mixed in (default: all)."})
    merge_adapter: bool = field(default=False, metadata={
        "help": "With use_peft: also write base + LoRA adapter merged into output_dir/merged (a full checkpoint). "
                "The adapter folder itself loads too (eval, GRPO, the next curriculum stage)."})
    preprocess_once: bool = field(
        default=True,
        metadata={"help": "Vision data: template, tokenize and image-process every record once before training and "
                          "reuse the tensors every epoch (train/sft_data.py; holds the pixel patches in memory). "
                          "Off: collate on the fly (then use dataloader_num_workers)."},
    )
    pack_sequences: str = field(
        default="auto",
        metadata={"help": "Padding-free batches (needs preprocess_once): 'auto' packs when the attention is "
                          "flash_attention_2/3 (varlen, GPU); 'true' packs with any attention (sdpa/eager: exact but "
                          "slower on CPU); 'false' pads.", "choices": ["auto", "true", "false"]},
    )


def load_sft_dataset(script_args: SFTScriptArguments):
    """Resolve the recipe's data settings to a ``datasets.Dataset`` of SFT records."""
    from datasets import load_dataset

    from lookcloser.data_builders.mir import mir_sft_dataset
    from lookcloser.data_builders.output import load_records

    def local(path: Path, mir_stage: int):
        if path.suffix == ".json" and path.is_file():
            return mir_sft_dataset(path, script_args.images_root, stage=mir_stage,
                                   faithful_upstream=script_args.faithful_upstream)
        return load_records(path)  # a builder's folder (either format), a .parquet or .jsonl file: GRPO's loader too

    if script_args.dataset_path:
        dataset = local(Path(script_args.dataset_path), script_args.mir_stage)
    elif script_args.dataset_name:  # the user asked for a hub dataset by name
        dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
        dataset = dataset[script_args.dataset_train_split]
    else:
        raise RecipeError("set `dataset_path` (local data) or `dataset_name` (a hub data set) in the recipe")
    if script_args.max_train_samples:
        dataset = dataset.select(range(min(script_args.max_train_samples, len(dataset))))
    if script_args.replay_path:
        replay = local(Path(script_args.replay_path), script_args.replay_mir_stage)
        dataset = with_replay(dataset, replay.select(range(min(script_args.replay_count or len(replay), len(replay)))))
    return dataset


def with_replay(dataset, replay):
    """``dataset`` then ``replay``'s records, in ``dataset``'s columns (a missing text column is empty: a
    replayed MIR record has no ``tools``, so it is templated without them, as its own stage was)."""
    from datasets import concatenate_datasets

    for name in dataset.column_names:
        if name not in replay.column_names:
            replay = replay.add_column(name, [""] * len(replay))
    return concatenate_datasets([dataset, replay.select_columns(dataset.column_names).cast(dataset.features)])


def build_trainer(script_args: SFTScriptArguments, training_args: SFTConfig, model_args: ModelConfig):
    """Model, processor and data as the recipe says, in a TRL SFTTrainer (tests inspect it too)."""
    from trl import SFTTrainer

    from lookcloser.train.collators import ToolTrajectoryCollator
    from lookcloser.trl_surface import is_vision_dataset

    # Model: a hub id, a local folder, or the reserved tiny name (built offline, cached).
    model_path, processor = model_and_processor(model_args, training_args)

    # Data: staged MIR records (or ready SFT records), images decoded on access.
    dataset = load_sft_dataset(script_args)
    logger.info("training on %d records from %s", len(dataset), script_args.dataset_path or script_args.dataset_name)

    # Vision datasets keep their image (and tool-schema) columns for the collator.
    training_args.remove_unused_columns = False
    trainer = SFTTrainer(
        model=model_path,
        args=training_args,
        train_dataset=dataset,
        processing_class=processor,
        peft_config=peft_config(model_args),
    )
    add_wandb_dashboards(trainer, script_args, model_args, dataset, load_sft_dataset)  # with report_to: wandb
    if is_vision_dataset(trainer):
        # TRL's vision collator puts no images into tool messages and drops the `tools` column;
        # ours equals it on plain records and also handles multi-turn tool trajectories.
        collator = ToolTrajectoryCollator(
            processor=processor,
            max_length=training_args.max_length,
            completion_only_loss=trainer.completion_only_loss,
            pad_to_multiple_of=training_args.pad_to_multiple_of,
            dataset_text_field=training_args.dataset_text_field,
            assistant_only_loss=training_args.assistant_only_loss,
            chat_template=trainer.chat_template,  # TRL's generation-tagged template when needed
        )
        trainer.data_collator = collator
        if script_args.preprocess_once:
            use_featurized_data(trainer, collator, script_args.pack_sequences, model_args.attn_implementation)
    apply_fused_kernels(trainer, script_args.fused_kernels)
    return trainer


def use_featurized_data(trainer, collator, pack_sequences: str, attn_implementation: str | None) -> None:
    """Featurize the training records once (train/sft_data.py) and batch them padded or packed."""
    from lookcloser.agent.families import family_for_model_type
    from lookcloser.train.sft_data import (
        FeatureCollator,
        featurize,
        group_by_token_length,
        pack_supported,
        rope_index_fn,
    )
    from lookcloser.trl_surface import score_labelled_tokens_only

    family = family_for_model_type(trainer.model.config.model_type)
    score_labelled_tokens_only()
    group_by_token_length(trainer)
    pack = pack_sequences == "true" or (pack_sequences == "auto" and pack_supported(attn_implementation))
    rope_index = rope_index_fn(trainer.model) if family.mrope else None
    if pack and rope_index is None:
        raise RecipeError(f"pack_sequences: {family.name} has no M-RoPE positions (get_rope_index) to pack with; set "
                          "pack_sequences: false")
    trainer.train_dataset = featurize(trainer.train_dataset, collator, family.image_keys, rope_index)
    trainer.data_collator = FeatureCollator(collator.processor.tokenizer.pad_token_id, family.image_keys, pack=pack,
                                            pad_to_multiple_of=collator.pad_to_multiple_of)


def main(script_args: SFTScriptArguments, training_args: SFTConfig, model_args: ModelConfig) -> str:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    if training_args.report_to and "wandb" in training_args.report_to:
        os.environ.setdefault("WANDB_PROJECT", "lookcloser")

    with removed_when_interrupted(training_args.output_dir):  # Ctrl-C: no half-made checkpoint or empty folder
        trainer = build_trainer(script_args, training_args, model_args)
        out = train_and_save(trainer, training_args.output_dir, training_args.resume_from_checkpoint,
                              configs=(script_args, model_args), merge_adapter=script_args.merge_adapter)
    if trainer.accelerator.is_main_process:  # how it was prompted, so that eval prompts it the same way
        from lookcloser.agent.checkpoint_prompting import (
            prompting_by_benchmark,
            prompting_of,
            write_prompting,
        )
        from lookcloser.data_builders import mir
        from lookcloser.train.run_records import record_run

        record_run(trainer, out, model_args, script_args.run_settings)

        mir_json = (script_args.dataset_path or "").endswith(".json")  # MIR's own file (data_builders.mir)
        write_prompting(out, prompting_of(trainer.train_dataset[0], script_args.mir_stage if mir_json else None),
                        benchmark=mir.NAME if mir_json else None, base_model=model_args.model_name_or_path,
                        benchmarks=prompting_by_benchmark(trainer.train_dataset))  # a mixed cold start's kinds
    return out


def parse_args(argv=None, planned=()):
    """The recipe and flags (``argv``: a list, or a ``CommandLine``), checked (``train/checks.py``; ``planned``:
    folders earlier curriculum stages will write)."""
    from lookcloser.recipes import parse_recipe
    from lookcloser.train.checks import check_sft

    parsed = parse_recipe((SFTScriptArguments, SFTConfig, ModelConfig), argv, description=__doc__)
    check_sft(*parsed, planned=planned)
    return parsed


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    match_launcher_threads()  # plain `python train/...` gets the threads `accelerate launch` would give
    sys.exit(run(main, parse_args))
