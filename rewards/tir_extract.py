"""Rule-based extraction of a TIR-Bench answer from a full model response (no LLM).

Order (docs/formats.md §3): the final ``<answer>…</answer>``, else the final ``\\boxed{…}``, else the LAST
answer cue (``Answer:``, ``the answer is``, ``答案是``, ``B is correct``… see ``rewards._text.last_answer_cue``),
else the last sentences (after ``</think>``; inside it only when nothing is found after it).
The span found is then read by answer kind: a letter (or the letter of an option whose text it
states), several letters, a number, the LAST pair / index set / n² row in the span, or the text
as is. ``extract_with_context`` also returns the span, its source and its paragraph, so that
strict scoring can check for hedging.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from lookcloser.rewards._text import (
    DIGITS,
    LETTER_CUE,
    after_think,
    drop_row_labels,
    last_answer_cue,
    last_boxed,
    last_tag_block,
    read_index_set,
    read_jigsaw,
    strip_markup,
)
from lookcloser.rewards.tir_judge import CHOICE_LETTERS, answer_type, item_task, jigsaw_difficulty

STRONG_SOURCES = ("tag", "box", "cue")
_TAIL_WINDOW = 1500  # tail sentences are looked for here: final answers sit at the end
_SPAN_MAX = 600

_LEADING_JUNK = re.compile(r"^[\s:：=\-–—>*_#`$]+")  # what leads an answer ("**: B")
_STRIP_CHARS = " \t\r\n*_`$\"'“”‘’.,;:：。，；!！?？"
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?。！？])\s+")
_LETTER_TOKEN = re.compile(r"(?<![A-Za-z0-9'’])\(?([A-J])\)?(?![A-Za-z0-9'’])")
_LETTER_RUN = re.compile(r"(?<![A-Za-z0-9'’])([A-J]{2,10})(?![A-Za-z0-9'’])")
_LETTER_GROUP = re.compile(r"(?<![A-Za-z0-9'’])\(?([A-J]{1,10})\)?(?![A-Za-z0-9'’])")
_PAREN_LETTER = re.compile(r"\(([A-J])\)")
_ANSWER_LINE = re.compile(r"\(?([A-J])\)?(?:$|[.:：)]\s*\S)")
_OPTION_TEXT = re.compile(r"(?m)^[ \t]*\(?([A-J])(?:[.:：)]|\s)[ \t]*(\S[^\n]*)$")
_META_SENTENCE = re.compile(
    r"^\s*(?:\(.*\)|（.*）)\s*$|^\W*(?:note|confidence|p\.?s\.?|i hope|hope|let me know|disclaimer)\b",
    re.IGNORECASE | re.DOTALL,
)
_FOLLOWING_WORD = re.compile(r"\s+([a-z]+)")
# "A"/"I" followed by one of these words still reads as an option letter ("A is correct").
_LETTER_VERBS = frozenset((
    "is", "was", "seems", "appears", "would", "should", "must", "matches", "fits", "corresponds", "looks",
    "gives", "best", "and", "or", "option", "choice", "correct",
))
_OPTION_LINE = re.compile(r"(?m)(?:^|\s)\(?([A-J])(?:[.:：)]|\s)")
NUMBER = re.compile(r"(?<![\d.])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_BOLD = re.compile(r"\*\*([^*\n]{1,80})\*\*")
_NUMBER_WORDS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_NUMBER_WORDS.update({c: i for i, c in enumerate("零一二三四五六七八九十")})
_NUMBER_WORDS["两"] = 2
_NUMBER_WORD = re.compile(
    r"\b(?:" + "|".join(w for w in _NUMBER_WORDS if w.isascii()) + r")\b|(?<![一二三四五六七八九十])[零一两二三四五六七八九十]"
    r"(?=\s*[个只条张次处人辆])", re.IGNORECASE)
_FRACTION = re.compile(r"(?<![\d.])-?\d+\s*/\s*\d+(?![\d.])")
_LATEX_MATH = re.compile(r"\\(?:d?frac|sqrt|pi|times|cdot)|\^")
PAIR = re.compile(r"(\d+)\s*[,，]\s*(\d+)")
ROW_COL = re.compile(
    r"row[\s=:#]*(\d+)\D{0,24}?col(?:umn)?[\s=:#]*(\d+)|第\s*(\d+)\s*行\D{0,6}?第\s*(\d+)\s*列", re.IGNORECASE
)
_NO_DIFFERENCE = re.compile(r"\b(?:none|no\s+differen|identical)", re.IGNORECASE)
_QUOTED = re.compile(r'"([^"\n]{1,200})"|“([^”\n]{1,200})”|「([^」\n]{1,200})」')


@functools.lru_cache(maxsize=8192)
def answer_kind(task: str, answer: str) -> str:
    """How an answer is read: ``choice``, ``multi``, ``int``, ``float``, ``pair``, ``set``,
    ``jigsaw``, ``ocr`` or ``other`` (the official judge's dispatch).

    >>> answer_kind("refcoco", "A"), answer_kind("word_search", "[3, 6]"), answer_kind("math", "ABC")
    ('choice', 'pair', 'multi')
    """
    if task == "ocr":
        return "ocr"
    kind = answer_type(answer)
    if task == "word_search":
        return "int" if kind == "int" else "pair"
    if task == "spot_difference":
        return "int" if kind == "int" else "set"
    if task == "jigsaw":
        return "jigsaw"
    if kind == "alpha":
        return "choice" if len(answer) == 1 else "multi"
    return kind


@functools.lru_cache(maxsize=8192)
def option_letters(prompt: str) -> frozenset[str]:
    """Option letters a prompt lists (``A. x``, ``A: x``, ``(A) x``, ``A x``); A–J if none.

    >>> sorted(option_letters("Pick one.\\nA. 65%\\nB. 73%\\n(C) 81%"))
    ['A', 'B', 'C']
    """
    found = frozenset(_OPTION_LINE.findall(prompt))
    return found if len(found) >= 2 else frozenset(CHOICE_LETTERS)


def clean(text: str) -> str:
    """Markup and surrounding punctuation removed, full-width forms folded.

    >>> clean(" **(B).** ")
    '(B)'
    """
    return strip_markup(unicodedata.normalize("NFKC", text)).strip(_STRIP_CHARS)


def _plausible_letter(text: str, match: re.Match, valid: frozenset[str]) -> bool:
    letter = match.group(1)
    if letter not in valid:
        return False
    if letter in "AI":  # the article "A" and the pronoun "I"
        nxt = _FOLLOWING_WORD.match(text, match.end(1))
        if nxt and nxt.group(1) not in _LETTER_VERBS:
            return False
    return True


def _first_letter(text: str, valid: frozenset[str]) -> str | None:
    for m in _LETTER_TOKEN.finditer(text):
        if _plausible_letter(text, m, valid):
            return m.group(1)
    return None


def _last_letter(text: str, valid: frozenset[str]) -> str | None:
    found = None
    for m in _LETTER_TOKEN.finditer(text):
        if _plausible_letter(text, m, valid):
            found = m.group(1)
    return found


def distinct_letters(text: str, valid: frozenset[str]) -> set[str]:
    """Distinct plausible option letters a text mentions (for hedging checks).

    >>> sorted(distinct_letters("A, B or C", frozenset("ABCD")))
    ['A', 'B', 'C']
    """
    out = {m.group(1) for m in _LETTER_TOKEN.finditer(text) if _plausible_letter(text, m, valid)}
    for run in _LETTER_RUN.findall(text):
        if all(c in valid for c in run):
            out.update(run)
    return out


_CONNECTORS = frozenset(("or", "and", "nor"))


def listed_letters(text: str, valid: frozenset[str]) -> set[str]:
    """Option letters a text LISTS: standalone letters not followed by a word ("A is too small"
    mentions A, "A, B or C" lists three), plus runs like ``ABD``.

    >>> sorted(listed_letters("B\\nA or C. D is too small", frozenset("ABCD")))
    ['A', 'B', 'C']
    """
    out = set()
    for m in _LETTER_TOKEN.finditer(text):
        if m.group(1) in valid:
            nxt = _FOLLOWING_WORD.match(text, m.end())
            if nxt is None or nxt.group(1) in _CONNECTORS:
                out.add(m.group(1))
    for run in _LETTER_RUN.findall(text):
        if all(c in valid for c in run):
            out.update(run)
    return out


def first_clause(text: str) -> str:
    """First sentence of the first line: where a stated answer ends.

    >>> first_clause("A, C and D. B is false.\\nMore")
    'A, C and D.'
    """
    line = text.lstrip().split("\n", 1)[0]
    return _SENTENCE_SPLIT.split(line, 1)[0]


@functools.lru_cache(maxsize=8192)
def option_texts(prompt: str) -> dict[str, str]:
    """Option text by letter, from prompt lines like ``B. 355°`` / ``B: x`` / ``(B) x``; casefolded.

    >>> option_texts("Q?\\nA. 10°\\n(B) 355°")
    {'A': '10°', 'B': '355°'}
    """
    return {m.group(1): m.group(2).strip().rstrip(".").casefold() for m in _OPTION_TEXT.finditer(prompt)}


def _letter_of_text(text: str, prompt: str) -> str | None:
    """The option whose text the answer states (unique exact match), e.g. ``355°`` → ``B``."""
    said = text.strip().rstrip(".").casefold()
    hits = [letter for letter, option in option_texts(prompt).items() if option and option == said]
    return hits[0] if len(hits) == 1 else None


def _read_choice(span: str, strong: bool, valid: frozenset[str], prompt: str = "") -> str | None:
    text = clean(span)
    bare = text.strip("()[]{}<>")
    if bare in valid or (strong and len(bare) == 1 and bare.upper() in valid):
        return bare.upper()
    if strong:
        clause = first_clause(text)
        found = _first_letter(clause, valid)
        if found:
            return found
        clause = clean(clause)
        return _letter_of_text(clause, prompt) or clause or None
    if _ANSWER_LINE.match(text):  # a line that is just "**B. 5**" / "(B)"
        return _ANSWER_LINE.match(text).group(1)
    cue = LETTER_CUE.search(text)
    if cue:
        return cue.group(1)
    parens = [m for m in _PAREN_LETTER.findall(text) if m in valid]
    if parens:
        return parens[-1]
    return _last_letter(text, valid)


def _read_multi(span: str, strong: bool, valid: frozenset[str]) -> str | None:
    text = clean(first_clause(span) if strong else span)
    letters: list[str] = []
    for m in _LETTER_GROUP.finditer(text):
        token = m.group(1)
        if len(token) == 1 and not _plausible_letter(text, m, valid):
            continue
        if all(c in valid for c in token):
            letters.extend(c for c in token if c not in letters)
    if letters:
        return "".join(letters)
    return (text or None) if strong else None


def _number_text(raw: str) -> str:
    return raw.replace(",", "").replace("−", "-")


def _read_number(span: str, strong: bool, words: bool = True) -> str | None:
    text = clean(span.lstrip().split("\n", 1)[0] if strong else span)
    if strong and _LATEX_MATH.search(text):
        return text
    if strong:
        # "1/2": math-verify reads it as 0.5, like the judge does
        fraction = _FRACTION.search(text) if "/" in text else None
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


def _read_pair(span: str, strong: bool) -> str | None:
    text = clean(span)
    best, best_end = None, -1
    for regex in (PAIR, ROW_COL):
        for m in regex.finditer(text):
            if m.end() > best_end:
                groups = [g for g in m.groups() if g is not None]
                best, best_end = f"[{int(groups[0])}, {int(groups[1])}]", m.end()
    if best is not None:
        return best
    return (text or None) if strong else None


def _read_set(span: str, strong: bool) -> str | None:
    text = clean(span.lstrip().split("\n", 1)[0] if strong else span)
    found = read_index_set(text)
    if found is None:
        if _NO_DIFFERENCE.search(text):
            return ""
        return (text or None) if strong else None
    return ", ".join(str(x) for x in dict.fromkeys(found))


def jigsaw_numbers_text(span: str) -> str:
    """A jigsaw answer span without markup and row labels ("Row 2:"): what its numbers are counted in.

    >>> jigsaw_numbers_text("**Row 1:** 2 1")
    '  2 1'
    """
    return drop_row_labels(clean(span))


def _paragraph(region: str, start: int) -> str:
    """From ``start`` to the first blank line after some content (at most _SPAN_MAX chars)."""
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


def extract_span(item: dict, response: str) -> tuple[str, str, str]:
    """``(value, span, source)``: the extracted answer, the text it was read from, and where that
    text came from (``tag``, ``box``, ``cue``, ``tail`` or ``none``).

    >>> extract_span({"task": "math", "answer": "B", "prompt": "A. 1\\nB. 2"}, "A? no.\\nAnswer: B")[::2]
    ('B', 'cue')
    """
    return extract_with_context(item, response)[:3]


def item_facts(item: dict) -> tuple[str, str, int | None]:
    """``(kind, prompt, n)`` of an item: its answer kind, its prompt text ("" when missing) and, for
    a jigsaw, n of the n×n grid (read leniently). Computed once per scoring and passed down.

    >>> item_facts({"task": "jigsaw", "answer": "[2, 1, 4, 3]", "meta_data": {"difficulty": "2"}})
    ('jigsaw', '', 2)
    """
    kind = answer_kind(item_task(item), str(item.get("answer")))
    prompt = item.get("prompt")
    return kind, prompt if isinstance(prompt, str) else "", jigsaw_difficulty(item) if kind == "jigsaw" else None


def extract_with_context(item: dict, response: str, region: str | None = None,
                         facts: tuple[str, str, int | None] | None = None) -> tuple[str, str, str, str]:
    """``extract_span`` plus the answer's paragraph (the block, or from the cue / the last
    paragraph up to a blank line), where strict scoring looks for hedging.

    ``region`` is ``after_think(response)`` and ``facts`` is ``item_facts(item)`` when the caller
    has them already.

    >>> extract_with_context({"task": "x", "answer": "B"}, "Answer: B\\nA\\nC\\n\\nBye")[3]
    'B\\nA\\nC'
    """
    if not isinstance(response, str) or not response:
        return "", "", "none", ""
    if region is None:
        region = after_think(response)
    facts = facts or item_facts(item)
    found = _extract_from(facts, region)
    if found[2] == "tail" and found[0] is None and region is not response:
        found = _extract_from(facts, response)  # the answer was stated inside <think> only
    if found[0] is None:
        return clean(found[1]), found[1], found[2], found[3]
    return found


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
    """The last few sentences (or lines) of the region, last first, notes and asides left out."""
    out: list[str] = []
    for line in reversed(region[-_TAIL_WINDOW:].splitlines()):
        for sentence in reversed(_SENTENCE_SPLIT.split(line.strip())):
            if sentence.strip() and not _META_SENTENCE.match(sentence):
                out.append(sentence)
                if len(out) >= limit:
                    return out
    return out


def read_span(kind: str, span: str, strong: bool, prompt: str = "", n: int | None = None) -> str | None:
    """Read an answer of ``kind`` from a span; ``strong`` spans (tag, box, cue) fall back to their text.

    >>> read_span("jigsaw", "[[4, 1, 8], [9, 3, 6], [2, 7, 5]]", True, n=3)
    '4, 1, 8, 9, 3, 6, 2, 7, 5'
    >>> read_span("pair", "row 3, column 6", True)
    '[3, 6]'
    """
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
