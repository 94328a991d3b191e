"""DISBench's held-out folder: ``queries.jsonl``, ``metadata/``, ``images/``, ``photo_ids/``: ``sample_disbench``'s
users and queries, drawn from the held-out seed."""

from __future__ import annotations

from pathlib import Path

from lookcloser.data_builders.sample_disbench import write_disbench
from lookcloser.data_builders.scenes.writer import HeldoutWriter


def write(out: Path, seed: int, *, disbench_count: int = 60, **_) -> Path:
    write_disbench(out, seed, disbench_count)
    return out


HELDOUT = {"disbench": HeldoutWriter(write, default=True)}
