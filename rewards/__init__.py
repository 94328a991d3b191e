"""lookcloser rewards: the benchmarks' own scorers as exact, uncrashable reward functions.

Pure Python (plus math-verify, imported lazily, and levenshtein): no torch, transformers or trl.
``score(data_source, response, gold)`` (``rewards.scoring``) is the one scoring entry every
trainer adapter calls; ``REGISTRY`` maps names to TRL-style reward functions ``f(completions,
**dataset_columns) -> list[float | None]``; ``get_reward_funcs`` builds the ones a recipe names;
``rewards.verl`` and ``rewards.openrlhf`` serve those trainers; see ``docs/rewards.md``.

>>> list(REGISTRY)[:3], "format" in REGISTRY
(['tir_bench', 'tir_bench_official', 'mir'], True)
"""

from lookcloser.rewards.scoring import score
from lookcloser.rewards.trl_rewards import REGISTRY, get_reward_funcs

__all__ = ["REGISTRY", "get_reward_funcs", "score"]
