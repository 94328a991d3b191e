"""DISBench (RUC-NLPIR/DISBench): `queries.jsonl`, `metadata/{user}.jsonl`, `images/{user}/{photo}.jpg`;
EM, F1, precision, recall and IoU of the photo ids (``rewards.disbench``; F1 is the reward), and the
optional direct-retriever baseline's table (``--disbench_retriever``)."""

from __future__ import annotations

import json
from pathlib import Path

from lookcloser.data_builders.records import RecordError, iter_jsonl, resolve_image_path
from lookcloser.data_builders.search_tasks import disbench_question
from lookcloser.eval import fixtures
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report
from lookcloser.eval.items import EvalItem, each_record, image_path, require
from lookcloser.rewards import disbench
from lookcloser.rewards.benchmarks.disbench import SCORER

NAME = SCORER.name
DATA_FILE = "queries.jsonl"
METRICS = ("em", "f1", "precision", "recall", "iou")


def _photo_ids(root: Path, user: str, source: Path, rid: object, cache: dict) -> set[str]:
    if user not in cache:
        meta = resolve_image_path(root, f"metadata/{user}.jsonl", source=source, rid=rid, field="user_id")
        if not meta.is_file():
            raise RecordError(source, rid, "user_id", f"no metadata file {meta}")
        ids = set()
        for lineno, line in enumerate(iter_jsonl(meta), start=1):
            pid = line.get("photo_id") if isinstance(line, dict) else None
            if not isinstance(pid, (str, int)) or isinstance(pid, bool):
                raise RecordError(meta, f"line {lineno}", "photo_id", "missing or not a string")
            ids.add(str(pid))
        cache[user] = ids
    return cache[user]


def load_disbench(root: Path, *, check_images: bool = True, limit: int | None = None, strict: bool = True,
                  **_) -> list[EvalItem]:
    source = root / DATA_FILE
    users: dict[str, set[str]] = {}
    items = []
    for record, rid, catch in each_record(NAME, list(iter_jsonl(source))[:limit], strict):
        with catch:
            if not isinstance(record, dict):
                raise RecordError(source, rid, None, "expected an object")
            qid = str(require(record, "query_id", (str, int), source, rid))
            user = require(record, "user_id", str, source, rid)
            query = require(record, "query", str, source, rid)
            answer = require(record, "answer", list, source, rid)
            if not all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in answer):
                raise RecordError(source, rid, "answer", "must be a list of photo id strings")
            known = _photo_ids(root, user, source, rid, users)
            missing = [str(a) for a in answer if str(a) not in known]
            if missing:
                raise RecordError(source, rid, "answer", f"photo ids not in metadata/{user}.jsonl: {', '.join(missing[:5])}")
            if check_images:
                for pid in answer:
                    image_path(root, f"images/{user}/{pid}.jpg", source, rid, "answer", True)
            event_type = record.get("event_type")
            items.append(EvalItem(
                id=qid, benchmark=NAME,
                example={"query_id": qid, "user_id": user, "data_root": str(root.resolve()),
                         "question": disbench_question(query), "query": query},
                gold={"answer": [str(a) for a in answer]},
                tags={"event_type": [event_type if isinstance(event_type, str) and event_type else "unknown"]}))
        if catch.item:
            items.append(catch.item)
    return items


def _metrics(response: str, info: dict) -> dict[str, float]:
    metrics = disbench.set_metrics(disbench.parse_photo_ids(response), info["answer"])
    return {name: float(metrics[name]) for name in METRICS}


RETRIEVER = Report(
    metrics=tuple(f"{m}@{k}" for k in (1, 3, 5, 10) for m in ("recall", "map", "ndcg")),
    shown=("recall@1", "recall@3", "recall@10", "map@10", "ndcg@10"), charted=("recall@3", "map@10", "ndcg@10"),
    published={"recall@3": "10-14", "note": "direct embedding retrieval, ~10-14% Recall@3"})

SPEC = BenchmarkSpec(
    name=NAME, scorer=SCORER, order=30, title="DISBench F1",
    data_file=DATA_FILE, folders=("disbench", "DISBench"),
    load=load_disbench,
    to_info=lambda gold: {"answer": gold["answer"]}, answer_text=lambda gold: json.dumps(gold["answer"]),
    max_turns=30, environment="disbench", prepare_source="hf:RUC-NLPIR/DISBench",
    write_fixture=fixtures.write_disbench,
    report=Report(metrics=METRICS, shown=METRICS, charted=("em", "f1"),
                  published={"em": 28.7, "f1": 55.0, "note": "best agent in the DISBench paper (EM 28.7, F1 55.0)"}),
    reports={f"{NAME}_retriever": RETRIEVER}, retriever_report=f"{NAME}_retriever", metrics_of=_metrics, compare=("f1", "em"))
