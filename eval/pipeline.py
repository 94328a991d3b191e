"""``evaluate(cfg)``: load, run, score and report every requested benchmark.

Output folder layout::

    out/run.json                                  model and settings (a resume must match the model)
    out/metrics.json, out/report.md, out/{benchmark}.png
    out/{benchmark}/predictions.jsonl             one record per finished episode (append-only)
    out/{benchmark}/scores.jsonl                  per-item metrics and tags
    out/{benchmark}/trajectories/{id}.json        conversations, images as PNG files beside them
    out/disbench/retriever_predictions.jsonl      the retriever baseline's rankings
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from pathlib import Path

from eval.config import EvalConfig, EvalError
from eval.loaders import find_benchmark_dir, load_benchmark
from eval.scoring import aggregate, score_predictions

logger = logging.getLogger(__name__)


def _check_out_dir(out: Path, cfg: EvalConfig) -> None:
    """Refuse to mix predictions of two models in one folder; start over when ``resume`` is off."""
    info = out / "run.json"
    if info.exists():
        previous = json.loads(info.read_text(encoding="utf-8"))
        if cfg.resume and previous.get("model") != cfg.model:
            raise EvalError(f"{out} holds predictions of model {previous.get('model')!r}, not {cfg.model!r}: "
                             "use another --out, or --resume false to start over")
    if not cfg.resume:
        for old in out.glob("*/predictions.jsonl"):
            old.replace(old.with_name(f"predictions.{int(time.time())}.jsonl.bak"))
        for old in out.glob("*/retriever_predictions.jsonl"):
            old.unlink()
    out.mkdir(parents=True, exist_ok=True)
    info.write_text(json.dumps({"model": cfg.model, "config": dataclasses.asdict(cfg)}, indent=1), encoding="utf-8")


def load_items(cfg: EvalConfig) -> tuple[dict[str, list], str]:
    """The requested benchmarks' items, from ``data_root`` or the bundled fixtures."""
    from eval.fixtures import ensure_fixtures

    fixtures = cfg.data_root is None
    root = ensure_fixtures() if fixtures else Path(cfg.data_root)
    label = f"bundled fixtures in each official format ({root})" if fixtures else str(root)
    items = {}
    for name in cfg.benchmark_list():
        folder = find_benchmark_dir(name, root)
        corpus = cfg.search_corpus
        if corpus is None and fixtures and name == "imagemining":
            corpus = str(folder / "search_corpus.jsonl")
        items[name] = load_benchmark(name, folder, check_images=cfg.check_images, limit=cfg.limit,
                                     mir_prompt_stage=cfg.mir_prompt_stage, search_corpus=corpus)
        logger.info("loaded %d %s items from %s", len(items[name]), name, folder)
    return items, label


def _write_scores(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def evaluate(cfg: EvalConfig, policy=None) -> dict:
    """Run the whole evaluation; returns the metrics also written to ``out/metrics.json``.

    ``policy``: an already-built policy (tests and benchmarks pass one); default ``build_policy(cfg)``.
    """
    from eval.report import write_reports
    from eval.retriever import make_embedder, retriever_rows
    from eval.runner import build_policy, env_factory, run_benchmark

    if not cfg.model:
        raise EvalError("set --model (a checkpoint folder, hub id, or endpoint URL)")
    started = time.time()
    out = Path(cfg.out)
    _check_out_dir(out, cfg)
    items, data_label = load_items(cfg)
    embedder = make_embedder(cfg.photo_embedder) if "disbench" in items else None
    policy = policy or build_policy(cfg)
    results: dict[str, dict] = {}
    for name, bench_items in items.items():
        bench_out = out / name
        predictions = run_benchmark(name, bench_items, policy, cfg, bench_out, env_factory(name, cfg, embedder))
        rows = score_predictions(bench_items, predictions, llm_judge=cfg.llm_judge)
        _write_scores(bench_out / "scores.jsonl", rows)
        results[name] = aggregate(name, rows)
        logger.info("%s: %s = %.3f (%d failed)", name, results[name]["primary"],
                    results[name]["overall"][results[name]["primary"]], results[name]["n_failed"])
        if name == "disbench" and cfg.disbench_retriever:
            rows = retriever_rows(bench_items, embedder, bench_out, cfg.photo_index_dir)
            results["disbench_retriever"] = aggregate("disbench_retriever", rows)
            results["disbench_retriever"]["embedder"] = embedder.name
    metrics = {
        "run": {"model": cfg.model, "data": data_label, "seconds": round(time.time() - started, 1),
                "config": dataclasses.asdict(cfg)},
        "benchmarks": results,
    }
    write_reports(metrics, out, use_wandb=cfg.wandb, wandb_project=cfg.wandb_project)
    return metrics
