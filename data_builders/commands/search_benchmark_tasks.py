"""Build the DISBench or ImageMining tasks of a search curriculum: a training set and a held-out set.

    python -m data_builders search-tasks --benchmark imagemining --output_dir outputs/web_search/data
    (a stage of recipes/web_search_curriculum.yaml and recipes/photo_search_curriculum.yaml)

Writes ``output_dir/train`` (seed ``seed``): the benchmark's official layout from its generator
(``data_builders.sample_disbench`` / ``sample_imagemining``), the GRPO prompts (``grpo/``: the user turn
as eval's loader builds it, the columns the environment's ``reset`` reads, ``data_source`` and
``reward_info``), and the cold-start trajectories (``sft/``: the oracle's plan run through the
environment ``environment``; a share ``shortcut_ratio`` takes the way without the look or the tools
instead, so that GRPO has both to weigh, as the tool curriculum's cold start does). ``output_dir/heldout``
(seed ``heldout_seed``, reserved) comes from the one held-out writer (``data_builders.heldout``) and is
what ``python -m eval --data_root output_dir/heldout`` reads. A folder built with the same settings is kept.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lookcloser.data_builders.heldout import check_seed, check_training_seed

logger = logging.getLogger(__name__)

BENCHMARKS = ("disbench", "imagemining")


@dataclass
class SearchTaskArguments:
    """DISBench or ImageMining tasks: GRPO prompts, oracle trajectories, held-out set"""

    benchmark: str = field(default="imagemining", metadata={"help": "disbench or imagemining."})
    output_dir: str = field(default="outputs/web_search/data", metadata={"help": "Where train/ and heldout/ go."})
    count: int = field(default=400, metadata={"help": "Training questions."})
    seed: int = field(default=1, metadata={"help": "Seed of the training questions (below 1000)."})
    worlds: int = field(default=50, metadata={
        "help": "ImageMining: worlds the training questions spread over (which city flies which flag differs per "
                "world, so only the search answers; data_builders.sample_imagemining)."})
    users: int = field(default=16, metadata={"help": "DISBench: users (photo collections) of the training set."})
    heldout_count: int = field(default=60, metadata={"help": "Held-out questions (0: none)."})
    heldout_seed: int = field(default=1001, metadata={
        "help": "Seed of the held-out questions, in data_builders.heldout.HELDOUT_SEEDS; never trained on."})
    environment: str = field(default="web_search", metadata={
        "help": "Agent environment whose tools the oracle calls and the SFT data lists (agent.environments)."})
    shortcut_ratio: float = field(default=0.0, metadata={
        "help": "Share of the cold-start trajectories that take the shortcut (DISBench: every photo the filter "
                "finds; ImageMining: answer at once), 0-1."})

    def __post_init__(self) -> None:
        from lookcloser.agent.environments import ENVIRONMENT_NAMES
        from lookcloser.checks import check_names, check_range

        check_names("benchmark", [self.benchmark], list(BENCHMARKS))
        check_names("environment", [self.environment], list(ENVIRONMENT_NAMES))
        for name in ("count", "worlds", "users"):
            check_range(name, getattr(self, name), 1)
        check_range("heldout_count", self.heldout_count, 0)
        check_range("shortcut_ratio", self.shortcut_ratio, 0, 1)
        if self.heldout_count > 0:
            check_seed(self.heldout_seed, "heldout_seed")
        check_training_seed(self.seed)


def generate(args: SearchTaskArguments, out: Path) -> list:
    """The training questions in the benchmark's official layout under ``out``."""
    if args.benchmark == "disbench":
        from lookcloser.data_builders.sample_disbench import write_disbench

        return write_disbench(out, args.seed, args.count, users=args.users)
    from lookcloser.data_builders.sample_imagemining import write_imagemining

    return write_imagemining(out, args.seed, args.count, worlds=args.worlds)


def grpo_row(task) -> dict:
    """One GRPO prompt: the user turn, its images, the environment's reset columns (``task.example``) and
    what the reward reads."""
    from lookcloser.data_builders.tool_sft import user_message

    return {"prompt": [user_message(len(task.images), task.question)], "images": list(task.images),
            "data_source": task.benchmark, "reward_info": json.dumps(task.gold, ensure_ascii=False),
            "task": task.task, "id": task.id, **{column: str(value) for column, value in task.example.items()}}


def write_training(args: SearchTaskArguments, out: Path) -> None:
    """``out``: the official layout, ``grpo/`` and ``sft/`` (see the module docstring)."""
    from lookcloser.agent.oracle import search_trajectory
    from lookcloser.data_builders.output import DatasetWriter
    from lookcloser.data_builders.tool_sft import grpo_features, sft_features

    shutil.rmtree(out, ignore_errors=True)  # nothing of an earlier build (another seed's users or images)
    tasks = generate(args, out)
    shortcut = random.Random(f"shortcut-{args.seed}")
    with DatasetWriter(out / "grpo", grpo_features(("id", *tasks[0].example))) as grpo, \
            DatasetWriter(out / "sft", sft_features(), batch_rows=200) as sft:
        for task in tasks:
            grpo.add(grpo_row(task))
            sft.add(search_trajectory(task, args.environment, out, shortcut=shortcut.random() < args.shortcut_ratio))


def build(args: SearchTaskArguments) -> dict[str, Path]:
    from lookcloser.data_builders.heldout import write_heldout
    from lookcloser.data_builders.output import build_or_keep

    out = Path(args.output_dir)
    built = {"train": build_or_keep(out / "train", asdict(args) | {"heldout_count": None, "heldout_seed": None},
                                    lambda target: write_training(args, target))}
    if args.heldout_count > 0:
        wanted = {"benchmark": args.benchmark, "heldout_seed": args.heldout_seed, "count": args.heldout_count,
                  "writer": "data_builders.heldout"}
        built["heldout"] = build_or_keep(out / "heldout", wanted, lambda target: write_heldout(
            target, args.heldout_seed, (args.benchmark,), **{f"{args.benchmark}_count": args.heldout_count}))
    return built


def main(args: SearchTaskArguments) -> str:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    build(args)
    return args.output_dir


def parse_args(argv=None, planned=(), prog=None):
    from lookcloser.checks import check_output_folder
    from lookcloser.recipes import parse_recipe

    (args,) = parse_recipe((SearchTaskArguments,), argv, prog=prog, description=__doc__)
    check_output_folder("output_dir", args.output_dir)
    return (args,)


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    sys.exit(run(main, parse_args))
