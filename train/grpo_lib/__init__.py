"""What ``train/grpo.py`` (the entry script) builds on: ``trainer`` (LookcloserGRPOTrainer and its
config), ``tools`` (malformed calls and unknown tools as error observations, the image budget),
``truncation`` (prompt left-truncation), ``filtering`` (dynamic group filtering), ``tables``
(completions table and JSONL) and ``data`` (the GRPO data set, synthetic tasks). A cold start is a
curriculum stage (``train/curriculum.py``, recipes/tool_curriculum.yaml), not part of GRPO. The scripts run on their own stay beside ``grpo.py``:
``train/grpo_tasks.py`` (a tool-curriculum data stage) and ``train/curves.py``.

A package of its own, not ``train/grpo/``, because ``lookcloser.train.grpo`` is the entry
script's module name (``accelerate launch train/grpo.py``; tests import its ``parse_args``).
"""
