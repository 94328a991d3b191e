"""DISBench scoring (docs/formats.md §4): set metrics for agent answers, ranking metrics for retrievers.

Ids are compared as strings and predictions are de-duplicated (first occurrence kept).
Convention where the spec is silent: an empty gold set with an empty prediction is a perfect
answer (all set metrics 1.0); an empty gold set makes every ranking metric 0.0.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence

from lookcloser.rewards._text import after_think, last_tag_block

_JSON_LIST = re.compile(r"\[[^\[\]]*\]")
_ID_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@\-]*")
_ID_CUE = re.compile(r"(?:photo[\s_-]*ids?|answer|ids?)\s*[:：=]\s*([^\n]+)", re.IGNORECASE)
_MAX_IDS = 10_000


def _as_ids(values: Iterable) -> list[str]:
    """Strings, stripped, de-duplicated in order (ints become their decimal text)."""
    seen: dict[str, None] = {}
    for value in values:
        if isinstance(value, bool) or value is None:
            continue
        text = str(value).strip()
        if text and text not in seen:
            seen[text] = None
            if len(seen) >= _MAX_IDS:
                break
    return list(seen)


def set_metrics(predicted: Iterable, gold: Iterable) -> dict[str, float]:
    """Exact match, F1, precision, recall and IoU of a predicted id set against the gold set.

    >>> m = set_metrics(["1", 2, "2", "9"], ["1", "2", "3"])
    >>> {k: round(v, 3) for k, v in m.items()}
    {'em': 0.0, 'f1': 0.667, 'precision': 0.667, 'recall': 0.667, 'iou': 0.5}
    >>> set_metrics([], ["1"])["precision"], set_metrics(["1"], ["1"])["em"]
    (0.0, 1.0)
    """
    p, g = set(_as_ids(predicted)), set(_as_ids(gold))
    if not p and not g:
        return {"em": 1.0, "f1": 1.0, "precision": 1.0, "recall": 1.0, "iou": 1.0}
    hits = len(p & g)
    precision = hits / len(p) if p else 0.0
    recall = hits / len(g) if g else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"em": 1.0 if p == g else 0.0, "f1": f1, "precision": precision, "recall": recall,
            "iou": hits / len(p | g)}


def ranking_metrics(ranked: Sequence, gold: Iterable, ks: Sequence[int] = (1, 3, 5, 10)) -> dict[str, float]:
    """Recall@k, MAP@k (AP@k) and NDCG@k with binary relevance, per docs/formats.md §4.

    AP@k = (1/min(|G|, k)) Σ_{i≤k} precision@i · rel_i; NDCG@k uses gain 1, discount
    1/log2(i+1) and the ideal ranking of min(|G|, k) hits. A repeated id counts once.

    >>> m = ranking_metrics(["a", "x", "b"], ["a", "b"], ks=(1, 3))
    >>> [round(m[k], 4) for k in ("recall@1", "map@1", "ndcg@1", "recall@3", "map@3", "ndcg@3")]
    [0.5, 1.0, 1.0, 1.0, 0.8333, 0.9197]
    """
    order, g = _as_ids(ranked), set(_as_ids(gold))
    out: dict[str, float] = {}
    for k in ks:
        if not g or k <= 0:
            out.update({f"recall@{k}": 0.0, f"map@{k}": 0.0, f"ndcg@{k}": 0.0})
            continue
        hits = 0
        precision_sum = dcg = 0.0
        for i, doc in enumerate(order[:k], start=1):
            if doc in g:
                hits += 1
                precision_sum += hits / i
                dcg += 1.0 / math.log2(i + 1)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(g), k) + 1))
        out[f"recall@{k}"] = hits / len(g)
        out[f"map@{k}"] = precision_sum / min(len(g), k)
        out[f"ndcg@{k}"] = dcg / ideal
    return out


def _ids_from_json(text: str) -> list[str] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict):
        for key in ("photo_ids", "answer", "ids", "photos", "result"):
            if isinstance(value.get(key), list):
                value = value[key]
                break
    if isinstance(value, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in value):
        return _as_ids(value)
    return None


def _ids_from_text(text: str) -> list[str]:
    """A comma/space/newline separated list: tokens that hold a digit (photo ids do)."""
    tokens = _ID_TOKEN.findall(text)
    return _as_ids(t.strip(".") for t in tokens if any(c.isdigit() for c in t))


def parse_photo_ids(response: str) -> list[str]:
    """Photo ids a response answers with: ``<answer>`` block, else the last JSON list (or object
    with ``photo_ids``/``answer``), else an ``Answer:``/``Photo ids:`` line, else the last line.

    >>> parse_photo_ids('Looked at 123 first. <answer>["7759256930", "7759407170"]</answer>')
    ['7759256930', '7759407170']
    >>> parse_photo_ids("Found them.\\nPhoto IDs: 7759256930, 7759407170, 7759256930")
    ['7759256930', '7759407170']
    >>> parse_photo_ids("")
    []
    """
    if not isinstance(response, str) or not response:
        return []
    region = after_think(response)
    block = last_tag_block(region, "answer")
    if block is not None and block[0].strip():
        body = block[0].strip()
        found = _ids_from_json(body)
        if found is None:
            lists = _JSON_LIST.findall(body)
            found = _ids_from_json(lists[-1]) if lists else None
        return found if found is not None else _ids_from_text(body)
    tail = region[-20000:]
    for candidate in reversed(_JSON_LIST.findall(tail)[-8:]):
        found = _ids_from_json(candidate)
        if found:
            return found
    cues = _ID_CUE.findall(tail)
    if cues:
        return _ids_from_text(cues[-1])
    lines = [line for line in tail.splitlines() if line.strip()]
    return _ids_from_text(lines[-1]) if lines else []


def score(response: str, gold: Iterable) -> float:
    """Reward: F1 of the parsed photo ids against the gold ids, in [0, 1].

    >>> score('<answer>["1", "2"]</answer>', ["1", "2", "3", "4"])
    0.6666666666666666
    """
    if isinstance(gold, (str, bytes)):
        gold = [gold]
    return float(set_metrics(parse_photo_ids(response), gold)["f1"])
