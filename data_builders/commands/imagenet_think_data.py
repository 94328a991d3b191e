"""The ImageNet-Think stage's data: parquet shards in ImageNet-Think-250K's schema -> SFT records.

    (a stage of recipes/mir_curriculum.yaml: `script: data_builders/commands/imagenet_think_data.py`;
    ``python -m data_builders imagenet-think-data``)

Without ``parquet`` it first writes the bundled generator's sample (``data_builders.sample_imagenet_think``,
deterministic from ``seed``) to ``output_dir/parquet``; with it (the real data set's shards) it
converts those. Either way ``output_dir/sft`` is what the ``imagenet_think`` stage trains on
(``python -m data_builders imagenet-think``'s output). A folder built with the same settings is kept.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

logger = logging.getLogger(__name__)


@dataclass
class ImageNetThinkDataArguments:
    """ImageNet-Think shards (or the generated sample) -> SFT records (a curriculum data stage)"""

    output_dir: str = field(default="outputs/data/imagenet_think", metadata={"help": "Where parquet/ and sft/ go."})
    parquet: str | None = field(default=None, metadata={
        "help": "ImageNet-Think-250K parquet shards (a folder or file); default: generate the sample."})
    rows: int = field(default=400, metadata={"help": "Sample rows (pictures) to generate, two traces each."})
    seed: int = field(default=0, metadata={"help": "Seed of the generated sample."})

    def __post_init__(self) -> None:
        from lookcloser.checks import check_output_folder, check_range

        check_output_folder("output_dir", self.output_dir)
        check_range("rows", self.rows, 1)


def main(args: ImageNetThinkDataArguments) -> str:
    from lookcloser.data_builders.imagenet_think import build_imagenet_think
    from lookcloser.data_builders.output import BuildReport, build_or_keep
    from lookcloser.data_builders.sample_imagenet_think import generate_sample

    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)

    def make(out: Path) -> None:
        source = Path(args.parquet) if args.parquet else generate_sample(out / "parquet", args.rows, args.seed)
        report = BuildReport(on_error="fail")
        try:
            build_imagenet_think([source], out / "sft", report, progress=False)
        finally:
            report.close()
        logger.info("%s", report.summary("traces"))

    return str(build_or_keep(Path(args.output_dir), asdict(args), make))


def parse_args(argv=None, planned=(), prog=None):
    from lookcloser.checks import check_path
    from lookcloser.recipes import parse_recipe

    (args,) = parse_recipe((ImageNetThinkDataArguments,), argv, prog=prog, description=__doc__)
    if args.parquet is not None:
        check_path("parquet", args.parquet, "path", planned)
    return (args,)


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    sys.exit(run(main, parse_args))
