"""ImageMining (zai-org/ImageMining): `data.jsonl` + `images/`; normalized exact match
(``rewards.imagemining``; LLM-judge recall with ``--llm_judge``), its categories and flags as groups."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

from PIL import Image

from lookcloser.data_builders.records import RecordError, check_image, iter_jsonl, resolve_image_path
from lookcloser.eval import fixtures
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report
from lookcloser.eval.items import EvalItem, each_record, require
from lookcloser.rewards.benchmarks.imagemining import SCORER

logger = logging.getLogger(__name__)
NAME = SCORER.name
DATA_FILE = "data.jsonl"


def _find_image(images: Path, name: str, source: Path, rid: object, check: bool) -> str:
    """The image file; the extension's case in ``image`` varies (docs/formats.md §5): fall back to a
    case-insensitive match."""
    path = resolve_image_path(images, name, source=source, rid=rid, field="image")
    if not path.exists() and path.parent.is_dir():
        matches = [p for p in path.parent.iterdir() if p.name.lower() == path.name.lower()]
        path = matches[0] if matches else path
    if check:
        check_image(path, source=source, rid=rid, field="image")
    return str(path)


def _yes_no(value: object) -> str:
    text = str(value).strip().lower() if value is not None else ""
    return text if text in ("yes", "no") else "unknown"


def load_imagemining(root: Path, *, check_images: bool = True, limit: int | None = None,
                     search_corpus: str | None = None, strict: bool = True, **_) -> list[EvalItem]:
    source = root / DATA_FILE
    images = root / "images"
    items = []
    for record, rid, catch in each_record(NAME, list(iter_jsonl(source))[:limit], strict):
        with catch:
            if not isinstance(record, dict):
                raise RecordError(source, rid, None, "expected an object")
            require(record, "id", (int, str), source, rid)
            question = require(record, "question", str, source, rid)
            answer = require(record, "answer", str, source, rid)
            image = _find_image(images, require(record, "image", str, source, rid), source, rid, check_images)
            answer_zh = record.get("answer_zh")
            if answer_zh is not None and not isinstance(answer_zh, str):
                raise RecordError(source, rid, "answer_zh", "must be a string when present")
            reasoning_types = record.get("difficulty_tags") or []
            if not isinstance(reasoning_types, list) or not all(isinstance(t, str) for t in reasoning_types):
                raise RecordError(source, rid, "difficulty_tags", "must be a list of strings")
            example = {"id": str(record["id"]), "question": question, "image": image}
            if search_corpus:
                example["search_corpus"] = str(search_corpus)
            items.append(EvalItem(
                id=str(record["id"]), benchmark=NAME, example=example,
                gold={"answer": answer, "answer_zh": answer_zh, "question": question},
                tags={"category": [str(record.get("category_l1") or "unknown")],
                      "subcategory": [str(record.get("category_l2") or "unknown")],
                      "reasoning_type": reasoning_types or ["unknown"],
                      "need_image_before_search": [_yes_no(record.get("need_image_before_search"))],
                      "need_image_during_search": [_yes_no(record.get("need_image_during_search"))]}))
        if catch.item:
            items.append(catch.item)
    return items


def arrange_imagemining(target: Path) -> None:
    """An ImageMining download in parquet form (one row per item, ``image`` as the hub's Image
    feature: ``{"bytes", "path"}``) becomes ``data.jsonl`` + ``images/{file}``; a download that has
    ``data.jsonl`` already is left as it is."""
    if any(target.rglob(DATA_FILE)):
        return
    shards = sorted(target.rglob("*.parquet"))
    if not shards:
        return
    import pyarrow.parquet as pq  # here: only an upstream parquet download needs it

    images = target / "images"
    images.mkdir(exist_ok=True)
    lines = []
    for shard in shards:
        for row in pq.read_table(shard).to_pylist():
            image = row.get("image")
            if isinstance(image, dict) and image.get("bytes"):
                name = Path(image.get("path") or "").name
                if not name:
                    with Image.open(io.BytesIO(image["bytes"])) as img:
                        name = f"{row.get('id')}.{(img.format or 'png').lower()}"
                (images / name).write_bytes(image["bytes"])
                row["image"] = name
            lines.append(json.dumps(row, ensure_ascii=False, default=str))
    (target / DATA_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    logger.info("%s: wrote %d rows from %d parquet file(s) as data.jsonl + images/", NAME, len(lines), len(shards))


SPEC = BenchmarkSpec(
    name=NAME, scorer=SCORER, order=40, title="ImageMining acc",
    data_file=DATA_FILE, folders=("imagemining", "ImageMining"),
    load=load_imagemining,
    to_info=lambda gold: gold, answer_text=lambda gold: str(gold["answer"]),
    max_turns=16, environment="imagemining", prepare_source="hf:zai-org/ImageMining",
    arrange=arrange_imagemining, write_fixture=fixtures.write_imagemining,
    report=Report(published={"note": "ImageMining publishes no scorer; lookcloser's normalized exact match."}),
    corpus_beside="search_corpus.jsonl", aliases=("image_mining",))
