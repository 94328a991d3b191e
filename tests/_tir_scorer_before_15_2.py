"""Frozen reference for tests/test_tir_extract_speed_equivalence.py: the functions of the strict
TIR-Bench scorer that issue 15.2 made faster, as they were before (main at dddef69), verbatim
less their docstrings. The test swaps them into ``rewards.*`` to get what the old scorer returned,
then checks that the new one returns the same on every input. Nothing else imports this file.
"""

from __future__ import annotations

import re
import unicodedata

from lookcloser.rewards._text import (
    _BRACKET_LIST,
    _INDEX_RUN,
    _INDEX_WORDS,
    _ROW_LABEL,
    _TAGS,
    _THINK_CLOSE,
    DIGITS,
    _balanced_from,
    all_boxed,
    all_tag_blocks,
    sentences_backwards,
    strip_markup,
)
from lookcloser.rewards.cues import _KEYWORDS, _cue_at
from lookcloser.rewards.tir_bench import (
    STRICT_MAX_ANSWER_CHARS,
    STRICT_MAX_NUMBERS,
    STRICT_MAX_RESPONSE_CHARS,
    _answer,
    _answer_clause,
    _exact_override,
    _grid_indices,
    _strict_number,
)
from lookcloser.rewards.tir_extract import (
    _BOLD,
    _FRACTION,
    _LATEX_MATH,
    _META_SENTENCE,
    _NO_DIFFERENCE,
    _NUMBER_WORD,
    _NUMBER_WORDS,
    _QUOTED,
    _SPAN_MAX,
    _STRIP_CHARS,
    _TAIL_WINDOW,
    PAIR,
    ROW_COL,
    STRONG_SOURCES,
    _number_text,
    _read_choice,
    _read_multi,
    _read_pair,
    distinct_letters,
    extract_with_context,
    first_clause,
    item_facts,
    listed_letters,
    option_letters,
)
from lookcloser.rewards.tir_judge import (
    CHOICE_LETTERS,
    FIRST_PAIR,
    answer_type,
    jigsaw_sequence,
    judge_jigsaw,
    judge_spot_difference,
    judge_word_search,
    ocr_answer,
)

# the patterns as they were
_KEYWORD_REVERSED = re.compile("|".join(re.escape(k[::-1]) for k in _KEYWORDS))
_LEADING_JUNK = re.compile(r"^[\s:：=\-–—>*_#`$]+")
NUMBER = re.compile(r"(?<![\d.])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_JIGSAW_CHARS = re.compile(r"[\d\s,，;、|\[\]()]+")
_OFFICIAL_JIGSAW_CHARS = re.compile(r"[\d\s,，]+")
_LETTER_TOKEN = re.compile(r"(?<![A-Za-z0-9'’])\(?([A-J])\)?(?![A-Za-z0-9'’])")
_LETTER_RUN = re.compile(r"(?<![A-Za-z0-9'’])([A-J]{2,10})(?![A-Za-z0-9'’])")
_LETTER_BEFORE = re.compile(r"(?<![A-Za-z0-9'’])([A-J])\)?\s+(?:is|would\s+be)\s+(?:the\s+)?\Z")
LETTER_CUE = re.compile(r"(?<![A-Za-z0-9'’])([A-J])\)?\s+(?:is|would\s+be)\s+(?:the\s+)?(?:correct|right|best|answer)\b")

# module -> {name: the old object}: what the test swaps in (names imported by value included)
PATCHES = {
    "lookcloser.rewards.tir_extract": ("clean", "NUMBER", "_paragraph", "_cue_span", "last_answer_cue", "after_think",
                            "last_tag_block", "last_boxed", "read_index_set", "_read_set", "jigsaw_numbers_text",
                            "read_jigsaw", "_read_number", "_extract_from", "_tail_sentences", "read_span",
                            "_LETTER_TOKEN", "_LETTER_RUN", "LETTER_CUE"),
    "lookcloser.rewards.cues": ("_LETTER_BEFORE", "LETTER_CUE"),
    "lookcloser.rewards.tir_bench": ("clean", "NUMBER", "after_think", "last_boxed", "jigsaw_numbers_text",
                          "_final_answers_disagree", "_strict_score"),
}


def after_think(text: str) -> str:
    cut = text.rfind(_THINK_CLOSE)
    if cut >= 0:
        tail = text[cut + len(_THINK_CLOSE):]
        if tail.strip():
            return tail
    return text


def last_tag_block(text: str, tag: str) -> tuple[str, int] | None:
    open_tag, close_tag = _TAGS.get(tag) or (f"<{tag}>", f"</{tag}>")
    start = text.rfind(open_tag)
    if start < 0:
        return None
    body_start = start + len(open_tag)
    end = text.find(close_tag, body_start)
    return (text[body_start:] if end < 0 else text[body_start:end]), body_start


def last_boxed(text: str) -> tuple[str, int] | None:
    pos = len(text)
    for _ in range(16):  # skip at most a few unbalanced boxes from the end
        start = max(text.rfind("\\boxed{", 0, pos), text.rfind("\\fbox{", 0, pos))
        if start < 0:
            return None
        brace = text.find("{", start)
        inner = _balanced_from(text, brace)
        if inner is not None:
            return inner, start
        pos = start
    return None


def _scan(text: str, lowered: str, backwards: str, floor: int, hi: int) -> tuple[int, int, str | None] | None:
    n = len(lowered)
    pos, end = n - hi, n - floor
    while pos < end:
        m = _KEYWORD_REVERSED.search(backwards, pos, end)
        if m is None:
            return None
        cue = _cue_at(text, lowered, m.group()[::-1], n - m.end())
        if cue is not None:
            return cue
        pos = m.end()
    return None


def last_answer_cue(text: str) -> tuple[int, int, str | None] | None:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters change length when lowered: keep offsets
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    # Most cues are "answer ...": find its last occurrence with one rfind, scan only what follows
    # it (usually a few characters), then the "answer" itself, then the text before it.
    backwards = lowered[::-1]
    at = lowered.rfind("answer")
    if at < 0:
        return _scan(text, lowered, backwards, 0, len(text))
    return (_scan(text, lowered, backwards, at + 1, len(text)) or _cue_at(text, lowered, "answer", at)
            or _scan(text, lowered, backwards, 0, at + 5))


def clean(text: str) -> str:
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    return strip_markup(text).strip(_STRIP_CHARS)


def _read_number(span: str, strong: bool, words: bool = True) -> str | None:
    text = clean(span.lstrip().split("\n", 1)[0] if strong else span)
    if strong and _LATEX_MATH.search(text):
        return text
    if strong:
        fraction = _FRACTION.search(text)  # "1/2": math-verify reads it as 0.5, like the judge does
        first = NUMBER.search(text)
        if fraction and first and fraction.start() == first.start():
            return fraction.group(0).replace(" ", "")
    if not strong:  # free text: a bold number is the stated one ("The reading is **11.1** kg/cm²")
        bold = [b for b in _BOLD.findall(span) if NUMBER.search(b)]
        if bold:
            text = clean(bold[-1])
    numbers = NUMBER.findall(text)
    if numbers:
        return _number_text(numbers[0] if strong else numbers[-1])
    found = _NUMBER_WORD.findall(text) if words else []  # "The image shows four vehicles", "有一个字"
    if found:
        return str(_NUMBER_WORDS[(found[0] if strong else found[-1]).lower()])
    return (text or None) if strong else None


def read_index_set(text: str) -> list[int] | None:
    text = _INDEX_WORDS.sub("", text)
    lists = _BRACKET_LIST.findall(text)
    if lists:
        return [int(x) for x in DIGITS.findall(lists[-1])]
    runs = [r for r in _INDEX_RUN.findall(text)]
    multi = [r for r in runs if len(DIGITS.findall(r)) >= 2]
    chosen = multi[-1] if multi else (runs[-1] if runs else None)
    return None if chosen is None else [int(x) for x in DIGITS.findall(chosen)]


def _read_set(span: str, strong: bool) -> str | None:
    text = clean(span.lstrip().split("\n", 1)[0] if strong else span)
    found = read_index_set(text)
    if found is None:
        if _NO_DIFFERENCE.search(text):
            return ""
        return (text or None) if strong else None
    return ", ".join(str(x) for x in dict.fromkeys(found))


def jigsaw_numbers_text(span: str) -> str:
    return _ROW_LABEL.sub(" ", clean(span))


def read_jigsaw(text: str, n: int) -> list[int] | None:
    total = n * n
    text = _ROW_LABEL.sub(" ", text)
    for runs in (_JIGSAW_CHARS, _OFFICIAL_JIGSAW_CHARS):  # with brackets first, then without
        for run in reversed(runs.findall(text)):
            numbers = DIGITS.findall(run)
            if len(numbers) == total:
                return [int(x) for x in numbers]
    numbers = DIGITS.findall(text)
    if len(numbers) >= total:
        return [int(x) for x in numbers[-total:]]
    return None


def _paragraph(region: str, start: int) -> str:
    text = region[start:start + _SPAN_MAX]
    body = _LEADING_JUNK.sub("", text)
    cut = body.find("\n\n")
    if cut >= 0:
        first = clean(body[:cut])
        if not first or body[:cut].rstrip(" *_").endswith((":", "：")):
            cut = body.find("\n\n", cut + 2)  # "**Order:**" is a heading: take the paragraph under it
    return body if cut < 0 else body[:cut]


def _cue_span(region: str) -> tuple[str, int] | None:
    cue = last_answer_cue(region)
    if cue is None:
        return None
    start, rest_start, letter = cue
    if letter:
        return letter, start
    line_end = region.find("\n", rest_start)
    line = region[rest_start:] if line_end < 0 else region[rest_start:line_end]
    line = _LEADING_JUNK.sub("", line)
    if clean(line):
        return line, rest_start
    return _paragraph(region, rest_start), rest_start


def _extract_from(facts: tuple[str, str, int | None], region: str) -> tuple[str | None, str, str, str]:
    kind, prompt, n = facts

    span, source, start = None, "none", 0
    block = last_tag_block(region, "answer")
    if block is not None and block[0].strip():
        span, source, start = block[0], "tag", block[1]
        boxed = last_boxed(span)
        if boxed is not None:
            span = boxed[0]
    if span is None:
        boxed = last_boxed(region)
        if boxed is not None:
            span, source, start = boxed[0], "box", boxed[1]
    if span is None:
        cue = _cue_span(region)
        if cue is not None:
            span, start = cue
            source = "cue"
    if span is not None:
        context = _paragraph(region, start) if source == "cue" else span
        if kind == "jigsaw" and n is not None and source == "cue" and len(DIGITS.findall(span)) < n * n:
            span = context  # rows on the lines after "Answer:"
        value = read_span(kind, span, True, prompt, n)
        return (value if value is not None else clean(span)), span, source, context
    context = region[-_SPAN_MAX:].strip().rsplit("\n\n", 1)[-1]
    sentences = _tail_sentences(region)
    if kind == "jigsaw":  # a bare grid spans several lines: try the last paragraphs first
        lines = [x for x in region[-3 * _SPAN_MAX:].strip().split("\n") if not _META_SENTENCE.match(x)]
        paragraphs = [p for p in "\n".join(lines).split("\n\n") if p.strip()]
        sentences[:0] = paragraphs[::-1][:4]
    for sentence in sentences:
        value = _read_number(sentence, False, words=False) if kind in ("int", "float") \
            else read_span(kind, sentence, False, prompt, n)
        if value is not None:
            return value, sentence, "tail", context
    if kind in ("int", "float"):  # no digits in the last sentences: number words ("four vehicles")
        for sentence in sentences:
            value = _read_number(sentence, False)
            if value is not None:
                return value, sentence, "tail", context
    return None, (sentences[0] if sentences else ""), "tail", context


def _tail_sentences(region: str, limit: int = 6) -> list[str]:
    out: list[str] = []
    for line in reversed(region[-_TAIL_WINDOW:].splitlines()):
        if not line.strip():
            continue
        for sentence in sentences_backwards(line.strip()):
            if sentence.strip() and not _META_SENTENCE.match(sentence):
                out.append(sentence)
                if len(out) >= limit:
                    return out
    return out


def read_span(kind: str, span: str, strong: bool, prompt: str = "", n: int | None = None) -> str | None:
    if kind == "choice":
        return _read_choice(span, strong, option_letters(prompt), prompt)
    if kind == "multi":
        return _read_multi(span, strong, option_letters(prompt))
    if kind in ("int", "float"):
        return _read_number(span, strong)
    if kind == "pair":
        return _read_pair(span, strong)
    if kind == "set":
        return _read_set(span, strong)
    if kind == "jigsaw":
        sequence = read_jigsaw(clean(span), n) if n else None
        if sequence is not None:
            return ", ".join(str(x) for x in sequence)
        return (clean(span) or None) if strong else None
    text = clean(span)
    if kind == "ocr" and not strong:  # in free text, OCR answers are the quoted words
        quoted = _QUOTED.findall(span)
        return clean(next(q for q in quoted[-1] if q)) if quoted else None
    return text or None


def _final_answers_disagree(region: str) -> bool:
    if region.count("<answer>") + region.count("\\boxed{") + region.count("\\fbox{") <= 1:
        return False  # one final answer at most: nothing to disagree
    finals = set()
    for block in all_tag_blocks(region, "answer"):
        boxed = last_boxed(block)
        finals.add(clean(boxed[0] if boxed else block).casefold())
    for boxed in all_boxed(region):
        finals.add(clean(boxed).casefold())
    finals.discard("")
    return len(finals) > 1


def _strict_score(item: dict, response: str) -> float:
    answer = _answer(item)
    if answer is None or len(response) > STRICT_MAX_RESPONSE_CHARS:
        return 0.0
    region = after_think(response)
    if _final_answers_disagree(region):
        return 0.0
    facts = item_facts(item)
    kind, prompt, n = facts
    value, span, source, context = extract_with_context(item, response, region, facts)
    if source == "none":
        return 0.0
    limit = STRICT_MAX_ANSWER_CHARS if kind != "ocr" else max(STRICT_MAX_ANSWER_CHARS, 4 * len(answer))
    cleaned = clean(span)
    if len(cleaned) > limit:
        return 0.0

    if kind == "choice":
        if answer not in CHOICE_LETTERS or value not in CHOICE_LETTERS:
            return 0.0
        valid = option_letters(prompt)
        clause = first_clause(cleaned) if source in STRONG_SOURCES else span
        mentioned = distinct_letters(clause, valid)
        listed = listed_letters(context, valid) | mentioned
        if len(mentioned) >= 3 or len(listed) >= 3 or (len(valid) >= 2 and listed >= set(valid)):
            return 0.0  # several options offered
        if value not in mentioned and cleaned.strip("()[]{}<>").upper() != value:
            return 0.0  # option text instead of a letter: strict wants the letter
        return 1.0 if value == answer else 0.0
    if kind == "multi":
        if not value or not value.isalpha() or not value.isupper():
            return 0.0
        valid = option_letters(prompt)
        if len(valid) >= 2 and listed_letters(context, valid) >= set(valid) > set(answer):
            return 0.0  # every option listed
        return 1.0 if sorted(set(value)) == sorted(answer) and len(set(value)) == len(value) else 0.0
    if kind in ("int", "float"):
        if len(set(NUMBER.findall(context))) >= STRICT_MAX_NUMBERS:
            return 0.0  # a list of numbers, not an answer
        return _strict_number(span, answer, kind == "int")
    if kind == "pair":
        if answer_type(answer) != "other" or FIRST_PAIR.search(answer) is None:
            return 0.0
        clause = _answer_clause(span)
        pairs = {(int(a), int(b)) for a, b in PAIR.findall(clause)}
        pairs |= {tuple(int(g) for g in m.groups() if g is not None) for m in ROW_COL.finditer(clause)}
        if len(pairs) != 1 or len(set(PAIR.findall(context))) >= 3:  # several pairs listed
            return 0.0
        return judge_word_search(value, answer)
    if kind == "set":
        listed = DIGITS.findall(context)
        if len(listed) > 400:
            return 0.0
        grid = _grid_indices(prompt)
        if grid and len(listed) >= grid:
            predicted = {int(x) for x in listed}
            if predicted.issuperset(range(1, grid + 1)) or predicted.issuperset(range(grid)):
                return 0.0  # every index listed
        return judge_spot_difference(value, answer)
    if kind == "jigsaw":
        sequence = jigsaw_sequence(value, n) if n else None  # value is already "4, 1, 8, …"
        if sequence is None or len(set(sequence)) != len(sequence):
            return 0.0  # no n² row, or a row with repeats ("1 1 1 …")
        if len(DIGITS.findall(jigsaw_numbers_text(span))) > n * n:
            return 0.0  # more numbers than pieces: several candidate orders
        return judge_jigsaw(value, answer, n)
    if kind == "ocr":
        gold = " ".join(ocr_answer(item).split()) if _exact_override(item) else " ".join(answer.split())
        said = " ".join(cleaned.split())
        return 1.0 if gold and gold in said and len(said) <= 2 * len(gold) + 20 else 0.0
    return 0.0
