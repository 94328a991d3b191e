"""The one scoring entry every trainer adapter calls: ``score(data_source, response, gold)``.

``data_source`` names the benchmark; its aliases are resolved here and nowhere else
(``resolve_source``). ``gold`` is the scorer's info (THE gold shape): a mapping with

- tir_bench: ``answer`` (text or number) and, when known, the official item's ``task``, ``prompt``,
  ``meta_data``, ``image_1`` (the whole official record works as it is);
- mir: ``answer`` (the letter) or ``conclusion`` (MIR's text), optional ``options`` (the record's);
- disbench: ``answer``, the list of gold photo ids;
- imagemining: ``answer``, optional ``answer_zh`` and ``question`` (for the judge);
- any other benchmark: as its module in ``rewards/benchmarks/`` documents (its ``SCORER``).

What data loaders hand over is read as that shape (``gold_info``): a dict, JSON text of a dict,
or the bare answer (text, a number, or for DISBench a list, tuple, numpy array or JSON text of a
list). Anything else is a ``RewardInputError`` whose ``reason`` (``missing_source``,
``unknown_source``, ``bad_gold``) is what the adapters count as ``rewards/errors/<reason>``;
a bug inside a scorer raises its own exception (``scorer_error`` at the adapters). Nothing
here turns bad input into a 0.

>>> score("lookcloser/MIR", "Answer: B", '{"answer": "B"}')
1.0
>>> score("disbench", '<answer>["1"]</answer>', ("1", "2"))
0.6666666666666666
>>> score("gsm8k", "4", "4")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lookcloser.rewards.scoring.RewardInputError: unknown data_source 'gsm8k': lookcloser scores tir_bench, mir, \
disbench, imagemining...
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Mapping
from typing import Any

from lookcloser.rewards._text import completion_text
from lookcloser.rewards.benchmarks import ALIASES, SCORERS

logger = logging.getLogger(__name__)
# The benchmarks scored here: one module each in rewards/benchmarks/ (its name, aliases, gold check, scorer).
SOURCES = tuple(SCORERS)
REASONS = ("missing_source", "unknown_source", "bad_gold", "bad_label", "scorer_error")
ERRORS: Counter = Counter()  # rows each adapter could not score, by reason (this process)
RAISE_ENV = "LOOKCLOSER_REWARD_ERRORS"
_warned: set[str] = set()


class RewardInputError(ValueError):
    """A row no scorer can read; ``reason`` is one of ``REASONS`` (the metric's name)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def normalize_source(value: Any) -> str:
    """``"TIR-Bench"`` / ``"lookcloser/tir_bench"`` → ``"tir_bench"``; non-strings → ``""``.

    >>> normalize_source("lookcloser/TIR-Bench"), normalize_source(None)
    ('tir_bench', '')
    """
    value = _plain(value)
    if not isinstance(value, str):
        return ""
    name = value.strip().rsplit("/", 1)[-1].lower().replace("-", "_").replace(" ", "_")
    return ALIASES.get(name, name)


def resolve_source(value: Any) -> str:
    """The benchmark a ``data_source`` names, or ``RewardInputError`` (``missing_source``/``unknown_source``).

    >>> resolve_source("Image-Mining")
    'imagemining'
    """
    source = normalize_source(value)
    if not source:
        raise RewardInputError("missing_source", f"no data_source (got {value!r})")
    if source not in SOURCES:
        raise RewardInputError("unknown_source", f"unknown data_source {value!r}: lookcloser scores "
                                                 f"{', '.join(SOURCES)}")
    return source


def _plain(value: Any) -> Any:
    """numpy arrays and scalars (what parquet and pandas hand over), tuples and bytes as plain Python.

    Why by duck type: ``rewards`` does not import numpy; an ndarray/np.str_ has ``tolist``.
    """
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8", "replace")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _plain(value.tolist())
    return value


def bare_info(source: str, gold: Any) -> dict:
    """The info of a bare answer (text, number or id list); JSON text of a list is an id list for DISBench only."""
    if isinstance(gold, str):
        try:
            parsed = json.loads(gold)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict):
            return parsed
        if isinstance(parsed, list) and SCORERS[source].list_gold:
            return {"answer": parsed}
        if parsed is None and gold.lstrip()[:1] in ("{", "["):
            raise RewardInputError("bad_gold", f"{source}: gold {_shown(gold)} is not valid JSON")
    return {"answer": gold}


def gold_info(source: str, gold: Any, extra: Mapping | None = None) -> dict:
    """``gold`` in the one documented shape (module notes) for benchmark ``source``, with the fields
    ``extra`` (verl's ``extra_info``) adds; a ``RewardInputError`` (``bad_gold``) names what is wrong.

    >>> import json; gold_info("disbench", json.dumps(["3", 4]))
    {'answer': ['3', '4']}
    >>> gold_info("imagemining", "Red", {"answer_zh": "红色", "num_turns": 3})
    {'answer': 'Red', 'answer_zh': '红色'}
    >>> gold_info("mir", None)
    Traceback (most recent call last):
    ...
    lookcloser.rewards.scoring.RewardInputError: mir: gold is None; expected the answer letter, or a JSON object \
with `answer` or `conclusion`
    """
    gold = _plain(gold)
    info = dict(gold) if isinstance(gold, dict) else bare_info(source, gold)
    scorer = SCORERS[source]
    for key in scorer.extra_fields:
        if extra and key not in info and extra.get(key) is not None:
            info[key] = _plain(extra[key])
    if scorer.list_gold and isinstance(info.get("answer"), str):  # JSON text of the list inside an object
        parsed = bare_info(source, info["answer"]).get("answer")
        if isinstance(parsed, list):
            info["answer"] = parsed
    expected = scorer.check(info)
    if expected is not None:
        raise RewardInputError("bad_gold", _wrong(source, gold, expected))
    return info


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _wrong(source: str, gold: Any, expected: str) -> str:
    got = _shown(gold) if gold is None or isinstance(gold, (str, dict)) else f"{type(gold).__name__} {_shown(gold)}"
    return f"{source}: gold is {got}; expected {expected}"


def score_info(source: str, text: str, info: dict, mode: str = "strict", **judge: Any) -> float:
    """The benchmark's scorer on a checked ``info`` (from ``gold_info``); TIR-Bench in ``mode``."""
    return float(SCORERS[source].score(text, info, mode, **judge))


def score(data_source: Any, response: Any, gold: Any, *, mode: str = "strict", extra: Mapping | None = None,
          **judge: Any) -> float:
    """Score ``response`` (text, or a conversation: its last assistant message) against ``gold``.

    ``mode``: TIR-Bench's ``strict`` (the reward) or ``official`` (eval parity). ``judge``:
    ImageMining's LLM-judge options (``llm_judge=True``, ``base_url``, ``model``, ``timeout``).
    Bad input raises ``RewardInputError``; see the module notes.
    """
    source = resolve_source(data_source)
    return score_info(source, completion_text(response), gold_info(source, gold, extra), mode, **judge)


def errors_raise() -> bool:
    """Whether scorer bugs propagate (``LOOKCLOSER_REWARD_ERRORS=raise``, set by the test suite)."""
    return os.environ.get(RAISE_ENV, "").strip().lower() in ("raise", "1", "true")


def record_error(err: Exception, where: str) -> str:
    """An adapter's handling of a row it could not score: count it under its reason (returned),
    warn the first time each reason is seen. A scorer bug re-raises under ``LOOKCLOSER_REWARD_ERRORS=raise``."""
    reason = err.reason if isinstance(err, RewardInputError) else "scorer_error"
    if reason == "scorer_error" and errors_raise():
        raise err
    ERRORS[reason] += 1
    if reason not in _warned:
        _warned.add(reason)
        logger.warning("%s: %s: %s; such rows count in rewards/errors/%s (this warning is shown once per reason)",
                       where, reason, err if reason != "scorer_error" else f"{type(err).__name__}: {err}", reason)
    return reason
