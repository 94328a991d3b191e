"""``evaluate(cfg)``: load, run, score and report every requested benchmark.

Output folder layout::

    out/run.json                                  model, its fingerprint and settings (a resume must match)
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

from lookcloser.eval.benchmarks import SPECS
from lookcloser.eval.config import EvalConfig, EvalError
from lookcloser.eval.loaders import find_benchmark_dir, load_benchmark
from lookcloser.eval.scoring import aggregate, answer_prior, score_predictions, task_answer_priors

logger = logging.getLogger(__name__)


def _check_out_dir(out: Path, cfg: EvalConfig, served_name: str | None = None,
                   per_benchmark: dict | None = None) -> None:
    """Refuse to mix predictions of two models (or of one model retrained in place, or of other
    answer-shaping settings) in one folder; start over when ``resume`` is off."""
    from lookcloser.eval.fingerprint import differences, run_fingerprint

    info = out / "run.json"
    fingerprint = run_fingerprint(cfg, served_name, per_benchmark)
    has_predictions = any(out.glob("*/predictions.jsonl"))
    if info.exists() and cfg.resume and has_predictions:
        previous = json.loads(info.read_text(encoding="utf-8"))
        changed = differences(previous.get("fingerprint"), fingerprint)
        if changed:
            raise EvalError(f"{out} holds predictions of another model or settings ({'; '.join(changed)}): "
                            "use --resume false to start over, or another --out")
        if cfg.resume and previous.get("config", {}).get("gray_images", False) != cfg.gray_images:
            raise EvalError(f"{out} holds predictions made with gray_images={not cfg.gray_images}: use another "
                             "--out, or --resume false to start over")
    if not cfg.resume:
        for old in out.glob("*/predictions.jsonl"):
            old.replace(old.with_name(f"predictions.{int(time.time())}.jsonl.bak"))
        for old in out.glob("*/retriever_predictions.jsonl"):
            old.unlink()
    out.mkdir(parents=True, exist_ok=True)
    info.write_text(json.dumps({"model": cfg.model, "fingerprint": fingerprint, "config": dataclasses.asdict(cfg)},
                               indent=1), encoding="utf-8")


def _fail_when_nothing_answered(names: list[str], out: Path, cfg: EvalConfig) -> None:
    """A run where every model call failed measured nothing: say so (exit non-zero), never report 0%."""
    from lookcloser.eval.runner import PredictionStore

    records = [r for name in names for r in PredictionStore(out / name / "predictions.jsonl").load().values()]
    if records and all(r.get("status") != "ok" for r in records):
        first = next((" ".join(str(r["error"]).split())[:300] for r in records if r.get("error")), "")
        raise EvalError(f"every one of the {len(records)} episodes failed for model {cfg.model}"
                        + (f"; first error: {first}" if first else "") + f" (the report in {out} lists them)")


def benchmark_config(cfg: EvalConfig, name: str, per_benchmark: dict | None) -> EvalConfig:
    """``cfg`` with ``name``'s own recorded prompting (``apply_checkpoint_prompting``) over it."""
    return dataclasses.replace(cfg, **(per_benchmark or {}).get(name, {}))


def load_items(cfg: EvalConfig, per_benchmark: dict | None = None) -> tuple[dict[str, list], str]:
    """The requested benchmarks' items, from ``data_root`` or the bundled fixtures."""
    from lookcloser.eval.loaders import ensure_fixtures

    fixtures = cfg.data_root is None
    root = ensure_fixtures() if fixtures else Path(cfg.data_root)
    label = f"bundled fixtures in each official format ({root})" if fixtures else str(root)
    items = {}
    for name in cfg.benchmark_list():
        folder = find_benchmark_dir(name, root)
        corpus = cfg.search_corpus
        beside = SPECS[name].corpus_beside
        if corpus is None and beside and (folder / beside).is_file():
            corpus = str(folder / beside)  # an offline corpus beside the data (generated, fixtures)
        items[name] = load_benchmark(name, folder, check_images=cfg.check_images, limit=cfg.limit, strict=cfg.strict,
                                     mir_prompt_stage=benchmark_config(cfg, name, per_benchmark).mir_prompt_stage,
                                     search_corpus=corpus)
        logger.info("loaded %d %s items from %s", len(items[name]), name, folder)
    return items, label


def gray_out_images(items: dict[str, list], folder: Path) -> None:
    """Point every item's input images at flat gray copies of the same size (written once to ``folder``)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    done: dict[str, str] = {}
    def gray(path: str) -> str:
        if path not in done:
            with Image.open(path) as img:
                size = img.size
            done[path] = str(folder / f"{len(done)}_{size[0]}x{size[1]}.png")
            Image.new("RGB", size, (128, 128, 128)).save(done[path])
        return done[path]

    for bench_items in items.values():
        for item in bench_items:
            paths = item.example.get("images") or []
            paths[:] = [gray(path) for path in paths]
            if isinstance(item.example.get("image"), str):  # ImageMining names its one image `image`
                item.example["image"] = gray(item.example["image"])


def checkpoint_info(model: str) -> dict | None:
    """A local checkpoint's digest and what its training recorded (base model, W&B run); None for hub
    ids, the reserved tiny name and endpoints."""
    from lookcloser.checkpoint_digest import checkpoint_digest
    from lookcloser.train.run_records import read_run_record

    path = Path(model).expanduser()
    if "://" in model or not path.is_dir():
        return None
    record = read_run_record(path)
    return {"digest": checkpoint_digest(path), "base_model": record.get("base_model"),
            "training_run": record.get("wandb")}


def apply_checkpoint_prompting(cfg, given: set[str]) -> tuple[dict[str, str], dict[str, dict]]:
    """Take the prompt settings recorded by training (``lookcloser_prompting.json``) in the checkpoint,
    unless given on the command line or in the recipe.

    Returns where each setting came from (``checkpoint``, ``given`` or ``default``) and each benchmark's
    own recorded settings where they differ from the rest (a curriculum's checkpoint prompts MIR as its
    MIR stage did, TIR-Bench with its GRPO stage's tools).
    """
    from lookcloser.agent.checkpoint_prompting import KEYS, read_prompting
    from lookcloser.eval.config import EvalError

    try:
        recorded = read_prompting(cfg.model) if cfg.model else {}
        per_benchmark = {name: read_prompting(cfg.model, name) for name in cfg.benchmark_list()} if cfg.model else {}
    except ValueError as err:
        raise EvalError(str(err)) from err
    taken = {k: v for k, v in recorded.items() if k not in given}
    for key, value in taken.items():
        setattr(cfg, key, value)
    own = {name: {k: v for k, v in entry.items() if k not in given and getattr(cfg, k) != v}
           for name, entry in per_benchmark.items()}
    own = {name: entry for name, entry in own.items() if entry}
    sources = {key: "checkpoint" if key in taken else "given" if key in given else "default" for key in KEYS}
    return sources, own


def _per_benchmark_text(per_benchmark: dict | None) -> str:
    return "; ".join(f"{name}: {', '.join(f'{k}={v!r}' for k, v in sorted(entry.items()))}"
                     for name, entry in sorted((per_benchmark or {}).items()))


def prompting_line(sources: dict[str, str], per_benchmark: dict | None = None) -> str:
    """One line naming the settings taken from the checkpoint ("" when none), each benchmark's own included.

    >>> prompting_line({"tools": "checkpoint", "max_turns": "given", "system_prompt": "checkpoint"})
    "system_prompt, tools from the checkpoint's lookcloser_prompting.json (flags and recipe keys override)"
    >>> prompting_line({}, {"mir": {"tools": False}})
    "per benchmark, from the checkpoint's lookcloser_prompting.json: mir: tools=False"
    """
    from lookcloser.agent.checkpoint_prompting import PROMPTING_FILE

    taken = sorted(k for k, source in sources.items() if source == "checkpoint")
    parts = [f"{', '.join(taken)} from the checkpoint's {PROMPTING_FILE} (flags and recipe keys override)"] if taken else []
    if per_benchmark:
        parts.append(f"per benchmark, from the checkpoint's {PROMPTING_FILE}: {_per_benchmark_text(per_benchmark)}")
    return "; ".join(parts)


def prompting_summary(cfg: EvalConfig, sources: dict[str, str], per_benchmark: dict | None = None) -> str:
    """The prompt settings used, each with where it came from when that was the checkpoint's record.

    >>> prompting_summary(EvalConfig(tools=False, max_turns=1), {"tools": "checkpoint", "max_turns": "given"})
    "mir_prompt_stage=0, system_prompt=None, tools=False (from the checkpoint's lookcloser_prompting.json), \
max_turns=1, environment=None"
    """
    from lookcloser.agent.checkpoint_prompting import PROMPTING_FILE

    parts = []
    for key in ("mir_prompt_stage", "system_prompt", "tools", "max_turns", "environment"):
        value = getattr(cfg, key)
        shown = repr(value) if isinstance(value, str) else str(value)
        from_checkpoint = f" (from the checkpoint's {PROMPTING_FILE})" if sources.get(key) == "checkpoint" else ""
        parts.append(f"{key}={shown}{from_checkpoint}")
    own = f"; per benchmark (the checkpoint's record): {_per_benchmark_text(per_benchmark)}" if per_benchmark else ""
    return ", ".join(parts) + own + (". Every input image replaced by flat gray (control)" if cfg.gray_images else "")


def _write_scores(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def evaluate(cfg: EvalConfig, policy=None, prompting_sources: dict[str, str] | None = None,
             per_benchmark: dict | None = None) -> dict:
    """Run the whole evaluation; returns the metrics also written to ``out/metrics.json``.

    ``policy``: an already-built policy (tests and benchmarks pass one); default ``build_policy(cfg)``.
    ``prompting_sources``: where each prompt setting came from (``checkpoint``, ``given``, ``default``;
    ``python -m eval`` passes what ``apply_checkpoint_prompting`` found): the report says it.
    ``per_benchmark``: settings that differ for one benchmark (the checkpoint's record of how each was trained).
    """
    from lookcloser.agent.environments import env_class
    from lookcloser.agent.toolkit import tool_names
    from lookcloser.eval.report import prediction_rows, write_reports
    from lookcloser.eval.retriever import make_embedder, retriever_rows
    from lookcloser.eval.runner import build_policy, env_factory, is_endpoint, run_benchmark

    if not cfg.model:
        raise EvalError("set --model (a checkpoint folder, hub id, or endpoint URL)")
    started = time.time()
    out = Path(cfg.out)
    if policy is None and is_endpoint(cfg.model):
        policy = build_policy(cfg)  # reaches the endpoint first: a dead URL stops here, in seconds
    elif policy is None:
        from lookcloser.agent.models import resolve_model_path

        resolve_model_path(cfg.model)  # a missing folder stops here, in one line, before any hub call
    # The data first: a file that does not read (cut short, malformed) stops the run before run.json is written.
    items, data_label = load_items(cfg, per_benchmark)
    _check_out_dir(out, cfg, getattr(policy, "model", None) if is_endpoint(cfg.model) else None, per_benchmark)
    if cfg.gray_images:
        gray_out_images(items, out / "gray_images")
    embedder = make_embedder(cfg.photo_embedder) if any(SPECS[name].retriever_report for name in items) else None
    policy = policy or build_policy(cfg)
    results: dict[str, dict] = {}
    item_rows: dict[str, list[dict]] = {}  # W&B's per-item predictions tables
    for name, bench_items in items.items():
        bench_out, bench_cfg = out / name, benchmark_config(cfg, name, per_benchmark)
        factory = env_factory(name, bench_cfg, embedder)
        predictions = run_benchmark(name, bench_items, policy, bench_cfg, bench_out, factory)
        rows = score_predictions(bench_items, predictions, llm_judge=cfg.llm_judge)
        _write_scores(bench_out / "scores.jsonl", rows)
        results[name] = aggregate(name, rows)
        priors = task_answer_priors(bench_items)  # the reference: the best score without looking, per task
        results[name]["answer_prior"] = answer_prior(bench_items, priors)
        for task, group in results[name]["groups"].get("task", {}).items():
            if task in priors:
                group["answer_prior"] = priors[task][1]
        results[name]["tools_offered"] = tool_names(env_class(factory))
        if cfg.wandb:
            item_rows[name] = prediction_rows(bench_items, predictions, rows, cfg.wandb_items)
        logger.info("%s: %s = %.3f (%d failed)", name, results[name]["primary"],
                    results[name]["overall"][results[name]["primary"]], results[name]["n_failed"])
        report = SPECS[name].retriever_report
        if report and cfg.disbench_retriever:
            rows = retriever_rows(bench_items, embedder, bench_out, cfg.photo_index_dir)
            results[report] = aggregate(report, rows)
            results[report]["embedder"] = embedder.name
    metrics = {
        "run": {"model": cfg.model, "data": data_label, "seconds": round(time.time() - started, 1),
                "prompting": prompting_summary(cfg, prompting_sources or {}, per_benchmark),
                "prompting_sources": prompting_sources or {}, "per_benchmark": per_benchmark or {},
                "checkpoint": checkpoint_info(cfg.model), "config": dataclasses.asdict(cfg)},
        "benchmarks": results,
    }
    write_reports(metrics, out, use_wandb=cfg.wandb, wandb_project=cfg.wandb_project, item_rows=item_rows)
    _fail_when_nothing_answered(list(items), out, cfg)
    return metrics
