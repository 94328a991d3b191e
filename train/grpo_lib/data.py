"""GRPO prompt data sets: synthetic tool tasks generated on the fly, MIR questions, DISBench queries,
or any saved data set with the reward columns (``prompt``, ``data_source``, ``reward_info``, ...).

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

from lookcloser.data_builders.search_tasks import disbench_question

REPO = Path(__file__).resolve().parents[2]
BUNDLED_IMAGES = REPO / "data" / "mir_sample"


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


def resolve_path(path: str | Path) -> Path:
    """A recipe path: as given (relative to the working directory), else relative to the repository."""
    path = Path(path)
    return path if path.is_absolute() or path.exists() else REPO / path


def synthetic_dataset(out_dir: str | Path, *, images: str | None = None, count: int = 32, seed: int = 0,
                      tasks: list[str] | None = None, base_size: int = 256, canvas_size: int = 768,
                      environment: str = "tir_bench", return_dir: bool = False):
    """Generate (or reuse) seeded synthetic TIR-format tasks under ``out_dir``; return the GRPO rows.

    ``images``: a folder of source pictures; None uses the bundled ``data/mir_sample`` (or PIL-drawn
    pictures when it is absent); ``"generated"`` always draws them. The oracle SFT trajectories for
    the cold start are written beside (``out_dir/<key>/sft``), calling ``environment``'s tools.
    ``return_dir``: return ``(rows, out_dir/<key>)``.
    """
    from lookcloser.agent.oracle import build_synthetic
    from lookcloser.data_builders.output import load_output
    from lookcloser.data_builders.synthetic import TASKS, SyntheticConfig

    out_dir = Path(out_dir)
    if images == "generated" or (images is None and not BUNDLED_IMAGES.is_dir()):
        source = generated_images(out_dir / "source_images", seed=seed)
    else:
        source = resolve_path(images) if images else BUNDLED_IMAGES
    cfg = SyntheticConfig(seed=seed, tasks=tuple(tasks or TASKS), base_size=base_size, canvas_size=canvas_size)
    settings = {"source": str(source.resolve()), "count": count, **{k: list(v) if isinstance(v, tuple) else v
                                                                    for k, v in vars(cfg).items()}}
    if environment != "tir_bench":  # keeps the keys of folders built before this setting existed
        settings["environment"] = environment
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    target = out_dir / key
    done = target / "settings.json"
    if not done.is_file():  # deterministic: the same settings always give the same tasks
        build_synthetic(source, target, count, cfg, progress=False, environment=environment)
        done.write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    rows = load_output(target / "grpo")
    return (rows, target) if return_dir else rows


def mir_grpo_dataset(path: str | Path, images_root: str | Path | None = None, stage: int = 4):
    """MIR questions as GRPO prompts (the stage's user turn; 4 = autonomous, no context) + gold letter."""
    from datasets import Dataset, Image, Sequence

    from lookcloser.data_builders.mir import answer_letter, build_stage, load_mir_records

    rows = []
    for record in load_mir_records(resolve_path(path), images_root and resolve_path(images_root)):
        staged = build_stage(record, stage)
        rows.append({"prompt": [staged["messages"][0]], "images": staged["images"], "data_source": "mir",
                     "reward_info": json.dumps({"answer": answer_letter(record)}),
                     "task": str(record.get("subtask") or ""), "id": str(record.get("id"))})
    return Dataset.from_list(rows).cast_column("images", Sequence(Image()))


def disbench_grpo_dataset(path: str | Path, data_root: str | Path):
    """DISBench queries (``queries.jsonl``: query_id, user_id, query, answer) as GRPO prompts."""
    from datasets import Dataset

    from lookcloser.data_builders.records import iter_jsonl

    root = resolve_path(data_root)
    rows = []
    for query in iter_jsonl(resolve_path(path)):
        rows.append({"prompt": [{"role": "user", "content": [{"type": "text",
                                                              "text": disbench_question(query["query"])}]}],
                     "data_source": "disbench", "reward_info": json.dumps({"answer": list(query["answer"])}),
                     "user_id": str(query["user_id"]), "data_root": str(root),
                     "task": str(query.get("event_type") or ""), "id": str(query.get("query_id"))})
    return Dataset.from_list(rows)


def _kind(path: Path) -> str:
    if path.is_dir():
        return "saved"
    if path.suffix == ".json":
        return "mir"
    if path.suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            first = json.loads(next((line for line in f if line.strip()), "{}"))
        return "disbench" if {"query", "user_id", "answer"} <= set(first) else "records"
    return "records"


def with_system_prompt(dataset, text: str):
    """Prepend a system message to prompts that have none."""
    def add(row):
        prompt = row["prompt"]
        if prompt and prompt[0].get("role") == "system":
            return row
        return {"prompt": [{"role": "system", "content": [{"type": "text", "text": text}]}, *prompt]}

    return dataset.map(add)


def synthetic_settings(script_args) -> dict:
    """``synthetic_dataset`` arguments from the recipe (the oracle calls the recipe's environment's tools)."""
    env = script_args.environment if script_args.environment in ("crop", "tir_bench", "mir", "synthetic") else "tir_bench"
    return {"images": script_args.synthetic_images, "count": script_args.synthetic_count,
            "seed": script_args.synthetic_seed, "tasks": script_args.synthetic_tasks,
            "base_size": script_args.synthetic_base_size, "canvas_size": script_args.synthetic_canvas_size,
            "environment": env}


def load_grpo_dataset(script_args, training_args):
    """Resolve the recipe's data settings to a ``datasets.Dataset`` of GRPO rows."""
    from datasets import load_dataset

    from lookcloser.data_builders.output import load_records
    from lookcloser.data_builders.records import RecordError

    kind = script_args.dataset_kind
    if script_args.dataset_path:
        path = resolve_path(script_args.dataset_path)
        if not path.exists():
            raise RecordError(path, None, None, "data file not found")
        kind = _kind(path) if kind == "auto" else kind
        if kind == "saved":
            dataset = load_records(path)
        elif kind == "mir":
            dataset = mir_grpo_dataset(path, script_args.images_root, script_args.mir_stage)
        elif kind == "disbench":
            if not script_args.disbench_root:
                from lookcloser.recipes import RecipeError

                raise RecipeError("DISBench queries need `disbench_root` (the folder with metadata/ and images/)")
            dataset = disbench_grpo_dataset(path, script_args.disbench_root)
        else:  # a .parquet or .jsonl file of rows: the loader SFT uses too
            dataset = load_records(path)
    elif script_args.dataset_name:
        dataset = load_dataset(script_args.dataset_name, name=script_args.dataset_config)
        dataset = dataset[script_args.dataset_train_split]
    else:  # the embedded default: synthetic tool tasks, generated once per settings (main process first)
        out_dir = script_args.synthetic_dir or str(Path(training_args.output_dir) / "synthetic_data")
        with training_args.main_process_first(desc="synthetic GRPO tasks"):
            dataset = synthetic_dataset(out_dir, **synthetic_settings(script_args))
    if script_args.max_train_samples:
        dataset = dataset.select(range(min(script_args.max_train_samples, len(dataset))))
    if "prompt" not in dataset.column_names:
        raise RecordError(script_args.dataset_path or "dataset", None, "prompt", "GRPO rows need a `prompt` column")
    if script_args.system_prompt:
        from lookcloser.agent.loop import DEFAULT_SYSTEM_PROMPT

        text = DEFAULT_SYSTEM_PROMPT if script_args.system_prompt == "default" else script_args.system_prompt
        dataset = with_system_prompt(dataset, text)
    return dataset
