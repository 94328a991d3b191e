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

import json
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

HELDOUT_SEEDS = range(1000, 10000)
from lookcloser.data_builders.scenes import WRITERS as SCENE_WRITERS

# Written by default: the four benchmarks the curriculum trains for; the other benchmarks' generators
# (data_builders/scenes/) on request.
DEFAULT_GENERATED = ("tir_bench", "mir", "disbench", "imagemining")
GENERATED = (*DEFAULT_GENERATED, *SCENE_WRITERS)
# The embedded default's pixel budget (128 x 128): visual_search sizes its canvas so that the target is
# unreadable without the crop at the resolution the model sees. A larger model: pass its processor's.
DEFAULT_MODEL_PIXELS = 128 * 128


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


# The bundled training pictures (data/mir_sample, data/mir_train) where the checkout has them.
TRAINING_PICTURES = Path(__file__).resolve().parents[1] / "data"


def write_mir(out: Path, seed: int, per_family: int = 16) -> Path:
    """MIR records from ``sample_mir``'s families, redrawn wherever a picture equals a training one."""
    from lookcloser.data_builders.sample_mir import generate_sample

    generate_sample(out, per_family=per_family, seed=seed, avoid=set(pixel_digests(TRAINING_PICTURES)))
    return out


def write_tir_bench(out: Path, seed: int, count: int, tasks: tuple[str, ...], source: Path,
                    model_pixels: int = DEFAULT_MODEL_PIXELS) -> Path:
    """TIR-Bench.json + data/ from ``source`` pictures, with the tool curriculum's generator settings."""
    from lookcloser.data_builders.synthetic import SyntheticConfig, generate_items

    cfg = SyntheticConfig(seed=seed, tasks=tuple(tasks), model_pixels=model_pixels)
    records = [item.record for item in generate_items(source, out, count, cfg)]
    (out / "TIR-Bench.json").write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return out


def write_heldout(out_dir: str | Path, seed: int, benchmarks: tuple[str, ...] = DEFAULT_GENERATED, *,
                  mir_per_family: int = 16, tir_count: int = 60, tir_tasks: tuple[str, ...] | None = None,
                  model_pixels: int = DEFAULT_MODEL_PIXELS, disbench_count: int = 60,
                  imagemining_count: int = 60) -> dict[str, Path]:
    """Write each requested benchmark under ``out_dir/<name>``; written to a temporary folder first, so
    an interrupted run leaves nothing that looks finished."""
    from lookcloser.data_builders.synthetic import TASKS

    check_seed(seed)
    check_benchmarks(benchmarks)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    work = out / f".partial-{seed}"
    shutil.rmtree(work, ignore_errors=True)
    written = {}
    try:
        if "mir" in benchmarks or "tir_bench" in benchmarks:
            # The MIR pictures are the TIR tasks' source pictures too: fresh from this seed, never training's.
            pictures = write_mir(work / "mir", seed, mir_per_family)
            if "tir_bench" in benchmarks:
                written["tir_bench"] = write_tir_bench(work / "tir_bench", seed, tir_count,
                                                       tuple(tir_tasks or TASKS), pictures, model_pixels)
            if "mir" in benchmarks:
                written["mir"] = pictures
        if "disbench" in benchmarks:
            from lookcloser.data_builders.sample_disbench import write_disbench

            write_disbench(work / "disbench", seed, disbench_count)
            written["disbench"] = work / "disbench"
        if "imagemining" in benchmarks:
            from lookcloser.data_builders.sample_imagemining import write_imagemining

            write_imagemining(work / "imagemining", seed, imagemining_count, worlds=1)
            written["imagemining"] = work / "imagemining"
        for name in benchmarks:
            if name in SCENE_WRITERS:
                written[name] = SCENE_WRITERS[name](work / name, seed)
        for name, folder in written.items():
            target = out / name
            shutil.rmtree(target, ignore_errors=True)
            folder.rename(target)
            written[name] = target
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return written


def pixel_digests(folder: str | Path) -> dict[str, Path]:
    """Pixel digest (``sample_mir.pixel_digest``) -> path of every picture under ``folder`` ({} if none)."""
    from PIL import Image

    from lookcloser.data_builders.sample_mir import pixel_digest

    digests = {}
    for path in sorted(Path(folder).rglob("*")) if Path(folder).is_dir() else []:
        if path.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp"):
            with Image.open(path) as img:
                digests[pixel_digest(img)] = path
    return digests


@dataclass
class HeldoutArguments:
    """held-out TIR-Bench, MIR, DISBench and ImageMining folders, from a reserved seed"""

    out: str = field(metadata={"help": "folder for OUT/tir_bench, OUT/mir, OUT/disbench, OUT/imagemining"})
    seed: int = field(metadata={"help": f"a held-out seed, {HELDOUT_SEEDS.start}-{HELDOUT_SEEDS.stop - 1}"})
    benchmarks: list[str] = field(default_factory=lambda: list(DEFAULT_GENERATED), metadata={
        "help": f"any of {', '.join(GENERATED)}"})
    mir_per_family: int = field(default=16, metadata={"help": "MIR records per question family (4 families)"})
    tir_count: int = field(default=60, metadata={"help": "TIR tasks, cycling through --tir_tasks"})
    tir_tasks: list[str] | None = field(default=None, metadata={"help": "default: every synthetic task kind"})
    model_pixels: int = field(default=DEFAULT_MODEL_PIXELS, metadata={
        "help": "the evaluated model's input pixel budget (sizes visual_search)"})
    disbench_count: int = field(default=60, metadata={"help": "DISBench queries (over 4 users)"})
    imagemining_count: int = field(default=60, metadata={"help": "ImageMining questions (one world)"})

    def __post_init__(self) -> None:
        from lookcloser.checks import check_names, check_output_folder, check_range
        from lookcloser.data_builders.synthetic import TASKS

        check_output_folder("out", self.out)
        check_seed(self.seed)
        check_benchmarks(self.benchmarks)
        check_names("tir_tasks", self.tir_tasks or [], list(TASKS))
        for name in ("mir_per_family", "tir_count", "model_pixels", "disbench_count", "imagemining_count"):
            check_range(name, getattr(self, name), 1)


def main(argv: list[str] | None = None) -> int:
    from lookcloser.cli import run
    from lookcloser.recipes import parse_flags

    def write(args: HeldoutArguments) -> None:
        written = write_heldout(args.out, args.seed, tuple(args.benchmarks), mir_per_family=args.mir_per_family,
                                tir_count=args.tir_count, model_pixels=args.model_pixels,
                                disbench_count=args.disbench_count, imagemining_count=args.imagemining_count,
                                tir_tasks=tuple(args.tir_tasks) if args.tir_tasks else None)
        for name, folder in written.items():
            print(f"{name}: {folder}")
        print(f"python -m eval --model CKPT --data_root {args.out} --benchmarks {','.join(written)}")

    prog = "python -m data_builders heldout"
    return run(write, lambda: (parse_flags(HeldoutArguments, argv, prog=prog, description=HeldoutArguments.__doc__),),
               prog=prog, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
