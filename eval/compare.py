"""Checkpoints side by side on the registered benchmarks (``eval.benchmarks``): one table, one chart.

    python -m eval compare outputs/eval_sft outputs/eval_grpo=GRPO --out outputs/comparison

Each RUN_DIR is a ``python -m eval`` output folder (its ``metrics.json``), optionally ``=LABEL``.
Writes ``comparison.md``, ``comparison.json`` and ``comparison.png``: rows = checkpoints and
controls; columns = TIR-Bench accuracy (item-weighted, per task beside it), MIR accuracy, DISBench
F1 (EM beside it), ImageMining accuracy. Each column states its reference: the best answer prior,
measured on the same items (``eval.scoring.answer_prior``).

A curriculum's last stage (``script: eval/compare.py`` in recipes/mir_curriculum.yaml) runs the same
table on held-out data it writes itself (``data_builders.heldout``, a reserved seed): the untrained
model, every stage's checkpoint, and the last one with flat gray images and with its tools off.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from lookcloser.eval.benchmarks import DEFAULT_BENCHMARKS, SPECS

logger = logging.getLogger(__name__)

# (benchmark, headline metric, metric shown beside it), one per registered benchmark (its spec's ``compare``)
COLUMNS = tuple((name, *spec.compare) for name, spec in SPECS.items())
TITLES = {name: spec.title for name, spec in SPECS.items()}


def _row(label: str, metrics: dict) -> dict:
    row = {"label": label, "model": metrics["run"]["model"], "seconds": metrics["run"].get("seconds"), "values": {}}
    for bench, metric, beside in COLUMNS:
        m = metrics["benchmarks"].get(bench)
        if m is None:
            continue
        entry = {"value": m["overall"][metric], "n": m["n"], "n_failed": m["n_failed"],
                 "answer_prior": m.get("answer_prior")}
        if beside:
            entry[beside] = m["overall"][beside]
        if SPECS[bench].compare_per_task:
            entry["per_task"] = {task: g[metric] for task, g in m.get("groups", {}).get("task", {}).items()}
        if m.get("agent", {}).get("tool_success_rate") is not None:
            entry["tool_success"] = m["agent"]["tool_success_rate"]
        row["values"][bench] = entry
    return row


def collect(runs: list[tuple[str, Path]]) -> dict:
    """The comparison of ``(label, eval output folder)`` pairs."""
    rows = []
    for label, folder in runs:
        path = Path(folder) / "metrics.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not found (give `python -m eval` output folders)")
        rows.append(_row(label, json.loads(path.read_text(encoding="utf-8"))))
    # the registry's order, only the benchmarks some row was evaluated on (an empty column says nothing)
    columns = [bench for bench, _, _ in COLUMNS if any(bench in r["values"] for r in rows)]
    references = {bench: next(r["values"][bench]["answer_prior"] for r in rows if bench in r["values"])
                  for bench in columns}
    return {"columns": columns, "references": references, "rows": rows}


def _cell(entry: dict | None, bench: str) -> str:
    if entry is None:
        return "—"
    text = f"{entry['value']:.3f}"
    beside = SPECS[bench].compare[1]
    if beside:
        text += f" ({beside.upper()} {entry[beside]:.3f})"
    if entry.get("per_task") and len(entry["per_task"]) > 1:
        text += " (" + ", ".join(f"{task} {v:.2f}" for task, v in sorted(entry["per_task"].items())) + ")"
    if entry.get("n_failed"):
        text += f" [{entry['n_failed']} failed]"
    return text


def markdown(table: dict, title: str = "Held-out comparison") -> str:
    refs = table["references"]
    lines = [f"# {title}", "",
             "Reference per column: the best answer prior (one fixed answer per task, the best one), measured on "
             "the same items: " + ", ".join(f"{TITLES[b]} {refs[b]:.3f}" for b in table["columns"]
                                              if refs.get(b) is not None) + ".", "",
             "| checkpoint | " + " | ".join(TITLES[b] for b in table["columns"]) + " | eval s |",
             "|---|" + "---|" * (len(table["columns"]) + 1)]
    for row in table["rows"]:
        cells = [_cell(row["values"].get(b), b) for b in table["columns"]]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + f" | {row['seconds'] or 0:.0f} |")
    lines.append("| *reference* | " + " | ".join("—" if refs.get(b) is None else f"{refs[b]:.3f}"
                                                   for b in table["columns"]) + " | |")
    return "\n".join(lines) + "\n"


def chart(table: dict, path: Path, title: str) -> Path:
    from lookcloser.plots import comparison_chart

    columns = table["columns"]  # collect's: only benchmarks some row was evaluated on
    values = [[r["values"][b]["value"] if b in r["values"] else None for b in columns] for r in table["rows"]]
    return comparison_chart([r["label"] for r in table["rows"]], [TITLES[b] for b in columns], values,
                            {TITLES[b]: table["references"][b] for b in columns
                             if table["references"].get(b) is not None}, path, title, value_label="score", limit=1.0)


def _write(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")  # an interrupted write never leaves a cut file
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def write_comparison(table: dict, out: str | Path, title: str = "Held-out comparison") -> dict[str, Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "comparison.json", "md": out / "comparison.md", "png": out / "comparison.png"}
    _write(paths["json"], json.dumps(table, indent=1) + "\n")
    _write(paths["md"], markdown(table, title))
    chart(table, paths["png"], title)
    return paths


@dataclass
class CompareArguments:
    """Checkpoints side by side: python -m eval output folders -> comparison.md, .json, .png."""

    POSITIONAL: ClassVar = ("runs",)
    runs: list[str] = field(default_factory=list, metadata={
        "help": "python -m eval output folders, each optionally FOLDER=LABEL"})
    out: str = field(default="outputs/comparison", metadata={"help": "folder for the comparison"})
    title: str = "Held-out comparison"

    def __post_init__(self) -> None:
        from lookcloser.checks import check_output_folder
        from lookcloser.eval.config import EvalError

        if not self.runs:
            raise EvalError("give one or more python -m eval output folders")
        check_output_folder("out", self.out)
        for _, folder in self.labelled_runs():
            if not (folder / "metrics.json").is_file():
                raise EvalError(f"{folder / 'metrics.json'}: not found (give `python -m eval` output folders)")

    def labelled_runs(self) -> list[tuple[str, Path]]:
        """(label, folder) of each ``FOLDER[=LABEL]``; the label defaults to the folder's name."""
        pairs = [run.split("=", 1) for run in self.runs]
        return [(pair[1] if len(pair) == 2 else Path(pair[0]).name, Path(pair[0])) for pair in pairs]


def compare_main(argv: list[str]) -> None:
    from lookcloser.recipes import parse_flags

    args = parse_flags(CompareArguments, argv, prog="python -m eval compare", description=CompareArguments.__doc__)
    table = collect(args.labelled_runs())
    paths = write_comparison(table, args.out, args.title)
    print(markdown(table, args.title))
    print(f"Comparison: {paths['md']} (+ {paths['json'].name}, {paths['png'].name})")


# -- the curriculum's eval stage --

@dataclass
class CompareStageArguments:
    output_dir: str = field(default="outputs/curriculum/eval", metadata={"help": "Where heldout/, runs/ and the "
                                                                                 "comparison go."})
    base_model: str = field(default="lookcloser/tiny-qwen3-vl", metadata={"help": "The untrained row's model."})
    stages: list[str] = field(default_factory=list, metadata={
        "help": "Rows in order: curriculum stage names, whose checkpoints sit beside output_dir."})
    controls_of: str | None = field(default=None, metadata={
        "help": "The stage evaluated again with flat gray images and with tools off (default: the last)."})
    heldout_seed: int = field(default=8008, metadata={"help": "Held-out seed (data_builders.heldout.HELDOUT_SEEDS)."})
    benchmarks: list[str] = field(default_factory=lambda: list(DEFAULT_BENCHMARKS), metadata={
        "help": "Columns with data (default: the registry's default run, eval.benchmarks.DEFAULT_BENCHMARKS)."})
    mir_per_family: int = field(default=16, metadata={"help": "Held-out MIR records per family (4 families)."})
    tir_count: int = field(default=60, metadata={"help": "Held-out TIR tasks, cycling through tir_tasks."})
    tir_tasks: list[str] | None = field(default=None, metadata={
        "help": "Synthetic TIR task kinds held out (default: the five of data_builders.synthetic.TASKS; any of "
                "ALL_TASKS)."})
    tir_pictures: str = field(default="folder", metadata={
        "help": "Held-out TIR pictures: folder (the held-out MIR pictures) or procedural (drawn from the seed)."})
    disbench_count: int = field(default=60, metadata={"help": "Held-out DISBench queries."})
    imagemining_count: int = field(default=60, metadata={"help": "Held-out ImageMining questions."})
    max_new_tokens_per_turn: int = field(default=256, metadata={
        "help": "Token cap per turn in every row (a MIR stage-4 answer reasons ~150 tokens before its letter)."})
    batch_size: int = field(default=16, metadata={"help": "Episodes generated together."})

    def __post_init__(self) -> None:
        from lookcloser.checks import check_names
        from lookcloser.data_builders.heldout import check_benchmarks, check_seed
        from lookcloser.data_builders.synthetic import ALL_TASKS, PICTURE_SOURCES
        from lookcloser.errors import RecipeError

        check_seed(self.heldout_seed, "heldout_seed")
        check_benchmarks(self.benchmarks, "benchmarks")
        check_names("tir_tasks", self.tir_tasks or [], list(ALL_TASKS))
        check_names("tir_pictures", [self.tir_pictures], list(PICTURE_SOURCES))
        if self.controls_of and self.controls_of not in self.stages:
            raise RecipeError(f"controls_of {self.controls_of!r} is not one of stages {self.stages}")


def stage_rows(args: CompareStageArguments) -> list[tuple[str, str, dict]]:
    """(label, model, settings given on top of the checkpoint's prompting) for every row."""
    root = Path(args.output_dir).parent
    rows = [("untrained", args.base_model, {})]
    rows += [(name, str(root / name), {}) for name in args.stages]
    last = args.controls_of or (args.stages[-1] if args.stages else None)
    if last:
        rows += [(f"{last}, gray images", str(root / last), {"gray_images": True}),
                 (f"{last}, tools off", str(root / last), {"tools": False})]
    return rows


def main(args: CompareStageArguments) -> str:
    from lookcloser.data_builders.heldout import write_heldout
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.pipeline import apply_checkpoint_prompting, evaluate, prompting_line

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    out = Path(args.output_dir)
    heldout = out / "heldout"
    counts = {"mir_per_family": args.mir_per_family, "tir_count": args.tir_count,
              "disbench_count": args.disbench_count, "imagemining_count": args.imagemining_count}
    tasks = {"tir_tasks": list(args.tir_tasks)} if args.tir_tasks else {}  # absent: the settings of earlier runs
    if args.tir_pictures != "folder":
        tasks["tir_pictures"] = args.tir_pictures
    wanted = {"seed": args.heldout_seed, "benchmarks": sorted(args.benchmarks), **counts, **tasks}
    marker = heldout / "settings.json"
    if not (marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == wanted):
        write_heldout(heldout, args.heldout_seed, tuple(args.benchmarks), **counts,
                      tir_tasks=tuple(args.tir_tasks) if args.tir_tasks else None, tir_pictures=args.tir_pictures)
        _write(marker, json.dumps(wanted) + "\n")
    runs = []
    for k, (label, model, control) in enumerate(stage_rows(args)):
        cfg = EvalConfig(model=model, data_root=str(heldout), out=str(out / "runs" / f"{k:02d}"),
                         benchmarks=",".join(args.benchmarks), max_new_tokens_per_turn=args.max_new_tokens_per_turn,
                         batch_size=args.batch_size, resume=False, save_trajectories=False, **control)
        given = {"model", "data_root", "out", "benchmarks", "max_new_tokens_per_turn", "batch_size", *control}
        sources, own = apply_checkpoint_prompting(cfg, given)  # each row prompted as its checkpoint records
        logger.info("row %d %s: %s (%s)", k, label, model, prompting_line(sources, own) or "eval's defaults")
        evaluate(cfg, prompting_sources=sources, per_benchmark=own)
        runs.append((label, Path(cfg.out)))
    paths = write_comparison(collect(runs), out, f"Held-out comparison (seed {args.heldout_seed})")
    print(f"Comparison: {paths['md']}", flush=True)
    return str(out)


def parse_args(argv=None, planned=()):
    """The stage's arguments, checked as they are made (the curriculum checks every stage before stage 1)."""
    from lookcloser.recipes import parse_recipe

    return parse_recipe((CompareStageArguments,), argv, description=__doc__)


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    sys.exit(run(main, parse_args))
