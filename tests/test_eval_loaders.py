"""eval loaders on every official layout: generated fixtures, the sample records (generated and real), and
broken files.

Also: the gold answers, written as a response, score 1.0 on every benchmark through ``rewards/``.
"""

from __future__ import annotations

import json
import shutil

import pytest
from PIL import Image

from lookcloser.data_builders.records import RecordError
from lookcloser.eval.loaders import BENCHMARKS, find_benchmark_dir, load_benchmark, write_fixtures
from lookcloser.eval.scoring import METRICS, aggregate, gold_response, score_predictions, score_response


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return write_fixtures(tmp_path_factory.mktemp("fixtures"))


def _copy(fixtures, tmp_path, name):
    return shutil.copytree(fixtures / name, tmp_path / name)


def test_fixtures_load_in_every_official_layout(fixtures):
    counts = {name: len(load_benchmark(name, find_benchmark_dir(name, fixtures))) for name in BENCHMARKS}
    assert {k: counts[k] for k in ("tir_bench", "mir", "disbench", "imagemining")} == {
        "tir_bench": 26, "mir": 64, "disbench": 4, "imagemining": 14}
    assert all(counts.values())  # every registered benchmark's fixture loads
    tir = load_benchmark("tir_bench", fixtures / "tir_bench")
    assert {t for it in tir for t in it.tags["task"]} == {
        "instrument", "color", "refcoco", "rotation_game", "math", "word_search", "visual_search", "ocr",
        "symbolic", "spot_difference", "contrast", "jigsaw", "maze"}
    two_images = [it for it in tir if len(it.example["images"]) == 2]
    assert two_images and all(it.tags["task"] == ["spot_difference"] for it in two_images)
    dis = load_benchmark("disbench", fixtures / "disbench")
    assert {it.tags["event_type"][0] for it in dis} == {"intra-event", "inter-event"}
    assert all(it.example["user_id"] and it.example["data_root"] for it in dis)
    im = load_benchmark("imagemining", fixtures / "imagemining")
    assert {t for it in im for t in it.tags["reasoning_type"]} == {
        "Image Retrieval Reasoning", "Text Reasoning", "Object Recognition", "Event Reasoning",
        "Spatiotemporal Reasoning"}
    assert {it.tags["need_image_before_search"][0] for it in im} == {"yes", "no"}
    # Fixture generation is deterministic: a second write gives byte-identical data files.
    again = write_fixtures(fixtures.parent / "again")
    for rel in ("tir_bench/TIR-Bench.json", "disbench/queries.jsonl", "imagemining/data.jsonl"):
        assert (fixtures / rel).read_bytes() == (again / rel).read_bytes()


def test_gold_answers_score_one_on_every_benchmark(fixtures):
    for name in BENCHMARKS:
        items = load_benchmark(name, find_benchmark_dir(name, fixtures))
        predictions = {it.id: {"status": "ok", "response": "Reasoning first.\n" + gold_response(it)} for it in items}
        metrics = aggregate(name, score_predictions(items, predictions))
        assert metrics["overall"] == dict.fromkeys(METRICS[name], 1.0), name
        assert metrics["n_failed"] == 0
        # ...and a wrong answer does not.
        wrong = {it.id: {"status": "ok", "response": "<answer>Q</answer>"} for it in items}
        assert aggregate(name, score_predictions(items, wrong))["overall"][METRICS[name][0]] < 0.2, name


def test_failed_and_missing_predictions_score_zero_and_are_listed(fixtures):
    items = load_benchmark("mir", fixtures / "mir")[:3]
    predictions = {items[0].id: {"status": "ok", "response": gold_response(items[0])},
                   items[1].id: {"status": "failed", "response": "", "error": "EndpointError: HTTP 500"}}
    metrics = aggregate("mir", score_predictions(items, predictions))
    assert metrics["overall"]["accuracy"] == pytest.approx(1 / 3)
    assert metrics["n_failed"] == 2
    assert {(f["id"], f["status"]) for f in metrics["failed"]} == {(items[1].id, "failed"), (items[2].id, "missing")}


# ImageMining's seven domains, in the real file and in the generated one (eval/fixtures.py: two items each).
IMAGEMINING_DOMAINS = {"Rich Text", "Science", "Place", "Social & Humanities", "Product", "Entertainment & Sports",
                       "Nature"}
# (items, items tagged "Image Retrieval Reasoning"): the real file's, and the generated one's by construction.
IMAGEMINING_COUNTS = {"real": (217, 102), "generated": (14, 5)}


def _placeholder_image(path, size, colour):
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = {"jpg": "JPEG", "jpeg": "JPEG"}.get(path.suffix[1:].lower(), path.suffix[1:].upper())
    Image.new("RGB", size, colour).save(path, format=fmt)


def test_sample_records_load(sample_records, tmp_path):
    # TIR-Bench: the records as TIR-Bench.json, with images generated at their paths.
    records = sample_records.tir_bench
    for record in records:
        for key in ("image_1", "image_2"):
            if record.get(key):
                _placeholder_image(tmp_path / "tir" / record[key], (32, 24), "white")
    (tmp_path / "tir" / "TIR-Bench.json").write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    tir = load_benchmark("tir_bench", tmp_path / "tir")
    assert len(tir) == len(records)
    assert all(score_response(it, gold_response(it)) == {"accuracy": 1.0} for it in tir)

    # ImageMining: every record, with generated images under their file names.
    im_root = tmp_path / "im"
    for row in sample_records.imagemining:
        _placeholder_image(im_root / "images" / row["image"], (16, 16), "gray")
    (im_root / "data.jsonl").write_text("".join(json.dumps(row, ensure_ascii=False) + "\n"
                                                for row in sample_records.imagemining), encoding="utf-8")
    im = load_benchmark("imagemining", im_root)
    n_items, n_retrieval = IMAGEMINING_COUNTS[sample_records.source]
    assert len(im) == n_items
    metrics = aggregate("imagemining", score_predictions(
        im, {it.id: {"status": "ok", "response": gold_response(it)} for it in im}))
    assert metrics["overall"]["accuracy"] == 1.0
    assert set(metrics["groups"]["category"]) == IMAGEMINING_DOMAINS
    assert metrics["groups"]["reasoning_type"]["Image Retrieval Reasoning"]["n"] == n_retrieval

    # DISBench: the first query plus a metadata file holding its gold photos.
    dis = tmp_path / "dis"
    query = sample_records.disbench_queries[0]
    (dis / "metadata").mkdir(parents=True)
    meta = sample_records.disbench_metadata[0]["metadata"]
    (dis / "metadata" / f"{query['user_id']}.jsonl").write_text(
        "".join(json.dumps({"photo_id": pid, "metadata": meta}) + "\n" for pid in query["answer"]))
    for pid in query["answer"]:
        _placeholder_image(dis / "images" / query["user_id"] / f"{pid}.jpg", (8, 8), "black")
    (dis / "queries.jsonl").write_text(json.dumps(query) + "\n")
    (item,) = load_benchmark("disbench", dis)
    assert item.tags == {"event_type": ["intra-event"]} and item.gold["answer"] == query["answer"]


@pytest.mark.parametrize("name, edit, field", [
    ("tir_bench", lambda recs: recs[3].pop("prompt"), "prompt"),
    ("tir_bench", lambda recs: recs[0].update(image_1="data/none.jpg"), "image_1"),
    ("tir_bench", lambda recs: recs[0].update(image_1="../../etc/passwd"), "image_1"),
    ("tir_bench", lambda recs: [r["meta_data"].clear() for r in recs if r["task"] == "jigsaw"], "meta_data"),
    ("disbench", lambda recs: recs[1].update(answer=["123"]), "answer"),
    ("disbench", lambda recs: recs[0].update(user_id="nobody@N00"), "user_id"),
    ("disbench", lambda recs: recs[2].pop("query"), "query"),
    ("imagemining", lambda recs: recs[4].update(image="missing.png"), "image"),
    ("imagemining", lambda recs: recs[1].pop("answer"), "answer"),
    ("imagemining", lambda recs: recs[2].update(difficulty_tags="Text Reasoning"), "difficulty_tags"),
    ("mir", lambda recs: recs[5].update(conclusion="no letter here"), "conclusion"),
    ("mir", lambda recs: recs[0].update(images=[]), "images"),
])
def test_bad_records_name_file_record_and_field(fixtures, tmp_path, name, edit, field):
    folder = _copy(fixtures, tmp_path, name)
    data = folder / {"tir_bench": "TIR-Bench.json", "mir": "all_data_rel.json", "disbench": "queries.jsonl",
                     "imagemining": "data.jsonl"}[name]
    text = data.read_text(encoding="utf-8")
    jsonl = data.suffix == ".jsonl"
    records = [json.loads(line) for line in text.splitlines()] if jsonl else json.loads(text)
    edit(records)
    data.write_text("\n".join(json.dumps(r) for r in records) if jsonl else json.dumps(records), encoding="utf-8")
    with pytest.raises(RecordError) as err:
        load_benchmark(name, folder)
    assert (err.value.field, err.value.source) == (field, str(data)), str(err.value)
    assert err.value.record_id is not None, str(err.value)


def test_folder_lookup_and_case_insensitive_image_extensions(fixtures, tmp_path):
    root = tmp_path / "bench"
    shutil.copytree(fixtures / "imagemining", root / "ImageMining" / "ImageMining-main")  # a nested download
    assert find_benchmark_dir("imagemining", root) == root / "ImageMining" / "ImageMining-main"
    data = root / "ImageMining" / "ImageMining-main" / "data.jsonl"
    records = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    records[0]["image"] = records[0]["image"].upper()  # "1.PNG" in the record, "1.png" on disk
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records), encoding="utf-8")
    assert load_benchmark("imagemining", data.parent)[0].example["image"].endswith("1.png")
    with pytest.raises(RecordError, match="no TIR-Bench.json"):
        find_benchmark_dir("tir_bench", root)
