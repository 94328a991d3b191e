"""The environment the GRPO rollouts play: the recipe's (with its tool set and constructor arguments), or with
``environment: per_row`` each row's own (TRL's multi-environment mode)."""

from __future__ import annotations

import functools
import json

from lookcloser.agent.environments import ENVIRONMENT_NAMES, environment_class
from lookcloser.agent.toolkit import NoToolsEnv
from lookcloser.recipes import RecipeError
from lookcloser.train.grpo_lib.configs import PER_ROW, GRPOScriptArguments


def _as_dict(value) -> dict:
    return json.loads(value) if isinstance(value, str) else dict(value or {})


def environment_factory(script_args: GRPOScriptArguments, dataset=None):
    """The environment class (with the recipe's constructor arguments) TRL builds one instance of per rollout;
    with ``environment: per_row``, ``{name: factory}`` for the names in ``dataset``'s ``environment`` column
    (TRL's multi-environment mode; ``none`` rows get ``NoToolsEnv``, an environment without tools)."""
    if script_args.environment == PER_ROW:
        kwargs = _as_dict(script_args.environment_kwargs)
        return {name: _factory(NoToolsEnv if name == "none" else environment_class(name, script_args.tool_set),
                               kwargs.get(name))
                for name in row_environments(dataset, script_args.dataset_path or script_args.dataset_name)}
    if not script_args.environment or script_args.environment == "none":
        return None
    # the name was checked as the recipe was parsed (train/checks.py)
    return _factory(environment_class(script_args.environment, script_args.tool_set),
                    _as_dict(script_args.environment_kwargs))


def _factory(env_cls: type, kwargs: dict | None):
    return functools.partial(env_cls, **kwargs) if kwargs else env_cls


def row_environments(dataset, where: str | None = None) -> list[str]:
    """The environment names of ``dataset``'s ``environment`` column, each checked (``ENVIRONMENT_NAMES`` or ``none``);
    a missing column or an unknown name is a ``RecipeError`` naming the data set, the row and the value."""
    where = where or "the data set"
    if dataset is None or "environment" not in dataset.column_names:
        raise RecipeError(f"{where}: environment: per_row needs an `environment` column naming each row's "
                          "environment (data_builders/commands/mixed_tasks.py writes one)")
    choices = [*ENVIRONMENT_NAMES, "none"]
    names = list(dataset["environment"])
    for row, name in enumerate(names):
        if name not in choices:
            raise RecipeError(f"{where}: row {row}: column `environment`: unknown environment {name!r} "
                              f"(choose from {', '.join(choices)})")
    return sorted(set(names))
