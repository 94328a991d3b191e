"""Held-out generators of the benchmarks the training data builders do not cover: one module per
benchmark format, found by walking this package. Each module defines ``HELDOUT``, a mapping from the
benchmark's name to ``write(out_folder, seed)``, which writes that benchmark's official layout under
``out_folder`` from a held-out seed and returns the folder. ``data_builders.heldout`` writes them
(``python -m data_builders heldout --benchmarks NAME``); the benchmark's spec is ``eval/benchmarks/<name>.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

Writer = Callable[[Path, int], Path]


def _discover() -> dict[str, Writer]:
    found: dict[str, Writer] = {}
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        found.update(getattr(importlib.import_module(f"{__name__}.{module.name}"), "HELDOUT", {}))
    return found


WRITERS: dict[str, Writer] = _discover()
