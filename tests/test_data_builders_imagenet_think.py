"""ImageNet-Think parquet -> <think> SFT: column detection, tag clean-up, generators, streaming, rejects."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from lookcloser.data_builders.cli import main
from lookcloser.data_builders.imagenet_think import DEFAULT_PROMPT
from lookcloser.data_builders.output import load_output


def _png(colour=(200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def _row(i: int, **extra) -> dict:
    return {"image": {"bytes": _png((i * 20 % 256, 40, 90)), "path": f"n0{i}.JPEG"}, "id": f"img{i}",
            "think_1": f"<think>GLM sees fur {i}.</think><answer>A cat {i}.</answer>",
            "answer_1": f"<answer>A cat {i}.</answer>",
            "thinking_2": f"◁think▷Kimi sees whiskers {i}.◁/think▷",
            "answer_2": f"◁think▷Kimi sees whiskers {i}.◁/think▷It is cat {i}.", **extra}


@pytest.fixture()
def shards(tmp_path: Path) -> Path:
    folder = tmp_path / "parquet"
    _write(folder / "train-00000.parquet", [_row(i) for i in range(5)])
    _write(folder / "train-00001.parquet", [_row(i, prompt=f"Describe picture {i}.") for i in range(5, 8)])
    return folder


def _run(*argv: str) -> int:
    return main(["imagenet-think", *argv, "--no_progress"])


def test_both_generators_cleaned_targets_and_default_prompt(shards, tmp_path, capsys):
    assert _run(str(shards), "--out", str(tmp_path / "out"), "--batch_rows", "2") == 0
    assert "read 16 traces, written 16 (16 rows), skipped 0" in capsys.readouterr().out
    ds = load_output(tmp_path / "out")
    assert len(ds) == 16 and ds.column_names == ["messages", "images", "id", "generator"]
    first = [r for r in ds if r["id"] == "img0"]
    assert [r["generator"] for r in first] == ["1", "2"]
    targets = [r["messages"][1]["content"][0]["text"] for r in first]
    assert targets == ["<think>GLM sees fur 0.</think>A cat 0.", "<think>Kimi sees whiskers 0.</think>It is cat 0."]
    user = first[0]["messages"][0]
    assert user["role"] == "user" and user["content"][0]["type"] == "image"
    assert user["content"][1]["text"] == DEFAULT_PROMPT
    assert first[0]["images"][0].size == (32, 24)
    prompted = next(r for r in ds if r["id"] == "img6")
    assert prompted["messages"][0]["content"][1]["text"] == "Describe picture 6."


def test_one_generator_template_and_parquet_output(shards, tmp_path):
    out = tmp_path / "pq"
    assert _run(str(shards / "train-00000.parquet"), "--out", str(out), "--generators", "2", "--format", "parquet",
                "--template", "{think}\n\nAnswer: {answer}") == 0
    ds = load_output(out)
    assert len(ds) == 5 and set(ds["generator"]) == {"2"}
    assert ds[0]["messages"][1]["content"][0]["text"] == "Kimi sees whiskers 0.\n\nAnswer: It is cat 0."


def test_column_map_overrides_detection(tmp_path):
    rows = [{"image": {"bytes": _png(), "path": None}, "glm_reasoning": "<think>r</think>", "glm_final": "a"}]
    shard = _write(tmp_path / "odd.parquet", rows)
    column_map = json.dumps({"glm": {"think": "glm_reasoning", "answer": "glm_final"}})
    assert _run(str(shard), "--out", str(tmp_path / "out"), "--column_map", column_map) == 0
    ds = load_output(tmp_path / "out")
    assert ds[0]["messages"][1]["content"][0]["text"] == "<think>r</think>a" and ds[0]["id"] == "odd.parquet#0"


def test_no_pairs_error_lists_the_columns_found(tmp_path, capsys):
    shard = _write(tmp_path / "bad.parquet", [{"image": {"bytes": _png(), "path": None}, "caption": "x"}])
    assert _run(str(shard), "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert str(shard) in err and "columns found: ['image', 'caption']" in err and "column map" in err


def test_bad_rows_skip_and_fail(shards, tmp_path, capsys):
    bad_rows = [_row(20, think_1="<think>   </think>"), {**_row(21), "image": {"bytes": b"garbage", "path": "x"}}]
    _write(shards / "train-00002.parquet", bad_rows)
    assert _run(str(shards), "--out", str(tmp_path / "out"), "--on_error", "skip") == 0
    out = capsys.readouterr().out
    assert "read 20 traces, written 17 (17 rows), skipped 3" in out
    assert "  image does not decode: 2" in out and "  invalid think_1: 1" in out
    rejects = [json.loads(x) for x in (tmp_path / "out.rejects.jsonl").read_text().splitlines()]
    assert sorted((r["record_id"], r["field"]) for r in rejects) == [("img20", "think_1"), ("img21", "image"),
                                                                      ("img21", "image")]
    assert all("image" not in r["record"] for r in rejects)  # no image bytes in the rejects file
    assert len(load_output(tmp_path / "out")) == 17

    assert _run(str(shards), "--out", str(tmp_path / "fail")) == 2
    err = capsys.readouterr().err
    assert f"{shards / 'train-00002.parquet'}: record 'img20', field 'think_1': empty thinking" in err
    assert not (tmp_path / "fail").exists()
