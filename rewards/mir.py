"""MIR scoring (docs/formats.md §1): exact match of the extracted option letter with the gold letter.

Extraction is case-insensitive and accepts ``\\boxed{B}``, ``Answer: B``, ``Your option: B``,
``the correct answer is B``, ``(B)``, a final bare letter, and ``<conclusion>…</conclusion>`` /
``<answer>…</answer>`` blocks. MIR's own regex is case-sensitive and misses most answers.
Answers that weigh several options before naming one are read at the one they name: a letter
alone on the last line, the option after the last "but"/"however", "the second one, C, …".
"""

from __future__ import annotations

import re

from lookcloser.rewards._text import after_think, last_boxed, last_tag_block, strip_markup

_LETTER = r"\(?([A-Za-z])\)?"
_NOT_A_WORD = r"(?![A-Za-z0-9'’])"
# A lowercase letter followed by a lowercase word is the article "a" / pronoun "i", not an option.
_WORD_AFTER = re.compile(r"\)?\s+[a-z]{2,}")
# Cue words end on a word boundary, in any number: "choices, C" must not read as the letter "s".
_STRONG_CUE = re.compile(
    r"(?:your\s+(?:option|choice|answer)|final\s+answer|correct\s+(?:answer|option|choice)|\banswer)s?\b"
    r"\s*(?:is|are|should\s+be|would\s+be|[:：=\-])?\s*(?:option\s+)?[*_]*" + _LETTER + _NOT_A_WORD,
    re.IGNORECASE,
)
_WEAK_CUE = re.compile(r"\b(?:option|choice)s?\b\s*[:：]?\s*" + _LETTER + _NOT_A_WORD, re.IGNORECASE)
# "C is correct", "D is the closest", "C fits best": a capital letter given a verdict.
_VERDICT = re.compile(
    r"(?<![A-Za-z0-9'’])\(?([A-Z])\)?\s+(?:is|seems|looks|fits|matches|would\s+be)\s+(?:the\s+)?(?:most\s+)?"
    r"(?:correct|right|best|answer|closest|likely|fit|match)\b")
# "the second one, D, places…", "the latter (C)": an option named after pointing at it.
_NAMED_ONE = re.compile(
    r"\b(?:first|second|third|fourth|fifth|last|latter|former)(?:\s+(?:one|option|choice|image))?"
    r"\s*(?:,\s*|\(\s*)(?:option\s+)?\(?([A-Za-z])\)?\s*[,)]", re.IGNORECASE)
_CONTRAST = re.compile(r"\b(?:but|however)\b", re.IGNORECASE)
_LETTER_TOKEN = re.compile(r"(?<![A-Za-z0-9'’])\(?([A-Za-z])\)?(?![A-Za-z0-9'’])")
# After a letter: it is ruled out or only conceded ("but D does not fit", "but A is also close").
_NOT_CHOSEN = re.compile(
    r"\)?,?\s+(?:(?:is|are|was|does|do|did|can|could|might|may|would|seems?|looks?)\s*)?"
    r"(?:not|n['’]t|cannot|never|also|too|close|wrong|incorrect|unlikely|ruled)\b", re.IGNORECASE)
_PAREN = re.compile(r"(?<![A-Za-z])\(([A-Za-z])\)")
_LAST_BARE = re.compile(r"(?:^|[\s>:*(\[])([A-Za-z])[).\]*]*\s*$")
_ONLY_LETTER = re.compile(r"^[\s*_(\[{]*([A-Za-z])[\s*_)\]}.]*$")
_OPTION_PREFIX = re.compile(r"^\s*\(?([A-Za-z])\s*[).:：]")


def option_letters(options: object) -> frozenset[str] | None:
    """Letters of a record's ``options`` (``["A. x", …]`` or ``{"A": "x"}``); None when unknown.

    >>> sorted(option_letters(["A. red", "B. blue"])), sorted(option_letters({"a": 1, "B": 2}))
    (['A', 'B'], ['A', 'B'])
    """
    if isinstance(options, dict):
        keys = [k.strip().upper() for k in options if isinstance(k, str) and len(k.strip()) == 1]
    elif isinstance(options, (list, tuple)):
        keys = [m.group(1).upper() for m in (_OPTION_PREFIX.match(o) for o in options if isinstance(o, str)) if m]
    else:
        return None
    return frozenset(k for k in keys if k.isalpha()) or None


def _valid(letter: str | None, valid: frozenset[str] | None) -> str | None:
    if letter is None:
        return None
    letter = letter.upper()
    return letter if valid is None or letter in valid else None


def _from_block(block: str, valid: frozenset[str] | None) -> str | None:
    only = _ONLY_LETTER.match(block)
    if only:
        return _valid(only.group(1), valid)
    return _from_text(block, valid)


def _names_option(text: str, match: re.Match, valid: frozenset[str] | None) -> bool:
    """Whether group 1 of ``match`` is an option letter: a valid one, and not the article "a" or
    the pronoun "I" (a lowercase letter or "I" followed by a word)."""
    letter = match.group(1)
    return ((letter.isupper() and letter != "I") or not _WORD_AFTER.match(text, match.end(1))) \
        and _valid(letter, valid) is not None


def _last_cue(regex: re.Pattern, tail: str, valid: frozenset[str] | None) -> str | None:
    chosen = None
    for cue in regex.finditer(tail):
        if _names_option(tail, cue, valid):
            chosen = cue.group(1)
    return _valid(chosen, valid)


def _alone_on_last_line(tail: str, valid: frozenset[str] | None) -> str | None:
    """A last line that is only a letter ("…option D seems unlikely.\\nC"): the option chosen."""
    only = _ONLY_LETTER.match(tail.rstrip().rsplit("\n", 1)[-1])
    if only is None or only.group(1) in "ai":  # a lone lowercase "a"/"i" is a word
        return None
    return _valid(only.group(1), valid)


def _after_contrast(tail: str, valid: frozenset[str] | None) -> str | None:
    """The first option named (a capital letter) after the last "but"/"however" of the final
    paragraph, unless it is ruled out or conceded there: "A and B are possible, but C fits the
    depth cues best." → C."""
    paragraph = tail.rstrip().rsplit("\n\n", 1)[-1]
    contrast = None
    for contrast in _CONTRAST.finditer(paragraph):
        pass
    if contrast is None:
        return None
    rest = paragraph[contrast.end():]
    for token in _LETTER_TOKEN.finditer(rest):
        if not token.group(1).isupper() or not _names_option(rest, token, valid) \
                or _NOT_CHOSEN.match(rest, token.end()):
            continue
        if rest[:token.start()].rstrip().lower().endswith(("not", "nor")):  # "but not D"
            continue
        return token.group(1)
    return None


def _from_text(text: str, valid: frozenset[str] | None) -> str | None:
    text = strip_markup(text)
    boxed = last_boxed(text)
    if boxed is not None:
        only = _ONLY_LETTER.match(boxed[0])
        if only and _valid(only.group(1), valid):
            return only.group(1).upper()
    tail = text[-4000:]
    # From the most explicit statement to the least: "Your option: B / Reason: option A…" → B
    chosen = (_last_cue(_STRONG_CUE, tail, valid) or _alone_on_last_line(tail, valid)
              or _after_contrast(tail, valid) or _last_cue(_NAMED_ONE, tail, valid)
              or _last_cue(_VERDICT, tail, valid) or _last_cue(_WEAK_CUE, tail, valid))
    if chosen is not None:
        return chosen.upper()
    parens = [p for p in _PAREN.findall(tail) if _valid(p, valid)]
    if parens:
        return parens[-1].upper()
    bare = _LAST_BARE.search(text[-200:])
    if bare:
        letter = bare.group(1)
        # a lone lowercase "a"/"i" ending a sentence is a word, not an option
        return _valid(letter, valid) if letter.isupper() or letter not in "ai" else None
    return None


def extract_option(text: str, options: object = None) -> str | None:
    """The option letter a response chooses (upper case), or None; never a letter outside
    ``options`` (the record's, a list or a dict) when they are given.

    >>> [extract_option(t) for t in (r"\\boxed{b}", "Your option: C\\nReason: the tower...",
    ...     "Based on the above, the correct answer is D", "I pick (a).", "so it is\\nE",
    ...     "<conclusion>Sales grew most in Q2, so the answer is B.</conclusion>", "no idea")]
    ['B', 'C', 'D', 'A', 'E', 'B', None]
    >>> extract_option("Among the choices, C fits best."), extract_option("Answer: E", ["A. x", "B. y"])
    ('C', None)
    """
    if not isinstance(text, str) or not text:
        return None
    valid = option_letters(options)
    region = after_think(text)
    for tag in ("answer", "conclusion"):
        block = last_tag_block(region, tag)
        if block is not None and block[0].strip():
            found = _from_block(block[0], valid)
            if found:
                return found
    return _from_text(region, valid)


def gold_letter(answer: str) -> str | None:
    """Gold letter from a record's ``conclusion``: a bare letter or a sentence holding it.

    >>> gold_letter("B"), gold_letter("Sales grew the most in Q2, so the answer is B.")
    ('B', 'B')
    """
    if not isinstance(answer, str):
        return None
    only = _ONLY_LETTER.match(answer)
    return only.group(1).upper() if only else extract_option(answer)


def score(response: str, answer: str, options: object = None) -> float:
    """1.0 when the response's option equals the gold letter, else 0.0. ``options`` (the
    record's) keep extraction inside the record's letters.

    >>> score("Answer: (c)", "C"), score("Answer: B", "Based on the above, the correct answer is C")
    (1.0, 0.0)
    """
    gold = gold_letter(answer)
    return 1.0 if gold is not None and extract_option(response, options) == gold else 0.0
