"""TRL-style reward functions: ``f(completions, **dataset_columns) -> list[float | None]``.

Column contract (GRPO datasets): ``data_source`` names the benchmark (one of ``rewards.benchmarks.SCORERS``:
``tir_bench``, ``mir``, ``disbench``, ``imagemining``...); ``reward_info`` is the gold in the one shape of
``rewards.scoring`` (JSON text: the one form a mixed data set can hold; a dict or the bare
answer is read too). A benchmark reward returns None for rows of another benchmark. A row no
scorer can read (no or an unknown ``data_source``, a gold that does not parse) also gets None, and
counts as ``rewards/errors/<reason>`` (sent through TRL's ``log_metric`` keyword, kept in
``rewards.scoring.ERRORS``) with a warning the first time: TRL then leaves it out, and the metric
says so. ``train/grpo.py`` refuses such a data set before step 1 (``check_reward_rows``).
Completions may be strings or conversations (scored on the last assistant message).

Metrics: the benchmark rewards (strict mode) send each row's score through TRL's ``log_metric``
keyword as ``accuracy/<benchmark>`` and ``accuracy/<benchmark>/<task>`` while they score, so that
a trainer logs accuracy without scoring the rows again.

Errors: the scorers let their bugs raise; this module is the boundary. A row whose scoring raises
gets None (TRL leaves it out), counts in ``rewards/<name>/errors`` (sent through TRL's
``log_metric`` keyword, and kept in ``ERROR_COUNTS``) and logs one warning per reward. With
``LOOKCLOSER_REWARD_ERRORS=raise`` (the test suite sets it) the error propagates instead.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from lookcloser.rewards import scoring
from lookcloser.rewards._text import completion_text
from lookcloser.rewards.benchmarks import SCORERS
from lookcloser.rewards.format_and_tools import format_score, overlong_penalty, tool_use_bonus
from lookcloser.rewards.scoring import RAISE_ENV, RewardInputError, errors_raise, normalize_source

logger = logging.getLogger(__name__)
RewardFunc = Callable[..., list]
CORRECT_THRESHOLD = 1.0  # tool_use: "correct" means full credit (fractional tasks included)
_warned: set[str] = set()
ERROR_COUNTS: Counter = Counter()  # rows whose scoring raised, by reward name (this process)
__all__ = ["RAISE_ENV", "REGISTRY", "errors_raise", "get_reward_funcs", "normalize_source", "score_row"]


def _scorer_error(name: str, err: Exception) -> None:
    """The boundary's handling of a scorer that raised: re-raise under tests, else count and warn once."""
    if errors_raise():
        raise err
    ERROR_COUNTS[name] += 1
    _warn_once(f"error:{name}", f"reward {name!r} raised {type(err).__name__}: {err}; such rows get None and "
                                f"count in rewards/{name}/errors (this warning is shown once)")


def _guarded(name: str, func: Callable, *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``, or None when it raised (the boundary's handling, see the module notes)."""
    try:
        return func(*args, **kwargs)
    except Exception as err:  # noqa: BLE001 - the reward boundary: counted, warned, re-raised under tests
        _scorer_error(name, err)
        return None


def _log_accuracy(columns: dict, i: int, source: str, info: dict, score: float | None) -> None:
    """``accuracy/<source>`` and ``accuracy/<source>/<task>`` of row ``i`` through TRL's ``log_metric``."""
    log_metric = columns.get("log_metric")
    if score is None or not callable(log_metric):
        return
    log_metric(f"accuracy/{source}", float(score))
    task = _column(columns, "task", i) or info.get("task") or info.get("subtask")
    if isinstance(task, str) and task:
        log_metric(f"accuracy/{source}/{task}", float(score))


def _log_errors(name: str, columns: dict, before: int, reasons: Counter | None = None) -> None:
    log_metric = columns.get("log_metric")  # TRL >= 1.x passes it to reward functions
    if callable(log_metric):
        log_metric(f"rewards/{name}/errors", float(ERROR_COUNTS[name] - before))
        for reason, count in sorted((reasons or {}).items()):
            log_metric(f"rewards/errors/{reason}", float(count))


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message)


def _column(columns: dict, name: str, i: int) -> Any:
    values = columns.get(name)
    if isinstance(values, (list, tuple)) and i < len(values):
        return values[i]
    return None


def _checked_row(columns: dict, i: int, reasons: Counter, only: str | None = None) -> tuple[str, dict] | None:
    """Row ``i``'s benchmark and gold info, or None: a row of another benchmark than ``only`` (silently),
    or one no scorer can read (counted in ``reasons`` and ``rewards.scoring.ERRORS``, warned once)."""
    try:
        source = scoring.resolve_source(_column(columns, "data_source", i))
        if only is not None and source != only:
            return None
        return source, scoring.gold_info(source, _column(columns, "reward_info", i))
    except RewardInputError as err:
        reasons[scoring.record_error(err, f"row {i}")] += 1
        return None


def score_row(source: str, text: str, info: dict, tir_mode: str = "strict", name: str = "accuracy",
              **judge: Any) -> float | None:
    """Benchmark score of one completion text on a checked ``info`` (``rewards.scoring.gold_info``), or
    None when the scorer raised (counted under ``name``, see the module notes).

    >>> score_row("mir", "Answer: B", {"answer": "B"})
    1.0
    """
    try:
        return scoring.score_info(source, text, info, tir_mode, **judge)
    except Exception as err:  # noqa: BLE001 - the reward boundary: counted, warned, re-raised under tests
        _scorer_error(name, err)
        return None


def _benchmark_reward(name: str, only: str | None, tir_mode: str = "strict", **judge: Any) -> RewardFunc:
    def reward(completions: list, **columns: Any) -> list[float | None]:
        before, reasons = ERROR_COUNTS[name], Counter()
        out: list[float | None] = []
        for i, completion in enumerate(completions or []):
            row = _checked_row(columns, i, reasons, only)
            if row is None:
                out.append(None)
                continue
            source, info = row
            value = score_row(source, completion_text(completion), info, tir_mode, name=name, **judge)
            if tir_mode == "strict":  # the official mode is for eval parity, not the training metric
                _log_accuracy(columns, i, source, info, value)
            out.append(value)
        _log_errors(name, columns, before, reasons)
        return out

    return reward


def _named(name: str, func: RewardFunc, doc: str) -> RewardFunc:
    func.__name__ = func.__qualname__ = name  # TRL logs rewards under __name__
    func.__doc__ = doc
    return func


def format_reward(completions: list, **columns: Any) -> list[float]:
    """1.0 for ``<think>…</think>`` then one answer block (see ``format_score``).

    >>> format_reward(["<think>x</think><answer>B</answer>", "B"])
    [1.0, 0.0]
    """
    before = ERROR_COUNTS["format"]
    out = [_guarded("format", lambda c: format_score(completion_text(c)), c) for c in (completions or [])]
    _log_errors("format", columns, before)
    return out


def make_tool_use_reward(cap: int = 1, threshold: float = CORRECT_THRESHOLD) -> RewardFunc:
    """Tool bonus: successful tool results (capped) when the row's benchmark score ≥ threshold.

    >>> f = make_tool_use_reward()
    >>> conv = [{"role": "tool", "content": "crop ok"}, {"role": "assistant", "content": "Answer: B"}]
    >>> f([conv, conv], data_source=["mir", "mir"], reward_info=['{"answer": "B"}', '{"answer": "C"}'])
    [1.0, 0.0]
    """
    def tool_use(completions: list, **columns: Any) -> list[float | None]:
        before, reasons = ERROR_COUNTS["tool_use"], Counter()
        out: list[float | None] = []
        for i, completion in enumerate(completions or []):
            row = _checked_row(columns, i, reasons)
            value = None if row is None else score_row(row[0], completion_text(completion), row[1], name="tool_use")
            out.append(None if value is None
                       else _guarded("tool_use", tool_use_bonus, completion, value >= threshold, cap))
        _log_errors("tool_use", columns, before, reasons)
        return out

    return _named("tool_use", tool_use, make_tool_use_reward.__doc__.split("\n")[0])


def _length(completion: Any, ids: Any) -> tuple[int, str]:
    if isinstance(ids, (list, tuple)):
        return len(ids), "tokens"
    return len(completion_text(completion)), "chars"


def make_overlong_reward(max_length: int = 4096, buffer: int = 1024, chars_per_token: int = 4) -> RewardFunc:
    """DAPO overlong penalty on token counts (``completion_ids``), else on characters with the
    limits scaled by ``chars_per_token``.

    >>> f = make_overlong_reward(max_length=10, buffer=4)
    >>> f(["a", "b"], completion_ids=[[1] * 6, [1] * 8])
    [0.0, -0.5]
    """
    def row(completion: Any, row_ids: Any) -> float:
        length, unit = _length(completion, row_ids)
        scale = 1 if unit == "tokens" else chars_per_token
        return overlong_penalty(length, max_length * scale, buffer * scale)

    def overlong(completions: list, **columns: Any) -> list[float | None]:
        before = ERROR_COUNTS["overlong"]
        ids = columns.get("completion_ids")
        out = [_guarded("overlong", row, completion, ids[i] if isinstance(ids, (list, tuple)) and i < len(ids) else None)
               for i, completion in enumerate(completions or [])]
        _log_errors("overlong", columns, before)
        return out

    return _named("overlong", overlong, make_overlong_reward.__doc__.split("\n")[0])


def make_judged_reward(name: str, llm_judge: bool = False, **judge_options: Any) -> RewardFunc:
    """The reward of a benchmark whose scorer takes an LLM judge (``Scorer.judged``: ImageMining), optionally with
    the judge's recall (``base_url``, ``model``, ``timeout``).

    >>> make_judged_reward("imagemining")(["<answer>Red</answer>"], data_source=["imagemining"],
    ...                                   reward_info=[{"answer": "Red"}])
    [1.0]
    """
    if llm_judge:
        # here, not at the top: the judge's HTTP client is an optional dependency
        from lookcloser.rewards.llm_judge import require_client

        require_client()  # a missing dependency is one clear error here, not a silent rule score later
    return _named(name, _benchmark_reward(name, name, llm_judge=llm_judge, **judge_options), SCORERS[name].reward_doc)


def _benchmark_rewards() -> dict[str, RewardFunc]:
    """One reward per benchmark of ``rewards.benchmarks.SCORERS`` (a judged one's with its optional judge), and
    one per extra scoring mode a scorer names (``<name>_<mode>``)."""
    out: dict[str, RewardFunc] = {}
    for name, scorer in SCORERS.items():
        out[name] = (make_judged_reward(name) if scorer.judged
                     else _named(name, _benchmark_reward(name, name), scorer.reward_doc))
        for mode, doc in scorer.modes:
            out[f"{name}_{mode}"] = _named(f"{name}_{mode}", _benchmark_reward(f"{name}_{mode}", name, mode), doc)
    return out


REGISTRY: dict[str, RewardFunc] = {
    **_benchmark_rewards(),
    "accuracy": _named("accuracy", _benchmark_reward("accuracy", None), "Benchmark score chosen by data_source."),
    "format": _named("format", format_reward, format_reward.__doc__),
    "tool_use": make_tool_use_reward(),
    "overlong": make_overlong_reward(),
}


def get_reward_funcs(names: list[str], tool_bonus_cap: int = 1,
                     max_completion_length: int | None = None) -> list[RewardFunc]:
    """Reward functions by registry name (callables pass through), for ``GRPOTrainer(reward_funcs=…)``,
    built with the run's settings: ``tool_use`` pays ``min(tool results, tool_bonus_cap) / cap``;
    with ``max_completion_length`` (tokens), ``overlong`` is DAPO's soft penalty sized to it (0 up to
    3/4 of it, -1 at the end), else the registry's default (4096 tokens, 1024 of buffer).

    >>> [f.__name__ for f in get_reward_funcs(["tir_bench", "format", "tool_use"])]
    ['tir_bench', 'format', 'tool_use']
    >>> get_reward_funcs(["overlong"], max_completion_length=8)[0](["a"], completion_ids=[[0] * 7])
    [-0.5]
    """
    out = []
    for name in names:
        if callable(name):
            out.append(name)
        elif name == "tool_use":
            out.append(make_tool_use_reward(cap=tool_bonus_cap))
        elif name == "overlong" and max_completion_length:
            length = max_completion_length
            out.append(make_overlong_reward(max_length=length, buffer=max(1, length // 4)))
        elif name in REGISTRY:
            out.append(REGISTRY[name])
        else:
            raise KeyError(f"unknown reward {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return out
