"""Held-out data for the benchmarks, in each one's official layout, from the training generators.

    python -m data_builders heldout --out outputs/heldout/8008 --seed 8008
    python -m eval --model CKPT --data_root outputs/heldout/8008

Writes ``OUT/mir`` (MIR's ``all_data_rel.json`` + images, ``sample_mir``'s families),
``OUT/tir_bench`` (``TIR-Bench.json`` + ``data/``, the synthetic TIR-style tasks the tool curriculum
trains on), ``OUT/disbench`` (``queries.jsonl``, ``metadata/``, ``images/``, ``photo_ids/``:
``sample_disbench``'s users and queries) and ``OUT/imagemining`` (``data.jsonl`` + ``images/`` +
``search_corpus.jsonl``: ``sample_imagemining``'s flags in one world), each a folder
``python -m eval --data_root OUT`` finds by name.

Held out means (tests/test_heldout.py checks them):

- the seed lies in ``HELDOUT_SEEDS``, a range no recipe trains on (recipes use seeds below 1000);
- the source pictures are drawn fresh from that seed (the TIR tasks are built on the held-out MIR
  pictures, never on the bundled training pictures);
- no held-out MIR or TIR picture equals a training picture, byte for byte in its pixels (``pixel_digests``);
- DISBench's users and ImageMining's world (which city flies which flag) are drawn from that seed: what
  the answers rest on is new, whatever a plain flag or photo looks like.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from lookcloser.data_builders.sample_mir import pixel_digests
from lookcloser.data_builders.scenes import WRITERS
from lookcloser.data_builders.scenes.tir_bench import DEFAULT_MODEL_PIXELS

__all__ = ["DEFAULT_GENERATED", "DEFAULT_MODEL_PIXELS", "GENERATED", "HELDOUT_SEEDS", "HeldoutArguments", "check_benchmarks",
           "check_seed", "check_training_seed", "main", "pixel_digests", "write_heldout"]
HELDOUT_SEEDS = range(1000, 10000)
# Written by default: the four benchmarks the curriculum trains for; the other benchmarks' generators
# (data_builders/scenes/) on request.
DEFAULT_GENERATED = tuple(name for name, writer in WRITERS.items() if writer.default)
GENERATED = tuple(WRITERS)


def check_seed(seed: int, name: str = "--seed") -> None:
    from lookcloser.errors import RecipeError

    if seed not in HELDOUT_SEEDS:
        raise RecipeError(f"{name} {seed} is not a held-out seed: held-out data uses seeds "
                          f"{HELDOUT_SEEDS.start}-{HELDOUT_SEEDS.stop - 1}, which no recipe trains on")


def check_training_seed(seed: int, name: str = "seed") -> None:
    """A training seed lies outside ``HELDOUT_SEEDS``: what a recipe trains on is never held out."""
    from lookcloser.errors import RecipeError

    if seed in HELDOUT_SEEDS:
        raise RecipeError(f"{name} {seed} is reserved for held-out data ({HELDOUT_SEEDS.start}-"
                          f"{HELDOUT_SEEDS.stop - 1}): train on another")


def check_benchmarks(benchmarks, name: str = "--benchmarks") -> None:
    """At least one benchmark, each one this writer generates."""
    from lookcloser.checks import check_names
    from lookcloser.errors import RecipeError

    if not benchmarks:
        raise RecipeError(f"{name}: give at least one of {', '.join(GENERATED)}")
    check_names(name.lstrip("-"), benchmarks, list(GENERATED))


def write_heldout(out_dir: str | Path, seed: int, benchmarks: tuple[str, ...] = DEFAULT_GENERATED, *,
                  mir_per_family: int = 16, tir_count: int = 60, tir_tasks: tuple[str, ...] | None = None,
                  model_pixels: int = DEFAULT_MODEL_PIXELS, disbench_count: int = 60,
                  imagemining_count: int = 60, tir_pictures: str = "folder") -> dict[str, Path]:
    """Write each requested benchmark under ``out_dir/<name>``; written to a temporary folder first, so
    an interrupted run leaves nothing that looks finished."""
    check_seed(seed)
    check_benchmarks(benchmarks)
    settings = {"mir_per_family": mir_per_family, "tir_count": tir_count, "tir_tasks": tir_tasks,
                "model_pixels": model_pixels, "disbench_count": disbench_count, "imagemining_count": imagemining_count,
                "tir_pictures": tir_pictures}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = out / f".partial-{seed}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        written = _write_each(work, seed, benchmarks, settings)
        for name, folder in written.items():
            target = out / name
            shutil.rmtree(target, ignore_errors=True)
            folder.rename(target)
            written[name] = target
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return written


def _write_each(work: Path, seed: int, benchmarks, settings: dict) -> dict[str, Path]:
    """Each requested benchmark's folder under ``work`` (the default ones first, in ``WRITERS``' order, then the
    others as asked); a writer's source pictures are written before it, and kept only when asked for."""
    made: dict[str, Path] = {}

    def make(name: str) -> Path:
        if name not in made:
            writer = WRITERS[name]
            pictures = make(writer.pictures_from) if writer.pictures_from else None
            made[name] = writer.write(work / name, seed, pictures=pictures, **settings)
        return made[name]

    order = [n for n, w in WRITERS.items() if w.default and n in benchmarks]
    order += [n for n in benchmarks if not WRITERS[n].default and n not in order]
    return {name: make(name) for name in order}


@dataclass
class HeldoutArguments:
    """held-out TIR-Bench, MIR, DISBench and ImageMining folders, from a reserved seed"""

    out: str = field(metadata={"help": "folder for OUT/tir_bench, OUT/mir, OUT/disbench, OUT/imagemining"})
    seed: int = field(metadata={"help": f"a held-out seed, {HELDOUT_SEEDS.start}-{HELDOUT_SEEDS.stop - 1}"})
    benchmarks: list[str] = field(default_factory=lambda: list(DEFAULT_GENERATED), metadata={
        "help": f"any of {', '.join(GENERATED)}"})
    mir_per_family: int = field(default=16, metadata={"help": "MIR records per question family (4 families)"})
    tir_count: int = field(default=60, metadata={"help": "TIR tasks, cycling through --tir_tasks"})
    tir_tasks: list[str] | None = field(default=None, metadata={
        "help": "default: the five synthetic kinds (data_builders.synthetic.TASKS); any of ALL_TASKS"})
    tir_pictures: str = field(default="folder", metadata={
        "help": "TIR pictures: folder (the held-out MIR pictures) or procedural (drawn from the seed, kinds varied)"})
    model_pixels: int = field(default=DEFAULT_MODEL_PIXELS, metadata={
        "help": "the evaluated model's input pixel budget (sizes visual_search)"})
    disbench_count: int = field(default=60, metadata={"help": "DISBench queries (over 4 users)"})
    imagemining_count: int = field(default=60, metadata={"help": "ImageMining questions (one world)"})

    def __post_init__(self) -> None:
        from lookcloser.checks import check_names, check_output_folder, check_range
        from lookcloser.data_builders.synthetic import ALL_TASKS, PICTURE_SOURCES

        check_output_folder("out", self.out)
        check_seed(self.seed)
        check_benchmarks(self.benchmarks)
        check_names("tir_tasks", self.tir_tasks or [], list(ALL_TASKS))
        check_names("tir_pictures", [self.tir_pictures], list(PICTURE_SOURCES))
        for name in ("mir_per_family", "tir_count", "model_pixels", "disbench_count", "imagemining_count"):
            check_range(name, getattr(self, name), 1)


def main(argv: list[str] | None = None) -> int:
    from lookcloser.cli import run
    from lookcloser.recipes import parse_flags

    def write(args: HeldoutArguments) -> None:
        written = write_heldout(args.out, args.seed, tuple(args.benchmarks), mir_per_family=args.mir_per_family,
                                tir_count=args.tir_count, model_pixels=args.model_pixels,
                                disbench_count=args.disbench_count, imagemining_count=args.imagemining_count,
                                tir_tasks=tuple(args.tir_tasks) if args.tir_tasks else None,
                                tir_pictures=args.tir_pictures)
        for name, folder in written.items():
            print(f"{name}: {folder}")
        print(f"python -m eval --model CKPT --data_root {args.out} --benchmarks {','.join(written)}")

    prog = "python -m data_builders heldout"
    return run(write, lambda: (parse_flags(HeldoutArguments, argv, prog=prog, description=HeldoutArguments.__doc__),),
               prog=prog, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
