"""The multiple-choice benchmarks' gold and score (V*, HR-Bench): the option letter, read by MIR's
extraction rules (``rewards.mir.extract_option``, kept inside the item's letters when ``options`` is given).

Gold: ``answer``, the letter (or a text stating it), and optionally ``options``, the item's options as
``["A. text", ...]``.

>>> check({"answer": "b", "options": ["A. left", "B. right"]}), score("The answer is (B).", {"answer": "B"})
(None, 1.0)
>>> score("Answer: C", {"answer": "C", "options": ["A. left", "B. right"]})  # no letter outside the options
0.0
"""

from lookcloser.rewards import mir


def check(info: dict) -> str | None:
    answer = info.get("answer")
    if not isinstance(answer, str) or mir.gold_letter(answer) is None:
        return "the answer letter, or a JSON object with `answer` (and optional `options`)"
    return None


def score(text: str, info: dict, mode: str = "strict", **_) -> float:
    return float(mir.score(text, info["answer"], info.get("options")))
