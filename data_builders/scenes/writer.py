"""``HeldoutWriter``: how ``data_builders.heldout`` writes one benchmark's held-out folder (each module of
``data_builders/scenes/`` maps its benchmarks' names to one in ``HELDOUT``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HeldoutWriter:
    """One benchmark's held-out writer.

    Attributes:
        write: ``write(out, seed, pictures=None, **settings)`` -> ``out``: the benchmark's official layout drawn from
            a held-out seed; ``settings`` are ``write_heldout``'s keywords (``tir_count``, ``model_pixels``...), each
            writer reading its own; ``pictures``: the folder ``pictures_from`` wrote.
        default: Written when no benchmark is named (the four the curriculum trains for).
        pictures_from: The benchmark whose held-out folder holds this one's source pictures: written first (and kept
            only when it is asked for too).
    """

    write: Callable[..., Path]
    default: bool = False
    pictures_from: str | None = None
