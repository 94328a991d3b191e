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
    from lookcloser.eval.loaders import BENCHMARKS
    from lookcloser.eval.prepare import SOURCES, parse_sources, prepare
    from lookcloser.recipes import FlagParser

    parser = FlagParser(prog="python -m eval prepare", description="Download the official files.")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--data_root", required=True)
    parser.add_argument("--source", action="append", default=[],
                        help="NAME=hf:OWNER/REPO or NAME=git:URL; defaults: "
                             + ", ".join(f"{k}={v}" for k, v in SOURCES.items()))
    args = parser.parse_args(argv)
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        from lookcloser.eval.config import EvalError

        raise EvalError(f"--benchmarks: unknown benchmark {unknown[0]!r} (choose from {', '.join(BENCHMARKS)})")
    for name, path in prepare(names, args.data_root, parse_sources(args.source)).items():
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
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.pipeline import apply_checkpoint_prompting, evaluate, prompting_line
    from lookcloser.recipes import given_fields, parse_recipe

    (cfg,) = parse_recipe((EvalConfig,), argv, prog="python -m eval", description=HELP)
    sources, per_benchmark = apply_checkpoint_prompting(cfg, given_fields(argv))
    if prompting_line(sources, per_benchmark):
        print(f"Prompting: {prompting_line(sources, per_benchmark)}")
    metrics = evaluate(cfg, prompting_sources=sources, per_benchmark=per_benchmark)
    for name, m in metrics["benchmarks"].items():
        print(f"{name:20s} {m['primary']:10s} {100 * m['overall'][m['primary']]:6.1f}%  "
              f"({m['n']} items, {m['n_failed']} failed)")
    print(f"Report: {cfg.out}/report.md")
    return metrics


def cli() -> None:
    """Bad data, recipe, flag, model path or endpoint: one ``error:`` line and exit 2, no traceback."""
    from lookcloser.eval.config import EvalError
    from lookcloser.train.entry import fail, user_error_classes

    try:
        main()
    except user_error_classes((EvalError,)) as err:
        fail(err)


if __name__ == "__main__":
    cli()
