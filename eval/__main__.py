"""``python -m eval``: evaluate a checkpoint or endpoint; ``python -m eval prepare``: download the data.

    python -m eval --model outputs/mir_stage1 --out outputs/eval            # bundled fixtures
    python -m eval --model http://127.0.0.1:8000/v1 --benchmarks tir_bench,mir,disbench,imagemining \
        --data-root /data/bench --out outputs/eval_qwen
    python -m eval recipes/eval.yaml --model outputs/mir_stage1              # YAML recipe + overrides
    python -m eval prepare --benchmarks tir_bench,disbench --data-root /data/bench
"""

from __future__ import annotations

import argparse
import logging
import sys


def _prepare(argv: list[str]) -> None:
    from eval.loaders import BENCHMARKS
    from eval.prepare import SOURCES, parse_sources, prepare

    parser = argparse.ArgumentParser(prog="python -m eval prepare", description="Download the official files.")
    parser.add_argument("--benchmarks", default=",".join(BENCHMARKS))
    parser.add_argument("--data-root", "--data_root", dest="data_root", required=True)
    parser.add_argument("--source", action="append", default=[],
                        help="NAME=hf:OWNER/REPO or NAME=git:URL; defaults: "
                             + ", ".join(f"{k}={v}" for k, v in SOURCES.items()))
    args = parser.parse_args(argv)
    names = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    for name, path in prepare(names, args.data_root, parse_sources(args.source)).items():
        print(f"{name}: {path}")


def main(argv: list[str] | None = None) -> dict | None:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "prepare":
        _prepare(argv[1:])
        return None
    if argv and argv[0] == "run":
        argv = argv[1:]
    from eval.config import EvalConfig
    from eval.pipeline import evaluate
    from train.recipes import parse_recipe

    (cfg,) = parse_recipe((EvalConfig,), argv)
    metrics = evaluate(cfg)
    for name, m in metrics["benchmarks"].items():
        print(f"{name:20s} {m['primary']:10s} {100 * m['overall'][m['primary']]:6.1f}%  "
              f"({m['n']} items, {m['n_failed']} failed)")
    print(f"Report: {cfg.out}/report.md")
    return metrics


if __name__ == "__main__":
    try:
        main()
    except ValueError as err:  # bad data, recipe or settings: one clear line, no traceback
        from data_builders.records import RecordError
        from eval.config import EvalError
        from train.recipes import RecipeError

        if isinstance(err, (RecordError, RecipeError, EvalError)):
            sys.exit(f"error: {err}")
        raise
