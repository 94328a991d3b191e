"""Text helpers shared by the scorers: completion text, answer blocks, boxed content, answer cues,
lists of numbers.

Every helper is total: it never raises on a str.
"""

from __future__ import annotations

import json
import re
from typing import Any

from lookcloser.rewards.turn_markers import last_turn_start

_THINK_CLOSE = "</think>"


def message_text(content: Any, image: str | None = None, sep: str = "\n") -> str:
    """Text of a chat message ``content``: a str, or a list of ``{"type": "text"}`` blocks joined with
    ``sep``; an image block becomes ``image`` (None: skipped).

    >>> message_text([{"type": "image"}, {"type": "text", "text": "B"}])
    'B'
    >>> message_text([{"type": "image", "image": None}, {"type": "text", "text": "What?"}], "<image>", "")
    '<image>What?'
    >>> message_text(None)
    ''
    """
    if isinstance(content, str):
        return content
    blocks = [content] if isinstance(content, dict) else content if isinstance(content, list) else []
    parts = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "image" and image is not None:
            parts.append(image)
        elif isinstance(block, dict) and isinstance(block.get("text"), str) and block.get("type", "text") == "text":
            parts.append(block["text"])
    return sep.join(parts)


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


_TOOL_RESPONSE_END = "</tool_response>"


def final_turn_text(decoded: str) -> str:
    """The final assistant turn of a rollout decoded to one string (verl's ``solution_str``, OpenRLHF's
    response), so that tool output never reaches the scorer:

    - with the chat template's markers kept: the text after the last assistant-turn start of any
      family's style (``rewards.turn_markers``: ``<|im_start|>assistant``, ``<start_of_turn>model``,
      ``Assistant:``), up to its end marker (``<|im_end|>``, ``<end_of_turn>``, ``<end_of_utterance>``);
    - with them skipped (verl decodes with ``skip_special_tokens=True``): the text after the last
      ``</tool_response>`` (how Qwen/Hermes templates wrap every tool result), less the ``assistant``
      role line the template leaves there;
    - a single-turn rollout (neither found): the whole text, less a trailing end marker.

    >>> final_turn_text("call crop\\nuser\\n<tool_response>\\nB B B\\n</tool_response>\\nassistant\\nAnswer: C")
    'Answer: C'
    >>> final_turn_text("x<|im_end|>\\n<|im_start|>assistant\\n<answer>B</answer><|im_end|>")
    '<answer>B</answer>'
    >>> final_turn_text("<start_of_turn>model\\nAnswer: B<end_of_turn>\\n")
    'Answer: B'
    """
    start, style = last_turn_start(decoded)
    if start >= 0:
        text = decoded[start:].lstrip("\n")
    else:
        cut = decoded.rfind(_TOOL_RESPONSE_END)
        text = decoded if cut < 0 else decoded[cut + len(_TOOL_RESPONSE_END):]
        if cut >= 0:
            head, _, rest = text.lstrip().partition("\n")
            text = rest if head.strip() == "assistant" else text.lstrip()
    for marker in style.ends:
        end = text.find(marker)
        text = text if end < 0 else text[:end]
    return text


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
        if tail.strip():
            return tail
    return text


def last_tag_block(text: str, tag: str) -> tuple[str, int] | None:
    """Content and start offset of the last ``<tag>…</tag>`` (an unclosed last one runs to the end).

    >>> last_tag_block("<answer>A</answer> then <answer> B </answer>", "answer")
    (' B ', 32)
    >>> last_tag_block("no block", "answer") is None
    True
    """
    open_tag, close_tag = f"<{tag}>", f"</{tag}>"
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


_MARKUP = re.compile(r"\\text(?:bf|rm|tt)?\{([^{}]*)\}|\\mathrm\{([^{}]*)\}|[*_`$#]+")


def strip_markup(text: str) -> str:
    """Drop markdown emphasis, ``$`` and ``\\text{}`` wrappers, keeping the words.

    >>> strip_markup(r"**Answer:** $\\text{B}$")
    'Answer: B'
    """
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


# ---- answer cues ---------------------------------------------------------------------------------
# A cue is where a response states its answer: "Answer:", "the answer is", "Final answer", "the
# correct option is", "I choose", "B is correct", "答案是", "故选". Every cue holds one of these
# keywords: they are found with one literal regex and the cue's forms are tried around each, last
# keyword first (one case-insensitive regex of every form run over the response costs ~5x more).
_CUE_WORD = re.compile(r"answer|option|choice|choose|pick|select|go with|correct|right|best|答案|选")
_BE = r"(?:is|are|would\s+be|should\s+be|will\s+be|must\s+be)\b"
_LETTER_IS = r"(?<![A-Za-z0-9'’])([A-J])\)?\s+(?:is|would\s+be)\s+(?:the\s+)?"
LETTER_CUE = re.compile(_LETTER_IS + r"(?:correct|right|best|answer)\b")  # "B is correct"
_LETTER_BEFORE = re.compile(_LETTER_IS + r"\Z")
_QUALIFIER_BEFORE = re.compile(r"(?<![a-z])(?:final|correct|right|best|your|my)\s+\Z")  # "final answer"
_PRONOUN_BEFORE = re.compile(r"(?<![a-z])i\s+\Z")  # "I choose"
_OPTIONAL_SEPARATOR = re.compile(r"s?(?:\s+" + _BE + r")?(?:\s*[:：=\-–—])?")
_REQUIRED_SEPARATOR = re.compile(r"s?[ \t]*(?:\*\*|__)?[ \t]*(?:" + _BE + r"|[:：=\-–—]|\n)")  # "answer is", "Answer:"
_ZH_SEPARATOR = re.compile(r"\s*(?:应该|应)?\s*(?:是|为|[:：])?")


def _cue_at(text: str, lowered: str, word: str, at: int) -> tuple[int, int, str | None] | None:
    """``(start, end, letter)`` of the cue built around keyword ``word`` at ``at``, or None."""
    after = at + len(word)
    if word == "答案":
        start = at - 2 if lowered[max(0, at - 2):at] in ("最终", "正确") else at
        return start, _ZH_SEPARATOR.match(lowered, after).end(), None
    if word == "选":  # 故选 / 应选 B; not 选项 (option) nor 选择题 (multiple choice)
        if lowered.startswith(("项", "择题"), after):
            return None
        return (at - 1 if at and lowered[at - 1] in "故应" else at), after, None
    if at and lowered[at - 1].isalnum():  # inside a longer word ("reanswer", "upright")
        return None
    before = max(0, at - 32)
    if word in ("answer", "option", "choice"):
        qualifier = _QUALIFIER_BEFORE.search(lowered, before, at)
        if qualifier:
            return qualifier.start(), _OPTIONAL_SEPARATOR.match(lowered, after).end(), None
    if word in ("answer", "correct", "right", "best"):
        letter = _LETTER_BEFORE.search(text, before, at)
        if letter:
            return letter.start(), after, letter.group(1)
    if word == "answer":
        separator = _REQUIRED_SEPARATOR.match(lowered, after)
        return (at, separator.end(), None) if separator else None
    if word in ("choose", "pick", "select", "go with"):
        pronoun = _PRONOUN_BEFORE.search(lowered, before, at)
        return (pronoun.start(), after, None) if pronoun else None
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
    if len(lowered) != len(text):  # a few characters ("İ") grow when lowered: keep the offsets
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    for word in reversed(list(_CUE_WORD.finditer(lowered))):
        cue = _cue_at(text, lowered, word.group(), word.start())
        if cue is not None:
            return cue
    return None


# ---- lists of numbers in an answer (TIR-Bench index sets, jigsaw rows) ----------------------------

DIGITS = re.compile(r"\d+")
_INDEX_WORDS = re.compile(r"\b(?:patch(?:es)?|ind(?:ex|ices)|cells?|no\.|numbers?)\s*|#", re.IGNORECASE)
_BRACKET_LIST = re.compile(r"[\[{(]([\d\s,，;、]*\d[\d\s,，;、]*)[\]})]")
_INDEX_RUN = re.compile(r"\d+(?:\s*(?:,\s*and|,|，|、|;|and|&|\+)\s*\d+)*")
_ROW_LABEL = re.compile(r"\b(?:row|line)\s*\d+\s*(?:[:：=]|->|→|[-–—](?!\s*\d))|第\s*\d+\s*行\s*[:：]?",
                        re.IGNORECASE)
_JIGSAW_RUN = re.compile(r"[\d\s,，;、|\[\]()]+")  # digits with separators and brackets
_OFFICIAL_JIGSAW_RUN = re.compile(r"[\d\s,，]+")  # what the official judge reads as one run


def read_index_set(text: str) -> list[int] | None:
    """The LAST bracketed index list, else the last run of ≥ 2 indices, else the last index.

    >>> read_index_set("checked 1, 2; answer [7, 11, 12] (n=4, m=5)")
    [7, 11, 12]
    >>> read_index_set("Patches 7, 11, and 12 differ.")
    [7, 11, 12]
    """
    text = _INDEX_WORDS.sub("", text)
    lists = _BRACKET_LIST.findall(text)
    if lists:
        return [int(x) for x in DIGITS.findall(lists[-1])]
    runs = _INDEX_RUN.findall(text)
    multi = [r for r in runs if len(DIGITS.findall(r)) >= 2]
    chosen = multi[-1] if multi else (runs[-1] if runs else None)
    return None if chosen is None else [int(x) for x in DIGITS.findall(chosen)]


def drop_row_labels(text: str) -> str:
    """Row labels ("Row 2:", "第2行") replaced by a space.

    >>> drop_row_labels("Row 1: 2 1")
    '  2 1'
    """
    return _ROW_LABEL.sub(" ", text)


def read_jigsaw(text: str, n: int) -> list[int] | None:
    """The LAST run (digits, separators, brackets) holding exactly n² numbers, row labels dropped;
    else the last n² numbers.

    >>> read_jigsaw("Row 1: [2, 1]\\nRow 2: [4, 3]", 2)
    [2, 1, 4, 3]
    """
    total = n * n
    text = drop_row_labels(text)
    for runs in (_JIGSAW_RUN, _OFFICIAL_JIGSAW_RUN):  # with brackets first, then without
        for run in reversed(runs.findall(text)):
            numbers = DIGITS.findall(run)
            if len(numbers) == total:
                return [int(x) for x in numbers]
    numbers = DIGITS.findall(text)
    if len(numbers) >= total:
        return [int(x) for x in numbers[-total:]]
    return None
