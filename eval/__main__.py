"""``python -m eval``: evaluate a checkpoint or endpoint; ``python -m eval prepare``: download the data.

    python -m eval --model outputs/mir_stage1 --out outputs/eval            # bundled fixtures
    python -m eval --model http://127.0.0.1:8000/v1 --benchmarks tir_bench,mir,disbench,imagemining \
        --data_root /data/bench --out outputs/eval_qwen
    python -m eval recipes/eval.yaml --model outputs/mir_stage1              # YAML recipe + overrides
    python -m eval prepare --benchmarks tir_bench,disbench --data_root /data/bench
    python -m eval compare outputs/eval_sft=SFT outputs/eval_grpo=GRPO --out outputs/comparison
"""

from __future__ import annotations

import logging
import sys

HELP = """Evaluate a checkpoint folder, hub id, LoRA adapter folder or OpenAI-compatible endpoint on the
benchmarks (TIR-Bench, MIR, DISBench, ImageMining) and write predictions, metrics.json and report.md.

  python -m eval recipes/eval.yaml --model outputs/mir_stage1       # a recipe plus overrides
  python -m eval --model http://127.0.0.1:8000/v1 --data_root /data/bench --out outputs/eval_qwen
  python -m eval prepare --benchmarks tir_bench,disbench --data_root /data/bench   # fetch the data first

Without --data_root the bundled fixtures run. A rerun into the same --out resumes only when the
model (its weights) and the answer-shaping settings are unchanged; --resume false starts over."""


def _prepare(argv: list[str]) -> None:
    from lookcloser.eval.config import PrepareArguments, benchmark_names
    from lookcloser.eval.prepare import parse_sources, prepare
    from lookcloser.recipes import parse_flags

    args = parse_flags(PrepareArguments, argv, prog="python -m eval prepare", description=PrepareArguments.__doc__)
    sources = parse_sources(args.source)  # checked, like every value, before the first download
    for name, path in prepare(benchmark_names(args.benchmarks), args.data_root, sources).items():
        print(f"{name}: {path}")


def main(argv: list[str] | None = None) -> dict | None:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "prepare":
        _prepare(argv[1:])
        return None
    if argv and argv[0] == "compare":
        from lookcloser.eval.compare import compare_main

        compare_main(argv[1:])
        return None
    if argv and argv[0] == "run":
        argv = argv[1:]
    from lookcloser.cli import interrupt_stays_an_interrupt
    from lookcloser.eval.config import EvalConfig, check_paths
    from lookcloser.eval.pipeline import apply_checkpoint_prompting, evaluate, prompting_line
    from lookcloser.recipes import CommandLine, parse_recipe

    if {"-h", "--help", "--help-all"} & set(argv):  # prints the help and exits
        parse_recipe((EvalConfig,), argv, prog="python -m eval", description=HELP)
    line = CommandLine.read(argv)
    (cfg,) = parse_recipe((EvalConfig,), line, prog="python -m eval")
    check_paths(cfg)
    sources, per_benchmark = apply_checkpoint_prompting(cfg, line.given_fields)
    if prompting_line(sources, per_benchmark):
        print(f"Prompting: {prompting_line(sources, per_benchmark)}")
    try:
        with interrupt_stays_an_interrupt():
            metrics = evaluate(cfg, prompting_sources=sources, per_benchmark=per_benchmark)
    except KeyboardInterrupt:
        raise kept_predictions(cfg) from None
    for name, m in metrics["benchmarks"].items():
        print(f"{name:20s} {m['primary']:10s} {100 * m['overall'][m['primary']]:6.1f}%  "
              f"({m['n']} items, {m['n_failed']} failed)")
    print(f"Report: {cfg.out}/report.md")
    return metrics


def kept_predictions(cfg):
    """Ctrl-C: what a rerun of the same command keeps (each finished episode was appended whole)."""
    from pathlib import Path

    from lookcloser.cli import Interrupted
    from lookcloser.eval.runner import PredictionStore

    done = {path.parent.name: len(PredictionStore(path).load()) for path in Path(cfg.out).glob("*/predictions.jsonl")}
    if not any(done.values()):
        return Interrupted(f"no episode had finished ({cfg.out} holds no prediction)")
    counts = ", ".join(f"{n} {name}" for name, n in done.items() if n)
    return Interrupted(f"kept the finished episodes in {cfg.out} ({counts}); a rerun skips them",
                       [] if cfg.resume else ["--resume", "true"])


def cli() -> None:
    """Bad data, recipe, flag, model path or endpoint: one ``error:`` line and exit 2, no traceback;
    Ctrl-C: one ``interrupted:`` line and exit 130."""
    from lookcloser.cli import run

    sys.exit(run(main, prog="python -m eval"))


if __name__ == "__main__":
    cli()
