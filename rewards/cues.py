"""Finding the LAST answer cue in a response, fast.

A cue is where a response states its answer: ``Answer:``, ``the answer is``, ``Final answer``,
``the correct option is``, ``I choose``, ``B is correct``, ``答案是``, ``故选``. Every cue holds
one keyword, so each keyword's last occurrence is found with ``str.rfind`` on the lowered text
(the last keyword is tried first and the search stops at the first cue, usually near the end),
and only small anchored regexes run around each hit: a single scan with one big
case-insensitive regex costs ~10x more on long responses.
"""

from __future__ import annotations

import re

_KEYWORDS = ("answer", "option", "choice", "choose", "pick", "select", "go with", "correct", "right", "best",
             "答案", "选")
_ASCII_KEYWORDS = tuple(k for k in _KEYWORDS if k.isascii())
_ANY_KEYWORD = re.compile("|".join(re.escape(k) for k in _KEYWORDS))
_BE = r"(?:is|are|would\s+be|should\s+be|will\s+be|must\s+be)\b"
_OPTIONAL_SEPARATOR = re.compile(r"s?(?:\s+" + _BE + r")?(?:\s*[:：=\-–—])?")
_REQUIRED_SEPARATOR = re.compile(r"s?[ \t]*(?:\*\*|__)?[ \t]*(?:" + _BE + r"|[:：=\-–—]|\n)")
_QUALIFIER_WORDS = ("final", "correct", "right", "best", "your", "my")
_QUALIFIER = re.compile(r"(?<![a-z])(?:final|correct|right|best|your|my)\s+\Z")
_PRONOUN_I = re.compile(r"(?<![a-z])i\s+\Z")
# "B is the": the lookbehind (no letter or digit before B) follows the letter, so that the regex
# engine skips to candidate letters
_LETTER_BEFORE = re.compile(r"([A-J])(?<![A-Za-z0-9'’][A-J])\)?\s+(?:is|would\s+be)\s+(?:the\s+)?\Z")
_ZH_SEPARATOR = re.compile(r"\s*(?:应该|应)?\s*(?:是|为|[:：])?")
LETTER_CUE = re.compile(r"([A-J])(?<![A-Za-z0-9'’][A-J])\)?\s+(?:is|would\s+be)\s+(?:the\s+)?"
                        r"(?:correct|right|best|answer)\b")


def _cue_at(text: str, lowered: str, word: str, at: int) -> tuple[int, int, str | None] | None:
    """``(start, end, letter)`` of the cue built around keyword ``word`` at ``at``, or None."""
    after = at + len(word)
    if word == "答案":
        start = at - 2 if lowered[max(0, at - 2):at] in ("最终", "正确") else at
        return start, _ZH_SEPARATOR.match(lowered, after).end(), None
    if word == "选":
        if lowered.startswith(("项", "择题"), after):
            return None
        return (at - 1 if at and lowered[at - 1] in "故应" else at), after, None
    if at and lowered[at - 1].isalnum():  # inside a longer word ("reanswer", "upright")
        return None
    before = max(0, at - 32)
    head = lowered[before:at].rstrip()  # cheap string tests first: most keyword hits are no cue
    if word in ("answer", "option", "choice") and head.endswith(_QUALIFIER_WORDS):
        qualifier = _QUALIFIER.search(lowered, before, at)
        if qualifier:
            return qualifier.start(), _OPTIONAL_SEPARATOR.match(lowered, after).end(), None
    if word in ("answer", "correct", "right", "best") and head.endswith(("is", "be", "the")):
        letter = _LETTER_BEFORE.search(text, before, at)
        if letter:
            return letter.start(), after, letter.group(1)
    if word == "answer":
        separator = _REQUIRED_SEPARATOR.match(lowered, after)
        return (at, separator.end(), None) if separator else None
    if word in ("choose", "pick", "select", "go with") and head.endswith("i"):
        pronoun = _PRONOUN_I.search(lowered, before, at)
        return (pronoun.start(), after, None) if pronoun else None
    return None


def _scan(text: str, lowered: str, floor: int, hi: int,
          with_answer: bool = True) -> tuple[int, int, str | None] | None:
    """Last cue whose keyword lies in [floor, hi), last keyword first, keywords taken without
    overlap from the end (as a regex run over the reversed text would). Each keyword's last
    occurrence is one C-level ``rfind``: a regex alternation of 12 keywords costs ~4x more.
    ``with_answer=False``: the caller knows "answer" is not in the range."""
    if hi - floor < 64 and _ANY_KEYWORD.search(lowered, floor, hi) is None:
        return None  # a short range (what follows the last "answer"): one regex call says "none"
    words = _KEYWORDS if not lowered.isascii() else _ASCII_KEYWORDS
    if not with_answer:
        words = words[1:]  # "answer" comes first
    hits = []  # (end, start, keyword); no keyword is a suffix of another, so ends are distinct
    for word in words:
        at = lowered.rfind(word, floor, hi)
        if at >= 0:
            hits.append((at + len(word), at, word))
    while hits:
        _, at, word = max(hits)
        cue = _cue_at(text, lowered, word, at)
        if cue is not None:
            return cue
        # the next keyword ends at or before this one's start: re-find the ones that do not
        kept = []
        for hit in hits:
            if hit[0] <= at:
                kept.append(hit)
            else:
                again = lowered.rfind(hit[2], floor, at)
                if again >= 0:
                    kept.append((again + len(hit[2]), again, hit[2]))
        hits = kept
    return None


def last_answer_cue(text: str) -> tuple[int, int, str | None] | None:
    """``(start, end, letter)`` of the last answer cue: the answer follows ``end``, or is
    ``letter`` for cues like ``B is correct``. None when the text has no cue.

    >>> t = "Option A is unlikely. To answer this I zoomed in. The answer is B. Hope this helps."
    >>> start, end, letter = last_answer_cue(t); t[start:end], letter
    ('answer is', None)
    >>> last_answer_cue("So (C) is the correct one.")[2], last_answer_cue("答案：72")[:2]
    ('C', (0, 3))
    >>> last_answer_cue("no cue here") is None
    True
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lowered: keep offsets
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    # Most cues are "answer ...": find its last occurrence with one rfind, scan only what follows
    # it (usually a few characters), then the "answer" itself, then the text before it.
    at = lowered.rfind("answer")
    if at < 0:
        return _scan(text, lowered, 0, len(text), with_answer=False)
    return (_scan(text, lowered, at + 1, len(text), with_answer=False) or _cue_at(text, lowered, "answer", at)
            or _scan(text, lowered, 0, at + 5))
