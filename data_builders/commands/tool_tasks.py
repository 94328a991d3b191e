"""Build the synthetic tool tasks of a tool curriculum: a training set and a held-out set (another seed).

    python -m data_builders tool-tasks --output_dir outputs/tool_curriculum/data --tasks visual_search
    (a stage of recipes/tool_curriculum.yaml: `script: data_builders/commands/tool_tasks.py`)

Writes ``output_dir/train`` (seed ``seed``): a TIR-Bench data root (``TIR-Bench.json`` + ``data/``)
with the GRPO prompts (``grpo/``) and the oracle tool trajectories (``sft/``, the cold start); and
``output_dir/heldout`` (seed ``heldout_seed``, a reserved held-out seed) through the one held-out
writer, ``data_builders.heldout`` (``heldout/tir_bench``: pictures drawn fresh from that seed), which
``python -m eval --benchmarks tir_bench --data_root output_dir/heldout`` reads. The generator's defaults are the task's (data_builders.synthetic);
``model_pixels`` comes from the processor of ``model_name_or_path``, so the answer is unreadable at
the resolution that model actually sees. A folder built with the same settings is kept.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from lookcloser.data_builders.heldout import check_seed, check_training_seed

logger = logging.getLogger(__name__)


@dataclass
class ToolTaskArguments:
    """synthetic TIR tool tasks: GRPO prompts, oracle trajectories, held-out set"""

    output_dir: str = field(default="outputs/tool_curriculum/data", metadata={"help": "Where train/ and heldout/ go."})
    images: str | None = field(default=None, metadata={
        "help": "Folder of source pictures (default: the bundled data/mir_sample; 'generated': PIL-drawn; "
                "'procedural': each task's picture drawn from its seed, the kinds varied, the held-out set too)."})
    tasks: list[str] = field(default_factory=lambda: ["visual_search"], metadata={
        "help": "Synthetic tasks (data_builders.synthetic.ALL_TASKS; maze, color and refcoco need a python tool)."})
    count: int = field(default=400, metadata={"help": "Training tasks."})
    seed: int = field(default=1, metadata={"help": "Seed of the training tasks."})
    heldout_count: int = field(default=60, metadata={"help": "Held-out tasks (0: none)."})
    heldout_seed: int = field(default=1001, metadata={
        "help": "Seed of the held-out tasks, in data_builders.heldout.HELDOUT_SEEDS (1000-9999); never trained on."})
    environment: str = field(default="crop", metadata={
        "help": "Agent environment whose tools the oracle calls and the SFT data lists (crop; tir_bench: all)."})
    model_name_or_path: str = field(default="lookcloser/tiny-qwen3-vl", metadata={
        "help": "The model whose processor's pixel budget sizes the visual_search canvas and shape."})
    search_grid: int = field(default=3, metadata={"help": "visual_search grid (0: free search, pixel boxes)."})
    direct_ratio: float = field(default=0.0, metadata={
        "help": "Share of the training cold-start trajectories that answer at once, without a tool (0-1): a "
                "cold start that has seen both ways to answer, for GRPO to find which pays."})
    sft_share: list[str] = field(default_factory=list, metadata={
        "help": "KIND=SHARE (0-1): only that share of KIND's trajectories (drawn with the seed) go into the cold "
                "start (sft/); every item stays a GRPO prompt (and its drills), so GRPO has that kind left to "
                "learn. Default: every solved item of every kind."})
    copy_drills: int = field(default=0, metadata={
        "help": "Per python-tool trajectory, this many copy drills in train/copy (what it copies from the question, "
                "from a first call's printed line, and the printed line into the answer, all drawn at random; no "
                "tool schemas): the warm-up stage on the copies before the cold start."})

    def __post_init__(self) -> None:
        from lookcloser.agent.environments import ENVIRONMENT_NAMES, environment_class
        from lookcloser.agent.oracle import check_program_tasks
        from lookcloser.checks import check_names, check_range
        from lookcloser.data_builders.synthetic import ALL_TASKS

        check_names("tasks", self.tasks, ALL_TASKS)
        check_names("environment", [self.environment], list(ENVIRONMENT_NAMES))
        check_program_tasks(self.tasks, self.environment)
        check_range("count", self.count, 1)
        check_range("heldout_count", self.heldout_count, 0)
        check_range("search_grid", self.search_grid, 0)
        check_range("direct_ratio", self.direct_ratio, 0, 1)
        check_range("copy_drills", self.copy_drills, 0)
        self.sft_shares = sft_shares(self.sft_share, self.tasks)
        if self.copy_drills:  # drills come from python trajectories only: none would leave the copy stage no data
            from lookcloser.agent.code_programs import KINDS
            from lookcloser.agent.toolkit import tool_names
            from lookcloser.errors import RecipeError

            if "python" not in tool_names(environment_class(self.environment)):
                raise RecipeError(f"copy_drills: environment {self.environment!r} has no python tool (e.g. crop+python)")
            if not set(self.tasks) & set(KINDS):
                raise RecipeError(f"copy_drills: no task a program solves in tasks (those: "
                                  f"{', '.join(KINDS)})")
        if self.heldout_count > 0:
            check_seed(self.heldout_seed, "heldout_seed")
        check_training_seed(self.seed)


def sft_shares(pairs: list[str], tasks: list[str]) -> dict[str, float]:
    """``sft_share``'s ``KIND=SHARE`` pairs as a dict, each kind one of ``tasks`` and each share in 0-1.

    >>> sft_shares(["color=0.25"], ["maze", "color"])
    {'color': 0.25}
    >>> sft_shares(["colour=0.25"], ["maze", "color"])
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: sft_share: unknown name 'colour'; did you mean color? (choose from maze, color)
    >>> sft_shares(["color"], ["color"])
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: sft_share: 'color' is not KIND=SHARE (e.g. color=0.25)
    >>> sft_shares(["color=0", "maze=0"], ["maze", "color"])
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: sft_share: every task's share is 0, which leaves the cold start no rows
    """
    from lookcloser.checks import check_names, check_range
    from lookcloser.errors import RecipeError

    shares = {}
    for pair in pairs:
        kind, sep, value = pair.partition("=")
        try:
            share = float(value) if sep else None
        except ValueError:
            share = None
        if share is None:
            raise RecipeError(f"sft_share: {pair!r} is not KIND=SHARE (e.g. color=0.25)")
        check_names("sft_share", [kind], tasks)
        check_range(f"sft_share {kind}", share, 0, 1)
        shares[kind] = share
    if all(shares.get(kind) == 0 for kind in tasks):
        raise RecipeError("sft_share: every task's share is 0, which leaves the cold start no rows")
    return shares


def model_pixels(name_or_path: str) -> int:
    """The most pixels the model's image processor feeds the vision tower (``size.longest_edge``)."""
    from lookcloser.agent.models import load_processor, resolve_model_path

    processor = load_processor(resolve_model_path(name_or_path))
    size = getattr(processor.image_processor, "size", None) or {}
    pixels = size.get("longest_edge") if isinstance(size, dict) else None
    return int(pixels or getattr(processor.image_processor, "max_pixels", 0) or 128 * 128)


def build(args: ToolTaskArguments) -> dict[str, Path]:
    from lookcloser.agent.oracle import build_synthetic
    from lookcloser.data_builders.grpo_rows import source_pictures
    from lookcloser.data_builders.heldout import write_heldout
    from lookcloser.data_builders.output import build_or_keep
    from lookcloser.data_builders.synthetic import SyntheticConfig, config_settings

    out = Path(args.output_dir)
    pictures = "procedural" if args.images == "procedural" else "folder"
    source = None if pictures == "procedural" else source_pictures(args.images, out, args.seed)
    pixels = model_pixels(args.model_name_or_path)
    built = {}
    cfg = SyntheticConfig(seed=args.seed, tasks=tuple(args.tasks), search_grid=args.search_grid, model_pixels=pixels,
                          pictures=pictures)
    settings = {"source": str(source.resolve()) if source else pictures, "count": args.count,
                "environment": args.environment, **({"direct_ratio": args.direct_ratio} if args.direct_ratio else {}),
                **({"copy_drills": args.copy_drills} if args.copy_drills else {}),
                **({"sft_share": args.sft_shares} if args.sft_shares else {}), **config_settings(cfg)}
    # The held-out split comes from the one held-out writer (fresh pictures from its own seed).
    heldout = {"heldout_seed": args.heldout_seed, "heldout_count": args.heldout_count, "tasks": list(args.tasks),
               "model_pixels": pixels, "writer": "data_builders.heldout",
               **({"tir_pictures": pictures} if pictures != "folder" else {})}
    for split, wanted, make in (("train", settings, lambda target: build_synthetic(
            source, target, args.count, cfg, progress=False, environment=args.environment,
            direct_ratio=args.direct_ratio, copy_drills=args.copy_drills, sft_share=args.sft_shares)), ("heldout", heldout, lambda target: write_heldout(
            target, args.heldout_seed, ("tir_bench",), tir_count=args.heldout_count, tir_tasks=tuple(args.tasks),
            model_pixels=pixels, tir_pictures=pictures))):
        if split == "heldout" and args.heldout_count <= 0:
            continue
        built[split] = build_or_keep(out / split, wanted, make)
    return built


def main(args: ToolTaskArguments) -> str:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    build(args)
    return args.output_dir


def parse_args(argv=None, planned=(), prog=None):
    from lookcloser.checks import check_model_name, check_output_folder, check_path
    from lookcloser.data_builders.grpo_rows import resolve_path
    from lookcloser.recipes import parse_recipe

    (args,) = parse_recipe((ToolTaskArguments,), argv, prog=prog, description=__doc__)
    check_output_folder("output_dir", args.output_dir)
    check_model_name(args.model_name_or_path, planned)
    if args.images not in (None, "generated", "procedural"):
        check_path("images", resolve_path(args.images), "folder", planned)
    return (args,)


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    sys.exit(run(main, parse_args))
