"""TIR-Bench (Agents-X/TIR-Bench): `TIR-Bench.json` + `data/...` images; scored by ``rewards.tir_bench``
in official mode (eval parity), its tasks as report groups."""

from __future__ import annotations

from pathlib import Path

from lookcloser.data_builders.records import RecordError, read_json_records
from lookcloser.eval import fixtures
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report
from lookcloser.eval.items import EvalItem, each_record, image_path, require
from lookcloser.rewards.benchmarks.tir_bench import SCORER

NAME = SCORER.name
DATA_FILE = "TIR-Bench.json"


def load_tir_bench(root: Path, *, check_images: bool = True, limit: int | None = None, strict: bool = True,
                   **_) -> list[EvalItem]:
    source = root / DATA_FILE
    items = []
    for record, rid, catch in each_record(NAME, read_json_records(source)[:limit], strict):
        with catch:
            items.append(_tir_item(root, source, record, rid, check_images))
        if catch.item:
            items.append(catch.item)
    return items


def _tir_item(root: Path, source: Path, record: object, rid: object, check_images: bool) -> EvalItem:
    if not isinstance(record, dict):
        raise RecordError(source, rid, None, f"expected an object, got {type(record).__name__}")
    if "task" not in record and "category" in record:  # old files say "category"
        record = {**record, "task": record["category"]}
    if "meta_data" not in record and "metadata" in record:
        record = {**record, "meta_data": record["metadata"]}
    require(record, "id", (int, str), source, rid)
    task = require(record, "task", str, source, rid)
    prompt = require(record, "prompt", str, source, rid)
    answer = require(record, "answer", (str, int, float), source, rid)
    if isinstance(answer, str) and not answer.strip():
        raise RecordError(source, rid, "answer", "must not be empty")
    meta = record.get("meta_data") or {}
    if not isinstance(meta, dict):
        raise RecordError(source, rid, "meta_data", "must be an object")
    # the scorer reads n as upstream does (``metadata`` first; 3.0 works, "3" scores 0): load such
    # items and let them score; only a jigsaw with no difficulty at all is a bad record
    scored_meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else meta
    if task == "jigsaw" and not isinstance(scored_meta.get("difficulty"), (int, float, str)):
        raise RecordError(source, rid, "meta_data", "jigsaw items need a 'difficulty' (n of the n x n grid)")
    images = [image_path(root, require(record, "image_1", str, source, rid), source, rid, "image_1", check_images)]
    if record.get("image_2") not in (None, ""):
        images.append(image_path(root, require(record, "image_2", str, source, rid), source, rid, "image_2",
                             check_images))
    return EvalItem(
        id=str(record["id"]), benchmark=NAME,
        example={"id": str(record["id"]), "question": prompt, "images": images},
        gold={"record": record}, tags={"task": [task]})


SPEC = BenchmarkSpec(
    name=NAME, scorer=SCORER, order=10, title="TIR-Bench acc",
    data_file=DATA_FILE, folders=("tir_bench", "TIR-Bench"),
    load=load_tir_bench,
    to_info=lambda gold: gold["record"], answer_text=lambda gold: str(gold["record"]["answer"]),
    max_turns=8, environment="tir_bench", prepare_source="hf:Agents-X/TIR-Bench",
    write_fixture=fixtures.write_tir_bench,
    report=Report(published={"note": "The TIR-Bench paper reports tool-using o3 far ahead of non-agentic models; "
                                     "its table is not given numerically in the spec: compare with the paper."}),
    compare_per_task=True, aliases=("tirbench",))
