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

import functools
import json
import logging
import os
from dataclasses import dataclass, field
from typing import ClassVar

from trl import ModelConfig, ScriptArguments

from lookcloser.data_builders.synthetic import BENCHMARK as SYNTHETIC_BENCHMARK
from lookcloser.data_builders.synthetic import SyntheticConfig
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
from lookcloser.train.grpo_lib.trainer import LookcloserGRPOConfig
from lookcloser.train.wandb_logging import DashboardArguments, add_wandb_dashboards

logger = logging.getLogger(__name__)
PER_ROW = "per_row"  # `environment: per_row`: each row's `environment` column names its environment


@dataclass
class GRPOScriptArguments(FusedKernelsArguments, ScriptArguments, DashboardArguments, OutputFolderArguments,
                          RecipeRecord):
    """Data, environment and rewards. With neither ``dataset_path`` nor ``dataset_name``, synthetic
    tool tasks are generated on the fly (``synthetic_*``)."""

    dataset_path: str | None = field(default=None, metadata={
        "help": "A saved data set folder (python -m data_builders ... / save_to_disk), an MIR .json (hard questions "
                "from data_builders difficulty), DISBench queries .jsonl, or a parquet/JSONL file of GRPO rows."})
    dataset_kind: str = field(default="auto", metadata={
        "help": "auto (from the path), saved, mir, disbench or records."})
    images_root: str | None = field(default=None, metadata={"help": "Root of MIR image paths (default: the JSON's folder)."})
    mir_stage: int = field(default=4, metadata={
        "help": "Which MIR stage's user turn is the prompt (4: autonomous, no reference context)."})
    disbench_root: str | None = field(default=None, metadata={
        "help": "DISBench folder with metadata/{user}.jsonl and images/{user}/ (the environment's data_root)."})
    synthetic_images: str | None = field(default=None, metadata={
        "help": "Folder of source images for the synthetic tasks (default: the bundled data/mir_sample; "
                "'generated': PIL-drawn)."})
    synthetic_count: int = field(default=32, metadata={"help": "Number of synthetic tasks."})
    synthetic_seed: int = field(default=0, metadata={"help": "Seed of the synthetic tasks."})
    synthetic_tasks: list[str] | None = field(default=None, metadata={
        "help": "Subset of jigsaw, rotation_game, spot_difference, visual_search, ocr (default: all)."})
    # The generator's defaults (data_builders.synthetic.SyntheticConfig), defined once; recipes size them.
    synthetic_base_size: int = field(default=SyntheticConfig.base_size, metadata={
        "help": "Long side of jigsaw/rotation/difference images."})
    synthetic_canvas_size: int = field(default=SyntheticConfig.canvas_size, metadata={
        "help": "Long side of the ocr and free-search canvases (the grid search sizes its canvas from the model)."})
    synthetic_dir: str | None = field(default=None, metadata={
        "help": "Where synthetic tasks are written (default: output_dir/synthetic_data; reused when settings match)."})
    max_train_samples: int | None = field(default=None, metadata={"help": "Keep only the first N rows."})
    merge_adapter: bool = field(default=False, metadata={
        "help": "With use_peft: also write base + LoRA adapter merged into output_dir/merged (a full checkpoint). "
                "The adapter folder itself loads too (eval, GRPO, the next curriculum stage)."})
    system_prompt: str | None = field(default=None, metadata={
        "help": "None: prompts as in the data; 'default': agent.loop's system prompt (as eval uses); or any text."})
    environment: str = field(default=SYNTHETIC_BENCHMARK, metadata={
        "help": "Agent environment (agent.environments.ENVIRONMENTS): tir_bench, mir, synthetic, disbench, "
                "imagemining, ...; 'none' for no tools; 'per_row': the data set's `environment` column names each "
                "row's environment (or 'none'), and each prompt shows that environment's tools only (a run over "
                "several kinds of task: data_builders/commands/mixed_tasks.py builds such a data set)."})
    tool_set: str = field(default="image", metadata={
        "help": "image: the environment's own tools; image+python: also the sandboxed python tool in every environment "
                "with the image tools (tir_bench, mir, synthetic; needs bubblewrap, docs/agent.md)."})
    environment_kwargs: dict | str | None = field(default=None, metadata={
        "help": "Constructor arguments of the environment, e.g. {\"max_pixels\": 262144} (JSON text or a mapping); "
                "with 'per_row', a mapping per environment name, e.g. {\"photo_search\": {\"max_view\": 4}}."})
    reward_funcs: list[str] = field(default_factory=lambda: ["accuracy", "format", "tool_use"], metadata={
        "help": "Reward names from rewards.REGISTRY; weights are `reward_weights`."})
    tool_bonus_cap: int = field(default=1, metadata={
        "help": "tool_use pays min(successful tool results, cap) / cap when the answer is right."})

    # Keys of the built-in cold start this script once ran (issue 38): a recipe or flag that still sets one is
    # one error line naming the curriculum stages that do it now.
    REMOVED: ClassVar = dict.fromkeys(
        ("cold_start_steps", "cold_start_learning_rate", "cold_start_look_steps"),
        "a cold start is a curriculum stage: see recipes/tool_curriculum.yaml (stages look and sft before grpo), "
        "then start GRPO from its checkpoint (--model_name_or_path outputs/tool_curriculum/sft)")


def _as_dict(value) -> dict:
    return json.loads(value) if isinstance(value, str) else dict(value or {})


def build_reward_funcs(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig) -> list:
    from lookcloser.rewards import get_reward_funcs

    funcs = get_reward_funcs(script_args.reward_funcs, tool_bonus_cap=script_args.tool_bonus_cap,
                             max_completion_length=training_args.max_completion_length)
    weights = training_args.reward_weights
    if weights is not None and len(weights) != len(funcs):
        raise RecipeError(f"reward_weights has {len(weights)} values for {len(funcs)} reward_funcs "
                          f"({', '.join(script_args.reward_funcs)})")
    return funcs


def check_reward_rows(dataset, reward_funcs: list, where: str | None = None) -> None:
    """Before step 1: when a benchmark reward is named, every row needs a ``data_source`` a scorer serves and a
    ``reward_info`` that parses (``rewards.scoring.gold_info``); else one ``RecordError`` naming the row (at
    call time the same row would only be counted as ``rewards/errors/<reason>``)."""
    from lookcloser.errors import RecordError, record_id
    from lookcloser.rewards.scoring import RewardInputError, gold_info, resolve_source

    if all(name in ("format", "overlong") or callable(name) for name in reward_funcs):
        return
    columns = dataset.column_names
    sources = dataset["data_source"] if "data_source" in columns else [None] * len(dataset)
    golds = dataset["reward_info"] if "reward_info" in columns else [None] * len(dataset)
    ids = dataset["id"] if "id" in columns else [None] * len(dataset)
    for row, (source, gold) in enumerate(zip(sources, golds, strict=True)):
        try:
            gold_info(resolve_source(source), gold)
        except RewardInputError as err:
            field = "reward_info" if err.reason == "bad_gold" else "data_source"
            raise RecordError(where or "the data set", record_id({"id": ids[row]}, row), field,
                              f"{err} (reward_funcs {', '.join(map(str, reward_funcs))} cannot score this row; "
                              "docs/rewards.md has the columns)") from None


def environment_factory(script_args: GRPOScriptArguments, dataset=None):
    """The environment class (with the recipe's constructor arguments) TRL builds one instance of per rollout;
    with ``environment: per_row``, ``{name: factory}`` for the names in ``dataset``'s ``environment`` column
    (TRL's multi-environment mode; ``none`` rows get ``NoToolsEnv``, an environment without tools)."""
    from lookcloser.agent.environments import ENVIRONMENTS, with_tool_set

    if script_args.environment == PER_ROW:
        from lookcloser.agent.toolkit import NoToolsEnv

        kwargs = _as_dict(script_args.environment_kwargs)
        return {name: _factory(NoToolsEnv if name == "none" else ENVIRONMENTS[with_tool_set(name, script_args.tool_set)],
                               kwargs.get(name))
                for name in row_environments(dataset, script_args.dataset_path or script_args.dataset_name)}
    if not script_args.environment or script_args.environment == "none":
        return None
    if script_args.environment not in ENVIRONMENTS:
        raise RecipeError(f"unknown environment {script_args.environment!r}; choose from {sorted(ENVIRONMENTS)} "
                          "or 'none'")
    name = with_tool_set(script_args.environment, script_args.tool_set)
    return _factory(ENVIRONMENTS[name], _as_dict(script_args.environment_kwargs))


def _factory(env_cls: type, kwargs: dict | None):
    return functools.partial(env_cls, **kwargs) if kwargs else env_cls


def row_environments(dataset, where: str | None = None) -> list[str]:
    """The environment names of ``dataset``'s ``environment`` column, each checked (``ENVIRONMENTS`` or ``none``);
    a missing column or an unknown name is a ``RecipeError`` naming the data set, the row and the value."""
    from lookcloser.agent.environments import ENVIRONMENTS

    where = where or "the data set"
    if dataset is None or "environment" not in dataset.column_names:
        raise RecipeError(f"{where}: environment: per_row needs an `environment` column naming each row's "
                          "environment (data_builders/commands/mixed_tasks.py writes one)")
    choices = [*ENVIRONMENTS, "none"]
    names = list(dataset["environment"])
    for row, name in enumerate(names):
        if name not in choices:
            raise RecipeError(f"{where}: row {row}: column `environment`: unknown environment {name!r} "
                              f"(choose from {', '.join(choices)})")
    return sorted(set(names))


def _init_cpu_deepspeed(training_args) -> None:
    """ZeRO-3 with a separate reference model needs DeepSpeed's process group up before the model loads;
    on CPU it must be gloo (measured; see platform notes)."""
    if training_args.use_cpu and os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true":
        import deepspeed

        deepspeed.init_distributed(dist_backend="gloo")


def synthetic_settings(script_args: GRPOScriptArguments) -> dict:
    """``synthetic_dataset`` arguments from the recipe (the oracle calls the recipe's environment's tools)."""
    from lookcloser.agent.environments import IMAGE_TOOL_ENVIRONMENTS

    env = script_args.environment if script_args.environment in IMAGE_TOOL_ENVIRONMENTS else SYNTHETIC_BENCHMARK
    return {"images": script_args.synthetic_images, "count": script_args.synthetic_count,
            "seed": script_args.synthetic_seed, "tasks": script_args.synthetic_tasks,
            "base_size": script_args.synthetic_base_size, "canvas_size": script_args.synthetic_canvas_size,
            "environment": env}


def load_grpo_dataset(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig):
    """The recipe's data as GRPO rows: a file or folder (data_builders.grpo_rows tells the formats apart),
    a hub data set, or the embedded default's synthetic tool tasks."""
    from datasets import load_dataset

    from lookcloser.data_builders.grpo_rows import read_grpo_rows, synthetic_dataset, with_system_prompt
    from lookcloser.data_builders.records import RecordError

    if script_args.dataset_path:
        dataset = read_grpo_rows(script_args.dataset_path, script_args.dataset_kind,
                                 images_root=script_args.images_root, mir_stage=script_args.mir_stage,
                                 disbench_root=script_args.disbench_root)
    elif script_args.dataset_name:
        dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
        dataset = dataset[script_args.dataset_train_split]
    else:  # the embedded default: synthetic tool tasks, generated once per settings (main process first)
        from lookcloser.agent.oracle import build_synthetic

        out_dir = script_args.synthetic_dir or os.path.join(training_args.output_dir, "synthetic_data")
        with training_args.main_process_first(desc="synthetic GRPO tasks"):
            dataset = synthetic_dataset(out_dir, build_synthetic, **synthetic_settings(script_args))
    if script_args.max_train_samples:
        dataset = dataset.select(range(min(script_args.max_train_samples, len(dataset))))
    if "prompt" not in dataset.column_names:
        raise RecordError(script_args.dataset_path or "dataset", None, "prompt", "GRPO rows need a `prompt` column")
    if script_args.system_prompt:
        from lookcloser.agent.loop import DEFAULT_SYSTEM_PROMPT

        text = DEFAULT_SYSTEM_PROMPT if script_args.system_prompt == "default" else script_args.system_prompt
        dataset = with_system_prompt(dataset, text)
    return dataset


def build_trainer(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig, model_args: ModelConfig):
    """Model, processor, data, environment and rewards as the recipe says, in a LookcloserGRPOTrainer."""
    from lookcloser.train.grpo_lib.trainer import LookcloserGRPOTrainer

    _init_cpu_deepspeed(training_args)
    dataset = load_grpo_dataset(script_args, training_args)
    check_reward_rows(dataset, script_args.reward_funcs, script_args.dataset_path or script_args.dataset_name)
    env_factory = environment_factory(script_args, dataset)  # per_row: the column checked before the model loads
    model_path, processor = model_and_processor(model_args, training_args)
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
        from lookcloser.train.run_records import record_run

        record_run(trainer, out, model_args, script_args.run_settings)
        write_prompting_record(script_args, out, model_args.model_name_or_path, trainer.train_dataset)
    return out


def write_prompting_record(script_args: GRPOScriptArguments, out_dir: str, base_model: str | None = None,
                           dataset=None) -> None:
    """How the policy was prompted (system prompt, tools, environment): ``python -m eval`` reads it back;
    the benchmarks an earlier stage trained for keep their own prompting (``base_model``'s record).
    ``environment: per_row``: each benchmark (``data_source``) of ``dataset`` gets its own entry, with the
    environment its rows used (the most common one, when they used several)."""
    from lookcloser.agent.checkpoint_prompting import write_prompting
    from lookcloser.agent.environments import with_tool_set
    from lookcloser.agent.loop import DEFAULT_SYSTEM_PROMPT

    system = {None: "", "default": DEFAULT_SYSTEM_PROMPT}.get(script_args.system_prompt, script_args.system_prompt)

    def prompting(environment: str | None) -> dict:
        tools = bool(environment) and environment != "none"
        if tools:  # the environment the rollouts used, so that eval offers the same tools again
            environment = with_tool_set(environment, script_args.tool_set)
        return {"system_prompt": system, "tools": tools, **({"environment": environment} if tools else {})}

    if script_args.environment != PER_ROW:
        write_prompting(out_dir, prompting(script_args.environment), base_model=base_model)
        return
    benchmarks = {source: prompting(environment) for source, environment in benchmark_environments(dataset).items()}
    # Benchmarks this run did not train on: tools on if any row had them, each benchmark's own environment.
    tools = any(entry["tools"] for entry in benchmarks.values())
    write_prompting(out_dir, {"system_prompt": system, "tools": tools}, benchmarks=benchmarks, base_model=base_model)


def benchmark_environments(dataset) -> dict[str, str]:
    """Each benchmark's (``data_source``, as eval names it) environment: the one most of its rows name."""
    from collections import Counter

    from lookcloser.rewards.trl_rewards import normalize_source

    counts: dict[str, Counter] = {}
    sources = dataset["data_source"] if "data_source" in dataset.column_names else [""] * len(dataset)
    for source, environment in zip(map(normalize_source, sources), dataset["environment"], strict=True):
        if source:  # a row without a benchmark has no eval entry to record
            counts.setdefault(source, Counter())[environment] += 1
    chosen = {}
    for source, counter in sorted(counts.items()):
        chosen[source] = counter.most_common(1)[0][0]
        if len(counter) > 1:
            logger.warning("%s rows used several environments (%s); eval prompts %s with %s", source,
                           dict(counter), source, chosen[source])
    return chosen


def parse_args(argv=None, planned=()):
    """The recipe and flags (``argv``: a list, or a ``CommandLine``), checked (``train/checks.py``; ``planned``:
    folders earlier curriculum stages will write)."""
    from lookcloser.recipes import parse_recipe
    from lookcloser.train.checks import check_grpo

    parsed = parse_recipe((GRPOScriptArguments, LookcloserGRPOConfig, ModelConfig), argv, description=__doc__)
    check_grpo(*parsed, planned=planned)
    return parsed


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    match_launcher_threads()  # plain `python train/...` gets the threads `accelerate launch` would give
    sys.exit(run(main, parse_args))
