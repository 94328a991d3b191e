"""train/grpo.py refuses, before step 1, a row no scorer can read (issue 39): one ``error:`` line naming the row."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from datasets import Dataset

from lookcloser.errors import RecordError
from lookcloser.rewards.scoring import SOURCES
from lookcloser.train.grpo import check_reward_rows

REPO = Path(__file__).resolve().parents[1]
PROMPT = [{"role": "user", "content": "A. 3 or B. 5: which is larger?"}]
GOOD = {"prompt": PROMPT, "data_source": "mir", "reward_info": json.dumps({"answer": "B"}), "id": "q0"}


@pytest.mark.parametrize(("row", "field", "phrase"), [
    ({"data_source": "gsm8k"}, "data_source", "unknown data_source 'gsm8k'"),
    ({"data_source": "tir-bnech"}, "data_source", "unknown data_source 'tir-bnech'"),  # misspelt
    ({"data_source": None}, "data_source", "no data_source"),
    ({"reward_info": "{not json"}, "reward_info", "mir: gold '{not json' is not valid JSON"),
    ({"reward_info": json.dumps({"answer": 3})}, "reward_info",
     'mir: gold is \'{"answer": 3}\'; expected the answer letter'),
    ({"data_source": "disbench", "reward_info": json.dumps({"answer": {"id": 1}})}, "reward_info",
     'disbench: gold is \'{"answer": {"id": 1}}\'; expected the list of gold photo ids'),
])
def test_a_row_no_scorer_reads_is_named(row, field, phrase):
    rows = [GOOD, {**GOOD, "id": "q1", **row}]
    with pytest.raises(RecordError) as caught:
        check_reward_rows(Dataset.from_list(rows), ["accuracy", "format"], "rows.jsonl")
    assert (caught.value.source, caught.value.record_id, caught.value.field) == ("rows.jsonl", "q1", field)
    assert phrase in str(caught.value), str(caught.value)


def test_good_rows_and_shaping_only_rewards_pass():
    mixed = [GOOD, {**GOOD, "id": "q1", "data_source": "disbench", "reward_info": json.dumps({"answer": ["1", "2"]})},
             {**GOOD, "id": "q2", "data_source": "lookcloser/TIR-Bench",
              "reward_info": json.dumps({"task": "refcoco", "answer": "B", "prompt": "A. x\nB. y"})}]
    check_reward_rows(Dataset.from_list(mixed), ["accuracy", "tool_use"])
    no_benchmark = [{"prompt": PROMPT, "data_source": "gsm8k", "reward_info": "", "id": "q0"}]
    check_reward_rows(Dataset.from_list(no_benchmark), ["format", "overlong"])  # nothing reads the gold
    with pytest.raises(RecordError, match="record '#0', field 'data_source': no data_source"):
        check_reward_rows(Dataset.from_list([{"prompt": PROMPT}]), ["accuracy"])  # no columns at all


def test_the_command_stops_before_the_model_loads(tmp_path):
    rows = [GOOD, {**GOOD, "id": "q1", "data_source": "gsm8k"}]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {**os.environ, "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "LOOKCLOSER_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(REPO / "train" / "grpo.py"), str(REPO / "recipes" / "grpo_synthetic.yaml"),
                           "--dataset_path", "rows.jsonl", "--output_dir", "out",
                           "--environment", "none"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.splitlines() == [
        ("error: rows.jsonl: record 'q1', field 'data_source': unknown data_source 'gsm8k': lookcloser scores "
        f"{', '.join(SOURCES)} (reward_funcs accuracy, format, tool_use cannot score this row; "
        "docs/rewards.md has the columns)")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rows.jsonl"]  # no model built, nothing written
