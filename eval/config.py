"""``EvalConfig``: every setting of ``python -m eval``; a YAML recipe's keys are these field names."""

from __future__ import annotations

from dataclasses import dataclass, field

from lookcloser.agent.template_files import chat_template_path_field, read_template
from lookcloser.agent.tool_sets import tool_set_field
from lookcloser.checks import check_names, check_output_folder, check_range, did_you_mean
from lookcloser.eval.benchmarks import BENCHMARKS, DEFAULT_BENCHMARKS, SPECS
from lookcloser.eval.items import EvalError

# Turn budgets per benchmark when ``max_turns`` is not set (DISBench's agent: up to 30, docs/formats.md §4).
DEFAULT_MAX_TURNS = {name: spec.max_turns for name, spec in SPECS.items()}  # each spec's default turns


@dataclass
class EvalConfig:
    """Evaluate a checkpoint or an endpoint on the benchmarks, from their official files."""

    model: str = field(default="", metadata={"help": "A checkpoint folder, a hub id, the reserved "
                                                     "lookcloser/tiny-qwen3-vl, or an OpenAI-compatible endpoint "
                                                     "URL (http://host:8000/v1)."})
    benchmarks: str = field(default=",".join(DEFAULT_BENCHMARKS), metadata={"help": "Comma-separated: "
                                                                                     + ", ".join(BENCHMARKS)})
    data_root: str | None = field(default=None, metadata={
        "help": "Folder holding the benchmarks (each in its official layout, directly or in a subfolder named "
                + ", ".join("/".join(spec.folders) for spec in SPECS.values()) + "). Unset: bundled fixtures."})
    out: str = field(default="outputs/eval", metadata={"help": "Output folder (predictions, metrics, report)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N items of each benchmark."})
    resume: bool = field(default=True, metadata={"help": "Continue the predictions already in --out (only while "
                                                         "the model's weights and the answer settings match "
                                                         "out/run.json; false: start over)."})
    retry_failed: bool = field(default=True, metadata={"help": "On resume, run failed items again."})
    # Endpoint
    served_model_name: str | None = field(default=None, metadata={"help": "Endpoint model name (default: the "
                                                                            "first of GET /models; needed when the "
                                                                            "server lists none)."})
    api_key_env: str = field(default="OPENAI_API_KEY", metadata={"help": "Environment variable with the key."})
    concurrency: int = field(default=32, metadata={"help": "Endpoint episodes in flight at once."})
    request_timeout: float = field(default=120.0, metadata={"help": "Seconds per endpoint request."})
    request_retries: int = field(default=3, metadata={"help": "Retries of a failed request (timeouts, "
                                                                "connection errors, 429, 5xx)."})
    retry_backoff: float = field(default=1.0, metadata={"help": "First retry delay in seconds (doubles)."})
    # Local checkpoint
    batch_size: int = field(default=8, metadata={"help": "Episodes generated together with a local model."})
    dtype: str = field(default="auto", metadata={"help": "Local model dtype (auto: bfloat16 on GPU, float32 "
                                                         "on CPU)."})
    device: str = field(default="auto", metadata={"help": "Local model device (auto: cuda when available)."})
    # Agent loop
    tools: bool = field(default=True, metadata={"help": "Give the model each benchmark's tools; false: plain "
                                                        "single-turn answers (checkpoints trained without tools)."})
    environment: str | None = field(default=None, metadata={
        "help": "Agent environment (agent.environments.ENVIRONMENTS) instead of the benchmark's own, for a "
                "checkpoint trained with another tool set (e.g. crop: the tool curriculum)."})
    tool_set: str = tool_set_field()  # --tools false: no tools at all
    chat_template_path: str | None = chat_template_path_field()  # a local model's template (not an endpoint's)
    max_turns: int | None = field(default=None, metadata={"help": "Assistant turns per episode (default per "
                                                                  "benchmark: " + str(DEFAULT_MAX_TURNS) + ")."})
    max_new_tokens_per_turn: int = field(default=1024, metadata={"help": "Token cap per turn."})
    max_images: int = field(default=16, metadata={"help": "Images per trajectory, inputs included."})
    temperature: float = field(default=0.0, metadata={"help": "Sampling temperature (0: greedy)."})
    system_prompt: str | None = field(default=None, metadata={"help": "None: the loop's default; '': none."})
    mir_prompt_stage: int = field(default=0, metadata={"help": "MIR prompt: 0 = the benchmark's (question + "
                                                               "options); 1-3 add the curriculum's reference "
                                                               "context, as the stage-1 main job trains."})
    save_trajectories: bool = field(default=True, metadata={"help": "Write each trajectory as JSON + PNGs."})
    # Benchmark extras
    disbench_retriever: bool = field(default=True, metadata={"help": "Also score the embedding retriever alone."})
    photo_embedder: str | None = field(default=None, metadata={"help": "CLIP/SigLIP checkpoint for DISBench "
                                                                       "search (default: agent.embedders' "
                                                                       "default_embedder)."})
    photo_index_dir: str | None = field(default=None, metadata={"help": "Photo index cache folder."})
    search_corpus: str | None = field(default=None, metadata={"help": "Offline JSONL corpus for web_search "
        "(default: imagemining/search_corpus.jsonl under data_root, where the generator and fixtures write one)."})
    llm_judge: bool = field(default=False, metadata={"help": "ImageMining: LLM-judge recall when the rule "
                                                             "score is 0 (LOOKCLOSER_JUDGE_* env)."})
    check_images: bool = field(default=True, metadata={"help": "Open every image while loading (slower)."})
    strict: bool = field(default=False, metadata={"help": "Stop at the first bad record. Default: load the "
                                                          "rest, list each bad record (id, reason) in the report "
                                                          "and metrics.json and count it as failed."})
    gray_images: bool = field(default=False, metadata={"help": "Replace every input image by a flat gray one of "
                                                               "the same size: the control for whether the images "
                                                               "carry the answer."})
    # Reporting
    wandb: bool = field(default=False, metadata={"help": "Log metrics, charts, group tables and a per-item "
                                                         "predictions table to W&B (WANDB_MODE=offline works)."})
    wandb_project: str = field(default="lookcloser", metadata={"help": "W&B project."})
    wandb_items: int = field(default=200, metadata={"help": "Items per benchmark in W&B's predictions table "
                                                            "(images, question, prediction, gold, score); all "
                                                            "items are in {benchmark}/scores.jsonl."})

    def __post_init__(self) -> None:
        """Every value checked as the config is made (paths: ``check_paths``)."""
        from lookcloser.agent.environments import ENVIRONMENT_NAMES, check_tool_set

        self.benchmark_list()
        for name, low in (("limit", 1), ("concurrency", 1), ("request_retries", 0), ("retry_backoff", 0),
                          ("batch_size", 1), ("max_turns", 1), ("max_new_tokens_per_turn", 1), ("max_images", 1),
                          ("temperature", 0)):
            check_range(name, getattr(self, name), low)
        check_range("request_timeout", self.request_timeout, 0, above=True)
        check_range("mir_prompt_stage", self.mir_prompt_stage, 0, 3)
        check_names("dtype", [self.dtype], ("auto", "float32", "bfloat16", "float16"))
        if self.environment is not None:
            check_names("environment", [self.environment], list(ENVIRONMENT_NAMES))
        check_tool_set(self.tool_set, need_sandbox=self.tools, environment=self.environment)

    def benchmark_list(self) -> list[str]:
        """The requested benchmarks, checked.

        >>> EvalConfig(benchmarks="mir, disbench").benchmark_list()
        ['mir', 'disbench']
        """
        return benchmark_names(self.benchmarks)

    def turns(self, benchmark: str) -> int:
        return self.max_turns or DEFAULT_MAX_TURNS[benchmark]


def benchmark_names(text: str) -> list[str]:
    """A ``--benchmarks`` value as names, each checked.

    >>> benchmark_names("mir,tir-bench")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lookcloser.eval.items.EvalError: --benchmarks: unknown benchmark 'tir-bench'; did you mean tir_bench? (choose from tir_bench, mir, disbench, imagemining...)
    """
    names = [b.strip() for b in text.split(",") if b.strip()]
    for name in names or [text]:
        if name not in BENCHMARKS:
            raise EvalError(f"--benchmarks: unknown benchmark {name!r}{did_you_mean(name, BENCHMARKS)} "
                            f"(choose from {', '.join(BENCHMARKS)})")
    return names


def check_paths(cfg: EvalConfig) -> None:
    """The paths a config names exist (a model folder, the data, the corpus), before any work."""
    from lookcloser.checks import check_model_name, check_path

    if not cfg.model:
        raise EvalError("set --model (a checkpoint folder, hub id, or endpoint URL)")
    if not cfg.model.startswith(("http://", "https://")):
        check_model_name(cfg.model, what="--model")
        # Here, not at the top: an endpoint's eval never loads torch, which the family specs import.
        from lookcloser.agent.families import check_supported

        check_supported(cfg.model, what="--model")
    read_template(cfg.chat_template_path)  # readable and a template, before any work
    check_path("data_root", cfg.data_root, "folder")
    check_path("search_corpus", cfg.search_corpus, "file")
    check_output_folder("out", cfg.out)
    check_output_folder("photo_index_dir", cfg.photo_index_dir)


@dataclass
class PrepareArguments:
    """Download the benchmarks' official files (``python -m eval prepare``)."""

    data_root: str = field(metadata={"help": "Each benchmark goes to DATA_ROOT/NAME."})
    benchmarks: str = field(default=",".join(DEFAULT_BENCHMARKS), metadata={"help": "Comma-separated: "
                                                                                     + ", ".join(BENCHMARKS)})
    source: list[str] = field(default_factory=list, metadata={
        "action": "extend", "help": "NAME=hf:OWNER/REPO or NAME=git:URL (repeatable; eval/prepare.py SOURCES: the "
                                    "defaults)"})

    def __post_init__(self) -> None:
        benchmark_names(self.benchmarks)
        check_output_folder("data_root", self.data_root)
