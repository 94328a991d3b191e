"""The GRPO recipe's prompts: a file or folder (``data_builders.grpo_rows`` tells the formats apart), a hub
data set, or the embedded default's synthetic tool tasks, with the system prompt the recipe asks for."""

from __future__ import annotations

import os

from datasets import load_dataset

from lookcloser.agent.environments import IMAGE_TOOL_ENVIRONMENTS
from lookcloser.agent.loop import DEFAULT_SYSTEM_PROMPT
from lookcloser.agent.oracle import build_synthetic
from lookcloser.data_builders.grpo_rows import read_grpo_rows, synthetic_dataset, with_system_prompt
from lookcloser.data_builders.records import RecordError
from lookcloser.data_builders.synthetic import BENCHMARK as SYNTHETIC_BENCHMARK
from lookcloser.train.grpo_lib.configs import GRPOScriptArguments, LookcloserGRPOConfig


def synthetic_settings(script_args: GRPOScriptArguments) -> dict:
    """``synthetic_dataset`` arguments from the recipe (the oracle calls the recipe's environment's tools)."""
    env = script_args.environment if script_args.environment in IMAGE_TOOL_ENVIRONMENTS else SYNTHETIC_BENCHMARK
    return {"images": script_args.synthetic_images, "count": script_args.synthetic_count,
            "seed": script_args.synthetic_seed, "tasks": script_args.synthetic_tasks,
            "base_size": script_args.synthetic_base_size, "canvas_size": script_args.synthetic_canvas_size,
            "environment": env}


def load_grpo_dataset(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig):
    """The recipe's data as GRPO rows: a file or folder (data_builders.grpo_rows tells the formats apart),
    a hub data set, or the embedded default's synthetic tool tasks."""
    if script_args.dataset_path:
        dataset = read_grpo_rows(script_args.dataset_path, script_args.dataset_kind,
                                 images_root=script_args.images_root, mir_stage=script_args.mir_stage,
                                 disbench_root=script_args.disbench_root)
    elif script_args.dataset_name:
        dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
        dataset = dataset[script_args.dataset_train_split]
    else:  # the embedded default: synthetic tool tasks, generated once per settings (main process first)
        out_dir = script_args.synthetic_dir or os.path.join(training_args.output_dir, "synthetic_data")
        with training_args.main_process_first(desc="synthetic GRPO tasks"):
            dataset = synthetic_dataset(out_dir, build_synthetic, **synthetic_settings(script_args))
    if script_args.max_train_samples:
        dataset = dataset.select(range(min(script_args.max_train_samples, len(dataset))))
    if "prompt" not in dataset.column_names:
        raise RecordError(script_args.dataset_path or "dataset", None, "prompt", "GRPO rows need a `prompt` column")
    if script_args.system_prompt:
        text = DEFAULT_SYSTEM_PROMPT if script_args.system_prompt == "default" else script_args.system_prompt
        dataset = with_system_prompt(dataset, text)
    return dataset
