"""Held-out benchmark folders (python -m data_builders heldout) and the ImageNet-Think sample."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from lookcloser.data_builders.cli import main as data_builders
from lookcloser.data_builders.heldout import HELDOUT_SEEDS, pixel_digests, write_heldout

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def heldout(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("heldout") / "8008"
    assert data_builders(["heldout", "--out", str(out), "--seed", "8008", "--tir_count", "10",
                          "--benchmarks", "tir_bench", "mir"]) == 0
    return out


def test_eval_reads_every_written_benchmark(heldout):
    from lookcloser.eval.loaders import find_benchmark_dir, load_benchmark

    assert sorted(p.name for p in heldout.iterdir()) == ["mir", "tir_bench"]  # nothing half-written beside them
    tir = load_benchmark("tir_bench", find_benchmark_dir("tir_bench", heldout))
    mir = load_benchmark("mir", find_benchmark_dir("mir", heldout))
    assert len(tir) == 10 and len(mir) == 64
    assert {t for item in tir for t in item.tags["task"]} == {"jigsaw", "rotation_game", "spot_difference",
                                                               "visual_search", "ocr"}


def test_same_seed_same_data_other_seed_other_data(heldout, tmp_path):
    again = write_heldout(tmp_path / "again", 8008, ("tir_bench", "mir"), tir_count=10)
    other = write_heldout(tmp_path / "other", 9009, ("tir_bench", "mir"), tir_count=10)
    for name in ("mir", "tir_bench"):
        assert set(pixel_digests(again[name])) == set(pixel_digests(heldout / name))
        assert not set(pixel_digests(other[name])) & set(pixel_digests(heldout / name))
    assert (again["tir_bench"] / "TIR-Bench.json").read_text() == (heldout / "tir_bench" / "TIR-Bench.json").read_text()


def test_no_held_out_picture_or_item_is_in_a_training_split(heldout, tmp_path, tiny_model_dir):
    """Training pictures: the bundled MIR folders (the curriculum and the tool tasks' sources) and a tool
    curriculum training split built as the recipe builds it."""
    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments, build

    built = build(ToolTaskArguments(output_dir=str(tmp_path / "tool"), count=10, heldout_count=0,
                                    model_name_or_path=str(tiny_model_dir)))
    held = set(pixel_digests(heldout))
    for training in (REPO / "data" / "mir_sample", REPO / "data" / "mir_train", built["train"]):
        assert not held & set(pixel_digests(training)), training
    # An item is its question and its pictures: with no picture shared, no item can be.
    train_mir = json.loads((REPO / "data" / "mir_train" / "all_data_rel.json").read_text())
    held_mir = json.loads((heldout / "mir" / "all_data_rel.json").read_text())
    assert {r["id"] for r in held_mir} and all(r["images"] for r in held_mir + train_mir)


def test_no_recipe_trains_on_a_held_out_seed():
    for recipe in sorted((REPO / "recipes").glob("*.yaml")):
        text = yaml.safe_load(recipe.read_text())
        stages = text.get("stages") or [text] if isinstance(text, dict) else []
        for stage in stages + [text.get("defaults") or {}]:
            for key, value in stage.items():
                if re.fullmatch(r"(.*_)?seed", key) and not key.startswith("heldout"):
                    assert value not in HELDOUT_SEEDS, (recipe.name, stage.get("name"), key, value)


@pytest.mark.parametrize("argv, message", [
    (["--seed", "7"], "not a held-out seed"),
    (["--seed", "8008", "--benchmarks", "imagemining", "--imagemining_count", "0"], "imagemining_count must be"),
    (["--seed", "8008", "--benchmarks", "tir"], "unknown name 'tir'"),
    (["--seed", "8008", "--tir_count", "0"], "tir_count must be"),
])
def test_mistakes_are_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    assert data_builders(["heldout", "--out", str(out), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and len(err.splitlines()) == 1
    assert not out.exists() or not any(out.iterdir())


def test_imagenet_think_sample_reads_back_with_both_generators_cleaned(tmp_path, capsys):
    from lookcloser.data_builders.output import load_output
    from lookcloser.data_builders.sample_imagenet_think import main as sample

    assert sample([str(tmp_path / "raw"), "--rows", "12", "--seed", "3"]) == 0
    shards = sorted((tmp_path / "raw" / "data").glob("*.parquet"))
    assert [p.name for p in shards] == ["train-00000-of-00002.parquet", "train-00001-of-00002.parquet"]
    assert data_builders(["imagenet-think", str(tmp_path / "raw" / "data"), "--out", str(tmp_path / "sft"),
                          "--no_progress"]) == 0
    rows = load_output(tmp_path / "sft")
    assert len(rows) == 24 and sorted(set(rows["generator"])) == ["1", "2"]
    for row in rows:
        target = row["messages"][1]["content"][0]["text"]
        assert re.fullmatch(r"<think>[^<◁]+</think>[^<◁]+", target), target  # one think block, tags cleaned
        assert re.search(r"(One|Two|Three|Four) shapes?:", target)
    # The traces say what the pixels hold: the first row's picture has the colours its trace names.
    from PIL import Image

    first = rows[0]
    image = first["images"][0]
    image = image if isinstance(image, Image.Image) else Image.open(image["path"] if isinstance(image, dict) else image)
    colours = set(re.findall(r"(red|green|blue|yellow)", first["messages"][1]["content"][0]["text"]))
    palette = {"red": (220, 30, 30), "green": (30, 170, 60), "blue": (40, 70, 220), "yellow": (235, 200, 20)}
    present = {name for name, rgb in palette.items() if any(c == rgb for _, c in image.convert("RGB").getcolors(1 << 16))}
    assert colours == present
