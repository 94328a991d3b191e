"""ImageMining scoring (docs/formats.md §5; no official scorer exists): normalized exact match.

Decisions, since upstream publishes none:
- The response's FINAL answer is judged, not the whole text: the last ``<answer>`` block, else the
  last ``\\boxed{}``, else the text after the last ``Answer:`` / ``答案：`` cue, else the last
  non-empty line. A long response that merely contains the answer somewhere gets no credit.
- Text normalisation: NFKC, case folded, a leading "the/a/an" dropped, every non-word character
  (punctuation, symbols, spaces) removed, thousands separators dropped; then exact equality.
- A short lead-in such as "The colour is" / "It is" / "答案是" before the answer is allowed.
- Numeric answers (a number with optional currency, scale word and unit: ``4700 mAh``, ``$3299``,
  ``30.679 billion yuan``, ``1944年``) match a response stating the same value rounded to the
  answer's decimals; units are not compared; scale words (billion, M, 亿, 万…) are applied.
- ``answer_zh`` is a second reference. ``(Pale/Light) purple`` accepts "pale purple", "light
  purple" and "purple"; any parenthetical may be left out.
- Optional LLM-judge recall (``llm_judge=True``) runs only when the rule score is 0.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from lookcloser.rewards._text import after_think, last_boxed, last_tag_block, strip_markup

_NON_WORD = re.compile(r"[\W_]+")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_ARTICLE = re.compile(r"^\s*(?:the|an?)\s+", re.IGNORECASE)
_CUE = re.compile(r"(?:final\s+answer|\banswer|最终答案|答案)\s*(?:is|是|为)?\s*[:：]?", re.IGNORECASE)
_LEAD_IN = re.compile(
    r"^\s*(?:(?:so|thus|therefore|hence)\s*,?\s*)?"
    r"(?:(?:the|its|it|this|that|they|he|she|there)\b[^.\n]{0,40}?\s(?:is|are|was|were|be|reads|says)\s+"
    r"|(?:答案|结果)?\s*(?:是|为)\s*)",
    re.IGNORECASE,
)
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "m": 1e6, "mn": 1e6, "billion": 1e9, "bn": 1e9,
           "b": 1e9, "trillion": 1e12, "万": 1e4, "亿": 1e8}
_NUMERIC = re.compile(
    r"^\s*(?:[$¥€£₹]|us\$|usd|rmb|cny)?\s*(?P<num>[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*"
    r"(?P<scale>thousand|million|billion|trillion|mn|bn|(?-i:[KMB])(?![A-Za-z])|万|亿)?\s*"
    r"(?P<unit>[%°‰]|[^\W\d_]+(?:\s+[^\W\d_]+){0,2})?\s*$",
    re.IGNORECASE,
)
_NUMBER_IN_TEXT = re.compile(
    r"(?<![\w.])(?P<num>[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s*"
    r"(?P<scale>thousand|million|billion|trillion|(?-i:[KMB])(?![A-Za-z])|万|亿)?",
    re.IGNORECASE,
)
_PARENTHETICAL = re.compile(r"[(（]([^()（）]*)[)）]")


def normalize(text: str) -> str:
    """Comparison form of a text answer.

    >>> normalize(" The  Atlantic-Declaration! "), normalize("《大西洋宣言》"), normalize("236,394,398")
    ('atlanticdeclaration', '大西洋宣言', '236394398')
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _THOUSANDS.sub("", _ARTICLE.sub("", text))
    return _NON_WORD.sub("", text)


@functools.lru_cache(maxsize=4096)
def answer_variants(answer: str) -> frozenset[str]:
    """Normalized accepted forms: the answer, without parentheticals, each ``(x/y)`` alternative.

    >>> sorted(answer_variants("(Pale/Light) purple"))
    ['lightpurple', 'palelightpurple', 'palepurple', 'purple']
    """
    forms = {answer}
    for m in list(_PARENTHETICAL.finditer(answer))[:4]:
        options = [o for o in re.split(r"\s*[/／|]\s*", m.group(1)) if o.strip()]
        snapshot = tuple(forms)  # forms grows inside the loop
        for form in snapshot:
            if m.group(0) in form:
                forms.add(form.replace(m.group(0), " "))
                if len(options) > 1:
                    forms.update(form.replace(m.group(0), f" {o} ") for o in options)
    return frozenset(v for v in (normalize(f) for f in forms) if v)


@functools.lru_cache(maxsize=4096)
def _numeric_answer(answer: str) -> tuple[float, int, float] | None:
    """(number, decimals, scale) when the answer is a number with optional unit."""
    m = _NUMERIC.match(unicodedata.normalize("NFKC", answer))
    if m is None:
        return None
    raw = m.group("num").replace(",", "").replace("−", "-")
    decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
    scale = _SCALES.get((m.group("scale") or "").lower(), 1.0)
    return float(raw), decimals, scale


def _stated_numbers(text: str) -> list[tuple[float, float | None]]:
    out = []
    for m in _NUMBER_IN_TEXT.finditer(text):
        value = float(m.group("num").replace(",", "").replace("−", "-"))
        scale = m.group("scale")
        out.append((value, _SCALES.get(scale.lower()) if scale else None))
    return out


def _numeric_match(said: str, answer: str) -> bool | None:
    """None when the answer is not numeric; else whether the final answer states its value."""
    parsed = _numeric_answer(answer)
    if parsed is None:
        return None
    number, decimals, scale = parsed
    text = unicodedata.normalize("NFKC", said)
    stated = _stated_numbers(text)
    # one number in a short answer ("It happened in 1944.", "8 people"); lists get nothing
    if len(stated) != 1 or len(text.split()) > 12:
        return False
    value, said_scale = stated[0]
    candidates = [value * said_scale / scale] if said_scale else [value, value / scale]
    return any(abs(round(c, decimals) - number) <= 1e-9 * max(1.0, abs(number)) for c in candidates)


def final_answer(response: str, lines: int = 1) -> str:
    """The final answer text of a response (see the module notes); without a block or a cue, the
    last ``lines`` non-empty lines (a gold answer that runs over several lines is stated so).

    >>> final_answer("I searched.\\nThe logo is red.\\n<answer>Red</answer>")
    'Red'
    >>> final_answer("Reasoning...\\nFinal answer: Pure black"), final_answer("x\\nStage 1:\\n3x3", lines=2)
    ('Pure black', 'Stage 1:\\n3x3')
    """
    if not isinstance(response, str):
        return ""
    region = after_think(response)
    block = last_tag_block(region, "answer")
    if block is not None and block[0].strip():
        inner = last_boxed(block[0])
        return strip_markup(inner[0] if inner else block[0]).strip()
    boxed = last_boxed(region)
    if boxed is not None:
        return strip_markup(boxed[0]).strip()
    tail = region[-4000:]
    cue = None
    for cue in _CUE.finditer(tail):
        pass
    if cue is not None:
        rest = strip_markup(tail[cue.end():]).strip(" \t*:：")
        if rest.strip():
            return rest.strip().split("\n\n", 1)[0].strip()
    found = [line for line in tail.splitlines() if line.strip()]
    return strip_markup("\n".join(found[-max(1, lines):])).strip() if found else ""


@functools.lru_cache(maxsize=4096)
def reference_forms(reference: str) -> tuple[frozenset[str], int]:
    """Accepted normalized forms of a gold answer, and its number of non-empty lines.

    Some gold answers are sentences with their own cue ("Final Answer:\\n…", "The answer is
    Shanghai, …"): stated as is, the response's final answer is what follows that cue, so the
    gold's own final answer (read the same way) is accepted too.

    >>> sorted(reference_forms("The answer is Shanghai.")[0])
    ['answerisshanghai', 'shanghai']
    """
    k = sum(1 for line in reference.splitlines() if line.strip())
    return answer_variants(reference) | answer_variants(final_answer(reference, lines=k)), k


def rule_score(response: str, answer: str, answer_zh: str | None = None) -> float:
    """Normalized exact match of the final answer against ``answer`` or ``answer_zh``.

    >>> rule_score("<answer>Light purple</answer>", "(Pale/Light) purple")
    1.0
    >>> rule_score("Answer: 30,679,000,000 yuan", "30.679 billion yuan"), rule_score("答案是8", "8", "8个")
    (1.0, 1.0)
    """
    said = final_answer(response)
    if not said or len(said) > 2000:
        return 0.0
    forms = {said, _LEAD_IN.sub("", said, count=1)}
    for reference in (answer, answer_zh):
        if not isinstance(reference, str) or not reference.strip():
            continue
        numeric = _numeric_match(_LEAD_IN.sub("", said, count=1), reference)
        if numeric is not None:
            if numeric:
                return 1.0
            continue
        variants, lines = reference_forms(reference)
        if any(normalize(f) in variants for f in forms):
            return 1.0
        if lines > 1 and normalize(final_answer(response, lines)) in variants:
            return 1.0  # a multi-line gold answer stated without a cue: its last lines
    return 0.0


def score(response: str, answer: str, answer_zh: str | None = None, *, question: str | None = None,
          llm_judge: bool = False, base_url: str | None = None, model: str | None = None,
          timeout: float = 20.0) -> float:
    """ImageMining reward in [0, 1]: the rule score, then (opt-in) an LLM judge when it is 0.

    >>> score("The answer is:\\nRed", "Red"), score("Blue? Red? Green?", "Red")
    (1.0, 0.0)
    """
    value = rule_score(response, answer, answer_zh)  # a bug raises: rewards.trl_rewards is the boundary
    if value > 0 or not llm_judge or not isinstance(response, str) or not isinstance(answer, str):
        return value
    from lookcloser.rewards.llm_judge import judge_answer

    verdict = judge_answer(response, answer, question, base_url=base_url, model=model, timeout=timeout)
    return 1.0 if verdict else value
