"""MIR scoring (spec §1): exact match of the extracted option letter with the gold letter.

Extraction is case-insensitive and accepts ``\\boxed{B}``, ``Answer: B``, ``Your option: B``,
``the correct answer is B``, ``(B)``, a final bare letter, and ``<conclusion>…</conclusion>`` /
``<answer>…</answer>`` blocks. MIR's own regex is case-sensitive and misses most answers.
"""

from __future__ import annotations

import re

from rewards._text import after_think, last_boxed, last_tag_block, strip_markup

_LETTER = r"\(?([A-Za-z])\)?"
_NOT_A_WORD = r"(?![A-Za-z0-9'’])"
# A lowercase letter followed by a lowercase word is the article "a" / pronoun "i", not an option.
_WORD_AFTER = re.compile(r"\)?\s+[a-z]{2,}")
_STRONG_CUE = re.compile(
    r"(?:your\s+option|final\s+answer|correct\s+(?:answer|option|choice)|\banswer)"
    r"\s*(?:is|should\s+be|would\s+be|[:：=\-])?\s*(?:option\s+)?[*_]*" + _LETTER + _NOT_A_WORD,
    re.IGNORECASE,
)
_WEAK_CUE = re.compile(r"\b(?:option|choice)\s*[:：]?\s*" + _LETTER + _NOT_A_WORD, re.IGNORECASE)
_PAREN = re.compile(r"(?<![A-Za-z])\(([A-Za-z])\)")
_LAST_BARE = re.compile(r"(?:^|[\s>:*(\[])([A-Za-z])[).\]*]*\s*$")
_ONLY_LETTER = re.compile(r"^[\s*_(\[{]*([A-Za-z])[\s*_)\]}.]*$")


def _from_block(block: str) -> str | None:
    only = _ONLY_LETTER.match(block)
    if only:
        return only.group(1).upper()
    return _from_text(block)


def _from_text(text: str) -> str | None:
    text = strip_markup(text)
    boxed = last_boxed(text)
    if boxed is not None:
        only = _ONLY_LETTER.match(boxed[0])
        if only:
            return only.group(1).upper()
    tail = text[-4000:]
    for cue_regex in (_STRONG_CUE, _WEAK_CUE):  # "Your option: B / Reason: option A…" → B
        chosen = None
        for cue in cue_regex.finditer(tail):
            letter = cue.group(1)
            if (letter.isupper() and letter != "I") or not _WORD_AFTER.match(tail, cue.end(1)):
                chosen = letter
        if chosen is not None:
            return chosen.upper()
    parens = _PAREN.findall(tail)
    if parens:
        return parens[-1].upper()
    bare = _LAST_BARE.search(text[-200:])
    if bare:
        letter = bare.group(1)
        # a lone lowercase "a"/"i" ending a sentence is a word, not an option
        return letter.upper() if letter.isupper() or letter not in "ai" else None
    return None


def extract_option(text: str) -> str | None:
    """The option letter a response chooses (upper case), or None.

    >>> [extract_option(t) for t in (r"\\boxed{b}", "Your option: C\\nReason: the tower...",
    ...     "Based on the above, the correct answer is D", "I pick (a).", "so it is\\nE",
    ...     "<conclusion>Sales grew most in Q2, so the answer is B.</conclusion>", "no idea")]
    ['B', 'C', 'D', 'A', 'E', 'B', None]
    """
    if not isinstance(text, str) or not text:
        return None
    region = after_think(text)
    for tag in ("answer", "conclusion"):
        block = last_tag_block(region, tag)
        if block is not None and block[0].strip():
            found = _from_block(block[0])
            if found:
                return found
    return _from_text(region)


def gold_letter(answer: str) -> str | None:
    """Gold letter from a record's ``conclusion``: a bare letter or a sentence holding it.

    >>> gold_letter("B"), gold_letter("Sales grew the most in Q2, so the answer is B.")
    ('B', 'B')
    """
    if not isinstance(answer, str):
        return None
    only = _ONLY_LETTER.match(answer)
    return only.group(1).upper() if only else extract_option(answer)


def score(response: str, answer: str) -> float:
    """1.0 when the response's option equals the gold letter, else 0.0.

    >>> score("Answer: (c)", "C"), score("Answer: B", "Based on the above, the correct answer is C")
    (1.0, 0.0)
    """
    try:
        gold = gold_letter(answer)
        return 1.0 if gold is not None and extract_option(response) == gold else 0.0
    except Exception:  # noqa: BLE001 - a reward must never crash a training step
        return 0.0
