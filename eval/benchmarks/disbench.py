"""DISBench (RUC-NLPIR/DISBench): `queries.jsonl`, `metadata/{user}.jsonl`, `images/{user}/{photo}.jpg`;
EM, F1, precision, recall and IoU of the photo ids (``rewards.disbench``; F1 is the reward), and the
optional direct-retriever baseline's table (``--disbench_retriever``)."""

import json

from lookcloser.eval import fixtures, loaders
from lookcloser.eval.benchmarks import BenchmarkSpec, Report
from lookcloser.rewards.benchmarks.disbench import SCORER

METRICS = ("em", "f1", "precision", "recall", "iou")


def _metrics(response: str, info: dict) -> dict[str, float]:
    from lookcloser.rewards import disbench

    metrics = disbench.set_metrics(disbench.parse_photo_ids(response), info["answer"])
    return {name: float(metrics[name]) for name in METRICS}


RETRIEVER = Report(
    metrics=tuple(f"{m}@{k}" for k in (1, 3, 5, 10) for m in ("recall", "map", "ndcg")),
    shown=("recall@1", "recall@3", "recall@10", "map@10", "ndcg@10"), charted=("recall@3", "map@10", "ndcg@10"),
    published={"recall@3": "10-14", "note": "direct embedding retrieval, ~10-14% Recall@3"})

SPEC = BenchmarkSpec(
    name="disbench", scorer=SCORER, order=30, title="DISBench F1",
    data_file="queries.jsonl", folders=("disbench", "DISBench"),
    load=lambda root, **kw: loaders.load_disbench(root, **kw),
    to_info=lambda gold: {"answer": gold["answer"]}, answer_text=lambda gold: json.dumps(gold["answer"]),
    max_turns=30, environment="disbench", prepare_source="hf:RUC-NLPIR/DISBench",
    write_fixture=fixtures.write_disbench,
    report=Report(metrics=METRICS, shown=METRICS, charted=("em", "f1"),
                  published={"em": 28.7, "f1": 55.0, "note": "best agent in the DISBench paper (EM 28.7, F1 55.0)"}),
    reports={"disbench_retriever": RETRIEVER}, metrics_of=_metrics, compare=("f1", "em"))
