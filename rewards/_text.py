"""Text helpers shared by the scorers: completion text, answer blocks, boxed content, lists of numbers.

Every helper is total (never raises on a str) and cheap: they use ``str.rfind`` from the end
of the text, since a final answer sits at the end and responses can be long.
"""

from __future__ import annotations

import json
import re
from typing import Any

_THINK_CLOSE = "</think>"
_TAGS = {tag: (f"<{tag}>", f"</{tag}>") for tag in ("answer", "conclusion", "think")}


def message_text(content: Any) -> str:
    """Text of a chat message ``content``: a str, or a list of ``{"type": "text"}`` blocks.

    Non-text blocks (images) are skipped; text blocks are joined with newlines.

    >>> message_text([{"type": "image"}, {"type": "text", "text": "B"}])
    'B'
    >>> message_text(None)
    ''
    """
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str) \
                    and block.get("type", "text") == "text":
                parts.append(block["text"])
        return "\n".join(parts)
    if isinstance(content, dict):
        return message_text([content])
    return ""


def assistant_text(message: dict) -> str:
    """An assistant message's text, with parsed-out reasoning put back inside ``<think>``.

    Why: TRL's response parser for Qwen3 moves ``<think>…</think>`` out of ``content`` into
    ``reasoning_content``; the format reward must see the text the model actually wrote.

    >>> assistant_text({"role": "assistant", "reasoning_content": "look", "content": "<answer>B</answer>"})
    '<think>look</think><answer>B</answer>'
    """
    text = message_text(message.get("content"))
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning and "<think>" not in text:
        text = f"<think>{reasoning}</think>{text}"
    return text


def completion_text(completion: Any) -> str:
    """Text a reward is computed on: the string, or the LAST assistant message's text.

    >>> completion_text("Answer: B")
    'Answer: B'
    >>> completion_text([{"role": "assistant", "content": "x"},
    ...                  {"role": "tool", "content": "y"},
    ...                  {"role": "assistant", "content": [{"type": "text", "text": "z"}]}])
    'z'
    """
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return assistant_text(completion)
    if isinstance(completion, (list, tuple)):
        for message in reversed(completion):
            if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
                return assistant_text(message)
        return ""
    if isinstance(completion, bytes):
        return completion.decode("utf-8", "replace")
    return ""


def after_think(text: str) -> str:
    """The part after the last ``</think>`` when it holds anything, else the whole text.

    >>> after_think("<think>A or B?</think> Answer: B")
    ' Answer: B'
    >>> after_think("<think>Answer: B</think>")
    '<think>Answer: B</think>'
    """
    cut = text.rfind(_THINK_CLOSE)
    if cut >= 0:
        tail = text[cut + len(_THINK_CLOSE):]
        if tail and not tail.isspace():  # what tail.strip() tells, without copying the tail
            return tail
    return text


def last_tag_block(text: str, tag: str) -> tuple[str, int] | None:
    """Content and start offset of the last ``<tag>…</tag>`` (an unclosed last one runs to the end).

    >>> last_tag_block("<answer>A</answer> then <answer> B </answer>", "answer")
    (' B ', 32)
    >>> last_tag_block("no block", "answer") is None
    True
    """
    if "<" not in text:  # one memchr: far cheaper than an rfind of the tag
        return None
    open_tag, close_tag = _TAGS.get(tag) or (f"<{tag}>", f"</{tag}>")
    start = text.rfind(open_tag)
    if start < 0:
        return None
    body_start = start + len(open_tag)
    end = text.find(close_tag, body_start)
    return (text[body_start:] if end < 0 else text[body_start:end]), body_start


def all_tag_blocks(text: str, tag: str, limit: int = 64) -> list[str]:
    """Contents of every closed ``<tag>…</tag>`` block (at most ``limit``).

    >>> all_tag_blocks("<answer>A</answer><answer>B</answer>", "answer")
    ['A', 'B']
    """
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
    blocks: list[str] = []
    pos = 0
    while len(blocks) < limit:
        start = text.find(open_tag, pos)
        if start < 0:
            break
        end = text.find(close_tag, start)
        if end < 0:
            break
        blocks.append(text[start + len(open_tag):end])
        pos = end + len(close_tag)
    return blocks


def _balanced_from(text: str, open_brace: int) -> str | None:
    """Content of the ``{…}`` group opening at ``open_brace``; None when unbalanced."""
    depth = 0
    for i in range(open_brace, min(len(text), open_brace + 4000)):
        ch = text[i]
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[open_brace + 1:i]
    return None


def last_boxed(text: str) -> tuple[str, int] | None:
    """Content and offset of the last balanced ``\\boxed{…}`` (or ``\\fbox{…}``).

    >>> last_boxed(r"try \\boxed{1} then \\boxed{\\frac{1}{2}}")
    ('\\\\frac{1}{2}', 19)
    """
    if "\\" not in text:  # one memchr: far cheaper than the two rfinds
        return None
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


def all_boxed(text: str, limit: int = 64) -> list[str]:
    """Contents of every balanced ``\\boxed{…}`` in order (at most ``limit``).

    >>> all_boxed(r"\\boxed{A} and \\boxed{B}")
    ['A', 'B']
    """
    found: list[str] = []
    pos = 0
    while len(found) < limit:
        start = text.find("\\boxed{", pos)
        if start < 0:
            break
        inner = _balanced_from(text, start + 6)
        if inner is not None:
            found.append(inner)
        pos = start + 7
    return found


# A sentence ends at . ! ? (or their full-width forms) followed by whitespace; in a reversed line
# that gap reads whitespace then the punctuation.
_SENTENCE_GAP_REVERSED = re.compile(r"\s+[.!?。！？]")


def sentences_backwards(line: str):
    """``re.split(r"(?<=[.!?。！？])\\s+", line)`` last piece first, split only as far as it is read.

    >>> list(sentences_backwards("A. B! C"))
    ['C', 'B!', 'A.']
    """
    n, backwards, pos = len(line), line[::-1], 0
    while True:
        gap = _SENTENCE_GAP_REVERSED.search(backwards, pos)
        if gap is None:
            yield line[:n - pos]
            return
        yield line[n - gap.start():n - pos]
        pos = gap.end() - 1  # the punctuation ends the sentence before


_MARKUP_CHARS = re.compile(r"[*_`$#\\]")
_MARKUP = re.compile(r"\\text(?:bf|rm|tt)?\{([^{}]*)\}|\\mathrm\{([^{}]*)\}|[*_`$#]+")


def strip_markup(text: str) -> str:
    """Drop markdown emphasis, ``$`` and ``\\text{}`` wrappers, keeping the words.

    >>> strip_markup(r"**Answer:** $\\text{B}$")
    'Answer: B'
    """
    if not _MARKUP_CHARS.search(text):
        return text
    return _MARKUP.sub(lambda m: m.group(1) or m.group(2) or "", text)


def parse_json_field(value: Any) -> Any:
    """A dataset column that may hold JSON text: parsed value, the value itself, or None.

    >>> parse_json_field('{"answer": "B"}')
    {'answer': 'B'}
    >>> parse_json_field("{not json") is None
    True
    """
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value


# ---- lists of numbers in an answer (TIR-Bench index sets, jigsaw rows) ----------------------------

DIGITS = re.compile(r"\d+")
_INDEX_WORDS = re.compile(r"\b(?:patch(?:es)?|ind(?:ex|ices)|cells?|no\.|numbers?)\s*|#", re.IGNORECASE)
_INDEX_WORD_HINTS = ("patch", "ind", "cell", "no.", "number", "#")  # one is in every match
_BRACKET_LIST = re.compile(r"[\[{(]([\d\s,，;、]*\d[\d\s,，;、]*)[\]})]")
_INDEX_RUN = re.compile(r"\d+(?:\s*(?:,\s*and|,|，|、|;|and|&|\+)\s*\d+)*")
_ROW_LABEL = re.compile(r"\b(?:row|line)\s*\d+\s*(?:[:：=]|->|→|[-–—](?!\s*\d))|第\s*\d+\s*行\s*[:：]?",
                        re.IGNORECASE)
_ROW_LABEL_HINTS = ("row", "line")  # every _ROW_LABEL match holds one (or 第, not ASCII)
# Maximal runs of these characters (with brackets, then without): findall gives a run holding a
# digit, and "" for one without (the second branch eats it whole, so the scan stays linear)
_JIGSAW_CHARS = re.compile(r"([\d\s,，;、|\[\]()]*\d[\d\s,，;、|\[\]()]*)|[\s,，;、|\[\]()]+")
_OFFICIAL_JIGSAW_CHARS = re.compile(r"([\d\s,，]*\d[\d\s,，]*)|[\s,，]+")


def may_match(text: str, hints: tuple[str, ...]) -> bool:
    """False only when a case-insensitive regex needing one of these words cannot match: an ASCII
    text holding none of them (lowered). Non-ASCII text always may (IGNORECASE folds "ı" to "i").

    >>> may_match("Row 2, column 5", ("row",)), may_match("(2, 5)", ("row",))
    (True, False)
    """
    if not text.isascii():
        return True
    lowered = text.lower()
    for hint in hints:
        if hint in lowered:
            return True
    return False


def read_index_set(text: str) -> list[int] | None:
    """The LAST bracketed index list, else the last run of ≥ 2 indices, else the last index.

    >>> read_index_set("checked 1, 2; answer [7, 11, 12] (n=4, m=5)")
    [7, 11, 12]
    >>> read_index_set("Patches 7, 11, and 12 differ.")
    [7, 11, 12]
    """
    if may_match(text, _INDEX_WORD_HINTS):
        text = _INDEX_WORDS.sub("", text)
    lists = _BRACKET_LIST.findall(text)
    if lists:
        return [int(x) for x in DIGITS.findall(lists[-1])]
    runs = _INDEX_RUN.findall(text)
    multi = [r for r in runs if not r.isdigit()]  # a run with a separator holds >= 2 indices
    chosen = multi[-1] if multi else (runs[-1] if runs else None)
    return None if chosen is None else [int(x) for x in DIGITS.findall(chosen)]


def drop_row_labels(text: str) -> str:
    return _ROW_LABEL.sub(" ", text) if may_match(text, _ROW_LABEL_HINTS) else text


def read_jigsaw(text: str, n: int) -> list[int] | None:
    """The LAST run (digits, separators, brackets) holding exactly n² numbers, row labels dropped;
    else the last n² numbers.

    >>> read_jigsaw("Row 1: [2, 1]\\nRow 2: [4, 3]", 2)
    [2, 1, 4, 3]
    """
    total = n * n
    text = drop_row_labels(text)
    for runs in (_JIGSAW_CHARS, _OFFICIAL_JIGSAW_CHARS):  # with brackets first, then without
        for run in reversed(runs.findall(text)):
            if not run:  # no digit in it
                continue
            numbers = DIGITS.findall(run)
            if len(numbers) == total:
                return [int(x) for x in numbers]
    numbers = DIGITS.findall(text)
    if len(numbers) >= total:
        return [int(x) for x in numbers[-total:]]
    return None
