"""Synthetic TIR-Bench-format tasks: scored by ``rewards.tir_bench`` unchanged, oracle trajectories, GRPO rows."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from PIL import Image, ImageChops, ImageDraw

from lookcloser.agent.oracle import build_synthetic
from lookcloser.data_builders.output import BuildReport, load_output
from lookcloser.data_builders.synthetic import TASKS, SyntheticConfig
from lookcloser.rewards.tir_bench import score

CFG = SyntheticConfig(seed=7, base_size=256, canvas_size=640)
COUNT = 2 * len(TASKS)


def _make_sources(folder: Path, n: int = 4) -> None:
    rng = random.Random(0)
    folder.mkdir(parents=True)
    for i in range(n):
        img = Image.new("RGB", (180 + 20 * i, 160), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(img)
        for _ in range(25):
            x, y = rng.randrange(img.width), rng.randrange(img.height)
            draw.ellipse((x, y, x + rng.randint(8, 50), y + rng.randint(8, 50)),
                         fill=tuple(rng.randrange(256) for _ in range(3)))
        img.save(folder / f"src_{i}.png")
    (folder / "sub").mkdir()
    (folder / "sub" / "broken.jpg").write_bytes(b"\xff\xd8\xff not a jpeg")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("synthetic")
    _make_sources(base / "src")
    report = BuildReport(on_error="skip", rejects_path=base / "rejects.jsonl")
    outs = build_synthetic(base / "src", base / "out", COUNT, CFG, report=report, progress=False)
    report.close()
    items = json.loads(outs["tir_json"].read_text())
    return {"base": base, "out": base / "out", "outs": outs, "report": report, "items": items}


def _wrong(item: dict) -> str:
    answer, task = str(item["answer"]), item["task"]
    if task == "jigsaw":
        values = json.loads(answer)
        return str([values[1], values[0], *values[2:]])
    if task == "spot_difference":
        cells = [int(c) for c in answer.split(", ")]
        return ", ".join(map(str, [*cells[:-1], max(cells) + 1]))
    if task == "ocr":
        return answer[::-1] if answer[::-1] != answer else answer + "X"
    return "A" if answer != "A" else "B"


def test_every_task_is_generated_in_tir_bench_format(built):
    items = built["items"]
    assert len(items) == COUNT and sorted({it["task"] for it in items}) == sorted(TASKS)
    for item in items:
        assert set(item) == {"id", "task", "prompt", "answer", "image_1", "image_2", "meta_data"}
        for key in ("image_1", "image_2"):
            if item[key] is not None:
                assert not Path(item[key]).is_absolute() and (built["out"] / item[key]).is_file()
        assert (item["image_2"] is not None) == (item["task"] == "spot_difference")
        if item["task"] == "jigsaw":
            n = item["meta_data"]["difficulty"]
            assert n in CFG.jigsaw_sizes and sorted(json.loads(item["answer"])) == list(range(1, n * n + 1))


@pytest.mark.parametrize("task", TASKS)
def test_each_task_scores_one_on_its_answer_and_less_on_a_wrong_one(built, task):
    for item in (it for it in built["items"] if it["task"] == task):
        answer = str(item["answer"])
        assert score(item, answer, "official") == 1.0
        assert score(item, f"<think>Looked closely.</think><answer>{answer}</answer>", "strict") == 1.0
        wrong = _wrong(item)
        assert score(item, wrong, "official") < 1.0
        assert score(item, f"<answer>{wrong}</answer>", "strict") < 1.0


def test_oracle_final_message_scores_one(built):
    sft = load_output(built["outs"]["sft"])
    by_id = {str(it["id"]): it for it in built["items"]}
    for row in sft:
        final = row["messages"][-1]
        assert final["role"] == "assistant" and "tool_calls" not in final
        for mode in ("official", "strict"):
            assert score(by_id[row["id"]], final["content"], mode) == 1.0, (row["task"], final["content"])


def test_oracle_trajectory_shape_and_images(built):
    sft = load_output(built["outs"]["sft"])
    tools = {t["function"]["name"] for t in json.loads(sft[0]["tools"])}
    assert {"crop", "rotate", "zoom", "view_image"} <= tools
    for row in sft:
        messages, images = row["messages"], row["images"]
        assert messages[0]["role"] == "user" and messages[-1]["role"] == "assistant"
        n_inputs = sum(b["type"] == "image" for b in messages[0]["content"])
        placeholders = sum(b["type"] == "image" for m in messages if isinstance(m["content"], list)
                           for b in m["content"])
        assert placeholders == len(images)
        results = iter(images[n_inputs:])
        for i, message in enumerate(messages[1:-1], start=1):
            if message["role"] == "assistant":
                assert message["content"].startswith("<think>") and message["content"].endswith("</think>")
                calls = message["tool_calls"]
                following = messages[i + 1:i + 1 + len(calls)]
                assert [m["role"] for m in following] == ["tool"] * len(calls)
                assert [m["name"] for m in following] == [c["function"]["name"] for c in calls]
                for call, tool_message in zip(calls, following):
                    assert call["type"] == "function" and call["function"]["name"] in tools
                    result = next(results)
                    args = call["function"]["arguments"]
                    assert tool_message["content"][0] == {"type": "image"}
                    assert tool_message["content"][1]["type"] == "text"
                    if call["function"]["name"] == "crop":  # the crop is the box cut from the original pixels
                        expected = images[args["image_index"]].convert("RGB").crop(tuple(args["box"]))
                        assert ImageChops.difference(expected, result.convert("RGB")).getbbox() is None
        assert next(results, None) is None


def test_tool_message_text_names_the_new_image_index(built):
    row = load_output(built["outs"]["sft"])[0]
    texts = [m["content"][1]["text"] for m in row["messages"] if m["role"] == "tool"]
    n_inputs = sum(b["type"] == "image" for b in row["messages"][0]["content"])
    assert [t.split(":")[0] for t in texts] == [f"Image {n_inputs + k}" for k in range(len(texts))]


def test_grpo_rows_follow_the_column_contract(built):
    grpo = load_output(built["outs"]["grpo"])
    assert set(grpo.column_names) == {"prompt", "images", "data_source", "reward_info", "task"}
    for row, item in zip(grpo, built["items"]):
        assert row["data_source"] == "tir_bench" and row["task"] == item["task"]
        info = json.loads(row["reward_info"])
        assert info == {k: item[k] for k in ("id", "task", "answer", "prompt", "image_1", "image_2", "meta_data")}
        assert score(info, str(info["answer"]), "official") == 1.0
        (user,) = row["prompt"]
        assert user["role"] == "user" and user["content"][-1]["text"] == item["prompt"]
        assert sum(b["type"] == "image" for b in user["content"]) == len(row["images"])


def test_bad_source_images_are_rejected_and_counts_reconcile(built):
    report = built["report"]
    assert report.written == COUNT and report.read == report.written + report.n_rejected
    assert dict(report.rejected) == {"image does not decode": 1}
    (line,) = [json.loads(x) for x in (built["base"] / "rejects.jsonl").read_text().splitlines()]
    assert line["record_id"] == "sub/broken.jpg" and line["field"] == "image"


def test_same_seed_same_items(built, tmp_path):
    outs = build_synthetic(built["base"] / "src", tmp_path / "again", 3, CFG,
                           report=BuildReport(on_error="skip"), progress=False)
    again = json.loads(outs["tir_json"].read_text())
    assert again == built["items"][:3]
    for item in again:
        assert (tmp_path / "again" / item["image_1"]).read_bytes() == (built["out"] / item["image_1"]).read_bytes()


def test_fail_mode_stops_at_a_broken_source_image(built, tmp_path):
    from lookcloser.data_builders.records import RecordError

    with pytest.raises(RecordError, match=r"record 'sub/broken.jpg', field 'image'"):
        build_synthetic(built["base"] / "src", tmp_path / "fail", COUNT, CFG, report=BuildReport(), progress=False)


def test_sft_trainer_tokenizes_and_trains_on_tool_trajectories(built, tmp_path):
    """The real check: TRL's SFTTrainer + the tiny Qwen3-VL on records with images inside tool messages."""
    from trl import SFTConfig, SFTTrainer

    from lookcloser.agent.models import load_processor, resolve_model_path
    from lookcloser.train.collators import ToolTrajectoryCollator

    sft = load_output(built["outs"]["sft"])
    rows = sft.select([i for i, task in enumerate(sft["task"]) if task in ("spot_difference", "rotation_game")][:2])
    path = resolve_model_path("lookcloser/tiny-qwen3-vl")
    processor = load_processor(path)
    collator = ToolTrajectoryCollator(processor=processor)
    batch = collator([rows[0], rows[1]])
    text = processor.tokenizer.decode(batch["input_ids"][0])
    assert "<tool_response>\n<|vision_start|>" in text and '"name": "crop"' in text
    assert batch["image_grid_thw"].shape[0] == len(rows[0]["images"]) + len(rows[1]["images"])
    args = SFTConfig(output_dir=str(tmp_path / "run"), max_steps=1, per_device_train_batch_size=2, report_to="none",
                     remove_unused_columns=False, save_strategy="no", use_cpu=True, max_length=None)
    trainer = SFTTrainer(model=path, args=args, train_dataset=rows, processing_class=processor, data_collator=collator)
    result = trainer.train()
    assert result.global_step == 1 and result.training_loss > 0


def test_collator_equals_trls_on_records_without_tools():
    """On ordinary SFT records the tool collator is TRL's collator: safe to use for every data set."""
    import copy

    import torch
    from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling

    from lookcloser.agent.models import load_processor
    from lookcloser.data_builders.mir import mir_sft_dataset
    from lookcloser.train.collators import ToolTrajectoryCollator

    sample = Path(__file__).resolve().parents[1] / "data" / "mir_sample" / "all_data_rel.json"
    rows = [mir_sft_dataset(sample, stage=2)[i] for i in (0, 20)]
    processor = load_processor("lookcloser/tiny-qwen3-vl")
    ours = ToolTrajectoryCollator(processor=processor, max_length=512)(copy.deepcopy(rows))
    theirs = DataCollatorForVisionLanguageModeling(processor=processor, max_length=512)(copy.deepcopy(rows))
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert torch.equal(ours[key], theirs[key]), key


def _colour_pixels(img: Image.Image, rgb: tuple[int, int, int], tol: int = 60) -> int:
    """Pixels within ``tol`` (per channel) of a shape colour: how much of it the model gets to see."""
    return sum(1 for p in img.convert("RGB").getdata() if all(abs(a - b) <= tol for a, b in zip(p, rgb)))


def test_visual_search_needs_the_named_cell_and_its_crop_shows_the_target_large_and_alone(tiny_model_dir, tmp_path):
    """Sized from the tiny model's own processor budget. In the picture the model sees, every option
    colour is present at about the target's size, so the colour alone does not answer: the named cell
    does. The oracle's crop of that cell shows the target ~9x larger (>= 10% of the crop, what the tiny
    model reads; docs/grpo.md measures both views) and alone. The look warm-up asks the same question
    of that crop."""
    from lookcloser.agent.environments import ENVIRONMENTS
    from lookcloser.agent.images import fit_under_budget
    from lookcloser.agent.models import load_processor
    from lookcloser.data_builders.synthetic import COLOURS, SEARCH_COLOURS, search_sizes

    budget = load_processor(str(tiny_model_dir)).image_processor.size["longest_edge"]
    cfg = SyntheticConfig(seed=3, tasks=("visual_search",), model_pixels=budget)
    from lookcloser.data_builders.grpo_rows import BUNDLED_IMAGES

    build_synthetic(BUNDLED_IMAGES, tmp_path / "out", 6, cfg, progress=False, environment="crop")
    records = json.loads((tmp_path / "out/TIR-Bench.json").read_text())
    canvas, side = search_sizes(cfg)
    assert side * math.isqrt(budget) / canvas == pytest.approx(cfg.search_shape_px)
    for record in records:
        meta = record["meta_data"]
        gold = COLOURS[meta["colour"]]
        path = tmp_path / "out" / record["image_1"]
        image = Image.open(path)
        seen = image.resize(fit_under_budget(*image.size, budget), Image.Resampling.BICUBIC)
        env = ENVIRONMENTS["crop"]()
        env.reset(images=[str(path)])
        result = env.crop(image_index=0, box=meta["box"])
        crop = result[0]["image"]
        crop = crop.resize(fit_under_budget(*crop.size, budget), Image.Resampling.BICUBIC)
        at_input, in_crop = _colour_pixels(seen, gold), _colour_pixels(crop, gold)
        assert in_crop >= 5 * at_input and in_crop >= 0.1 * crop.width * crop.height, (record["id"], at_input, in_crop)
        others = [COLOURS[name] for name in SEARCH_COLOURS if name != meta["colour"]]
        assert all(_colour_pixels(seen, c) >= 0.3 * at_input for c in others), record["id"]  # all colours shown
        assert all(_colour_pixels(crop, c, tol=30) == 0 for c in others)  # alone in its cell
        assert record["answer"] == "ABCDEF"[SEARCH_COLOURS.index(meta["colour"])]  # fixed colour order


def test_look_records_ask_the_question_of_the_oracles_crop_alone(tmp_path):
    """The look warm-up: one record per visual_search item, its one image the trajectory's last (the
    crop), its answer turn the trajectory's."""
    from datasets import load_from_disk

    from lookcloser.data_builders.grpo_rows import BUNDLED_IMAGES

    cfg = SyntheticConfig(seed=5, tasks=("visual_search",))
    outs = build_synthetic(BUNDLED_IMAGES, tmp_path / "out", 4, cfg, progress=False, environment="crop")
    sft, look = load_from_disk(str(outs["sft"])), load_from_disk(str(outs["look"]))
    assert len(look) == len(sft) == 4
    for trajectory, record in zip(sft, look):
        assert len(record["images"]) == 1 and record["images"][0].size == trajectory["images"][-1].size
        assert list(record["images"][0].getdata()) == list(trajectory["images"][-1].getdata())
        assert record["messages"][-1] == trajectory["messages"][-1]
        assert "in this picture" in record["messages"][0]["content"][-1]["text"]
    jigsaw = build_synthetic(BUNDLED_IMAGES, tmp_path / "jig", 2, SyntheticConfig(seed=5, tasks=("jigsaw",)),
                             progress=False)
    assert "look" not in jigsaw  # no tool image answers a jigsaw alone
