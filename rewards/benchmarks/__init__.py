"""The scoring half of each benchmark's spec: one module per benchmark, listed in ``MODULES``.

Each module defines ``SCORER`` (a ``Scorer``): the benchmark's name and aliases, the fields a row may
carry outside its gold, how a gold in ``rewards.scoring``'s one shape is checked, and the scorer
from ``rewards/`` it calls. ``rewards.scoring`` (and through it the TRL, verl and OpenRLHF adapters)
reads ``SCORERS``; the rest of a benchmark's spec (loader, prompts, metrics, tools, held-out data,
reports) lives above, in ``eval/benchmarks/<name>.py``, which names this half as its ``scorer``.
Adding a benchmark: a module here and one there (docs/architecture.md).

>>> list(SCORERS)[:4]
['tir_bench', 'mir', 'disbench', 'imagemining']
"""

from __future__ import annotations

from lookcloser.rewards.benchmarks import disbench, hrbench, imagemining, mir, tir_bench, vstar
from lookcloser.rewards.benchmarks.scorer import Scorer

__all__ = ["ALIASES", "MODULES", "SCORERS", "Scorer"]


# The spec modules, listed here (not found by walking the folder) so that each is a real import the
# import-graph test sees; tests/test_import_graph.py checks that every module of this folder is listed.
MODULES = (tir_bench, mir, disbench, imagemining, vstar, hrbench)
SCORERS: dict[str, Scorer] = {s.name: s for s in sorted((m.SCORER for m in MODULES), key=lambda s: (s.order, s.name))}
ALIASES: dict[str, str] = {alias: s.name for s in SCORERS.values() for alias in s.aliases}
