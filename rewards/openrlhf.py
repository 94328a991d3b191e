"""OpenRLHF reward file: pass this file's path as ``--reward.remote_url`` (OpenRLHF 0.11; older releases:
``--remote_rm_url``); docs/rewards.md, "OpenRLHF".

OpenRLHF 0.11.2 loads it with ``importlib`` (``openrlhf.utils.agent.SingleTurnAgentExecutor``) and
calls ``reward_func(queries, prompts, labels)`` for each rollout: ``queries`` are prompt +
response decoded with the special tokens kept, ``prompts`` the chat-templated prompts,
``labels`` the data set's ``--data.label_key`` column. A label is JSON text (or a dict) of
``{"data_source": "mir", "reward_info": <the gold, rewards.scoring's shape>}``.

The answer is the response's final assistant turn (``rewards._text.final_turn_text``: the prompt
is cut off, ``<|im_end|>`` dropped, tool output never scored). A label no scorer can read scores
0.0, never None (OpenRLHF would crash later in ``compute_advantages_and_returns``), counts in
``rewards.scoring.ERRORS`` with a warning the first time, and shows in OpenRLHF's logs as the
``extra_logs`` metric ``rewards/errors/<reason>``. ``score_label`` is the torch-free core;
``reward_func`` wraps it in the tensors OpenRLHF expects (torch is imported there only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lookcloser.rewards import scoring
from lookcloser.rewards._text import final_turn_text
from lookcloser.rewards.scoring import REASONS, RewardInputError


def _label(label: Any) -> tuple[Any, Any]:
    """``(data_source, gold)`` of a label, or ``RewardInputError`` (``bad_label``)."""
    parsed = label
    if isinstance(label, (str, bytes)):
        try:
            parsed = json.loads(label)
        except (ValueError, RecursionError):
            parsed = None
    if not isinstance(parsed, Mapping) or "data_source" not in parsed or "reward_info" not in parsed:
        shown = repr(label) if len(repr(label)) <= 80 else repr(label)[:77] + "..."
        raise RewardInputError("bad_label", f"label {shown} is not JSON of "
                                            '{"data_source": ..., "reward_info": ...}')
    return parsed["data_source"], parsed["reward_info"]


def score_label(query: str, prompt: str, label: Any) -> tuple[float, str | None]:
    """The score of one rollout and the reason it could not be scored (None when it was).

    >>> label = '{"data_source": "mir", "reward_info": {"answer": "B"}}'
    >>> score_label("<|im_start|>user\\nWhich?<|im_end|>\\n<|im_start|>assistant\\nAnswer: B<|im_end|>",
    ...             "<|im_start|>user\\nWhich?<|im_end|>\\n<|im_start|>assistant\\n", label)
    (1.0, None)
    >>> score_label("x", "", "B")
    (0.0, 'bad_label')
    """
    response = query[len(prompt):] if isinstance(query, str) and isinstance(prompt, str) and prompt \
        and query.startswith(prompt) else query
    try:
        source, gold = _label(label)
        text = final_turn_text(response) if isinstance(response, str) else ""
        return scoring.score(source, text, gold), None
    except Exception as err:  # noqa: BLE001 - the adapter's boundary: counted and warned (scorer bugs re-raise under tests)
        return 0.0, scoring.record_error(err, "OpenRLHF reward_func")


def reward_func(queries: list, prompts: list, labels: list, **kwargs: Any) -> dict:
    """OpenRLHF's entry: ``{"rewards", "scores", "extra_logs"}`` as float tensors, one value per query."""
    import torch  # only here: the scoring core stays torch-free

    results = [score_label(q, p, lab) for q, p, lab in zip(queries, prompts, labels, strict=True)]
    scores = torch.tensor([value for value, _ in results], dtype=torch.float32)
    logs = {f"rewards/errors/{reason}": torch.tensor([float(why == reason) for _, why in results])
            for reason in REASONS}
    return {"rewards": scores, "scores": scores.clone(), "extra_logs": logs}
