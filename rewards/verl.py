"""verl adapter: ``compute_score(data_source, solution_str, ground_truth, extra_info=None)``.

Point verl's ``custom_reward_function.path`` at this file and ``name`` at ``compute_score``.
``ground_truth`` is the answer itself or the scorer's info (a dict or JSON text):
tir_bench → the official item (or its answer, with ``task``/``prompt``/``meta_data`` in
``extra_info``); mir → the letter or conclusion; disbench → the id list; imagemining → the answer
(``answer_zh`` may come in ``extra_info``). An unknown source raises; bad input scores 0.0.
"""

from __future__ import annotations

from typing import Any

from lookcloser.rewards._text import parse_json_field
from lookcloser.rewards.trl_rewards import normalize_source, score_row

SOURCES = ("tir_bench", "mir", "disbench", "imagemining")


def _as_info(source: str, ground_truth: Any, extra_info: dict) -> dict | None:
    parsed = parse_json_field(ground_truth) if isinstance(ground_truth, (str, bytes)) else ground_truth
    if source == "tir_bench" and isinstance(parsed, dict) and "answer" in parsed:
        return parsed
    if isinstance(parsed, dict) and "answer" in parsed:
        info = dict(parsed)
    else:
        answer = ground_truth if source != "disbench" or not isinstance(parsed, list) else parsed
        if isinstance(answer, bytes):
            answer = answer.decode("utf-8", "replace")
        info = {"answer": answer}
    if source == "tir_bench":
        return {**{k: v for k, v in extra_info.items() if k != "answer"}, **info}
    for key in ("answer_zh", "question"):
        if key in extra_info and key not in info:
            info[key] = extra_info[key]
    return info


def compute_score(data_source: Any, solution_str: Any, ground_truth: Any, extra_info: Any = None,
                  **kwargs: Any) -> float:
    """Score one verl rollout with the benchmark's scorer (TIR-Bench in strict mode).

    ``kwargs``: what else verl passes (its ``reward_kwargs``, reward-router arguments); unused.
    An unknown ``data_source`` raises ``ValueError`` (a configuration mistake, not a zero). A scorer
    that raises counts in ``rewards.trl_rewards.ERROR_COUNTS["verl"]`` with one warning and scores
    0.0, since verl needs a number (under ``LOOKCLOSER_REWARD_ERRORS=raise`` it propagates).

    >>> compute_score("tir_bench", "<answer>B</answer>", "B", {"task": "refcoco", "prompt": "A. x\\nB. y"})
    1.0
    >>> compute_score("disbench", "<answer>[1, 2]</answer>", ["1", "2", "3", "4"], reward_router_address=None)
    0.6666666666666666
    >>> compute_score("unknown", "x", "y")
    Traceback (most recent call last):
    ...
    ValueError: unknown data_source 'unknown': use one of tir_bench, mir, disbench, imagemining
    """
    source = normalize_source(data_source)
    if source not in SOURCES:
        raise ValueError(f"unknown data_source {data_source!r}: use one of {', '.join(SOURCES)}")
    extra = extra_info if isinstance(extra_info, dict) else {}
    text = solution_str if isinstance(solution_str, str) else ""
    info = _as_info(source, ground_truth, extra)
    mode = extra.get("tir_mode", "strict") if extra.get("tir_mode") in ("strict", "official") else "strict"
    value = score_row(source, text, info, mode, name="verl") if info is not None else None
    return float(value) if value is not None else 0.0
