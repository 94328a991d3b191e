"""Reports: ``metrics.json``, ``report.md`` (tables with published numbers), a PNG chart per
benchmark (``lookcloser.plots``), and optionally W&B (offline works)."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

from lookcloser.eval.benchmarks import REPORTS
from lookcloser.eval.scoring import METRICS

logger = logging.getLogger(__name__)
# Metrics shown in tables and charts (all are in metrics.json): each benchmark spec's ``report``.
SHOWN = {name: report.shown for name, report in REPORTS.items()}
CHARTED = {name: report.charted for name, report in REPORTS.items() if report.charted}


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _published(metrics: dict, name: str) -> str:
    value = metrics.get("published_percent", {}).get(name)
    return "" if value is None else str(value)


def write_metrics(path: Path, metrics: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(metrics, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def markdown(metrics: dict) -> str:
    """The report: a summary table, then one table per benchmark (overall and every group)."""
    run = metrics["run"]
    lines = [f"# Evaluation of `{run['model']}`", "",
             (f"Data: {run['data']}. Scored by `rewards/` (TIR-Bench in official mode). Numbers are percentages; "
              "failed items score 0 and are listed below each table."), "",
             *([f"Prompting: {run['prompting']}.", ""] if run.get("prompting") else []),
             *([checkpoint_line(run["checkpoint"]), ""] if run.get("checkpoint") else []),
             "| benchmark | items | failed | metric | score | published |", "|---|---:|---:|---|---:|---:|"]
    for name, m in metrics["benchmarks"].items():
        for metric in SHOWN[name][:2]:
            lines.append(f"| {name} | {m['n']} | {m['n_failed']} | {metric} | {_pct(m['overall'][metric])} | "
                         f"{_published(m, metric)} |")
    for name, m in metrics["benchmarks"].items():
        shown = SHOWN[name]
        lines += ["", f"## {name}", "", "| group | value | n | " + " | ".join(shown) + " |",
                  "|---|---|---:|" + "---:|" * len(shown)]
        lines.append(f"| overall | | {m['n']} | " + " | ".join(_pct(m["overall"][s]) for s in shown) + " |")
        if any(_published(m, s) for s in shown):
            lines.append("| published | | | " + " | ".join(_published(m, s) for s in shown) + " |")
        for group, values in m["groups"].items():
            for value, g in values.items():
                lines.append(f"| {group} | {value} | {g['n']} | " + " | ".join(_pct(g[s]) for s in shown) + " |")
        if m.get("derived"):  # the benchmark's own summary numbers (its spec's summarize)
            lines += ["", "Derived: " + ", ".join(f"{k} {_pct(v)}" for k, v in m["derived"].items()) + "."]
        if m.get("protocol"):
            lines += ["", f"Protocol: {m['protocol'].rstrip('.')}."]
        note = m.get("published_percent", {}).get("note")
        if note:
            lines += ["", f"Published: {note.rstrip('.')}."]
        if "tools_offered" in m:
            lines += ["", f"Tools offered: {', '.join(m['tools_offered']) or 'none'}."]
        if m.get("agent"):
            a = m["agent"]
            lines += ["", (f"Agent: stop reasons {a['stop_reasons']}, {a['mean_turns']:.2f} turns and "
                           f"{a['mean_tool_calls']:.2f} tool calls per item, {a['tool_errors']} tool errors.")]
        if m.get("bad_records"):
            lines += ["", (f"{len(m['bad_records'])} record(s) did not load: each counts as failed "
                           "(status bad_record below); `--strict` stops at the first instead.")]
        if m["failed"]:
            lines += ["", f"Failed ({m['n_failed']}):"]
            lines += [f"- `{f['id']}` ({f['status']}): {f.get('error') or ''}" for f in m["failed"][:200]]
            if m["n_failed"] > 200:
                lines.append(f"- … and {m['n_failed'] - 200} more (metrics.json lists them all)")
        if m.get("chart"):
            lines += ["", f"![{name}]({m['chart']})"]
    return "\n".join(lines) + "\n"


def chart(name: str, m: dict, path: Path) -> Path:
    """Horizontal bars of the charted metrics (%): overall, then each group's values; published values
    as dashed lines in the metric's colour (both ends of a published range such as "10-14")."""
    from lookcloser.plots import bar_chart

    shown = CHARTED.get(name, (m["primary"],))
    rows = [("overall", m["overall"])]
    rows += [(f"{group}={value} (n={g['n']})", g) for group, values in m["groups"].items() for value, g in values.items()]
    references = {}
    for metric in shown:
        published = m.get("published_percent", {}).get(metric)
        if published is not None:
            references[metric] = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", str(published))][:2]
    return bar_chart([label for label, _ in rows], list(shown),
                     [[100 * float(values.get(metric, 0.0)) for metric in shown] for _, values in rows],
                     path, f"{name}: {', '.join(shown)} (%), {m['n']} items", references=references,
                     value_label="score (%)")


def checkpoint_line(checkpoint: dict) -> str:
    """The report's line on what was evaluated: the checkpoint's digest and the training run it records.

    >>> checkpoint_line({"digest": "ab12", "base_model": "Qwen/Qwen3-VL-2B-Instruct",
    ...                  "training_run": {"id": "x1", "project": "lookcloser", "url": None}})
    'Checkpoint: digest `ab12`, base model `Qwen/Qwen3-VL-2B-Instruct`, trained in W&B run `x1` (project lookcloser).'
    """
    parts = [f"digest `{checkpoint['digest']}`"]
    if checkpoint.get("base_model"):
        parts.append(f"base model `{checkpoint['base_model']}`")
    run = checkpoint.get("training_run")
    if run:
        parts.append(f"trained in W&B run `{run['id']}` (project {run.get('project')}"
                     + (f", {run['url']}" if run.get("url") else "") + ")")
    return "Checkpoint: " + ", ".join(parts) + "."


def prediction_rows(items: list, predictions: dict[str, dict], rows: list[dict], limit: int) -> list[dict]:
    """The first ``limit`` items as rows of the W&B predictions table (input images as paths)."""
    from lookcloser.eval.scoring import gold_response
    from lookcloser.train.grpo_lib.tables import conversation_text

    scored = {row["id"]: row for row in rows}
    out = []
    for item in items[:max(0, limit)]:
        example, prediction, row = item.example, predictions.get(item.id) or {}, scored.get(item.id) or {}
        question = example.get("prompt") or next((example[k] for k in ("question", "query", "problem", "text")
                                                   if isinstance(example.get(k), str)), "")
        out.append({"id": item.id, "images": [str(p) for p in example.get("images") or []],
                    "question": conversation_text(question), "gold": "" if item.bad else gold_response(item),
                    "prediction": prediction.get("response") or prediction.get("error") or item.bad or "",
                    "score": (row.get("scores") or {}).get(METRICS[item.benchmark][0]),
                    "status": row.get("status")})
    return out


def _predictions_table(wandb, rows: list[dict]):
    from PIL import Image

    from lookcloser.train.grpo_lib.tables import contact_sheet

    columns = ["id", "images", "question", "prediction", "gold", "score", "status"]
    table = wandb.Table(columns=columns)
    for row in rows:
        images = []
        for path in row["images"]:
            with Image.open(path) as img:
                img.thumbnail((256, 256))
                images.append(img.convert("RGB"))
        sheet = contact_sheet(images)
        table.add_data(row["id"], wandb.Image(sheet) if sheet is not None else None, row["question"],
                       row["prediction"], row["gold"], row["score"], row["status"])
    return table


def log_wandb(metrics: dict, out: Path, project: str, item_rows: dict[str, list[dict]] | None = None) -> None:
    """Metrics, charts, per-group tables and per-item predictions to W&B (``WANDB_MODE=offline``
    keeps it local); the config names the checkpoint's digest and the training run it records, and
    the eval joins that run's W&B group (a curriculum's dashboard then shows its evals too)."""
    import wandb

    # WANDB_DIR wins, as for the training runs; else the run's files sit beside its report.
    config = {**metrics["run"].get("config", {}), "data": metrics["run"].get("data")}
    checkpoint = metrics["run"].get("checkpoint") or {}
    training_run = checkpoint.get("training_run") or {}
    if checkpoint:
        config.update({"checkpoint_digest": checkpoint["digest"], "base_model": checkpoint.get("base_model"),
                       "training_run_id": training_run.get("id"), "training_run_url": training_run.get("url"),
                       "training_run_project": training_run.get("project")})
    run = wandb.init(project=project, name=f"eval-{Path(metrics['run']['model']).name}",
                     dir=os.environ.get("WANDB_DIR") or str(out), config=config, job_type="eval",
                     group=os.environ.get("WANDB_RUN_GROUP") or training_run.get("group"))
    flat = {}
    for name, m in metrics["benchmarks"].items():
        for metric in METRICS[name]:
            flat[f"{name}/{metric}"] = m["overall"][metric]
        flat[f"{name}/n_failed"] = m["n_failed"]
        rows = [[g, v, s["n"], *[s[k] for k in METRICS[name]]] for g, vals in m["groups"].items() for v, s in vals.items()]
        flat[f"{name}/groups"] = wandb.Table(columns=["group", "value", "n", *METRICS[name]], data=rows)
        if m.get("chart"):
            flat[f"{name}/chart"] = wandb.Image(str(out / m["chart"]))
        if (item_rows or {}).get(name):
            flat[f"{name}/predictions"] = _predictions_table(wandb, item_rows[name])
    run.log(flat)
    run.finish()


def write_reports(metrics: dict, out: Path, *, use_wandb: bool = False, wandb_project: str = "lookcloser",
                  item_rows: dict[str, list[dict]] | None = None) -> None:
    """``item_rows``: per benchmark, the rows of W&B's predictions table (``prediction_rows``)."""
    out = Path(out)
    for name, m in metrics["benchmarks"].items():
        try:
            m["chart"] = chart(name, m, out / f"{name}.png").name
        except Exception as err:  # noqa: BLE001 - a chart must never cost the numbers
            logger.warning("could not draw the %s chart: %r", name, err)
    write_metrics(out / "metrics.json", metrics)
    (out / "report.md").write_text(markdown(metrics), encoding="utf-8")
    if use_wandb:
        log_wandb(metrics, out, wandb_project, item_rows)
