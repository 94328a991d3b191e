"""V* Bench and HR-Bench (4K, 8K): loaders of the official layouts on generated held-out scenes, the
option-order protocol, the scorers and their rewards, and HR-Bench's overall = (FSP + FCP) / 2."""

from __future__ import annotations

import csv
import json
import sys

import pytest
from PIL import Image

from lookcloser.data_builders.heldout import write_heldout
from lookcloser.data_builders.scenes.hires import write_hrbench, write_vstar
from lookcloser.errors import RecordError
from lookcloser.eval.loaders import find_benchmark_dir, load_benchmark
from lookcloser.eval.scoring import aggregate, answer_prior, gold_response, score_predictions
from lookcloser.rewards import REGISTRY, verl


@pytest.fixture(scope="module")
def vstar(tmp_path_factory):
    return write_vstar(tmp_path_factory.mktemp("vstar"), seed=8008, counts=(6, 4))


def test_vstar_layout_protocols_and_scores(vstar):
    original = load_benchmark("vstar", vstar)
    shuffled = load_benchmark("vstar_shuffled", vstar)
    assert [it.tags["category"][0] for it in original].count("direct_attributes") == 6 and len(original) == 10
    assert {it.gold["answer"] for it in original} == {"A"}  # SEAL's order: the gold is always first
    assert len({it.gold["answer"] for it in shuffled}) > 1  # seeded shuffles move it...
    assert [it.gold for it in shuffled] == [it.gold for it in load_benchmark("vstar_shuffled", vstar)]  # ...the same way
    attr = next(it for it in shuffled if it.tags["category"] == ["direct_attributes"])
    assert attr.example["question"].startswith("Question: What is the color of the ") and "\nD. " in attr.example["question"]
    rel = next(it for it in original if it.tags["category"] == ["relative_position"])
    assert rel.gold["options"] == ["A. left", "B. right"] or rel.gold["options"] == ["A. right", "B. left"]
    assert answer_prior(original) == 1.0 and answer_prior(shuffled) < 1.0
    # a small object decides: at 2048 x 1536 a shape is ~1/40 of the width (about 3 px at a 128-px view)
    record = json.loads(next((vstar / "direct_attributes").glob("*.json")).read_text())
    with Image.open(next((vstar / "direct_attributes").glob("*.jpg"))) as img:
        assert img.size == (2048, 1536) and record["bbox"][0][2] <= img.size[0] // 30
    # item-weighted overall, the two categories as groups
    answers = {it.id: ("<answer>A</answer>" if it.tags["category"] == ["direct_attributes"] else "Answer: (Z)")
               for it in original}
    m = aggregate("vstar", score_predictions(original, {k: {"status": "ok", "response": v} for k, v in answers.items()}))
    assert m["overall"]["accuracy"] == 0.6 and m["groups"]["category"]["relative_position"]["accuracy"] == 0.0
    assert "original order" in m["protocol"]


def test_vstar_bad_record_names_file_record_and_field(vstar, tmp_path):
    import shutil

    root = shutil.copytree(vstar, tmp_path / "v")
    bad = min((root / "relative_position").glob("*.json"))
    bad.write_text(json.dumps({"question": "Left or right?", "options": ["left"]}))
    with pytest.raises(RecordError, match=rf"{bad.name}.*relative_position/{bad.stem}.*options"):
        load_benchmark("vstar", root)
    items = load_benchmark("vstar", root, strict=False)
    assert [it.id for it in items if it.bad] == [f"relative_position/{bad.stem}"] and len(items) == 10


def test_hrbench_rotations_fsp_fcp_and_overall(tmp_path):
    root = write_hrbench(tmp_path / "HR-Bench", seed=8008, name="hrbench_4k", questions=4, size=(960, 540))
    with open(root / "hr_bench_4k.tsv", newline="") as f:
        csv.field_size_limit(sys.maxsize)
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 16 and [r["cycle_category"] for r in rows[:4]] == ["0", "1", "2", "3"]
    gold_texts = {r[r["answer"]] for r in rows[:4]}
    assert len(gold_texts) == 1 and len({r["answer"] for r in rows[:4]}) == 4  # the gold rotates through A-D
    items = load_benchmark("hrbench_4k", find_benchmark_dir("hrbench_4k", tmp_path))
    assert len(items) == 16 and {it.tags["category"][0] for it in items} == {"single", "cross"}
    assert items[0].example["question"].endswith("Please select the correct answer from the options above. \n")
    assert len(list((root / "hr_bench_4k_images").iterdir())) == 4  # each image decoded once, not per rotation
    # FSP all right, FCP right on one cycle only: overall = (FSP + FCP) / 2, not the item mean
    preds = {it.id: {"status": "ok", "response": gold_response(it) if it.tags["category"] == ["single"]
                     or it.tags["cycle"] == ["0"] else "<answer>none</answer>"} for it in items}
    m = aggregate("hrbench_4k", score_predictions(items, preds))
    assert m["derived"] == {"fsp": 1.0, "fcp": 0.25, "cycle_average": 0.625, "item_mean": 0.625}
    assert m["overall"]["accuracy"] == 0.625  # equal here: 2 + 2 questions, 4 equal cycles
    # 2 FSP and 1 FCP questions: FSP right, FCP wrong gives (1 + 0) / 2, not the item mean 8/12
    uneven = load_benchmark("hrbench_4k", write_hrbench(tmp_path / "uneven", 9009, questions=3, size=(480, 270)))
    preds = {it.id: {"status": "ok", "response": gold_response(it) if it.tags["category"] == ["single"] else "x"}
             for it in uneven}
    m = aggregate("hrbench_4k", score_predictions(uneven, preds))
    assert m["overall"]["accuracy"] == 0.5 and m["derived"]["item_mean"] == pytest.approx(8 / 12)


def test_hrbench_8k_image_size_and_bad_row(tmp_path):
    root = write_hrbench(tmp_path / "hr8", seed=8008, name="hrbench_8k", questions=1)
    items = load_benchmark("hrbench_8k", root)
    with Image.open(items[0].example["images"][0]) as img:
        assert img.size == (7680, 4320)
    tsv = root / "hr_bench_8k.tsv"
    lines = tsv.read_text().splitlines()
    lines[2] = lines[2].replace("\tsingle\t", "\tneither\t")
    tsv.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError, match=r"hr_bench_8k.tsv.*'1'.*category"):
        load_benchmark("hrbench_8k", root)
    tsv.unlink()
    with pytest.raises(RecordError, match=r"hr_bench_8k.tsv.*file not found"):
        load_benchmark("hrbench_8k", root)


def test_rewards_for_grpo_and_verl():
    info = {"answer": "C", "options": ["A. red", "B. blue", "C. green", "D. white"]}
    assert REGISTRY["vstar"](["<think>zoom</think><answer>C</answer>", "Answer: D"], data_source=["vstar_shuffled"] * 2,
                             reward_info=[json.dumps(info)] * 2) == [1.0, 0.0]
    assert REGISTRY["hrbench"](["The answer is (C)."], data_source=["hrbench_8k"], reward_info=[info]) == [1.0]
    assert REGISTRY["vstar"](["C"], data_source=["mir"], reward_info=['{"answer": "C"}']) == [None]  # not its rows
    assert verl.compute_score("hrbench_4k", "<answer>E</answer>", info) == 0.0  # no letter outside the options
    assert verl.compute_score("vstar", "I pick (c).", json.dumps(info)) == 1.0


def test_heldout_writes_vstar_in_its_layout(tmp_path):
    written = write_heldout(tmp_path, 8008, ("vstar",))
    items = load_benchmark("vstar", written["vstar"])
    assert len(items) == 40 and not any(it.bad for it in items)
    again = write_heldout(tmp_path / "again", 8008, ("vstar",))["vstar"]
    first = sorted(p.read_bytes() for p in written["vstar"].rglob("*.json"))
    assert first == sorted(p.read_bytes() for p in again.rglob("*.json"))  # deterministic in the seed
