"""How a checkpoint was prompted while training, stored beside its weights.

``train/sft.py`` writes ``lookcloser_prompting.json`` into every checkpoint it saves;
``python -m eval --model CKPT`` reads it so that a checkpoint is evaluated the way it was
trained (flags given on the command line or in the eval recipe still win).
"""

from __future__ import annotations

import json
from pathlib import Path

PROMPTING_FILE = "lookcloser_prompting.json"
# The eval settings the file may hold (EvalConfig field names).
KEYS = ("mir_prompt_stage", "system_prompt", "tools", "max_turns", "environment")


def eval_mir_stage(train_stage: int | None) -> int | None:
    """The eval prompt stage matching a training stage: stages 0 and 4 see MIR's benchmark prompt.

    >>> [eval_mir_stage(s) for s in (0, 1, 2, 3, 4, None)]
    [0, 1, 2, 3, 0, None]
    """
    if train_stage is None:
        return None
    return 0 if train_stage in (0, 4) else train_stage


def prompting_of(first_row: dict, mir_stage: int | None) -> dict:
    """The prompting one SFT data set implies: its MIR stage, its system prompt (or none), tools or not.

    >>> prompting_of({"messages": [{"role": "user", "content": "hi"}]}, 1)
    {'mir_prompt_stage': 1, 'system_prompt': '', 'tools': False, 'max_turns': 1}
    """
    messages = first_row.get("messages") or []
    system = ""
    if messages and messages[0].get("role") == "system":
        content = messages[0].get("content")
        system = content if isinstance(content, str) else "".join(
            block.get("text") or "" for block in content or [] if isinstance(block, dict))
    tools = bool(first_row.get("tools"))
    out = {"mir_prompt_stage": eval_mir_stage(mir_stage), "system_prompt": system, "tools": tools,
           "max_turns": None if tools else 1, "environment": environment_of(first_row.get("tools"))}
    return {k: v for k, v in out.items() if v is not None}


def prompting_by_benchmark(rows) -> dict[str, dict]:
    """Each benchmark's prompting in an SFT data set whose rows name their ``data_source`` (a mixed cold
    start, data_builders/commands/mixed_tasks.py): the prompting of that benchmark's first row. ``rows``: a ``datasets.Dataset``
    or any sequence of row dicts; {} when no row names a benchmark.

    >>> rows = [{"data_source": "disbench", "messages": [], "tools": ""}, {"data_source": "", "messages": []}]
    >>> prompting_by_benchmark(rows)
    {'disbench': {'system_prompt': '', 'tools': False, 'max_turns': 1}}
    """
    from lookcloser.rewards.trl_rewards import normalize_source

    column = getattr(rows, "column_names", None)
    if column is not None and "data_source" not in column:
        return {}
    sources = rows["data_source"] if column is not None else [row.get("data_source") for row in rows]
    first: dict[str, int] = {}
    for index, source in enumerate(sources):
        first.setdefault(normalize_source(source), index)
    first.pop("", None)  # rows of no benchmark (replayed records) have no entry to record
    return {source: prompting_of(rows[index], None) for source, index in sorted(first.items())}


def environment_of(tools_json: str | None) -> str | None:
    """The environment (``agent.environments.ENVIRONMENTS``) whose tools an SFT ``tools`` column lists, so
    that eval offers a cold-start checkpoint the tools it was trained with; None if none lists exactly those.

    >>> import json
    >>> from lookcloser.agent.environments import ENVIRONMENTS, tool_schemas
    >>> environment_of(json.dumps(tool_schemas(ENVIRONMENTS["web_search"]))), environment_of("")
    ('web_search', None)
    """
    from lookcloser.agent.environments import ENVIRONMENT_NAMES, environment_class, tool_names

    try:
        names = sorted(tool["function"]["name"] for tool in json.loads(tools_json)) if tools_json else None
    except (ValueError, TypeError, KeyError):
        return None
    # The first registered name wins where two share a class (tir_bench, mir and synthetic: the image tools).
    return next((name for name in ENVIRONMENT_NAMES if names and sorted(tool_names(environment_class(name))) == names),
                None)


def write_prompting(folder: str | Path, prompting: dict, benchmark: str | None = None,
                    base_model: str | None = None, benchmarks: dict[str, dict] | None = None) -> Path:
    """Write how this run was prompted; ``benchmark``: the benchmark it trained for (MIR data: ``mir``);
    ``benchmarks``: each benchmark's own prompting, for a run over several (``environment: per_row``).

    The file's top-level keys are this run's prompting. Its ``benchmarks`` entries say how to prompt
    each benchmark a stage trained for: this run's own (``benchmark``, ``benchmarks``) over those of the
    checkpoint it started from (``base_model``), so a curriculum's last checkpoint still prompts MIR as
    its MIR stage did after a GRPO stage with tools. Also written into ``folder/merged`` when a LoRA
    run wrote its merged checkpoint there (``merge_adapter``): eval loads that folder as a checkpoint.
    """
    inherited = _read(Path(base_model)).get("benchmarks", {}) if base_model else {}
    record = dict(prompting)
    own = {**(benchmarks or {}), **({benchmark: prompting} if benchmark else {})}
    benchmarks = {name: entry for name, entry in inherited.items() if isinstance(entry, dict)}
    for name, entry in own.items():
        benchmarks[name] = {"environment": None, "max_turns": None, **entry}  # complete: nothing leaks in
    if benchmarks:
        record["benchmarks"] = benchmarks
    text = json.dumps(record, indent=1) + "\n"
    merged = Path(folder) / "merged"
    targets = [merged / PROMPTING_FILE] if (merged / "config.json").is_file() else []
    for path in [*targets, Path(folder) / PROMPTING_FILE]:
        partial = path.with_name(path.name + ".partial")  # never a cut file
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return Path(folder) / PROMPTING_FILE


def _read(folder: Path) -> dict:
    path = folder / PROMPTING_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")  # noqa: TRY004 - bad file content, one error type
    return data


def read_prompting(model: str, benchmark: str | None = None) -> dict:
    """The recorded prompting of a local checkpoint folder (for ``benchmark``: its own entry over the
    top-level keys; a top-level environment made for another benchmark's items is not offered to it);
    {} for hub ids, endpoints and older folders.

    Raises ``ValueError`` naming the file when it is not a JSON object.
    """
    from lookcloser.agent.environments import BENCHMARK_OF_ENVIRONMENT

    data = _read(Path(model))
    entry = (data.get("benchmarks") or {}).get(benchmark) if benchmark else None
    merged = {**data, **(entry if isinstance(entry, dict) else {})}
    played = BENCHMARK_OF_ENVIRONMENT.get(merged.get("environment"))
    if benchmark and not isinstance(entry, dict) and played not in (None, benchmark):
        # a recorded environment plays its own benchmark's items (a photo-search checkpoint's tools need a
        # DISBench user): another benchmark without an entry of its own gets that benchmark's environment
        merged["environment"] = None
    return {k: v for k, v in merged.items() if k in KEYS}
