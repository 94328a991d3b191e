"""One loader for every trainer and every format the builders write (``--format hf`` or ``parquet``).

The bug this guards: a folder from ``python -m data_builders mir ... --format parquet`` failed in
``train/sft.py`` with FileNotFoundError while docs/data.md offers it; GRPO read it.
"""

from __future__ import annotations

import pytest

from lookcloser.data_builders.cli import main as build
from lookcloser.data_builders.records import RecordError
from tests.conftest import SAMPLE_MIR


@pytest.fixture(scope="module")
def mir_stage1(tmp_path_factory):
    """Stage 1 of the bundled sample written in both formats by the data_builders command."""
    base = tmp_path_factory.mktemp("mir")
    outs = {}
    for fmt in ("hf", "parquet"):
        out = base / fmt
        assert build(["mir", str(SAMPLE_MIR), "--stages", "1", "--format", fmt, "--out", str(out),
                      "--no_progress"]) == 0
        outs[fmt] = out  # one stage: the folder itself
    return outs


def test_sft_reads_a_builder_folder_in_either_format(mir_stage1):
    from lookcloser.train.sft import SFTScriptArguments, load_sft_dataset

    loaded = {fmt: load_sft_dataset(SFTScriptArguments(dataset_path=str(path))) for fmt, path in mir_stage1.items()}
    assert len(loaded["parquet"]) == len(loaded["hf"]) == 64
    assert loaded["parquet"][0]["messages"] == loaded["hf"][0]["messages"]
    assert loaded["parquet"].column_names == loaded["hf"].column_names


def test_grpo_and_sft_share_the_loader(mir_stage1, tmp_path):
    from lookcloser.data_builders.output import load_records

    for path in mir_stage1.values():
        assert len(load_records(path)) == 64
    shard = next(mir_stage1["parquet"].glob("*.parquet"))
    assert len(load_records(shard)) == 64  # a single .parquet file
    jsonl = tmp_path / "rows.jsonl"
    jsonl.write_text('{"prompt": "a"}\n{"prompt": "b"}\n')
    assert load_records(jsonl)["prompt"] == ["a", "b"]
    with pytest.raises(RecordError, match=r"nope\.parquet.*data file not found"):
        load_records(tmp_path / "nope.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RecordError, match=r"empty.*no data set here"):
        load_records(tmp_path / "empty")
    with pytest.raises(RecordError, match=r"rows\.csv.*expected"):
        (tmp_path / "rows.csv").write_text("a\n")
        load_records(tmp_path / "rows.csv")
