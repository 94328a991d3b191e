"""A benchmark is one spec: one module per benchmark here, listed in ``MODULES``.

Each module defines ``SPEC`` (a ``BenchmarkSpec``): name and aliases, its official on-disk layout
and loader, its scorer (the scoring half of the spec, ``rewards/benchmarks/<name>.py``) with how an
item's gold becomes the scorer's input, its metrics and reports, default turns, environment (its
tools), ``prepare`` source, fixture writer, published numbers and titles. Eval (loaders, config,
scoring, report, compare, prepare, fixtures) reads ``SPECS``; the TRL rewards and the verl adapter
read the scoring half (``rewards.benchmarks.SCORERS``); a benchmark's held-out generator is
``data_builders/scenes/<module>.py`` (``data_builders.scenes.WRITERS``). A spec module builds on ``eval.items``
(``EvalItem`` and the loaders' public helpers) and ``eval.fixtures`` only, never on the modules that read
this registry (``eval.loaders``, ``prepare``, ``scoring``...).
tests/test_benchmark_registry.py checks that each of them serves every registered benchmark.

>>> list(SPECS)[:4]
['tir_bench', 'mir', 'disbench', 'imagemining']
>>> spec("DISBench").report.charted
('em', 'f1')
"""

from __future__ import annotations

from lookcloser.eval.benchmarks import disbench, hrbench, imagemining, mir, tir_bench, vstar
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report

__all__ = ["BENCHMARKS", "DEFAULT_BENCHMARKS", "MODULES", "REPORTS", "SPECS", "BenchmarkSpec", "Report", "spec"]

# The spec modules, listed here (not found by walking the folder) so that each is a real import the
# import-graph test sees; tests/test_import_graph.py checks that every module of this folder is listed.
MODULES = (tir_bench, mir, disbench, imagemining, vstar, hrbench)


def _specs(module) -> list[BenchmarkSpec]:
    value = module.SPEC
    return list(value) if isinstance(value, (list, tuple)) else [value]


SPECS: dict[str, BenchmarkSpec] = {s.name: s for s in sorted((s for m in MODULES for s in _specs(m)),
                                                             key=lambda s: (s.order, s.name))}
BENCHMARKS: tuple[str, ...] = tuple(SPECS)
DEFAULT_BENCHMARKS: tuple[str, ...] = tuple(n for n, s in SPECS.items() if s.in_default_run)
# Every report table: each benchmark's own, and the extra ones a spec adds (DISBench's retriever).
REPORTS: dict[str, Report] = {k: v for s in SPECS.values() for k, v in {s.name: s.report, **s.reports}.items()}


def spec(name: str) -> BenchmarkSpec:
    """The spec of ``name`` or one of its aliases (case, ``-`` and spaces aside); ``KeyError`` otherwise."""
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if key in SPECS:  # a name first: one scorer may serve several benchmarks (aliases shared)
        return SPECS[key]
    for candidate in SPECS.values():
        if key == candidate.name or key in candidate.aliases or key in candidate.scorer.aliases:
            return candidate
    raise KeyError(f"unknown benchmark {name!r}; choose from {', '.join(SPECS)}")
