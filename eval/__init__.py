"""lookcloser eval: the trained agent on TIR-Bench, MIR, DISBench and ImageMining, from their official files.

``python -m eval --model <checkpoint dir | endpoint URL> --benchmarks tir_bench,mir,disbench,imagemining
--data_root DIR --out DIR`` (or a YAML recipe, ``recipes/eval.yaml``). Loaders read each benchmark's
own layout (``eval.loaders``), the agent loop runs with each benchmark's tools (``agent.loop``),
predictions are appended as they finish and a rerun resumes (``eval.runner``), scoring is done by
``rewards/`` only (``eval.scoring``), reports go to ``metrics.json``, ``report.md`` and PNG charts
(``eval.report``). See docs/eval.md.
"""
