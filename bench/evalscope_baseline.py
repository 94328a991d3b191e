"""A re-implementation of evalscope's rule extractor for TIR-Bench, as docs/formats.md §3 describes it.

Kept only as the baseline that ``rewards.tir_extract`` is measured against (tests and bench):
for a letter answer it takes, in order, ``\\boxed{X}``, ``Answer: X`` / ``answer - X``,
``the answer is X`` (``答案是/为X``), ``X is correct`` / ``X is the answer``, the last ``(X)``,
the last standalone capital A–J, else the raw text; for any other answer the raw response.
"""

from __future__ import annotations

import re

_BOXED = re.compile(r"\\boxed\{\s*([A-J])\s*\}")
_ANSWER_COLON = re.compile(r"answer\s*(?::|-)\s*\(?([A-J])\b", re.IGNORECASE)
_ANSWER_IS = re.compile(r"the answer is\s*:?\s*\(?([A-J])\b|答案[是为]\s*([A-J])", re.IGNORECASE)
_IS_CORRECT = re.compile(r"\b([A-J])\)?\s+is\s+(?:correct|the answer)")
_PAREN = re.compile(r"\(([A-J])\)")
_STANDALONE = re.compile(r"\b([A-J])\b")


def evalscope_extract(item: dict, response: str) -> str:
    """Baseline extraction: the first match of each pattern in the order above.

    >>> evalscope_extract({"answer": "B"}, "A is wrong. Answer: B")
    'B'
    >>> evalscope_extract({"answer": "72"}, "The reading is 72.") == "The reading is 72."
    True
    """
    answer = str(item.get("answer"))
    if not (answer.isalpha() and len(answer) == 1):
        return response
    for regex in (_BOXED, _ANSWER_COLON, _ANSWER_IS, _IS_CORRECT):
        m = regex.search(response)
        if m:
            return next(g for g in m.groups() if g)
    for regex in (_PAREN, _STANDALONE):
        found = regex.findall(response)
        if found:
            return found[-1]
    return response
