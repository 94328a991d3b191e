"""``Scorer``: the scoring half of one benchmark's spec (``rewards/benchmarks/<name>.py`` defines one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


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
        judged: ``score`` takes the LLM-judge options (``llm_judge``, ``base_url``, ...); its TRL reward can use them.
        modes: ``(mode, description)`` of each scoring mode besides ``strict`` with a TRL reward of its own,
            named ``<name>_<mode>`` (TIR-Bench's ``official``, for eval parity).
    """

    name: str
    order: int
    check: Callable[[dict], str | None]
    score: Callable[..., float]
    reward_doc: str
    aliases: tuple[str, ...] = ()
    extra_fields: tuple[str, ...] = ()
    list_gold: bool = False
    judged: bool = False
    modes: tuple[tuple[str, str], ...] = ()
