"""The scoring half of each benchmark's spec: one module per benchmark, found by walking this package.

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

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Scorer:
    """How ``rewards.scoring.score`` serves one benchmark.

    Attributes:
        name: The ``data_source`` value (normalised: lower case, ``_`` for ``-``).
        order: Where it is listed (messages, the registry's order).
        aliases: Other normalised spellings of ``data_source``.
        extra_fields: Fields of a row outside its gold (verl's ``extra_info``) the scorer reads.
        check: ``check(info)`` -> None, or what a good gold would be (``info`` may be completed in place).
        score: ``score(text, info, mode, **judge)`` -> the score of a response text.
        list_gold: JSON text of a list is the answer itself (DISBench's id list).
        reward_doc: The TRL reward's one-line description.
    """

    name: str
    order: int
    check: Callable[[dict], str | None]
    score: Callable[..., float]
    reward_doc: str
    aliases: tuple[str, ...] = ()
    extra_fields: tuple[str, ...] = ()
    list_gold: bool = False


def _discover() -> dict[str, Scorer]:
    found = []
    for module in pkgutil.iter_modules(__path__):
        scorer: Any = getattr(importlib.import_module(f"{__name__}.{module.name}"), "SCORER", None)
        if isinstance(scorer, Scorer):
            found.append(scorer)
    return {s.name: s for s in sorted(found, key=lambda s: (s.order, s.name))}


SCORERS: dict[str, Scorer] = _discover()
ALIASES: dict[str, str] = {alias: s.name for s in SCORERS.values() for alias in s.aliases}
