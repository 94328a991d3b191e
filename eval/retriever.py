"""DISBench retriever baseline: rank each user's photos by embedding similarity to the query alone.

No agent, no metadata: the query text is embedded, the user's photo index (built once, cached
on disk by ``agent.embedders``) is ranked by dot product, and ``rewards.disbench.ranking_metrics``
scores the ranking (Recall / MAP / NDCG @ 1, 3, 5, 10). This is the paper's "direct retrieval"
row (~10-14% Recall@3 with strong embedders). With the default colour-histogram embedder
(plumbing only) the numbers only show the pipeline works.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lookcloser.eval.loaders import EvalItem
from lookcloser.eval.runner import PredictionStore
from lookcloser.eval.scoring import zero_scores

logger = logging.getLogger(__name__)
KS = (1, 3, 5, 10)


def make_embedder(name: str | None):
    from lookcloser.agent.embedders import TransformersEmbedder, default_embedder

    return TransformersEmbedder(name) if name else default_embedder()


def retriever_rows(items: list[EvalItem], embedder, out_dir: str | Path, cache_dir: str | None = None) -> list[dict]:
    """Rank, score and record (``retriever_predictions.jsonl``) every DISBench query."""
    from lookcloser.agent.embedders import build_or_load_index
    from lookcloser.agent.photos import load_collection
    from lookcloser.rewards.disbench import ranking_metrics

    store = PredictionStore(Path(out_dir) / "retriever_predictions.jsonl")
    done = store.load()
    indexes: dict[tuple[str, str], object] = {}
    rows = []
    for item in items:
        root, user = item.example["data_root"], item.example["user_id"]
        record = done.get(item.id)
        if record is None or record.get("embedder") != embedder.name:
            try:
                if (root, user) not in indexes:
                    indexes[(root, user)] = build_or_load_index(load_collection(root, user), embedder, cache_dir)[0]
                index = indexes[(root, user)]
                query = embedder.embed_texts([item.example["query"]])[0]
                ranked = [pid for pid, _ in index.search(query, max(KS))] if query.shape[-1] == \
                    index.vectors.shape[1] else []
                record = {"id": item.id, "status": "ok", "ranked": ranked, "embedder": embedder.name, "error": None}
            except Exception as err:  # noqa: BLE001 - one broken user must not hide the others
                logger.warning("retriever failed on query %s: %r", item.id, err)
                record = {"id": item.id, "status": "failed", "ranked": [], "embedder": embedder.name,
                          "error": f"{type(err).__name__}: {err}"}
            store.append(record)
        scores = ranking_metrics(record["ranked"], item.gold["answer"], KS) if record["status"] == "ok" \
            else zero_scores("disbench_retriever")
        rows.append({"id": item.id, "status": record["status"], "error": record.get("error"),
                     "scores": {k: float(v) for k, v in scores.items()}, "tags": item.tags})
    return rows
