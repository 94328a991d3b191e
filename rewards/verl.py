"""verl adapter: ``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)``.

verl ≥ 0.8 (tested with 0.9.1's own config and reward loading, tests/test_rewards_trainers.py) reads
``reward.custom_reward_function.path=pkg://lookcloser.rewards.verl`` and
``reward.custom_reward_function.name=compute_score`` (verl 0.5-0.7: the same keys without ``reward.``;
docs/rewards.md). ``ground_truth`` is the gold
in ``rewards.scoring``'s shape (a dict, JSON text, or the bare answer: a numpy array of DISBench ids
is read like a list); ``extra_info`` may add the fields the gold lacks (``task``/``prompt``/
``meta_data`` for TIR-Bench, ``answer_zh``), and ``tir_mode`` (``"official"``: eval parity).

The answer is read from the final assistant turn (``rewards._text.final_turn_text``): a multi-turn
rollout's tool responses are not the policy's answer. An unknown ``data_source`` raises (a
configuration mistake, not a zero); ``compute_score_or_default`` is the opt-in fallback that hands
other sources to verl's own ``default_compute_score``. A gold no scorer can read, or a scorer that
raises, scores 0.0 (verl needs a number), counts in ``rewards.scoring.ERRORS`` under its reason and
logs a warning the first time (``rewards/errors/<reason>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lookcloser.rewards import scoring
from lookcloser.rewards._text import final_turn_text
from lookcloser.rewards.scoring import SOURCES, RewardInputError  # SOURCES: rewards.benchmarks.SCORERS' names

__all__ = ["SOURCES", "compute_score", "compute_score_or_default"]


def _score(source: str, solution_str: Any, ground_truth: Any, extra: Mapping) -> float:
    text = final_turn_text(solution_str) if isinstance(solution_str, str) else solution_str
    mode = extra.get("tir_mode") if extra.get("tir_mode") in ("strict", "official") else "strict"
    try:
        return scoring.score(source, text, ground_truth, mode=mode, extra=extra)
    except Exception as err:  # noqa: BLE001 - the adapter's boundary: counted and warned (scorer bugs re-raise under tests)
        scoring.record_error(err, f"verl compute_score ({source})")
        return 0.0


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> float:
    """Score one verl rollout with the benchmark's scorer (TIR-Bench in strict mode).

    ``kwargs``: what else verl passes (its ``reward_kwargs``, reward-router arguments); unused.

    >>> compute_score("tir_bench", "<answer>B</answer>", "B", {"task": "refcoco", "prompt": "A. x\\nB. y"})
    1.0
    >>> compute_score("disbench", "<answer>[1, 2]</answer>", ["1", "2", "3", "4"], reward_router_address=None)
    0.6666666666666666
    >>> compute_score("unknown", "x", "y")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lookcloser.rewards.scoring.RewardInputError: unknown data_source 'unknown': lookcloser scores tir_bench, mir, \
disbench, imagemining... (name=compute_score_or_default sends other sources to verl's default_compute_score)
    """
    try:
        source = scoring.resolve_source(data_source)
    except RewardInputError as err:
        raise RewardInputError(err.reason, f"{err} (name=compute_score_or_default sends other sources to verl's "
                                           "default_compute_score)") from None
    return _score(source, solution_str, ground_truth, extra_info if isinstance(extra_info, Mapping) else {})


def compute_score_or_default(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                             **kwargs: Any) -> float | dict:
    """``compute_score`` for lookcloser's benchmarks, verl's ``default_compute_score`` for every other
    source (gsm8k, MATH... mixed into the same run); needs verl installed."""
    if scoring.normalize_source(data_source) in SOURCES:
        return compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
    from verl.utils.reward_score import default_compute_score

    return default_compute_score(data_source, solution_str, ground_truth, extra_info, **kwargs)
