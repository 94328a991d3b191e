"""TRL reward functions, registry and column contract; shaping rewards; verl adapter; light import."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lookcloser.rewards import REGISTRY, get_reward_funcs
from lookcloser.rewards.format_and_tools import (
    count_tool_results,
    format_score,
    overlong_penalty,
    tool_use_bonus,
)
from lookcloser.rewards.verl import compute_score

ROOT = Path(__file__).resolve().parents[1]
TIR_ITEM = {"id": 30, "task": "rotation_game", "answer": "B", "prompt": "A. 10°\nB. 355°\nC. 40°",
            "image_1": "data/rotation_game/30.jpg", "image_2": None, "meta_data": {}}
ROWS = {
    "data_source": ["tir_bench", "mir", "disbench", "imagemining", "other"],
    "reward_info": [json.dumps(TIR_ITEM), json.dumps({"answer": "C"}), json.dumps({"answer": ["1", "2"]}),
                    json.dumps({"answer": "Red", "answer_zh": "红色"}), "{}"],
}
RIGHT = ["<think>rotate</think><answer>B</answer>", "<think>x</think><answer>C</answer>",
         '<think>x</think><answer>["1", "2"]</answer>', "<think>x</think><answer>红色</answer>", "<answer>1</answer>"]


def conversation(final: str, tools: list[str]) -> list[dict]:
    messages = [{"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "crop"}}]}]
    messages += [{"role": "tool", "content": t} for t in tools]
    messages.append({"role": "assistant", "content": [{"type": "text", "text": final}]})
    return messages


def test_registry_names():
    assert {"tir_bench", "mir", "disbench", "imagemining", "format", "tool_use", "overlong", "accuracy"} <= set(REGISTRY)
    assert [f.__name__ for f in get_reward_funcs(["tir_bench", "format", "tool_use"])] == \
        ["tir_bench", "format", "tool_use"]
    with pytest.raises(KeyError):
        get_reward_funcs(["nope"])


def test_registry_builds_every_reward_with_the_runs_settings():
    tool_use, overlong = get_reward_funcs(["tool_use", "overlong"], tool_bonus_cap=2, max_completion_length=40)
    cols = {"data_source": ["tir_bench"] * 2, "reward_info": [json.dumps(TIR_ITEM)] * 2}
    completions = [conversation("<answer>B</answer>", ["cropped"]), conversation("<answer>B</answer>", ["a", "b"])]
    assert tool_use(completions, **cols) == [0.5, 1.0]  # min(results, 2) / 2
    assert overlong(["a"] * 3, completion_ids=[[0] * 30, [0] * 35, [0] * 40]) == [0.0, -0.5, -1.0]  # buffer 40 // 4
    assert get_reward_funcs(["overlong"])[0] is REGISTRY["overlong"]  # no budget given: 4096 tokens


def test_benchmark_rewards_log_accuracy_as_they_score():
    logged = []
    cols = {**ROWS, "task": ["rotation_game", "colour", None, None, None],
            "log_metric": lambda name, value: logged.append((name, value))}
    wrong = ["<answer>A</answer>"] + RIGHT[1:]
    assert REGISTRY["accuracy"](wrong, **cols) == [0.0, 1.0, 1.0, 1.0, None]
    assert logged == [("accuracy/tir_bench", 0.0), ("accuracy/tir_bench/rotation_game", 0.0),
                      ("accuracy/mir", 1.0), ("accuracy/mir/colour", 1.0), ("accuracy/disbench", 1.0),
                      ("accuracy/imagemining", 1.0), ("rewards/accuracy/errors", 0.0),
                      ("rewards/errors/unknown_source", 1.0)]  # the "other" row: no scorer serves it
    logged.clear()
    REGISTRY["tir_bench_official"](RIGHT[:1], **{k: v[:1] for k, v in cols.items() if k != "log_metric"},
                                   log_metric=cols["log_metric"])
    assert logged == [("rewards/tir_bench_official/errors", 0.0)]  # eval parity mode: no training metric


def test_benchmark_rewards_follow_data_source():
    assert REGISTRY["tir_bench"](RIGHT, **ROWS) == [1.0, None, None, None, None]
    assert REGISTRY["mir"](RIGHT, **ROWS) == [None, 1.0, None, None, None]
    assert REGISTRY["disbench"](RIGHT, **ROWS) == [None, None, 1.0, None, None]
    assert REGISTRY["imagemining"](RIGHT, **ROWS) == [None, None, None, 1.0, None]
    assert REGISTRY["accuracy"](RIGHT, **ROWS) == [1.0, 1.0, 1.0, 1.0, None]
    wrong = ["<answer>A</answer>", "<answer>B</answer>", "<answer>[\"9\"]</answer>", "<answer>blue</answer>", ""]
    assert REGISTRY["accuracy"](wrong, **ROWS) == [0.0, 0.0, 0.0, 0.0, None]


def test_reward_info_as_dict_and_conclusion():
    assert REGISTRY["tir_bench"](["Answer: B"], data_source=["tir_bench"], reward_info=[TIR_ITEM]) == [1.0]
    info = {"conclusion": "Sales grew the most in Q2, so the answer is B."}
    assert REGISTRY["mir"](["Your option: B"], data_source=["mir"], reward_info=[info]) == [1.0]
    assert REGISTRY["tir_bench_official"](["Answer: 355°"], data_source=["tir_bench"], reward_info=[TIR_ITEM]) == [1.0]


BAD_GOLDS = {  # per benchmark: golds no scorer can read (a bare number is a TIR-Bench answer, text an ImageMining one)
    "tir_bench": ["{not json", None, json.dumps({"no": "answer"}), {"answer": None}, True],
    "mir": ["{not json", None, "[1, 2]", 42, json.dumps({"no": "answer"}), "no letter here"],
    "disbench": ["{not json", None, json.dumps({"no": "answer"}), {"answer": [None]}, 2.5],
    "imagemining": ["{not json", None, 42, json.dumps({"no": "answer"}), ["Red"]],
}


def test_bad_reward_info_gives_none_counted_and_warned_once(monkeypatch, caplog):
    from lookcloser.rewards import scoring

    monkeypatch.setattr(scoring, "ERRORS", scoring.Counter())
    monkeypatch.setattr(scoring, "_warned", set())
    for source, bad in BAD_GOLDS.items():
        for name in (source, "accuracy", "tool_use"):
            logged = []
            out = REGISTRY[name](["Answer: B"] * len(bad), data_source=[source] * len(bad), reward_info=bad,
                                 log_metric=lambda n, v, logged=logged: logged.append((n, v)))
            assert out == [None] * len(bad), (name, source)
            assert ("rewards/errors/bad_gold", float(len(bad))) in logged, (name, logged)
    assert scoring.ERRORS == {"bad_gold": 3 * sum(map(len, BAD_GOLDS.values()))}
    warnings = [r.getMessage() for r in caplog.records]  # once, naming the row, the gold and the metric
    assert len(warnings) == 1 and warnings[0].startswith("row 0: bad_gold: tir_bench: gold '{not json' is not valid "
                                                         "JSON; such rows count in rewards/errors/bad_gold"), warnings
    sources = ["gsm8k", None, "", 3]
    logged = []
    out = REGISTRY["accuracy"](["x"] * 4, data_source=sources, reward_info=['{"answer": "B"}'] * 4,
                               log_metric=lambda n, v: logged.append((n, v)))
    assert out == [None] * 4
    assert logged[-2:] == [("rewards/errors/missing_source", 3.0), ("rewards/errors/unknown_source", 1.0)]
    assert REGISTRY["accuracy"](["x", "y"]) == [None, None]  # no columns at all: counted as missing sources
    assert REGISTRY["accuracy"](["x"], data_source=["mir"], reward_info=[]) == [None]  # short column: no gold


def test_conversational_completions_use_last_assistant_message():
    completions = [conversation("<answer>B</answer>", ["img"]), conversation("<answer>A</answer>", [])]
    cols = {"data_source": ["tir_bench"] * 2, "reward_info": [json.dumps(TIR_ITEM)] * 2}
    assert REGISTRY["tir_bench"](completions, **cols) == [1.0, 0.0]


def test_tool_use_counts_results_only_when_right():
    cols = {"data_source": ["tir_bench"] * 4, "reward_info": [json.dumps(TIR_ITEM)] * 4}
    completions = [
        conversation("<answer>B</answer>", ["cropped", '{"error": "bad box"}']),  # right, 1 result
        conversation("<answer>B</answer>", ['{"error": "x"}', "Error: timeout"]),  # right, only errors
        conversation("<answer>A</answer>", ["cropped", "zoomed"]),  # wrong
        "<tool_call>crop</tool_call><tool_response>fake</tool_response><answer>B</answer>",  # text only
    ]
    assert REGISTRY["tool_use"](completions, **cols) == [1.0, 0.0, 0.0, 0.0]
    assert count_tool_results(completions[0]) == 1
    assert tool_use_bonus(conversation("B", ["a", "b", "c", "d", "e"]), True, cap=3) == 1.0


def test_format_reward():
    assert REGISTRY["format"](["<think>look</think>\n<answer>B</answer>", "<answer>B</answer>",
                               "<think></think><answer>B</answer>", "<think>a</think>B",
                               "<think>a</think><answer>B</answer> trailing"]) == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert format_score("<think>a</think><think>b</think><answer>B</answer>") == 0.0
    assert format_score("  <think>a</think> The answer is \\boxed{B}.") == 1.0


def test_overlong_penalty_dapo():
    assert [overlong_penalty(n, 100, 20) for n in (50, 80, 90, 100, 101)] == [0.0, 0.0, -0.5, -1.0, -1.0]
    overlong = REGISTRY["overlong"]
    assert overlong(["a", "b"], completion_ids=[[0] * 100, [0] * 3584]) == [0.0, -0.5]
    assert overlong(["x" * (4 * 3584)]) == [-0.5]  # characters when no token ids


def test_verl_compute_score():
    assert compute_score("tir_bench", "<answer>B</answer>", json.dumps(TIR_ITEM)) == 1.0
    assert compute_score("lookcloser/TIR-Bench", "<answer>B</answer>", TIR_ITEM) == 1.0
    assert compute_score("tir_bench", "Answer: 355°", "B", {"task": "rotation_game", "prompt": TIR_ITEM["prompt"],
                                                           "tir_mode": "official"}) == 1.0
    assert compute_score("mir", "Answer: C", "C") == 1.0
    assert compute_score("disbench", '<answer>["1"]</answer>', json.dumps(["1", "2"])) == pytest.approx(2 / 3)
    assert compute_score("imagemining", "<answer>红色</answer>", "Red", {"answer_zh": "红色"}) == 1.0
    with pytest.raises(ValueError, match="unknown data_source"):  # issue 12: a config mistake, not a zero
        compute_score("unknown", "x", "y")
    with pytest.raises(ValueError, match="no data_source"):
        compute_score(None, None, None, "junk")
    assert compute_score("mir", None, None, "junk") == 0.0  # bad input for a known source still scores 0


def test_light_import_without_torch_transformers_trl():
    code = textwrap.dedent("""
        import importlib.abc, sys
        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "transformers", "trl"):
                    raise ImportError(f"blocked {name}")
        sys.meta_path.insert(0, Block())
        from lookcloser import rewards
        from lookcloser.rewards import tir_bench, mir, disbench, imagemining, format_and_tools, verl, llm_judge
        from lookcloser.rewards import openrlhf, scoring
        assert openrlhf.score_label("Answer: B", "", '{"data_source": "mir", "reward_info": "B"}') == (1.0, None)
        assert scoring.score("disbench", "<answer>1</answer>", ("1",)) == 1.0
        item = {"task": "math", "answer": "3.5", "prompt": ""}
        assert tir_bench.score(item, r"Answer: \\frac{7}{2}", "official") == 1.0  # math-verify path
        assert tir_bench.score({"task": "refcoco", "answer": "B", "prompt": "A. x"}, "Answer: bb", "official") == 0.0
        assert mir.score("Answer: B", "B") == 1.0 and disbench.score("<answer>1</answer>", ["1"]) == 1.0
        assert imagemining.score("<answer>Red</answer>", "Red") == 1.0
        assert verl.compute_score("mir", "B", "B") == 1.0
        assert rewards.REGISTRY["format"](["<think>a</think><answer>b</answer>"]) == [1.0]
        bad = [m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "trl")]
        assert not bad, bad
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_no_heavy_imports_in_source():
    """No torch, transformers or trl anywhere in rewards/, except the OpenRLHF file's tensor wrapper."""
    import ast

    for path in (ROOT / "rewards").glob("*.py"):
        tree = ast.parse(path.read_text())
        allowed = [n for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == "reward_func"
                   and path.name == "openrlhf.py" for n in ast.walk(f)]
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            heavy = [n for n in names if n.split(".")[0] in ("torch", "transformers", "trl")]
            assert not heavy or (node in allowed and heavy == ["torch"]), (path, heavy)


def test_tool_bonus_ignores_trls_error_results():
    """TRL writes a raising tool's result as str({"error": ...}): that is no tool result."""
    from lookcloser.rewards.format_and_tools import count_tool_results

    completion = [
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "crop", "arguments": {}}}]},
        {"role": "tool", "name": "crop", "content": str({"error": "ValueError: bad box"})},
        {"role": "assistant", "content": "<answer>B</answer>"},
    ]
    assert count_tool_results(completion) == 0
