"""Write any family's tiny random checkpoint (the reserved ``lookcloser/<size>-<family>`` models) to a folder.

    python -m agent.tiny_models OUT_DIR --family gemma3 [--size tiny] [--seed 0]

Offline and deterministic from the seed, as the reserved names build them (``agent/families``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import ClassVar

from lookcloser.agent.families import FAMILIES
from lookcloser.checks import check_names, check_output_folder
from lookcloser.errors import RecipeError


@dataclass
class TinyModelArguments:
    """Which family's tiny checkpoint to write, and where."""

    POSITIONAL: ClassVar = ("out_dir",)
    out_dir: str = field(default="", metadata={"help": "The folder to write (first argument)."})
    family: str = field(default="", metadata={"help": f"One of {', '.join(sorted(FAMILIES))}."})
    size: str = field(default="tiny", metadata={"help": "A size the family has (qwen3_vl: tiny, small)."})
    seed: int = field(default=0, metadata={"help": "The weights' seed."})

    def __post_init__(self) -> None:
        if not self.out_dir:
            raise RecipeError("give the output folder (first argument, or --out_dir)")
        check_output_folder("out_dir", self.out_dir)
        if not self.family:
            raise RecipeError(f"give --family (one of {', '.join(sorted(FAMILIES))})")
        check_names("family", [self.family], sorted(FAMILIES))
        check_names("size", [self.size], FAMILIES[self.family].sizes)


def write(args: TinyModelArguments) -> None:
    print(FAMILIES[args.family].build_tiny(args.out_dir, seed=args.seed, size=args.size))


def main(argv: list[str] | None = None) -> int:
    from lookcloser.cli import run
    from lookcloser.recipes import parse_flags

    prog = "python -m agent.tiny_models"
    return run(write, lambda: (parse_flags(TinyModelArguments, argv, prog=prog, description=__doc__.splitlines()[0]),),
               prog=prog, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
