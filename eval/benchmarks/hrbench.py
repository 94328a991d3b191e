"""HR-Bench 4K and 8K (DreamMr/HR-Bench, AAAI 2025): 800 rows each, 100 FSP (``single``) and 100
FCP (``cross``) questions in 4 cycle copies with the options rotated (../shared/specs/vstar_hrbench.md §2).

Layout read: ``hr_bench_4k.tsv`` / ``hr_bench_8k.tsv`` (columns ``index, question, answer, category,
A, B, C, D, cycle_category, image``; the image base64). Each distinct image is decoded once into
``hr_bench_{4k,8k}_images/`` beside the TSV (reused by later runs). Prompt: the official harness's
(VLMEvalKit ``ImageMCQDataset.build_prompt``).

Scoring: the option letter by our rules (``rewards/benchmarks/hrbench.py``), not the official LLM
yes/no judge. Every row counts on its own (not CircularEval). Reported: FSP, FCP, the mean over
cycles (the official harness's number) and overall = (FSP + FCP) / 2 (DeepEyes; equal to the others
with 100/100 questions and equal cycles); ``derived`` in metrics.json holds them all.
"""

from __future__ import annotations

import base64
import binascii
import csv
import hashlib
import sys
from pathlib import Path

from lookcloser.data_builders.records import RecordError
from lookcloser.data_builders.scenes.hires import write_hrbench
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report
from lookcloser.eval.items import EvalItem, RecordCatch, image_path
from lookcloser.rewards.benchmarks.hrbench import SCORER

PROMPT = "Question: {question}\nOptions:\n{options}\nPlease select the correct answer from the options above. \n"
REQUIRED = ("index", "question", "answer", "category", "A", "B", "image")


def _decoded(folder: Path, encoded: str, source: Path, rid: str) -> Path:
    key = hashlib.sha1(encoded.encode("ascii", "replace")).hexdigest()[:16]
    path = folder / f"{key}.jpg"
    if not path.exists():
        try:
            data = base64.b64decode(encoded, validate=True)
        except (binascii.Error, ValueError):
            raise RecordError(source, rid, "image", "not base64") from None
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)  # whole or absent: a run stopped halfway leaves no broken image
    return path


def _item(name: str, root: Path, source: Path, row: dict, images: Path, check_images: bool) -> EvalItem:
    rid = str(row.get("index") or "").strip()
    for key in REQUIRED:
        if not (row.get(key) or "").strip():
            raise RecordError(source, rid or None, key, "missing required field")
    letters = [k for k in "ABCD" if (row.get(k) or "").strip()]
    answer = row["answer"].strip().upper()
    if answer not in letters:
        raise RecordError(source, rid, "answer", f"must be one of the row's option letters {', '.join(letters)}")
    category = row["category"].strip()
    if category not in ("single", "cross"):
        raise RecordError(source, rid, "category", "must be single (FSP) or cross (FCP)")
    shown = [f"{k}. {row[k].strip()}" for k in letters]
    path = _decoded(images, row["image"].strip(), source, rid)
    prompt = PROMPT.format(question=row["question"].strip(), options="\n".join(shown))
    return EvalItem(id=rid, benchmark=name,
                    example={"id": rid, "question": prompt,
                             "images": [image_path(root, str(path.relative_to(root)), source, rid, "image", check_images)]},
                    gold={"answer": answer, "options": shown},
                    tags={"category": [category], "cycle": [(row.get("cycle_category") or "unknown").strip()]})


def _loader(name: str):
    def load(root: Path, *, check_images: bool = True, limit: int | None = None, strict: bool = True, **_):
        source = root / SPECS_BY_NAME[name].data_file
        if not source.is_file():
            raise RecordError(source, None, None, "file not found (HR-Bench: hr_bench_4k.tsv / hr_bench_8k.tsv)")
        csv.field_size_limit(sys.maxsize)  # an 8K image is one base64 field of megabytes
        items = []
        with open(source, newline="", encoding="utf-8") as f:
            for k, row in enumerate(csv.DictReader(f, delimiter="\t")):
                if limit is not None and k >= limit:
                    break
                catch = RecordCatch(name, row.get("index") or f"#{k}", strict)
                with catch:
                    items.append(_item(name, root, source, row, root / f"{source.stem}_images", check_images))
                if catch.item:
                    items.append(catch.item)
        return items

    return load


def summarize(metrics: dict) -> None:
    """FSP, FCP, the mean over cycles and the item mean in ``derived``; overall = (FSP + FCP) / 2."""
    categories, cycles = metrics["groups"].get("category", {}), metrics["groups"].get("cycle", {})
    derived = {k: categories[c]["accuracy"] for k, c in (("fsp", "single"), ("fcp", "cross")) if c in categories}
    if cycles:
        derived["cycle_average"] = sum(g["accuracy"] for g in cycles.values()) / len(cycles)
    derived["item_mean"] = metrics["overall"]["accuracy"]
    if "fsp" in derived and "fcp" in derived:
        metrics["overall"]["accuracy"] = (derived["fsp"] + derived["fcp"]) / 2
    metrics["derived"] = derived


def _fixture(name: str):
    def write(folder: Path) -> Path:
        return write_hrbench(folder, seed=7, name=name, questions=2, size=(640, 360))

    return write


_PUBLISHED = {
    "hrbench_4k": "HR-Bench 4K (FSP/FCP/overall): DeepEyes-7B 91.3/59.0/75.1, Qwen2.5-VL-7B 85.2/52.2/68.8, GPT-4o "
                  "70.0/48.0/59.0 (DeepEyes Tab.1); Mini-o3-7B 77.5 (Avg@32); the official score uses an LLM judge",
    "hrbench_8k": "HR-Bench 8K (FSP/FCP/overall): DeepEyes-7B 86.8/58.5/72.6, Qwen2.5-VL-7B 78.8/51.8/65.3, GPT-4o "
                  "62.0/49.0/55.5 (DeepEyes Tab.1); Mini-o3-7B 73.3 (Avg@32); the official score uses an LLM judge"}
SPEC = [BenchmarkSpec(
    name=name, scorer=SCORER, order=60 + k, title=f"HR-Bench {size} acc", data_file=f"hr_bench_{size.lower()}.tsv",
    folders=(name, "HR-Bench", "hrbench"), load=_loader(name), to_info=lambda gold: gold,
    answer_text=lambda gold: gold["answer"], max_turns=8, environment="crop", prepare_source="hf:DreamMr/HR-Bench",
    write_fixture=_fixture(name), report=Report(published={"note": _PUBLISHED[name]}), in_default_run=False,
    summarize=summarize, protocol="every row on its own, options as the TSV rotates them (4 cycles); "
                                  "overall = (FSP + FCP) / 2")
    for k, (name, size) in enumerate((("hrbench_4k", "4K"), ("hrbench_8k", "8K")))]
SPECS_BY_NAME = {s.name: s for s in SPEC}
