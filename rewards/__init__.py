"""lookcloser rewards: the benchmarks' own scorers as exact, fast, uncrashable reward functions.

Pure Python (plus math-verify and levenshtein, imported lazily / optionally): no torch,
transformers or trl. ``REGISTRY`` maps names to TRL-style reward functions
``f(completions, **dataset_columns) -> list[float | None]``; see ``docs/rewards.md``.

>>> sorted(REGISTRY)[:4]
['accuracy', 'disbench', 'format', 'imagemining']
"""

from lookcloser.rewards.trl_rewards import REGISTRY, get_reward_funcs

__all__ = ["REGISTRY", "get_reward_funcs"]
