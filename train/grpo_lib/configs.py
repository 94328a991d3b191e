"""The GRPO script's configs (as open-r1's ``configs.py``): ``GRPOScriptArguments`` (data, environment, tool set,
rewards) and ``LookcloserGRPOConfig`` (TRL's GRPOConfig plus the rollout budgets and filters), parsed from a recipe
and flags by ``train/grpo.py``; ``train/checks.py`` checks them once, as they are parsed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from trl import GRPOConfig, ScriptArguments

from lookcloser.agent.template_files import chat_template_path_field
from lookcloser.agent.tool_sets import tool_set_field
from lookcloser.data_builders.synthetic import BENCHMARK as SYNTHETIC_BENCHMARK
from lookcloser.data_builders.synthetic import SyntheticConfig
from lookcloser.recipes import RecipeRecord
from lookcloser.train.entry import OutputFolderArguments
from lookcloser.train.fused_kernels import FusedKernelsArguments
from lookcloser.train.wandb_logging import DashboardArguments

PER_ROW = "per_row"  # `environment: per_row`: each row's `environment` column names its environment


@dataclass
class GRPOScriptArguments(FusedKernelsArguments, ScriptArguments, DashboardArguments, OutputFolderArguments,
                          RecipeRecord):
    """Data, environment and rewards. With neither ``dataset_path`` nor ``dataset_name``, synthetic
    tool tasks are generated on the fly (``synthetic_*``)."""

    chat_template_path: str | None = chat_template_path_field()
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
    tool_set: str = tool_set_field()
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


@dataclass
class LookcloserGRPOConfig(GRPOConfig):
    """TRL's GRPOConfig plus the rollout budgets and filters of ``LookcloserGRPOTrainer``."""

    max_turn_tokens: int | None = field(default=None, metadata={
        "help": "Per-turn token cap (each assistant turn); max_completion_length stays the whole trajectory's cap."})
    max_images: int | None = field(default=None, metadata={
        "help": "Image budget per trajectory (input images included); tool results past it get an Error: reply."})
    max_prompt_length: int | None = field(default=None, metadata={
        "help": "Left-truncate prompt text to this many tokens (tools and images counted); images are never cut."})
    filter_groups: bool = field(default=False, metadata={
        "help": "Dynamic group filtering: groups whose rewards are all equal leave the loss (DAPO dynamic sampling)."})
    resample_rounds: int = field(default=0, metadata={
        "help": "With filter_groups: up to this many extra generation rounds on fresh prompts to refill the batch "
                "with informative groups (0: drop only)."})
    mask_out_of_turns: bool = field(default=True, metadata={
        "help": "Trajectories that ran out of tool turns leave the baseline and the loss instead of scoring 0."})
    mask_out_of_length: bool = field(default=True, metadata={
        "help": "Trajectories cut by max_completion_length / max_turn_tokens leave the baseline and the loss."})
    rollout_chunk_size: int | None = field(default=None, metadata={
        "help": "Generate rollouts this many at a time (1: sequential, for comparison; None: the whole batch)."})
