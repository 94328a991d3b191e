"""TIR-Bench scoring (docs/formats.md §3): the official judge, a rule-based extractor, and two score modes.

- ``judge(item, extracted, response)``: the official per-item rule on an extracted answer.
- ``extract_answer(item, response)``: rule-based extraction (no LLM), see ``rewards.tir_extract``.
- ``score(item, response, mode)``: ``official`` = extract then ``judge`` (comparable with the
  paper); ``strict`` = the reward mode: no Levenshtein/prompt-walk rescue, no credit for hedging
  (several different final answers, every option/index/number listed), length caps.
"""

from __future__ import annotations

import functools
import re

from lookcloser.rewards._text import DIGITS, after_think, all_boxed, all_tag_blocks, last_boxed
from lookcloser.rewards.tir_extract import (
    NUMBER,
    PAIR,
    ROW_COL,
    STRONG_SOURCES,
    clean,
    distinct_letters,
    extract_span,
    extract_with_context,
    first_clause,
    item_facts,
    jigsaw_numbers_text,
    listed_letters,
    option_letters,
)
from lookcloser.rewards.tir_judge import (
    CHOICE_LETTERS,
    FIRST_PAIR,
    answer_type,
    item_task,
    jigsaw_difficulty,
    jigsaw_sequence,
    judge_choice,
    judge_float,
    judge_int,
    judge_jigsaw,
    judge_ocr,
    judge_spot_difference,
    judge_word_search,
    math_equivalent,
    ocr_answer,
)

TASKS = (  # the 13 tasks, for per-task reports
    "instrument", "color", "refcoco", "rotation_game", "math", "word_search", "visual_search", "ocr",
    "symbolic", "spot_difference", "contrast", "jigsaw", "maze",
)
STRICT_MAX_RESPONSE_CHARS = 32_000  # longer responses score 0 in strict mode
STRICT_MAX_ANSWER_CHARS = 300  # a final answer longer than this is not an answer
STRICT_MAX_NUMBERS = 8  # an answer paragraph with this many distinct numbers is a list, not an answer
_ALTERNATIVES = re.compile(r"[,;]|\bor\b|\\cup|\\pm")  # lists and alternatives in a math answer
_PARENTHETICAL = re.compile(r"\([^()]*\)|（[^（）]*）")
_GRID_SIZE = re.compile(r"\bn\s*(?:is|=)\s*(\d+)\s*,?\s*and\s+m\s*(?:is|=)\s*(\d+)", re.IGNORECASE)


def _answer(item: dict) -> str | None:
    answer = item.get("answer")
    if answer is None or isinstance(answer, (dict, list, bool)):
        return None if answer is None or isinstance(answer, bool) else str(answer)
    return str(answer)


def judge(item: dict, extracted: str | None, response: str = "") -> float:
    """Official TIR-Bench rule for one item on an extracted answer (docs/formats.md §3, quirks included).

    ``ocr`` judges the raw ``response`` (``extracted`` when no response is given). A missing
    answer scores 0. Unknown tasks are judged by answer type, like the "every other task" branch.

    >>> item = {"task": "refcoco", "answer": "A", "prompt": "A. 65%\\nB. 73%"}
    >>> judge(item, "Answer: C"), judge(item, "73%"), judge(item, "B")
    (1.0, 0.0, 0.0)
    >>> judge({"task": "instrument", "answer": 72}, "7 apples and 2 pears")
    1.0
    >>> judge({"task": "ocr", "answer": "x", "image_1": "data/ocr/160.jpg"}, None, "mobile")
    1.0
    """
    if not isinstance(item, dict):
        return 0.0
    answer = _answer(item)
    if answer is None:
        return 0.0
    task = item_task(item)
    if task == "ocr":
        text = response if isinstance(response, str) and response else (extracted or "")
        return judge_ocr(item, text if isinstance(text, str) else "")
    ext = extracted.replace("*", "").strip() if isinstance(extracted, str) else ""
    if task == "word_search":
        return judge_word_search(ext, answer)
    if task == "spot_difference":
        return judge_spot_difference(ext, answer)
    if task == "jigsaw":
        return judge_jigsaw(ext, answer, jigsaw_difficulty(item, official=True))
    kind = answer_type(answer)
    if kind == "alpha":
        prompt = item.get("prompt")
        return judge_choice(ext, answer, prompt if isinstance(prompt, str) else "")
    if kind == "int":
        return judge_int(ext, answer)
    if kind == "float":
        return judge_float(ext, answer)
    return 0.0


def extract_answer(item: dict, response: str) -> str:
    """The answer a response states, read by rules (no LLM), in the form the judge expects.

    >>> item = {"task": "refcoco", "answer": "A", "prompt": "A. 65%\\nB. 73%\\nC. 81%"}
    >>> extract_answer(item, "A looks too small; C too big. So the answer is **(B)**.")
    'B'
    >>> extract_answer({"task": "symbolic", "answer": "ACD"}, "B is false.\\nAnswer: A, C and D")
    'ACD'
    >>> extract_answer({"task": "word_search", "answer": "[3, 6]"}, "Not (2, 5). Final: <answer>(3, 6)</answer>")
    '[3, 6]'
    >>> extract_answer({"task": "instrument", "answer": "72"}, "20 ticks of 2 from 32... 答案是72°F")
    '72'
    """
    if not isinstance(item, dict) or not isinstance(response, str):
        return ""
    return extract_span(item, response)[0]


def score(item: dict, response: str, mode: str = "strict") -> float:
    """Extraction then judging: ``official`` (as ``judge``) or ``strict`` (reward mode), in [0, 1].

    >>> item = {"task": "rotation_game", "answer": "B", "prompt": "A. 10°\\nB. 355°\\nC. 40°"}
    >>> score(item, "Answer: 355°", "official"), score(item, "Answer: 355°", "strict")
    (1.0, 0.0)
    >>> score(item, "<answer>B</answer>"), score(item, "Answer: A, B or C", "strict")
    (1.0, 0.0)
    """
    if mode not in ("strict", "official"):  # a caller's mistake, not a policy's: say so
        raise ValueError(f"unknown mode {mode!r}: use 'strict' or 'official'")
    if not isinstance(item, dict) or not isinstance(response, str):
        return 0.0
    if mode == "official":  # a bug raises: rewards.trl_rewards is the boundary that catches and counts
        return judge(item, extract_answer(item, response), response)
    return _strict_score(item, response)


# ---- strict mode ------------------------------------------------------------------------------

def _final_answers_disagree(region: str) -> bool:
    """Several final answers (``<answer>`` blocks / boxes) that differ: hedging."""
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


def _answer_clause(span: str) -> str:
    """First line of a span: where strict mode looks for the answer."""
    return clean(span.lstrip().split("\n", 1)[0])


def _strict_number(span: str, answer: str, as_int: bool) -> float:
    clause = _answer_clause(span)
    without_asides = _PARENTHETICAL.sub(" ", clause)  # "72°F (about 22°C)" states one number
    if NUMBER.search(without_asides):
        clause = without_asides
    numbers = NUMBER.findall(clause)
    if len(numbers) == 1:
        try:
            value = float(numbers[0].replace(",", "").replace("−", "-"))
            return 1.0 if value == (int(answer) if as_int else float(answer)) else 0.0
        except (ValueError, OverflowError):
            return 0.0
    # LaTeX like \frac{3}{2}: math-verify, only for one expression (no lists, no alternatives)
    if "\\" in clause and len(numbers) <= 3 and not _ALTERNATIVES.search(clause):
        return 1.0 if math_equivalent(clause, answer) else 0.0
    return 0.0


@functools.lru_cache(maxsize=8192)
def _grid_indices(prompt: str) -> int | None:
    m = _GRID_SIZE.search(prompt)
    return int(m.group(1)) * int(m.group(2)) if m else None


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

    # Each kind checks the verdict first: a wrong answer scores 0 whatever the hedging checks say.
    if kind == "choice":
        if value != answer or answer not in CHOICE_LETTERS:
            return 0.0
        valid = option_letters(prompt)
        clause = first_clause(cleaned) if source in STRONG_SOURCES else span
        mentioned = distinct_letters(clause, valid)
        listed = listed_letters(context, valid) | mentioned
        if len(mentioned) >= 3 or len(listed) >= 3 or (len(valid) >= 2 and listed >= set(valid)):
            return 0.0  # several options offered
        if value not in mentioned and cleaned.strip("()[]{}<>").upper() != value:
            return 0.0  # option text instead of a letter: strict wants the letter
        return 1.0
    if kind == "multi":
        if not value or not value.isalpha() or not value.isupper():
            return 0.0
        if sorted(set(value)) != sorted(answer) or len(set(value)) != len(value):
            return 0.0
        valid = option_letters(prompt)
        if len(valid) >= 2 and listed_letters(context, valid) >= set(valid) > set(answer):
            return 0.0  # every option listed
        return 1.0
    if kind in ("int", "float"):
        if len(set(NUMBER.findall(context))) >= STRICT_MAX_NUMBERS:
            return 0.0  # a list of numbers, not an answer
        return _strict_number(span, answer, kind == "int")
    if kind == "pair":
        if answer_type(answer) != "other" or FIRST_PAIR.search(answer) is None:
            return 0.0
        verdict = judge_word_search(value, answer)
        if not verdict:
            return verdict
        clause = _answer_clause(span)
        pairs = {(int(a), int(b)) for a, b in PAIR.findall(clause)}
        pairs |= {tuple(int(g) for g in m.groups() if g is not None) for m in ROW_COL.finditer(clause)}
        if len(pairs) != 1 or len(set(PAIR.findall(context))) >= 3:  # several pairs listed
            return 0.0
        return verdict
    if kind == "set":
        verdict = judge_spot_difference(value, answer)
        if not verdict:
            return verdict
        listed = DIGITS.findall(context)
        if len(listed) > 400:
            return 0.0
        grid = _grid_indices(prompt)
        if grid and len(listed) >= grid:
            predicted = {int(x) for x in listed}
            if predicted.issuperset(range(1, grid + 1)) or predicted.issuperset(range(grid)):
                return 0.0  # every index listed
        return verdict
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


def _exact_override(item: dict) -> bool:
    """Strict mode applies the OCR answer overrides only to the files they were meant for."""
    image = item.get("image_1")
    name = image.rsplit("/", 1)[-1] if isinstance(image, str) else ""
    return name in ("60.jpg", "62.jpg")
