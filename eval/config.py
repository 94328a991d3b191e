"""``EvalConfig``: every setting of ``python -m eval``; a YAML recipe's keys are these field names."""

from __future__ import annotations

from dataclasses import dataclass, field

from lookcloser.eval.loaders import BENCHMARKS, EvalError

# Turn budgets per benchmark when ``max_turns`` is not set (DISBench's agent: up to 30, docs/formats.md §4).
DEFAULT_MAX_TURNS = {"tir_bench": 8, "mir": 4, "disbench": 30, "imagemining": 16}


@dataclass
class EvalConfig:
    """Evaluate a checkpoint or an endpoint on the benchmarks, from their official files."""

    model: str = field(default="", metadata={"help": "A checkpoint folder, a hub id, the reserved "
                                                     "lookcloser/tiny-qwen3-vl, or an OpenAI-compatible endpoint "
                                                     "URL (http://host:8000/v1)."})
    benchmarks: str = field(default=",".join(BENCHMARKS), metadata={"help": "Comma-separated: "
                                                                             + ", ".join(BENCHMARKS)})
    data_root: str | None = field(default=None, metadata={
        "help": "Folder holding the benchmarks (each in its official layout, directly or in a subfolder named "
                "tir_bench/TIR-Bench, mir/MIR, disbench/DISBench, imagemining/ImageMining). Unset: bundled fixtures."})
    out: str = field(default="outputs/eval", metadata={"help": "Output folder (predictions, metrics, report)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N items of each benchmark."})
    resume: bool = field(default=True, metadata={"help": "Continue the predictions already in --out (only while "
                                                         "the model's weights and the answer settings match "
                                                         "out/run.json; false: start over)."})
    retry_failed: bool = field(default=True, metadata={"help": "On resume, run failed items again."})
    # Endpoint
    served_model_name: str | None = field(default=None, metadata={"help": "Endpoint model name (default: the "
                                                                            "first of GET /models)."})
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
                                                                      "(fixtures bring their own)."})
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

    def benchmark_list(self) -> list[str]:
        """The requested benchmarks, checked.

        >>> EvalConfig(benchmarks="mir, disbench").benchmark_list()
        ['mir', 'disbench']
        """
        names = [b.strip() for b in self.benchmarks.split(",") if b.strip()]
        unknown = [b for b in names if b not in BENCHMARKS]
        if unknown or not names:
            raise EvalError(f"unknown benchmark(s) {unknown or names}: choose from {', '.join(BENCHMARKS)}")
        return names

    def turns(self, benchmark: str) -> int:
        return self.max_turns or DEFAULT_MAX_TURNS[benchmark]
