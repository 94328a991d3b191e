"""Property tests: every scorer and reward function returns a float in its documented range for any
input string, never raises, and is deterministic; strict mode never pays a response that lists
every option, index or number."""

from __future__ import annotations

import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookcloser.rewards import REGISTRY, disbench, imagemining, mir, tir_bench
from lookcloser.rewards.format_and_tools import format_score
from lookcloser.rewards.verl import compute_score

# REWARDS_HYPOTHESIS_EXAMPLES=2000 for a long fuzzing run; the default keeps the suite fast
FAST = settings(max_examples=int(os.environ.get("REWARDS_HYPOTHESIS_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

FRAGMENTS = ["<think>", "</think>", "<answer>", "</answer>", "\\boxed{", "}", "{", "Answer:", "答案是", "A", "B",
             "J", "(C)", " is correct", "7", "3, 6", "[", "]", "\n", "\n\n", "row 3 column 6", "1,234", "-",
             "Row 1:", "，", "\x00", "\u202e", "𝔸", "Ａ", "\\frac{1}{2}", "$", "**", "e" * 50, "。", "None"]
texts = st.one_of(
    st.text(max_size=400),
    st.lists(st.sampled_from(FRAGMENTS), max_size=40).map("".join),
    st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
    st.binary(max_size=300).map(lambda b: b.decode("utf-8", "replace")),
)
ITEMS = [
    {"task": "refcoco", "answer": "A", "prompt": "Q\nA: 65%\nB: 73%\nC: 81%"},
    {"task": "symbolic", "answer": "ACD", "prompt": "A. a\nB. b\nC. c\nD. d"},
    {"task": "instrument", "answer": 72, "prompt": ""},
    {"task": "math", "answer": "3.5", "prompt": ""},
    {"task": "word_search", "answer": "[3, 6]", "prompt": ""},
    {"task": "spot_difference", "answer": "7, 11, 12", "prompt": "n is 4 and m is 5"},
    {"task": "jigsaw", "answer": "[4, 1, 8, 9, 3, 6, 2, 7, 5]", "meta_data": {"difficulty": 3}},
    {"task": "ocr", "answer": "Sunset Boulevard", "image_1": "data/ocr/160.jpg"},
    {"category": "maze", "answer": "K", "metadata": {}},
    {"task": "jigsaw", "answer": "x", "meta_data": {"difficulty": "a lot"}},
    {"task": None, "answer": None},
]


def in_unit(value) -> bool:
    return isinstance(value, float) and 0.0 <= value <= 1.0


@FAST
@given(text=texts, index=st.integers(0, len(ITEMS) - 1), mode=st.sampled_from(["strict", "official"]))
def test_tir_score_total_bounded_deterministic(text, index, mode):
    item = ITEMS[index]
    first = tir_bench.score(item, text, mode)
    assert in_unit(first)
    assert tir_bench.score(item, text, mode) == first
    assert isinstance(tir_bench.extract_answer(item, text), str)
    assert in_unit(tir_bench.judge(item, text, text))


@FAST
@given(text=texts, answer=texts)
def test_other_scorers_total_bounded(text, answer):
    assert mir.score(text, answer) in (0.0, 1.0)
    assert mir.extract_option(text) in (None, *"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    value = disbench.score(text, [answer, "123"])
    assert in_unit(value) and disbench.score(text, [answer, "123"]) == value
    assert all(isinstance(x, str) for x in disbench.parse_photo_ids(text))
    value = imagemining.score(text, answer, answer)
    assert value in (0.0, 1.0) and imagemining.score(text, answer, answer) == value
    assert format_score(text) in (0.0, 1.0)
    assert in_unit(compute_score("tir_bench", text, answer))


@FAST
@given(predicted=st.lists(st.one_of(st.text(max_size=5), st.integers()), max_size=12),
       gold=st.lists(st.text(max_size=5), max_size=12))
def test_disbench_metrics_bounded(predicted, gold):
    metrics = disbench.set_metrics(predicted, gold)
    assert set(metrics) == {"em", "f1", "precision", "recall", "iou"}
    assert all(0.0 <= v <= 1.0 for v in metrics.values())
    assert all(0.0 <= v <= 1.0 + 1e-12 for v in disbench.ranking_metrics(predicted, gold).values())


columns = st.fixed_dictionaries({
    "data_source": st.sampled_from(["tir_bench", "mir", "disbench", "imagemining", "other", None, 3]),
    "reward_info": st.one_of(texts, st.sampled_from([json.dumps(ITEMS[0]), json.dumps({"answer": "B"}),
                                                     json.dumps({"answer": ["1", "2"]}), "{}", None, "[]"])),
})
completion = st.one_of(texts, st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["assistant", "tool", "user"]),
    "content": st.one_of(texts, st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
                                         max_size=3), st.none())}), max_size=4))


@FAST
@given(rows=st.lists(st.tuples(completion, columns), min_size=1, max_size=4))
def test_reward_functions_never_raise(rows):
    completions = [c for c, _ in rows]
    cols = {"data_source": [r["data_source"] for _, r in rows], "reward_info": [r["reward_info"] for _, r in rows]}
    for name, func in REGISTRY.items():
        out = func(completions, **cols)
        assert len(out) == len(completions)
        low = -1.0 if name == "overlong" else 0.0
        assert all(v is None or (isinstance(v, float) and low <= v <= 1.0) for v in out), name
        assert func(completions, **cols) == out


def test_huge_and_pathological_inputs():
    huge = ("Answer: B. " * 50_000) + "<answer>" + "{" * 5000 + "\\boxed{" * 3000
    for item in ITEMS:
        for mode in ("strict", "official"):
            assert in_unit(tir_bench.score(item, huge, mode))
    assert mir.score(huge, "B") in (0.0, 1.0)
    assert in_unit(disbench.score(huge, ["1"]))
    assert imagemining.score(huge, "B") in (0.0, 1.0)
    assert format_score(huge) == 0.0


# ---- strict mode: listing everything never gets full credit -----------------------------------------

@FAST
@given(order=st.permutations("ABCDEF"), wrap=st.sampled_from(["Answer: {}", "<answer>{}</answer>", "\\boxed{{{}}}",
                                                                "The answer is {}.", "{}"]),
       sep=st.sampled_from([" ", ", ", " or ", "/", "\n"]))
def test_strict_listing_every_option(order, wrap, sep):
    item = {"task": "refcoco", "answer": "C", "prompt": "Q\n" + "\n".join(f"{x}. opt {x}" for x in "ABCDEF")}
    assert tir_bench.score(item, wrap.format(sep.join(order)), "strict") < 1.0


@FAST
@given(extra=st.lists(st.integers(1, 20), max_size=5), sep=st.sampled_from([", ", " ", "; ", "\n"]),
       wrap=st.sampled_from(["Answer: {}", "<answer>[{}]</answer>"]))
def test_strict_listing_every_index_or_number(extra, sep, wrap):
    spot = {"task": "spot_difference", "answer": "7, 11, 12", "prompt": "n is 4 and m is 5"}
    every = [str(i) for i in range(1, 21)] + [str(x) for x in extra]
    assert tir_bench.score(spot, wrap.format(sep.join(every)), "strict") < 1.0
    number = {"task": "instrument", "answer": "12", "prompt": ""}
    assert tir_bench.score(number, wrap.format(sep.join(every)), "strict") < 1.0
    pair = {"task": "word_search", "answer": "[3, 6]", "prompt": ""}
    pairs = ", ".join(f"({r}, {c})" for r in range(1, 5) for c in range(1, 8))
    assert tir_bench.score(pair, wrap.format(pairs), "strict") < 1.0
