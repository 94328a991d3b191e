"""The training configs' checks: each script's ``parse_args`` runs them, so a mistake stops the
command (and every curriculum stage's ``--dry_run``) before a model loads or data is generated.

``planned``: folders that earlier curriculum stages will write (a path inside one is not there
yet). TRL's and transformers' own ``__post_init__`` checks run too, as the configs are made.
"""

from __future__ import annotations

import inspect
import json
import os
from collections.abc import Iterable, Mapping
from importlib import metadata, util
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

from lookcloser.agent.environments import ENVIRONMENT_NAMES, check_tool_set, environment_class
from lookcloser.agent.families import check_supported
from lookcloser.agent.template_files import read_template
from lookcloser.checks import (
    check_model_name,
    check_names,
    check_output_folder,
    check_path,
    check_range,
)
from lookcloser.data_builders.grpo_rows import DATASET_KINDS, ROW_FORMATS, resolve_path
from lookcloser.data_builders.synthetic import ALL_TASKS
from lookcloser.errors import RecipeError
from lookcloser.rewards import REGISTRY
from lookcloser.train.entry import check_output_dir

MIR_STAGES = (0, 4)
# The vLLM releases TRL 1.16 drives (trl.import_utils.is_vllm_available warns outside them); docs/grpo.md
# "vLLM" lists which of them also meet our pins.
TRL_VLLM_RANGE = ("0.22.0", "0.31.0")
# What vLLM pins that this project pins too, or that vLLM cannot load without.
VLLM_SHARED_PINS = ("torch", "torchvision", "transformers")


def check_training(training_args, model_args, planned: Iterable[str | Path] = ()) -> None:
    """What every training run needs: rates and sizes in range, a model that can be found, a folder
    to write into."""
    args = training_args
    check_range("learning_rate", args.learning_rate, 0)  # 0: a control run that must not learn
    check_range("num_train_epochs", args.num_train_epochs, 0, above=True)
    if args.max_steps == 0 or args.max_steps < -1:
        raise RecipeError(f"max_steps must be a positive step count (or -1: use num_train_epochs), got {args.max_steps}")
    check_range("per_device_train_batch_size", args.per_device_train_batch_size, 1)
    check_range("gradient_accumulation_steps", args.gradient_accumulation_steps, 1)
    check_range("weight_decay", args.weight_decay, 0)
    check_range("max_grad_norm", args.max_grad_norm, 0)
    check_range("warmup_steps", args.warmup_steps, 0)
    check_output_folder("output_dir", args.output_dir)
    resume = args.resume_from_checkpoint
    if isinstance(resume, str) and resume.lower() not in ("true", "false"):
        check_path("resume_from_checkpoint", resume, "folder", planned)
    check_model_name(model_args.model_name_or_path, planned)
    check_supported(model_args.model_name_or_path)  # an unsupported architecture: one line, before loading
    if model_args.use_peft:
        check_range("lora_r", model_args.lora_r, 1)
        check_range("lora_dropout", model_args.lora_dropout, 0, 1)
    check_launch(args)


def check_launch(training_args, environ: Mapping[str, str] = os.environ, cuda: bool | None = None) -> None:
    """What the launcher started (``accelerate launch`` sets ``WORLD_SIZE``), checked before any work.

    Several processes on a machine without CUDA need ``--use_cpu true``: without it each rank takes itself
    for the only one and trains alone on all the data (plain configs), or DeepSpeed stops with a 20-line
    assertion (ZeRO configs). The flag is asked for, not set here: the run's recorded settings
    (``lookcloser_run.json``) stay what the command says, and the training config's fields derived from it
    (device, backend) are made once, as the config is. A DeepSpeed config's fixed batch sizes must match
    the run's (DeepSpeed asserts ``train_batch_size == micro batch x accumulation x processes``).
    """
    processes = int(environ.get("WORLD_SIZE") or 1)
    if processes > 1 and not training_args.use_cpu:
        if cuda is None:
            import torch

            cuda = torch.cuda.is_available()
        if not cuda:
            raise RecipeError(f"this launch starts {processes} processes on a machine without CUDA: add --use_cpu "
                              "true to the script's arguments (without it each process would train alone on all "
                              "the data, or DeepSpeed would stop at its batch-size check)")
    launched = str(environ.get("ACCELERATE_USE_DEEPSPEED", "")).lower() == "true"
    config = training_args.deepspeed or (environ.get("ACCELERATE_DEEPSPEED_CONFIG_FILE") if launched else None)
    check_deepspeed_batch(config, training_args.per_device_train_batch_size,
                          training_args.gradient_accumulation_steps, processes)


def check_deepspeed_batch(config, micro: int, accumulation: int, processes: int) -> None:
    """A DeepSpeed config's fixed (not ``auto``) batch sizes against the run's.

    >>> check_deepspeed_batch({"train_batch_size": 16, "gradient_accumulation_steps": "auto"}, 8, 1, 2)
    >>> check_deepspeed_batch({"train_batch_size": 8}, 8, 1, 2)
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: deepspeed config: train_batch_size is 8, but per_device_train_batch_size 8 x gradient_accumulation_steps 1 x 2 processes is 16; set it to "auto" or to 16
    """
    if not config:
        return
    where = "deepspeed config"
    if not isinstance(config, Mapping):
        where = f"deepspeed config {config}"
        try:
            config = json.loads(Path(config).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise RecipeError(f"{where}: cannot be read as JSON ({err})") from err
        if not isinstance(config, Mapping):
            raise RecipeError(f"{where}: not a JSON mapping")
    total = micro * accumulation * processes
    product = f"per_device_train_batch_size {micro} x gradient_accumulation_steps {accumulation} x {processes} processes"
    expected = {"train_micro_batch_size_per_gpu": (micro, f"per_device_train_batch_size is {micro}"),
                "gradient_accumulation_steps": (accumulation, f"gradient_accumulation_steps is {accumulation}"),
                "train_batch_size": (total, f"{product} is {total}")}
    for key, (value, why) in expected.items():
        given = config.get(key, "auto")
        if given != "auto" and given != value:
            raise RecipeError(f"{where}: {key} is {given}, but {why}; set it to \"auto\" or to {value}")


def check_sft(script_args, training_args, model_args, planned: Iterable[str | Path] = ()) -> None:
    check_training(training_args, model_args, planned)
    check_output_dir(script_args, training_args, model_args)
    if not script_args.dataset_path and not script_args.dataset_name:
        raise RecipeError("set `dataset_path` (local data) or `dataset_name` (a hub data set) in the recipe")
    check_path("dataset_path", script_args.dataset_path, "any", planned)
    check_path("images_root", script_args.images_root, "folder", planned)
    check_range("mir_stage", script_args.mir_stage, *MIR_STAGES)
    check_range("max_train_samples", script_args.max_train_samples, 1)
    check_path("replay_path", script_args.replay_path, "any", planned)
    check_range("replay_mir_stage", script_args.replay_mir_stage, *MIR_STAGES)
    check_range("replay_count", script_args.replay_count, 1)


def check_grpo(script_args, training_args, model_args, planned: Iterable[str | Path] = ()) -> None:
    check_training(training_args, model_args, planned)
    check_output_dir(script_args, training_args, model_args)
    check_names("reward_funcs", script_args.reward_funcs, sorted(REGISTRY))
    read_template(script_args.chat_template_path)  # readable and a template, before the model loads
    weights = training_args.reward_weights
    if weights is not None and len(weights) != len(script_args.reward_funcs):
        raise RecipeError(f"reward_weights has {len(weights)} values for {len(script_args.reward_funcs)} reward_funcs "
                          f"({', '.join(script_args.reward_funcs)})")
    check_environment(script_args.environment, script_args.environment_kwargs,
                      {name: environment_class(name) for name in ENVIRONMENT_NAMES})
    check_tool_set(script_args.tool_set, need_sandbox=script_args.environment not in (None, "", "none"),
                   environment=script_args.environment)
    if script_args.environment == "per_row" and not (script_args.dataset_path or script_args.dataset_name):
        raise RecipeError("environment: per_row reads each row's `environment` column: set dataset_path (e.g. a "
                          "data set written by data_builders/commands/mixed_tasks.py) or dataset_name")
    check_names("synthetic_tasks", script_args.synthetic_tasks, ALL_TASKS)
    check_names("dataset_kind", [script_args.dataset_kind], DATASET_KINDS)
    if script_args.dataset_path:
        check_path("dataset_path", resolve_path(script_args.dataset_path), "any", planned)
    if script_args.synthetic_images not in (None, "generated", "procedural"):
        check_path("synthetic_images", resolve_path(script_args.synthetic_images), "folder", planned)
    check_path("images_root", script_args.images_root, "folder", planned)
    check_path("disbench_root", script_args.disbench_root, "folder", planned)
    row_format = ROW_FORMATS.get(script_args.dataset_kind)
    for key, problem in (row_format.required.items() if row_format else ()):
        if not getattr(script_args, key):
            raise RecipeError(problem)
    check_range("mir_stage", script_args.mir_stage, *MIR_STAGES)
    check_range("synthetic_count", script_args.synthetic_count, 1)
    check_range("synthetic_base_size", script_args.synthetic_base_size, 16)
    check_range("synthetic_canvas_size", script_args.synthetic_canvas_size, 16)
    check_range("max_train_samples", script_args.max_train_samples, 1)
    check_range("tool_bonus_cap", script_args.tool_bonus_cap, 1)
    check_vllm(training_args.use_vllm)
    check_range("temperature", training_args.temperature, 0, above=True)
    check_range("beta", training_args.beta, 0)
    check_range("max_completion_length", training_args.max_completion_length, 1)


def check_environment(name: str | None, kwargs, environments: dict) -> None:
    """An agent environment by name (or "none"), and constructor arguments it takes; ``per_row``: each row's
    own, with ``environment_kwargs`` a mapping per environment name (the rows are checked as the data loads)."""
    if not name or name == "none":
        return
    check_names("environment", [name], [*environments, "none", "per_row"])
    values = _mapping("environment_kwargs", kwargs)
    per_name = values if name == "per_row" else {name: values}
    check_names("environment_kwargs", list(per_name), list(environments))
    for env_name, env_kwargs in per_name.items():
        where = f"environment_kwargs.{env_name}" if name == "per_row" else "environment_kwargs"
        try:
            inspect.signature(environments[env_name]).bind(**_mapping(where, env_kwargs))
        except TypeError as err:
            raise RecipeError(f"environment_kwargs for {env_name}: {err}") from err


def _mapping(name: str, value) -> dict:
    try:
        values = json.loads(value) if isinstance(value, str) else dict(value or {})
    except (json.JSONDecodeError, TypeError, ValueError) as err:
        raise RecipeError(f"{name}: not a JSON mapping ({err})") from err
    if not isinstance(values, dict):
        raise RecipeError(f"{name}: not a JSON mapping, got {type(values).__name__}")
    return values


def check_vllm(use_vllm: bool) -> None:
    """``use_vllm: true`` needs a vLLM that can load beside this environment's torch and transformers, in
    either ``vllm_mode``: TRL's server client imports vLLM too (its weight-sync communicator). Checked from
    the installed package's metadata (importing vLLM takes seconds and initialises CUDA)."""
    if not use_vllm:
        return
    hint = "see docs/grpo.md, \"vLLM\", for the releases that meet this project's pins"
    try:
        version = metadata.version("vllm")
    except metadata.PackageNotFoundError:
        raise RecipeError(f"use_vllm: true, but vllm is not installed in this environment ({hint})") from None
    conflicts = []
    low, high = TRL_VLLM_RANGE
    if not Version(low) <= Version(Version(version).base_version) <= Version(high):
        conflicts.append(f"TRL drives vllm {low} to {high} only")
    for line in metadata.requires("vllm") or []:
        req = Requirement(line)
        if req.name.lower() not in VLLM_SHARED_PINS or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            conflicts.append(f"it needs {req}, which is not installed")
            continue
        if not req.specifier.contains(installed, prereleases=True):
            conflicts.append(f"it needs {req}, this environment has {req.name} {installed}")
    if not conflicts and util.find_spec("vllm") is None:
        conflicts.append("its metadata is installed but the module is not")
    if conflicts:
        raise RecipeError(f"use_vllm: true, but vllm {version} cannot load here: {'; '.join(conflicts)} ({hint})")
