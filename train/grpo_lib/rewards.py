"""The GRPO recipe's rewards: the reward functions it names, and the rows they will score, checked before step 1."""

from __future__ import annotations

from lookcloser.errors import RecordError, record_id
from lookcloser.rewards import get_reward_funcs
from lookcloser.rewards.scoring import RewardInputError, gold_info, resolve_source
from lookcloser.train.grpo_lib.configs import GRPOScriptArguments, LookcloserGRPOConfig


def build_reward_funcs(script_args: GRPOScriptArguments, training_args: LookcloserGRPOConfig) -> list:
    """The recipe's ``reward_funcs``, built with its settings (``reward_weights`` matched them as parsed:
    ``train/checks.py``)."""
    return get_reward_funcs(script_args.reward_funcs, tool_bonus_cap=script_args.tool_bonus_cap,
                            max_completion_length=training_args.max_completion_length)


def check_reward_rows(dataset, reward_funcs: list, where: str | None = None) -> None:
    """Before step 1: when a benchmark reward is named, every row needs a ``data_source`` a scorer serves and a
    ``reward_info`` that parses (``rewards.scoring.gold_info``); else one ``RecordError`` naming the row (at
    call time the same row would only be counted as ``rewards/errors/<reason>``)."""
    if all(name in ("format", "overlong") or callable(name) for name in reward_funcs):
        return
    columns = dataset.column_names
    sources = dataset["data_source"] if "data_source" in columns else [None] * len(dataset)
    golds = dataset["reward_info"] if "reward_info" in columns else [None] * len(dataset)
    ids = dataset["id"] if "id" in columns else [None] * len(dataset)
    for row, (source, gold) in enumerate(zip(sources, golds, strict=True)):
        try:
            gold_info(resolve_source(source), gold)
        except RewardInputError as err:
            field = "reward_info" if err.reason == "bad_gold" else "data_source"
            raise RecordError(where or "the data set", record_id({"id": ids[row]}, row), field,
                              f"{err} (reward_funcs {', '.join(map(str, reward_funcs))} cannot score this row; "
                              "docs/rewards.md has the columns)") from None
