"""``python -m data_builders {mir,imagenet-think,synthetic,difficulty,heldout} ... --out DIR``, and the
curricula's data stages: ``python -m data_builders {tool-tasks,search-tasks,mixed-tasks,imagenet-think-data}``.

Every command writes a Hugging Face data set (``save_to_disk`` layout, or ``--format parquet``)
with a progress bar, then prints a summary: read N, written M, skipped K by reason.
``--on_error fail`` (default) stops at the first bad record, naming its file, record id and
field; ``--on_error skip`` writes each rejected record and its reason to ``--rejects``
(default ``DIR.rejects.jsonl``), so read = written + rejected. Every flag's value is checked
before anything is read or written (one ``error:`` line, exit 2); Ctrl-C leaves no half data set.

A command is a dataclass of its flags (``BuildArguments`` plus its own; its ``__post_init__``
checks them, ``POSITIONAL`` names the fields that need no flag) and a function that builds from
it, both in ``COMMANDS``: adding a command is adding those two and a row. A curriculum's data stage
(``data_builders/commands/``) is a row too: its recipe keys are its flags (or a YAML recipe first).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, NamedTuple

from lookcloser.checks import (
    check_model_name,
    check_names,
    check_output_folder,
    check_path,
    check_range,
    did_you_mean,
)
from lookcloser.cli import Interrupted, interrupt_stays_an_interrupt, run
from lookcloser.data_builders.commands import (
    imagenet_think_data,
    mixed_tasks,
    search_benchmark_tasks,
    tool_tasks,
)
from lookcloser.data_builders.heldout import HeldoutArguments
from lookcloser.data_builders.heldout import main as heldout_main
from lookcloser.data_builders.output import FORMATS, ON_ERROR, BuildReport
from lookcloser.data_builders.records import DEFAULT_MAX_PIXELS
from lookcloser.data_builders.synthetic import ALL_TASKS, TASKS, SyntheticConfig
from lookcloser.errors import RecipeError

PROG = "python -m data_builders"


def required_path(name: str, value: str | None, kind: str) -> None:
    if not value:
        raise RecipeError(f"give the {name} (first argument, or --{name})")
    check_path(name, value, kind)


@dataclass
class BuildArguments:
    """The flags every command takes."""

    out: str = field(metadata={"help": "output folder (replaced if it exists)"})
    format: str = field(default="hf", metadata={"choices": FORMATS, "help": "hf: save_to_disk layout; parquet: shards"})
    on_error: str = field(default="fail", metadata={"choices": ON_ERROR})
    rejects: str | None = field(default=None, metadata={"help": "rejects JSONL (unset: OUT.rejects.jsonl)"})
    max_pixels: int = field(default=DEFAULT_MAX_PIXELS, metadata={"help": "refuse larger images"})
    no_progress: bool = False

    def __post_init__(self) -> None:
        check_output_folder("out", self.out)
        check_range("max_pixels", self.max_pixels, 1)

    @property
    def rejects_path(self) -> Path:
        out = Path(self.out)
        return Path(self.rejects) if self.rejects else out.parent / f"{out.name}.rejects.jsonl"


@dataclass
class MirArguments(BuildArguments):
    """MIR JSON -> SFT stages (one data set per stage)"""

    POSITIONAL: ClassVar = ("path",)
    path: str | None = field(default=None, metadata={"help": "MIR JSON (all_data_rel.json)"})
    images_root: str | None = field(default=None, metadata={"help": "unset: the JSON's folder"})
    stages: list[int] = field(default_factory=lambda: [1, 2, 3, 4], metadata={
        "help": "stages 0-4; several write OUT/stage_K, one writes OUT"})
    faithful_upstream: bool = field(default=False, metadata={"help": "reproduce upstream's img2img leak"})
    no_check_images: bool = field(default=False, metadata={"help": "skip opening the images (paths still checked)"})

    def __post_init__(self) -> None:
        super().__post_init__()
        required_path("path", self.path, "file")
        check_path("images_root", self.images_root, "folder")
        for stage in self.stages:
            check_range("stages", stage, 0, 4)


@dataclass
class ImagenetThinkArguments(BuildArguments):
    """ImageNet-Think parquet shards -> <think> SFT"""

    POSITIONAL: ClassVar = ("paths",)
    paths: list[str] = field(default_factory=list, metadata={"help": "parquet files or folders"})
    generators: list[str] | None = field(default=None, metadata={"help": "pair numbers to keep (default: every pair)"})
    column_map: str | None = field(default=None, metadata={
        "help": 'JSON: {"1": {"think": "col", "answer": "col"}, ...} (overrides detection)'})
    template: str = "<think>{think}</think>{answer}"
    batch_rows: int = 256
    no_check_images: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.paths:
            raise RecipeError("give the parquet files or folders (first arguments, or --paths)")
        for path in self.paths:
            check_path("paths", path)
        check_range("batch_rows", self.batch_rows, 1)
        if self.column_map is not None:
            try:
                for pair in json.loads(self.column_map).values():
                    pair["think"], pair["answer"]  # each pair names both columns
            except (json.JSONDecodeError, AttributeError, KeyError, TypeError) as err:
                raise RecipeError(f'column_map: not {{"N": {{"think": COLUMN, "answer": COLUMN}}, ...}} ({err})') from err
        try:
            self.template.format(think="", answer="")
        except (KeyError, IndexError, ValueError) as err:
            raise RecipeError(f"template: only {{think}} and {{answer}} can be filled in ({err!r})") from err


@dataclass
class SyntheticArguments(BuildArguments):
    """images -> TIR-Bench-format tasks, GRPO prompts, oracle SFT"""

    POSITIONAL: ClassVar = ("image_dir",)
    image_dir: str | None = field(default=None, metadata={"help": "folder of source images"})
    count: int = field(default=0, metadata={"help": "number of tasks (required)"})
    tasks: list[str] | None = field(default=None, metadata={"help": f"default: {' '.join(TASKS)}; any of ALL_TASKS"})
    seed: int = 0
    jigsaw_sizes: list[int] = field(default_factory=lambda: [2, 3])
    base_size: int = SyntheticConfig.base_size
    canvas_size: int = field(default=SyntheticConfig.canvas_size, metadata={"help": "ocr and free visual search canvases"})
    search_grid: int = field(default=3, metadata={
        "help": "visual_search: the target's cell of an N x N grid is named and cropped with a normalised box; "
                "0: free search anywhere on --canvas_size, pixel box"})
    model_pixels: int = field(default=128 * 128, metadata={
        "help": "visual_search: the model's input pixel budget (sizes the canvas and the shape)"})
    environment: str = field(default="tir_bench", metadata={
        "choices": ("tir_bench", "crop"),
        "help": "agent environment whose tools the oracle uses (tir_bench: all image tools; crop)"})

    def __post_init__(self) -> None:
        super().__post_init__()
        required_path("image_dir", self.image_dir, "folder")
        check_range("count", self.count, 1)
        check_names("tasks", self.tasks, ALL_TASKS)
        from lookcloser.agent.oracle import check_program_tasks  # the environment's tools: the agent layer

        check_program_tasks(self.tasks, self.environment)
        for size in self.jigsaw_sizes:
            check_range("jigsaw_sizes", size, 2)
        check_range("base_size", self.base_size, 16)
        check_range("canvas_size", self.canvas_size, 16)
        check_range("search_grid", self.search_grid, 0)
        check_range("model_pixels", self.model_pixels, 1)
        out, images = Path(self.out).resolve(), Path(self.image_dir).resolve()
        if out.is_relative_to(images) or images.is_relative_to(out):  # the rebuild clears its folder
            raise RecipeError(f"out: {self.out} and the image folder {self.image_dir} must not hold one another")


@dataclass
class DifficultyArguments(BuildArguments):
    """pass rates -> easy/medium/hard, curriculum order, two-stage mix"""

    POSITIONAL: ClassVar = ("path",)
    path: str | None = field(default=None, metadata={"help": "MIR JSON"})
    predictions: str | None = field(default=None, metadata={"help": 'JSONL {"id": ..., "predictions": [...]}'})
    model: str | None = field(default=None, metadata={"help": "sample answers from this model instead (agent loop)"})
    samples: int = field(default=10, metadata={"help": "answers per question when sampling"})
    max_new_tokens: int = field(default=512, metadata={"help": "per sampled answer"})
    images_root: str | None = None
    recipe: str | None = field(default=None, metadata={
        "help": "YAML with easy_threshold, hard_threshold, hard_share, seed (flags below override)"})
    easy_threshold: float | None = None
    hard_threshold: float | None = None
    hard_share: float | None = None
    seed: int | None = None
    # The DifficultyConfig these make (typed `object`: the parser resolves every annotation, and
    # difficulty.py is imported only when the command runs).
    thresholds: object = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        from lookcloser.data_builders.difficulty import DifficultyConfig
        from lookcloser.recipes import Recipe

        super().__post_init__()
        required_path("path", self.path, "file")
        check_path("predictions", self.predictions, "file")
        check_path("images_root", self.images_root, "folder")
        if self.predictions is None:
            check_model_name(self.model, what="--model (or --predictions)")
        check_range("samples", self.samples, 1)
        check_range("max_new_tokens", self.max_new_tokens, 1)
        keys = ("easy_threshold", "hard_threshold", "hard_share", "seed")
        settings = {}
        if self.recipe is not None:
            values = Recipe.read(self.recipe, "difficulty recipe").values
            settings = {k: values[k] for k in keys if k in values}
        settings.update({k: getattr(self, k) for k in keys if getattr(self, k) is not None})
        try:
            self.thresholds = DifficultyConfig(**settings)
        except ValueError as err:
            raise RecipeError(str(err)) from err


def build_mir_sets(args: MirArguments, report: BuildReport) -> str:
    from lookcloser.data_builders.mir import build_mir

    outs = build_mir(Path(args.path), Path(args.out), report, images_root=args.images_root, stages=args.stages,
                     faithful_upstream=args.faithful_upstream, fmt=args.format, check_images=not args.no_check_images,
                     max_pixels=args.max_pixels, progress=not args.no_progress)
    return ", ".join(f"stage {k}: {v}" for k, v in outs.items())


def build_imagenet_think_set(args: ImagenetThinkArguments, report: BuildReport) -> str:
    from lookcloser.data_builders.imagenet_think import build_imagenet_think

    build_imagenet_think([Path(p) for p in args.paths], Path(args.out), report, fmt=args.format,
                         generators=args.generators, column_map=json.loads(args.column_map) if args.column_map else None,
                         template=args.template, check_images=not args.no_check_images, max_pixels=args.max_pixels,
                         batch_rows=args.batch_rows, progress=not args.no_progress)
    return args.out


def build_synthetic_sets(args: SyntheticArguments, report: BuildReport) -> str:
    # runs the agent's tools: this command is an entry point (above every layer)
    from lookcloser.agent.oracle import build_synthetic

    cfg = SyntheticConfig(seed=args.seed, tasks=tuple(args.tasks or TASKS), jigsaw_sizes=tuple(args.jigsaw_sizes),
                          base_size=args.base_size, canvas_size=args.canvas_size, search_grid=args.search_grid,
                          model_pixels=args.model_pixels)
    outs = build_synthetic(Path(args.image_dir), Path(args.out), args.count, cfg, fmt=args.format, report=report,
                           max_pixels=args.max_pixels, progress=not args.no_progress, environment=args.environment)
    return ", ".join(f"{k}: {v}" for k, v in outs.items())


def build_difficulty_set(args: DifficultyArguments, report: BuildReport) -> str:
    from lookcloser.data_builders.difficulty import build_difficulty

    sample = None
    if args.model is not None and args.predictions is None:
        import functools

        from lookcloser.agent.sampling import sample_predictions  # the model runs in the agent loop

        sample = functools.partial(sample_predictions, model_name_or_path=args.model, k=args.samples,
                                   max_new_tokens=args.max_new_tokens, progress=not args.no_progress)
    outs = build_difficulty(args.path, args.out, report, predictions=args.predictions, sample=sample,
                            images_root=args.images_root, cfg=args.thresholds, fmt=args.format,
                            progress=not args.no_progress)
    return f"{outs['dataset']} (levels: {outs['levels']})"


class Command(NamedTuple):
    arguments: type  # a BuildArguments dataclass (or, with ``main``, the command's own)
    build: Callable[..., str] | None  # (arguments, report) -> where it wrote, in words
    unit: str = "records"  # what the summary counts
    main: Callable[[list[str]], int] | None = None  # a command with its own main (no records read: no report)


def stage_main(stage, name: str) -> Callable[[list[str]], int]:
    """A curriculum data stage as a command: its own recipe parser (a YAML recipe and/or its keys as flags)."""
    prog = f"{PROG} {name}"
    return lambda argv: run(stage.main, lambda: stage.parse_args(argv, prog=prog), prog=prog, argv=argv)


COMMANDS = {
    "mir": Command(MirArguments, build_mir_sets),
    "imagenet-think": Command(ImagenetThinkArguments, build_imagenet_think_set, "traces"),
    "synthetic": Command(SyntheticArguments, build_synthetic_sets, "source-image draws"),
    "difficulty": Command(DifficultyArguments, build_difficulty_set),
    "heldout": Command(HeldoutArguments, None, main=heldout_main),
    "tool-tasks": Command(tool_tasks.ToolTaskArguments, None, main=stage_main(tool_tasks, "tool-tasks")),
    "search-tasks": Command(search_benchmark_tasks.SearchTaskArguments, None,
                            main=stage_main(search_benchmark_tasks, "search-tasks")),
    "mixed-tasks": Command(mixed_tasks.MixedTaskArguments, None, main=stage_main(mixed_tasks, "mixed-tasks")),
    "imagenet-think-data": Command(imagenet_think_data.ImageNetThinkDataArguments, None,
                                   main=stage_main(imagenet_think_data, "imagenet-think-data")),
}


def overview() -> str:
    lines = [f"usage: {PROG} COMMAND [ARGUMENTS] --out DIR", "", __doc__.split("\n\n")[1], "", "commands:"]
    lines += [f"  {name:20s}{command.arguments.__doc__}" for name, command in COMMANDS.items()]
    return "\n".join([*lines, "", f"`{PROG} COMMAND --help` lists a command's flags."]) + "\n"


def parse_command(argv: list[str]) -> tuple[str, BuildArguments]:
    """The command's name and its checked arguments."""
    from lookcloser.recipes import parse_flags

    if argv and argv[0] in ("-h", "--help"):
        print(overview(), end="")
        raise SystemExit(0)
    if not argv or argv[0] not in COMMANDS:
        given = f"unknown command {argv[0]!r}{did_you_mean(argv[0], COMMANDS)}" if argv else "give a command"
        raise RecipeError(f"{given} (commands: {', '.join(COMMANDS)}; `{PROG} --help`)")
    command = COMMANDS[argv[0]]
    return argv[0], parse_flags(command.arguments, argv[1:], prog=f"{PROG} {argv[0]}",
                                description=command.arguments.__doc__)


def build(name: str, args: BuildArguments) -> BuildReport:
    command = COMMANDS[name]
    report = BuildReport(on_error=args.on_error, rejects_path=args.rejects_path if args.on_error == "skip" else None)
    try:
        with interrupt_stays_an_interrupt():
            where = command.build(args, report)
    except KeyboardInterrupt:
        report.close()
        if report.rejects_path is not None and report.n_rejected:  # cut short like the data set: not kept
            report.rejects_path.unlink(missing_ok=True)
        raise Interrupted(f"no data set was written to {args.out}") from None
    finally:
        report.close()
    print(report.summary(command.unit))
    print(f"wrote {where}")
    return report


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    own = COMMANDS[argv[0]].main if argv and argv[0] in COMMANDS else None
    if own is not None:  # heldout and the curricula's data stages parse their own arguments
        return own(argv[1:])
    return run(build, lambda: parse_command(argv), prog=PROG, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
