"""DISBench's queries (``queries.jsonl``: query_id, user_id, query, answer) as GRPO prompts; the environment's
``reset`` reads ``user_id`` and ``data_root`` (the folder with ``metadata/`` and ``images/``)."""

from __future__ import annotations

import json
from pathlib import Path

from lookcloser.data_builders.records import iter_jsonl
from lookcloser.data_builders.row_formats import RowFormat, resolve_path
from lookcloser.data_builders.search_tasks import disbench_question
from lookcloser.errors import RecipeError

NAME = "disbench"  # the benchmark (data_source, dataset_kind)
NEEDS_ROOT = "DISBench queries need `disbench_root` (the folder with metadata/ and images/)"


def disbench_grpo_dataset(path: str | Path, data_root: str | Path):
    """DISBench queries (``queries.jsonl``: query_id, user_id, query, answer) as GRPO prompts."""
    from datasets import Dataset  # here: a heavy import only the GRPO rows need

    root = resolve_path(data_root)
    rows = []
    for query in iter_jsonl(resolve_path(path)):
        rows.append({"prompt": [{"role": "user", "content": [{"type": "text",
                                                              "text": disbench_question(query["query"])}]}],
                     "data_source": NAME, "reward_info": json.dumps({"answer": list(query["answer"])}),
                     "user_id": str(query["user_id"]), "data_root": str(root),
                     "task": str(query.get("event_type") or ""), "id": str(query.get("query_id"))})
    return Dataset.from_list(rows)


def _is_queries(path: Path) -> bool:
    if path.suffix != ".jsonl":
        return False
    with path.open(encoding="utf-8") as f:
        first = json.loads(next((line for line in f if line.strip()), "{}"))
    return {"query", "user_id", "answer"} <= set(first)


def _read_rows(path: Path, *, disbench_root: str | None = None, **_):
    if not disbench_root:
        raise RecipeError(NEEDS_ROOT)
    return disbench_grpo_dataset(path, disbench_root)


GRPO_ROWS = RowFormat(NAME, recognise=_is_queries, read=_read_rows, required={"disbench_root": NEEDS_ROOT})
