"""GRPO prompt data sets: synthetic tool tasks generated on the fly, MIR questions, DISBench queries,
or any saved data set with the reward columns (``prompt``, ``data_source``, ``reward_info``, ...);
``read_grpo_rows`` tells these formats apart (``dataset_kind``).

Every row carries what ``rewards`` scores (``data_source`` + ``reward_info``) and what the
environment's ``reset`` needs (``images`` for the image tools; ``user_id`` + ``data_root`` for
the photo collection). Images are decoded on access (``datasets.Image``), as TRL's GRPO wants PIL.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

from lookcloser.data_builders import disbench, mir
from lookcloser.data_builders.row_formats import REPO, RowFormat, resolve_path
from lookcloser.data_builders.synthetic import BENCHMARK as SYNTHETIC_BENCHMARK

__all__ = ["BUNDLED_IMAGES", "DATASET_KINDS", "REPO", "ROW_FORMATS", "dataset_kind", "generated_images", "read_grpo_rows",
           "resolve_path", "source_pictures", "synthetic_dataset", "with_system_prompt"]
BUNDLED_IMAGES = REPO / "data" / "mir_sample"
# The benchmarks' own files a GRPO recipe reads as rows (``dataset_kind``), each defined beside its data builder.
ROW_FORMATS: dict[str, RowFormat] = {f.name: f for f in (mir.GRPO_ROWS, disbench.GRPO_ROWS)}
DATASET_KINDS = ("auto", "saved", *ROW_FORMATS, "records")


def generated_images(folder: str | Path, count: int = 12, seed: int = 0, size: int = 128) -> Path:
    """Seeded PIL-drawn source pictures (shapes on coloured grounds) for when no image folder is at hand."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for i in range(count):
        path = folder / f"gen_{i:03d}.png"
        if path.exists():
            continue
        img = Image.new("RGB", (size + 16 * (i % 3), size), tuple(rng.randrange(40, 220) for _ in range(3)))
        draw = ImageDraw.Draw(img)
        for _ in range(12):
            x, y, r = rng.randrange(img.width), rng.randrange(img.height), rng.randint(6, size // 3)
            shape = draw.ellipse if rng.random() < 0.5 else draw.rectangle
            shape((x, y, x + r, y + r), fill=tuple(rng.randrange(256) for _ in range(3)))
        img.save(path.with_suffix(".tmp"), format="PNG")
        path.with_suffix(".tmp").replace(path)  # a picture cut by Ctrl-C is never taken as made
    return folder


def source_pictures(images: str | None, out_dir: str | Path, seed: int = 0) -> Path:
    """The pictures synthetic tasks are drawn on: the folder ``images``; None: the bundled
    ``data/mir_sample`` (PIL-drawn pictures under ``out_dir/source_images`` when it is absent);
    ``"generated"``: always those PIL-drawn pictures."""
    if images == "generated" or (images is None and not BUNDLED_IMAGES.is_dir()):
        return generated_images(Path(out_dir) / "source_images", seed=seed)
    return resolve_path(images) if images else BUNDLED_IMAGES


def synthetic_dataset(out_dir: str | Path, build_synthetic, *, images: str | None = None, count: int = 32,
                      seed: int = 0, tasks: list[str] | None = None, base_size: int = 256, canvas_size: int = 768,
                      environment: str = SYNTHETIC_BENCHMARK, return_dir: bool = False):
    """Generate (or reuse) seeded synthetic TIR-format tasks under ``out_dir``; return the GRPO rows.

    ``build_synthetic``: ``agent.oracle.build_synthetic``, passed in by the caller because the oracle
    trajectories run the agent's tools, a layer above this one. ``images``: a folder of source
    pictures; None uses the bundled ``data/mir_sample`` (or PIL-drawn pictures when it is absent);
    ``"generated"`` always draws them; ``"procedural"``: each task's picture drawn from its seed, the kinds varied
    (``SyntheticConfig.pictures``). The oracle SFT trajectories for the cold start are written
    beside (``out_dir/<key>/sft``), calling ``environment``'s tools. ``return_dir``: return
    ``(rows, out_dir/<key>)``.
    """
    from lookcloser.data_builders.output import build_or_keep, load_output
    from lookcloser.data_builders.synthetic import TASKS, SyntheticConfig, config_settings

    out_dir = Path(out_dir)
    procedural = images == "procedural"
    source = None if procedural else source_pictures(images, out_dir, seed)
    cfg = SyntheticConfig(seed=seed, tasks=tuple(tasks or TASKS), base_size=base_size, canvas_size=canvas_size,
                          pictures="procedural" if procedural else "folder")
    settings = {"source": "procedural" if procedural else str(source.resolve()), "count": count,
                **config_settings(cfg)}
    if environment != SYNTHETIC_BENCHMARK:  # keeps the keys of folders built before this setting existed
        settings["environment"] = environment
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    # deterministic: the same settings always give the same tasks, so a folder built with them is kept
    target = build_or_keep(out_dir / key, settings, lambda folder: build_synthetic(
        source, folder, count, cfg, progress=False, environment=environment))
    rows = load_output(target / "grpo")
    return (rows, target) if return_dir else rows


def dataset_kind(path: Path) -> str:
    """What a GRPO ``dataset_path`` holds: ``saved`` (a data set folder), a benchmark's own file (``ROW_FORMATS``:
    MIR's JSON, DISBench's queries.jsonl) or ``records`` (any other .jsonl / .parquet of rows)."""
    if path.is_dir():
        return "saved"
    return next((name for name, row_format in ROW_FORMATS.items() if row_format.recognise(path)), "records")


def read_grpo_rows(dataset_path: str | Path, kind: str = "auto", *, images_root: str | None = None,
                   mir_stage: int = 4, disbench_root: str | None = None):
    """The GRPO rows of a file or folder of one of ``dataset_kind``'s formats (``auto``: told apart)."""
    from lookcloser.data_builders.output import load_records
    from lookcloser.data_builders.records import RecordError

    path = resolve_path(dataset_path)
    if not path.exists():
        raise RecordError(path, None, None, "data file not found")
    kind = dataset_kind(path) if kind == "auto" else kind
    if kind in ROW_FORMATS:
        return ROW_FORMATS[kind].read(path, images_root=images_root, mir_stage=mir_stage, disbench_root=disbench_root)
    return load_records(path)  # a saved folder, or a .parquet or .jsonl file of rows: the loader SFT uses too


def with_system_prompt(dataset, text: str):
    """Prepend a system message to prompts that have none."""
    def add(row):
        prompt = row["prompt"]
        if prompt and prompt[0].get("role") == "system":
            return row
        return {"prompt": [{"role": "system", "content": [{"type": "text", "text": text}]}, *prompt]}

    return dataset.map(add)
