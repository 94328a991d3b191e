"""``RowFormat``: a benchmark's own file read as GRPO rows (``data_builders.grpo_rows`` lists them as
``dataset_kind`` values), and ``resolve_path``, how a recipe's path is found."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def resolve_path(path: str | Path) -> Path:
    """A recipe path: as given (relative to the working directory), else relative to the repository."""
    path = Path(path)
    return path if path.is_absolute() or path.exists() else REPO / path


@dataclass(frozen=True)
class RowFormat:
    """One benchmark's file format as GRPO rows.

    Attributes:
        name: The ``dataset_kind`` value (the benchmark's name).
        recognise: ``recognise(path)``: whether a file is in this format (``dataset_kind: auto``).
        read: ``read(path, images_root=, mir_stage=, disbench_root=)`` -> the rows (a ``datasets.Dataset``).
        required: Recipe keys this format needs set -> the error when one is not.
    """

    name: str
    recognise: Callable[[Path], bool]
    read: Callable[..., object]
    required: dict[str, str] = field(default_factory=dict)
