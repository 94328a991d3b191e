"""ImageMining's held-out folder: ``data.jsonl`` + ``images/`` + ``search_corpus.jsonl``: ``sample_imagemining``'s
flags in one world (which city flies which flag), drawn from the held-out seed."""

from __future__ import annotations

from pathlib import Path

from lookcloser.data_builders.sample_imagemining import write_imagemining
from lookcloser.data_builders.scenes.writer import HeldoutWriter


def write(out: Path, seed: int, *, imagemining_count: int = 60, **_) -> Path:
    write_imagemining(out, seed, imagemining_count, worlds=1)
    return out


HELDOUT = {"imagemining": HeldoutWriter(write, default=True)}
