"""What ``train/grpo.py`` (the entry script: parse, build, train, save) builds on: ``configs`` (the script's
arguments and LookcloserGRPOConfig), ``data`` (the prompts), ``environment`` (the environment factory),
``rewards`` (the reward functions, and the rows checked before step 1), ``prompting`` (the checkpoint's
prompting record), ``trainer`` (LookcloserGRPOTrainer), ``tools`` (malformed calls and unknown tools as
error observations, the image budget), ``truncation`` (prompt left-truncation), ``filtering`` (dynamic group filtering) and ``tables``
(completions table and JSONL). The GRPO data sets are data_builders' (``grpo_rows``: the formats a
``dataset_path`` may hold, the synthetic tasks; ``commands/``: the curricula's data stages). A cold start
is a curriculum stage (``train/curriculum.py``, recipes/tool_curriculum.yaml), not part of GRPO.

A package of its own, not ``train/grpo/``, because ``lookcloser.train.grpo`` is the entry
script's module name (``accelerate launch train/grpo.py``; tests import its ``parse_args``).
"""
