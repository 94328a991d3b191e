"""What ``train/grpo.py`` (the entry script) builds on: ``trainer`` (LookcloserGRPOTrainer and its
config), ``tools`` (malformed calls and unknown tools as error observations, the image budget),
``truncation`` (prompt left-truncation), ``filtering`` (dynamic group filtering) and ``tables``
(completions table and JSONL). The GRPO data sets are data_builders' (``grpo_rows``: the formats a
``dataset_path`` may hold, the synthetic tasks; ``commands/``: the curricula's data stages). A cold start
is a curriculum stage (``train/curriculum.py``, recipes/tool_curriculum.yaml), not part of GRPO.

A package of its own, not ``train/grpo/``, because ``lookcloser.train.grpo`` is the entry
script's module name (``accelerate launch train/grpo.py``; tests import its ``parse_args``).
"""
