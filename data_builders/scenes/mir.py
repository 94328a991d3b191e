"""MIR's held-out folder: ``all_data_rel.json`` + images from ``sample_mir``'s families, drawn from the
held-out seed and redrawn wherever a picture equals a bundled training one (``pixel_digests``)."""

from __future__ import annotations

from pathlib import Path

from lookcloser.data_builders.sample_mir import generate_sample, pixel_digests
from lookcloser.data_builders.scenes.writer import HeldoutWriter

# The bundled training pictures (data/mir_sample, data/mir_train) where the checkout has them.
TRAINING_PICTURES = Path(__file__).resolve().parents[2] / "data"


def write_mir(out: Path, seed: int, *, mir_per_family: int = 16, **_) -> Path:
    """MIR records from ``sample_mir``'s families, redrawn wherever a picture equals a training one."""
    generate_sample(out, per_family=mir_per_family, seed=seed, avoid=set(pixel_digests(TRAINING_PICTURES)))
    return out


HELDOUT = {"mir": HeldoutWriter(write_mir, default=True)}
