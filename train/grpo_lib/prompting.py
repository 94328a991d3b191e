"""How a GRPO run prompted its policy (system prompt, tools, environment), written beside the checkpoint so that
``python -m eval`` prompts it the same way."""

from __future__ import annotations

import logging
from collections import Counter

from lookcloser.agent.checkpoint_prompting import write_prompting
from lookcloser.agent.environments import with_tool_set
from lookcloser.agent.loop import DEFAULT_SYSTEM_PROMPT
from lookcloser.rewards.trl_rewards import normalize_source
from lookcloser.train.grpo_lib.configs import PER_ROW, GRPOScriptArguments

logger = logging.getLogger(__name__)


def write_prompting_record(script_args: GRPOScriptArguments, out_dir: str, base_model: str | None = None,
                           dataset=None) -> None:
    """How the policy was prompted (system prompt, tools, environment): ``python -m eval`` reads it back;
    the benchmarks an earlier stage trained for keep their own prompting (``base_model``'s record).
    ``environment: per_row``: each benchmark (``data_source``) of ``dataset`` gets its own entry, with the
    environment its rows used (the most common one, when they used several)."""
    system = {None: "", "default": DEFAULT_SYSTEM_PROMPT}.get(script_args.system_prompt, script_args.system_prompt)

    def prompting(environment: str | None) -> dict:
        tools = bool(environment) and environment != "none"
        if tools:  # the environment the rollouts used, so that eval offers the same tools again
            environment = with_tool_set(environment, script_args.tool_set)
        return {"system_prompt": system, "tools": tools, **({"environment": environment} if tools else {})}

    if script_args.environment != PER_ROW:
        write_prompting(out_dir, prompting(script_args.environment), base_model=base_model)
        return
    benchmarks = {source: prompting(environment) for source, environment in benchmark_environments(dataset).items()}
    # Benchmarks this run did not train on: tools on if any row had them, each benchmark's own environment.
    tools = any(entry["tools"] for entry in benchmarks.values())
    write_prompting(out_dir, {"system_prompt": system, "tools": tools}, benchmarks=benchmarks, base_model=base_model)


def benchmark_environments(dataset) -> dict[str, str]:
    """Each benchmark's (``data_source``, as eval names it) environment: the one most of its rows name."""
    counts: dict[str, Counter] = {}
    sources = dataset["data_source"] if "data_source" in dataset.column_names else [""] * len(dataset)
    for source, environment in zip(map(normalize_source, sources), dataset["environment"], strict=True):
        if source:  # a row without a benchmark has no eval entry to record
            counts.setdefault(source, Counter())[environment] += 1
    chosen = {}
    for source, counter in sorted(counts.items()):
        chosen[source] = counter.most_common(1)[0][0]
        if len(counter) > 1:
            logger.warning("%s rows used several environments (%s); eval prompts %s with %s", source,
                           dict(counter), source, chosen[source])
    return chosen
