"""Held-out generators of the benchmarks: one module per benchmark format, listed in ``MODULES``. Each module
defines ``HELDOUT``, a mapping from the benchmark's name to its ``HeldoutWriter``, which writes that benchmark's
official layout from a held-out seed. ``data_builders.heldout`` writes them (``python -m data_builders heldout
--benchmarks NAME``); the benchmark's spec is ``eval/benchmarks/<name>.py``.
"""

from __future__ import annotations

from lookcloser.data_builders.scenes import disbench, hires, imagemining, mir, tir_bench
from lookcloser.data_builders.scenes.writer import HeldoutWriter

__all__ = ["MODULES", "WRITERS", "HeldoutWriter"]

# Listed here (not found by walking the folder) so that each is a real import the import-graph test sees;
# tests/test_import_graph.py checks that every module of this folder is listed. The order is the one
# ``--benchmarks`` lists.
MODULES = (tir_bench, mir, disbench, imagemining, hires)
WRITERS: dict[str, HeldoutWriter] = {name: writer for module in MODULES for name, writer in module.HELDOUT.items()}
