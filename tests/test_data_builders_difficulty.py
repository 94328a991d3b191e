"""Difficulty filter: pass rates from a predictions file, buckets, curriculum order, two-stage mix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookcloser.data_builders.cli import main
from lookcloser.data_builders.difficulty import (
    DifficultyConfig,
    curriculum_order,
    level,
    pass_rate,
    two_stage_split,
)
from lookcloser.data_builders.output import load_output

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "mir_sample" / "all_data_rel.json"
RIGHT = ("{g}", "Your option: {g}\nReason: it matches.", "the correct answer is {g}", "\\boxed{{{g}}}")
WRONG = ("Your option: {w}", "I cannot tell.")


def _predictions(records: list[dict], path: Path) -> dict[str, float]:
    """k=10 answers per record with a pass rate cycling through 1.0, 0.8, 0.5, 0.3, 0.0."""
    rates = {}
    with path.open("w") as f:
        for i, record in enumerate(records):
            gold = record["conclusion"].strip()[-1] if len(record["conclusion"].strip()) == 1 else \
                record["conclusion"].rstrip(".")[-1]
            wrong = "A" if gold != "A" else "B"
            n_right = (10, 8, 5, 3, 0)[i % 5]
            preds = [RIGHT[j % len(RIGHT)].format(g=gold) for j in range(n_right)]
            preds += [WRONG[j % len(WRONG)].format(w=wrong) for j in range(10 - n_right)]
            f.write(json.dumps({"id": record["id"], "predictions": preds}) + "\n")
            rates[record["id"]] = n_right / 10
    return rates


@pytest.fixture()
def records() -> list[dict]:
    return json.loads(SAMPLE.read_text())


def test_pure_rules():
    assert pass_rate(["B", "(b)", "Your option: C", "?"], "B") == 0.5
    cfg = DifficultyConfig(easy_threshold=0.8, hard_threshold=0.2)
    assert [level(r, cfg) for r in (0.9, 0.8, 0.5, 0.2, 0.1)] == ["easy", "easy", "medium", "hard", "hard"]
    levels = {f"q{i}": ("easy", "medium", "hard")[i % 3] for i in range(30)}
    order = curriculum_order(levels, seed=1)
    assert [levels[i] for i in order] == ["easy"] * 10 + ["medium"] * 10 + ["hard"] * 10
    assert order == curriculum_order(dict(reversed(list(levels.items()))), seed=1)  # input order does not matter
    assert order != curriculum_order(levels, seed=2)
    easy, hard = two_stage_split(order, levels, 0.4, seed=1)
    assert easy == order[:10] and len(hard) == 4 and hard == [i for i in order if i in set(hard)]
    with pytest.raises(ValueError, match="hard_threshold < easy_threshold"):
        DifficultyConfig(easy_threshold=0.3, hard_threshold=0.5)


def test_difficulty_from_predictions_file(records, tmp_path, capsys):
    rates = _predictions(records, tmp_path / "preds.jsonl")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("easy_threshold: 0.7\nhard_threshold: 0.3\nhard_share: 0.5\nseed: 3\n")
    out = tmp_path / "difficulty"
    assert main(["difficulty", str(SAMPLE), "--predictions", str(tmp_path / "preds.jsonl"), "--recipe", str(recipe),
                 "--out", str(out), "--no_progress"]) == 0
    assert "read 64 records, written 64 (64 rows), skipped 0" in capsys.readouterr().out
    ds = load_output(out)
    rank = {"easy": 0, "medium": 1, "hard": 2}
    assert [rank[d] for d in ds["difficulty"]] == sorted(rank[d] for d in ds["difficulty"])  # easy -> hard
    assert ds["pass_rate"] != sorted(ds["pass_rate"], reverse=True)  # shuffled inside a level, not sorted
    for row in ds:
        assert row["pass_rate"] == pytest.approx(rates[row["id"]])
        assert row["difficulty"] == level(rates[row["id"]])
    curriculum = json.loads((out / "curriculum.json").read_text())
    assert [r["id"] for r in curriculum] == ds["id"]
    assert curriculum[0]["images"] == next(r for r in records if r["id"] == curriculum[0]["id"])["images"]
    easy = json.loads((out / "stage1_easy.json").read_text())
    hard = json.loads((out / "stages2-4_hard.json").read_text())
    n_easy = sum(r >= 0.7 for r in rates.values())
    n_hard = sum(r <= 0.3 for r in rates.values())
    assert len(easy) == n_easy and {r["difficulty"] for r in easy} == {"easy"}
    assert len(hard) == round(0.5 * n_hard) and {r["difficulty"] for r in hard} == {"hard"}


def test_missing_predictions_reject_or_fail(records, tmp_path, capsys):
    _predictions(records[:60], tmp_path / "preds.jsonl")
    args = ["difficulty", str(SAMPLE), "--predictions", str(tmp_path / "preds.jsonl"), "--no_progress"]
    assert main([*args, "--out", str(tmp_path / "fail")]) == 2
    assert "record 'count_012', field 'predictions': no predictions for this record id" in capsys.readouterr().err
    assert main([*args, "--out", str(tmp_path / "skip"), "--on_error", "skip"]) == 0
    out = capsys.readouterr().out
    assert "read 64 records, written 60 (60 rows), skipped 4" in out and "no predictions: 4" in out
    assert len((tmp_path / "skip.rejects.jsonl").read_text().splitlines()) == 4


def test_bad_predictions_line(records, tmp_path, capsys):
    (tmp_path / "preds.jsonl").write_text('{"id": "colour_000", "predictions": "B"}\n')
    assert main(["difficulty", str(SAMPLE), "--predictions", str(tmp_path / "preds.jsonl"),
                 "--out", str(tmp_path / "out"), "--no_progress"]) == 2
    assert "record 'colour_000', field 'predictions': must be a list of strings" in capsys.readouterr().err


def test_sampling_a_model_through_the_agent_loop(records, tmp_path, capsys):
    """The model path end to end on the tiny model: k answers per question, then the same pipeline."""
    (tmp_path / "three.json").write_text(json.dumps(records[:3]))
    out = tmp_path / "sampled"
    assert main(["difficulty", str(tmp_path / "three.json"), "--images_root", str(SAMPLE.parent),
                 "--model", "lookcloser/tiny-qwen3-vl", "--samples", "2", "--max_new_tokens", "8", "--out", str(out), "--no_progress"]) == 0
    assert "read 3 records, written 3 (3 rows), skipped 0" in capsys.readouterr().out
    lines = [json.loads(x) for x in (tmp_path / "sampled.predictions.jsonl").read_text().splitlines()]
    assert [x["id"] for x in lines] == [r["id"] for r in records[:3]]
    assert all(len(x["predictions"]) == 2 and all(isinstance(p, str) for p in x["predictions"]) for x in lines)
    assert set(load_output(out)["n_samples"]) == {2}


def test_sampling_prompt_matches_upstream_vlm_infer():
    """Issue 12.8: upstream ends with an ``Options:`` line and one option per line; dict values via json.dumps."""
    from lookcloser.data_builders.difficulty import sampling_prompt

    record = {"question": "Which is faster, <image> or <image>?", "options": ["A. the car", "B. the bike"]}
    content = sampling_prompt(record)["content"]
    assert [b["type"] for b in content] == ["text", "image", "text", "image", "text", "text"]
    assert [b["text"] for b in content if b["type"] == "text"][:3] == ["Which is faster,", "or", "?"]
    assert content[-1]["text"] == ("Please select the most likely answer from the following options:\nOptions:\n"
                                   "A. the car\nB. the bike\nRespond in the following format:\nYour option: ...\n"
                                   "Reason: ...")
    as_dict = sampling_prompt({"question": "<image> Odd one?", "options": {"A": "red", "B": {"x": 1}, "C": 3}})
    assert as_dict["content"][-1]["text"].splitlines()[1:5] == ["Options:", 'A: "red"', 'B: {"x": 1}', "C: 3"]


def test_pass_rate_reads_only_the_records_letters():
    assert pass_rate(["The answer is E. So B."], "B") == 0.0
    assert pass_rate(["The answer is E. So B."], "B", ["A. x", "B. y"]) == 1.0


def test_model_sampling_path_writes_predictions_and_levels(tmp_path, tiny_model_dir):
    """``--model``: the command wires the agent's sampler (agent.sampling) into the builder."""
    records = json.loads(SAMPLE.read_text())[:3]
    mir = tmp_path / "mir.json"
    mir.write_text(json.dumps(records))
    out = tmp_path / "levels"
    code = main(["difficulty", str(mir), "--model", str(tiny_model_dir), "--samples", "2", "--max_new_tokens", "4",
                 "--images_root", str(SAMPLE.parent), "--out", str(out), "--no_progress"])
    assert code == 0
    preds = [json.loads(line) for line in (tmp_path / "levels.predictions.jsonl").read_text().splitlines()]
    assert sorted(p["id"] for p in preds) == sorted(str(r["id"]) for r in records)
    assert all(len(p["predictions"]) == 2 and all(isinstance(x, str) for x in p["predictions"]) for p in preds)
    assert len(load_output(out)) == 3
