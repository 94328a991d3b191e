"""Mix saved GRPO (or SFT) data sets of several kinds of task into one, each row naming its own environment.

    python -m data_builders mixed-tasks --output_dir outputs/mixed/data \
        --sources outputs/tool_curriculum/data/train/grpo=crop outputs/web_search/data/train/grpo=web_search \
        --per_source 200
    then: python train/grpo.py --dataset_path outputs/mixed/data --environment per_row

Each source is ``PATH=ENVIRONMENT``: a saved GRPO data set folder (``grpo/`` of the tool-tasks or
search-tasks command), or an MIR ``.json`` (its questions at stage 4, images beside it:
``data_builders.mir.mir_grpo_dataset``), and the environment its rows are played in
(``agent.environments.ENVIRONMENTS``, or ``none`` for answers without tools). Rows are taken as they are
(``prompt`` and ``images`` untouched, the images still read from the source's folders); a column that only
some sources have is filled with ``""`` (a list column with ``[]``) in the others, and the ``environment``
column names each row's environment.
Rows without a ``data_source`` (SFT data sets) get their environment's benchmark
(``agent.environments.BENCHMARK_OF_ENVIRONMENT``): train/sft.py then records each benchmark's prompting, as
train/grpo.py does for a per-row run. Mixing SFT data sets this way is the cold start of a mixed GRPO run.
``per_source``: the first N rows of each source after a seeded shuffle. The union is shuffled with ``seed``.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lookcloser.errors import RecipeError

logger = logging.getLogger(__name__)


@dataclass
class MixedTaskArguments:
    """several saved GRPO/SFT data sets -> one, each row naming its environment"""

    output_dir: str = field(default="outputs/mixed/data", metadata={"help": "Where the mixed data set is saved."})
    sources: list[str] = field(default_factory=list, metadata={
        "help": "PATH=ENVIRONMENT pairs: a saved GRPO or SFT data set folder (or an MIR .json) and its rows' "
                "environment (agent.environments.ENVIRONMENTS, or none)."})
    per_source: int | None = field(default=None, metadata={
        "help": "Rows taken from each source: the first N after a seeded shuffle (None: all)."})
    seed: int = field(default=0, metadata={"help": "Seed of the per-source draw and of the final shuffle."})

    def __post_init__(self) -> None:
        from lookcloser.checks import check_range

        check_range("per_source", self.per_source, 1)
        if not self.sources:
            raise RecipeError("sources: give at least one PATH=ENVIRONMENT pair")
        for pair in self.sources:
            split_source(pair)


def split_source(pair: str) -> tuple[str, str]:
    """``PATH=ENVIRONMENT`` as ``(PATH, ENVIRONMENT)``, the environment checked.

    >>> split_source("outputs/x/data/train/grpo=crop")
    ('outputs/x/data/train/grpo', 'crop')
    """
    from lookcloser.agent.environments import ENVIRONMENT_NAMES
    from lookcloser.checks import check_names

    path, sep, environment = pair.rpartition("=")
    if not sep or not path:
        raise RecipeError(f"sources: {pair!r} is not PATH=ENVIRONMENT")
    check_names(f"sources: {pair}: environment", [environment], [*ENVIRONMENT_NAMES, "none"])
    return path, environment


def _empty(feature):
    """The value a row gets in a column its source lacks: "" for text, [] for a list, else None."""
    from datasets import LargeList, List, Sequence, Value

    if isinstance(feature, Value) and feature.dtype in ("string", "large_string"):
        return ""
    return [] if isinstance(feature, (List, LargeList, Sequence)) else None


def mix(args: MixedTaskArguments):
    """The mixed ``datasets.Dataset`` (see the module docstring)."""
    from datasets import concatenate_datasets

    from lookcloser.agent.environments import BENCHMARK_OF_ENVIRONMENT
    from lookcloser.data_builders.mir import mir_grpo_dataset
    from lookcloser.data_builders.output import load_records

    parts = []
    for pair in args.sources:
        path, environment = split_source(pair)
        rows = mir_grpo_dataset(path) if path.endswith(".json") else load_records(path)
        if args.per_source is not None:
            rows = rows.shuffle(seed=args.seed).select(range(min(args.per_source, len(rows))))
        if "environment" in rows.column_names:  # this mix names the environment
            rows = rows.remove_columns("environment")
        rows = rows.add_column("environment", [environment] * len(rows))
        if "data_source" not in rows.column_names and environment in BENCHMARK_OF_ENVIRONMENT:
            rows = rows.add_column("data_source", [BENCHMARK_OF_ENVIRONMENT[environment]] * len(rows))
        parts.append((path, rows))
    features = {}
    for path, rows in parts:
        for name, feature in rows.features.items():
            if features.setdefault(name, (path, feature))[1] != feature:
                raise RecipeError(f"sources: column `{name}` is {feature} in {path} but {features[name][1]} in "
                                  f"{features[name][0]}: the rows cannot be mixed")
    filled = []
    for _, rows in parts:
        for name, (_, feature) in features.items():
            if name not in rows.column_names:
                rows = rows.add_column(name, [_empty(feature)] * len(rows), feature=feature)
        filled.append(rows.select_columns(list(features)))
    return concatenate_datasets(filled).shuffle(seed=args.seed).flatten_indices()


def main(args: MixedTaskArguments) -> str:
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
    mixed = mix(args)
    out = Path(args.output_dir)
    partial = out.with_name(f".{out.name}.partial")  # saved aside, then moved into place: never a cut data set
    shutil.rmtree(partial, ignore_errors=True)
    mixed.save_to_disk(str(partial))
    shutil.rmtree(out, ignore_errors=True)
    partial.rename(out)
    logger.info("mixed %d rows into %s: %s", len(mixed), out, dict(sorted(Counter(mixed["environment"]).items())))
    return str(out)


def parse_args(argv=None, planned=(), prog=None):
    from lookcloser.checks import check_output_folder, check_path
    from lookcloser.recipes import parse_recipe

    (args,) = parse_recipe((MixedTaskArguments,), argv, prog=prog, description=__doc__)
    check_output_folder("output_dir", args.output_dir)
    for pair in args.sources:
        path = split_source(pair)[0]
        check_path(f"sources: {pair}", path, "file" if path.endswith(".json") else "folder", planned)
    return (args,)


if __name__ == "__main__":
    import sys

    from lookcloser.cli import run

    sys.exit(run(main, parse_args))
