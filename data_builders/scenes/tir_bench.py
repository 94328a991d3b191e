"""TIR-Bench's held-out folder: ``TIR-Bench.json`` + ``data/``, the synthetic TIR-style tasks the tool
curriculum trains on, built on the held-out MIR pictures (never on the bundled training pictures)."""

from __future__ import annotations

import json
from pathlib import Path

from lookcloser.data_builders.scenes.writer import HeldoutWriter
from lookcloser.data_builders.synthetic import TASKS, SyntheticConfig, generate_items

# The embedded default's pixel budget (128 x 128): visual_search sizes its canvas so that the target is
# unreadable without the crop at the resolution the model sees. A larger model: pass its processor's.
DEFAULT_MODEL_PIXELS = 128 * 128


def write_tir_bench(out: Path, seed: int, *, pictures: Path, tir_count: int = 60,
                    tir_tasks: tuple[str, ...] | None = None, model_pixels: int = DEFAULT_MODEL_PIXELS,
                    tir_pictures: str = "folder", **_) -> Path:
    """TIR-Bench.json + data/ from the ``pictures``, with the tool curriculum's generator settings; ``tir_pictures``
    "procedural": each item's picture drawn from its seed instead, the kinds varied (``SyntheticConfig.pictures``)."""
    cfg = SyntheticConfig(seed=seed, tasks=tuple(tir_tasks or TASKS), model_pixels=model_pixels, pictures=tir_pictures)
    records = [item.record for item in generate_items(pictures, out, tir_count, cfg)]
    (out / "TIR-Bench.json").write_text(json.dumps(records, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return out


HELDOUT = {"tir_bench": HeldoutWriter(write_tir_bench, default=True, pictures_from="mir")}
