"""The trainer adapters on the one scoring entry (issue 39): every gold shape real loaders give scores the
same everywhere; scorer bugs still raise under the suite's LOOKCLOSER_REWARD_ERRORS=raise; the final turn."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lookcloser.rewards import REGISTRY, llm_judge, openrlhf, scoring, trl_rewards, verl
from lookcloser.rewards._text import final_turn_text

DIS = ["1", "2", "3"]
SHAPES = {  # what parquet, pandas, JSON files and Python hand over for one DISBench gold
    "list": DIS, "tuple": tuple(DIS), "numpy": np.array(DIS, dtype=object), "numpy str": np.array(DIS),
    "JSON text": json.dumps(DIS), "dict": {"answer": DIS}, "dict of numpy": {"answer": np.array(DIS)},
    "JSON dict": json.dumps({"answer": DIS}), "bytes": json.dumps(DIS).encode(),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_gold_shape_scores_the_same_in_every_adapter(shape):
    gold, response = SHAPES[shape], '<answer>["1", "2"]</answer>'
    label = {"data_source": "disbench", "reward_info": gold if isinstance(gold, (str, dict)) else list(gold)}
    scores = {
        "score": scoring.score("disbench", response, gold),
        "trl": REGISTRY["accuracy"]([response], data_source=["disbench"], reward_info=[gold])[0],
        "verl": verl.compute_score("disbench", response, gold),
        "openrlhf": openrlhf.score_label("P" + response, "P", {**label, "reward_info": label["reward_info"]
                                                                 if not isinstance(gold, bytes) else DIS})[0],
    }
    assert scores == pytest.approx(dict.fromkeys(scores, 0.8)), scores


@pytest.fixture
def broken_scorer(monkeypatch):
    from lookcloser.rewards import mir

    def boom(*args, **kwargs):
        raise RuntimeError("scorer bug")

    monkeypatch.setattr(mir, "score", boom)


def test_scorer_bugs_raise_under_the_suite_and_are_counted_otherwise(broken_scorer, monkeypatch):
    label = json.dumps({"data_source": "mir", "reward_info": {"answer": "B"}})
    with pytest.raises(RuntimeError, match="scorer bug"):
        verl.compute_score("mir", "Answer: B", "B")
    with pytest.raises(RuntimeError, match="scorer bug"):
        openrlhf.score_label("Answer: B", "", label)
    monkeypatch.setenv(scoring.RAISE_ENV, "")
    monkeypatch.setattr(scoring, "ERRORS", scoring.Counter())
    assert verl.compute_score("mir", "Answer: B", "B") == 0.0
    assert openrlhf.score_label("Answer: B", "", label) == (0.0, "scorer_error")
    assert scoring.ERRORS == {"scorer_error": 2}


def test_input_errors_are_counted_not_raised_even_under_the_suite(monkeypatch):
    assert scoring.errors_raise()  # tests/conftest.py
    monkeypatch.setattr(scoring, "ERRORS", scoring.Counter())
    assert verl.compute_score("disbench", "<answer>1</answer>", None) == 0.0
    assert openrlhf.score_label("x", "", '{"data_source": "mir"}') == (0.0, "bad_label")
    assert openrlhf.score_label("x", "", json.dumps({"data_source": "nope", "reward_info": "B"})) == \
        (0.0, "unknown_source")
    assert scoring.ERRORS == {"bad_gold": 1, "bad_label": 1, "unknown_source": 1}
    with pytest.raises(ValueError, match="compute_score_or_default"):  # verl: loud on an unknown source
        verl.compute_score("nope", "x", "B")


def test_the_final_assistant_turn_is_scored_not_tool_output():
    tool = "Answer: A " * 4000  # tool output that looks like an answer, past the 32,000-character cap
    skipped = f"call\nuser\n<tool_response>\n{tool}\n</tool_response>\nassistant\n<answer>B</answer>"
    kept = f"call<|im_end|>\n<|im_start|>user\n<tool_response>\n{tool}\n</tool_response><|im_end|>\n" \
           "<|im_start|>assistant\n<answer>B</answer><|im_end|>"
    assert final_turn_text(skipped) == final_turn_text(kept) == "<answer>B</answer>"
    assert final_turn_text("<answer>B</answer><|im_end|>") == "<answer>B</answer>"  # one turn: the marker dropped
    item = {"task": "refcoco", "answer": "B", "prompt": "A. x\nB. y"}
    assert verl.compute_score("tir_bench", skipped, item) == 1.0
    assert openrlhf.score_label(kept, "", json.dumps({"data_source": "tir_bench", "reward_info": item})) == (1.0, None)


def test_the_judge_without_its_client_is_one_clear_error(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "httpx2" else real(name, *a))
    with pytest.raises(ImportError, match=r"the LLM judge needs httpx2, .*pip install 'lookcloser\[judge\]'"):
        trl_rewards.make_judged_reward("imagemining", llm_judge=True)
    with pytest.raises(ImportError, match="httpx2"):
        llm_judge.judge_answer("Red", "Blue", base_url="http://127.0.0.1:9/v1", model="m")
    assert trl_rewards.make_judged_reward("imagemining")(["<answer>Red</answer>"], data_source=["imagemining"],
                                                 reward_info=['{"answer": "Red"}']) == [1.0]  # no judge: no error
