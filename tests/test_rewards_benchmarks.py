"""MIR, DISBench and ImageMining scorers, with the sample records (generated, and real where they exist),
and the LLM-judge recall against a real HTTP server on loopback."""

from __future__ import annotations

import itertools
import json
import logging
import time
from typing import ClassVar

import pytest

from lookcloser.rewards import disbench, imagemining, mir
from testing.fake_endpoint import FakeEndpoint

# ---- MIR ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "letter"), [
    (r"\boxed{B}", "B"), (r"so \boxed{ c }", "C"), ("Answer: B", "B"), ("answer: b", "B"),
    ("Your option: C\nReason: option A is too small", "C"), ("the correct answer is d.", "D"),
    ("I pick (B) because the tower is bigger", "B"), ("... therefore\n\nB", "B"), ("final: (a)", "A"),
    ("<conclusion>The tower is bigger, so C.</conclusion>", "C"), ("<answer> b </answer>", "B"),
    ("<think>maybe A</think><answer>D</answer>", "D"), ("The answer is a bigger tower.", None), ("", None),
])
def test_mir_extract_option(text, letter):
    assert mir.extract_option(text) == letter


def test_mir_score_with_letter_or_conclusion():
    assert mir.score("Your option: B", "B") == 1.0
    assert mir.score("Your option: B", "Sales grew the most in Q2, so the answer is B.") == 1.0
    assert mir.score("Your option: A", "B") == 0.0
    assert mir.score("Your option: B", "no letter here") == 0.0


# Each source's records and their gold letters, read off the records by hand (the generated ones: the
# bundled data/mir_sample); a letter or a sentence as the conclusion.
GOLD_LETTERS = {"real": {"forced_perspective_0001": "C", "chart_analysis_0042": "B"},
                "generated": {"bigger_000": "B", "count_001": "D", "which_red_000": "A"}}


def test_mir_sample_records(sample_records):
    records = sample_records.by_id("mir")
    for rid, letter in GOLD_LETTERS[sample_records.source].items():
        conclusion = records[rid]["conclusion"]
        assert mir.gold_letter(conclusion) == letter, rid
        stage4 = f"Let's analyze these images first: ...\nBased on the above, the correct answer is {letter}"
        assert mir.score(stage4, conclusion) == 1.0, rid
        assert mir.score(conclusion, conclusion) == 1.0, rid
        wrong = next(other for other in "ABCD" if other != letter)
        assert mir.score(f"Answer: {wrong}", conclusion) == 0.0, rid


# ---- DISBench ---------------------------------------------------------------------------------------

def test_set_metrics_by_hand():
    m = disbench.set_metrics(["a", "b", "b", "x"], ["a", "b", "c", "d"])  # P={a,b,x}, G={a,b,c,d}
    assert m == pytest.approx({"em": 0.0, "precision": 2 / 3, "recall": 0.5, "f1": 4 / 7, "iou": 2 / 5})
    assert disbench.set_metrics([123], ["123"])["em"] == 1.0  # ids compared as strings
    assert disbench.set_metrics([], ["a"]) == {"em": 0.0, "f1": 0.0, "precision": 0.0, "recall": 0.0, "iou": 0.0}
    assert disbench.set_metrics([], [])["em"] == 1.0


def test_ranking_metrics_by_hand():
    ranked, gold = ["x", "a", "y", "b", "a", "z"], ["a", "b", "c"]  # the repeated "a" counts once
    m = disbench.ranking_metrics(ranked, gold, ks=(1, 3, 5))
    assert m["recall@1"] == 0.0 and m["map@1"] == 0.0 and m["ndcg@1"] == 0.0
    assert m["recall@3"] == pytest.approx(1 / 3)
    assert m["map@3"] == pytest.approx((1 / 2) / 3)  # hit at 2: P@2 = 1/2; / min(3, 3)
    assert m["ndcg@3"] == pytest.approx((1 / 1.5849625) / (1 + 1 / 1.5849625 + 0.5))
    # top 5 after de-dup: x a y b z → hits at 2 and 4
    assert m["recall@5"] == pytest.approx(2 / 3)
    assert m["map@5"] == pytest.approx((1 / 2 + 2 / 4) / 3)
    idcg = 1 + 1 / 1.5849625 + 0.5
    assert m["ndcg@5"] == pytest.approx((1 / 1.5849625 + 1 / 2.3219281) / idcg)
    assert set(disbench.ranking_metrics([], ["a"])) == {f"{m}@{k}" for m in ("recall", "map", "ndcg")
                                                         for k in (1, 3, 5, 10)}


@pytest.mark.parametrize(("response", "ids"), [
    ('<answer>["1", "2"]</answer>', ["1", "2"]),
    ("<answer>1, 2, 2\n3</answer>", ["1", "2", "3"]),
    ('Done.\n```json\n{"photo_ids": ["7", "8"]}\n```', ["7", "8"]),
    ("I looked at [5] first, then settled on [\"6\", \"7\"].", ["6", "7"]),
    ("Photo IDs: 11, 12", ["11", "12"]),
    ("The matching photos are\n21 22 23", ["21", "22", "23"]),
    ("nothing found", []),
])
def test_parse_photo_ids(response, ids):
    assert disbench.parse_photo_ids(response) == ids


def test_disbench_sample_query(sample_records):
    gold = sample_records.disbench_queries[0]["answer"]
    assert len(gold) >= 2
    assert disbench.score("<answer>" + json.dumps(gold) + "</answer>", gold) == 1.0
    half = gold[: len(gold) // 2]  # precision 1, recall |half|/|gold|: F1 2|half|/(|half|+|gold|) (2/3 for 2 of 4)
    expected = 2 * len(half) / (len(half) + len(gold))
    assert disbench.score("<answer>" + json.dumps(half) + "</answer>", gold) == pytest.approx(expected)


# ---- ImageMining --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("response", "answer", "answer_zh", "expected"), [
    ("<answer>red feather</answer>", "Red feather", "红色羽毛", 1.0),
    ("<answer>红色羽毛</answer>", "Red feather", "红色羽毛", 1.0),
    ("Final answer: Light purple", "(Pale/Light) purple", None, 1.0),
    ("Final answer: pale purple", "(Pale/Light) purple", None, 1.0),
    ("Final answer: dark purple", "(Pale/Light) purple", None, 0.0),
    ("Answer: 236394398", "236,394,398", None, 1.0),
    ("Answer: 8.7012", "8.701", None, 1.0),  # rounded to the answer's 3 decimals
    ("Answer: 8.70", "8.701", None, 0.0),
    ("Answer: 4700mAh", "4700 mAh", None, 1.0),
    ("Answer: 47", "47 years old", None, 1.0),
    ("Answer: 4.7%", "-4.7%", None, 0.0),
    ("Answer: 38,040,000", "38.04M", None, 1.0),
    ("<answer>306.79亿元</answer>", "30.679 billion yuan", "306.79亿元", 1.0),
    ("It happened in 1944.", "1944", "1944年", 1.0),
    ("Answer: 1943 or 1944", "1944", None, 0.0),
    ("The colour is red.", "Red", "红色", 1.0),
    ("Answer: Red and black", "Red", None, 0.0),
    ("The Atlantic Declaration", "The Atlantic Declaration", "《大西洋宣言》", 1.0),
    ("答案是8个", "8", "8个", 1.0),
    ("Red blue green red yellow; the logo may be red or blue or black", "Red", None, 0.0),
])
def test_imagemining_rule_score(response, answer, answer_zh, expected):
    assert imagemining.score(response, answer, answer_zh) == expected


def test_imagemining_long_response_containing_answer_everywhere_gets_nothing():
    spam = " ".join(["Red", "Blue", "Green", "Red feather", "Pure black"] * 50)
    assert imagemining.score(spam, "Red feather", "红色羽毛") == 0.0


def test_imagemining_sample_answers_match_themselves_and_not_others(sample_records):
    rows = sample_records.imagemining
    assert len(rows) == {"real": 217, "generated": 14}[sample_records.source]
    for row in rows:
        assert imagemining.score(f"<answer>{row['answer']}</answer>", row["answer"], row["answer_zh"]) == 1.0
        assert imagemining.score(f"<answer>{row['answer_zh']}</answer>", row["answer"], row["answer_zh"]) == 1.0
    wrong = sum(imagemining.score(f"<answer>{a['answer']}</answer>", b["answer"], b["answer_zh"])
                for a, b in itertools.pairwise(rows) if a["answer"].casefold() != b["answer"].casefold())
    assert wrong <= 2  # distinct answers rarely collide after normalisation


# ---- LLM judge on a real loopback server -------------------------------------------------------------

class _Judge:
    """The judge's endpoint (``testing.fake_endpoint``, a real server on loopback): "CORRECT" for crimson
    against Red; ``mode`` "error" (HTTP 500), "garbage" (a reply that is not JSON) or "slow" (1.5 s)."""

    REPLIES: ClassVar[dict] = {"error": {"status": 500}, "slow": {"sleep": 1.5},
                               "garbage": {"raw": b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nnot json"}}

    def __init__(self) -> None:
        self.mode, self.bodies, self.endpoint = "ok", [], FakeEndpoint(self.respond)

    def respond(self, request: dict, attempt: int) -> dict:
        self.bodies.append(request)
        user = request["messages"][-1]["content"]
        verdict = "CORRECT" if "crimson" in user and "Reference answer: Red" in user else "INCORRECT"
        return {"content": verdict, **self.REPLIES.get(self.mode, {})}

    @property
    def requests(self) -> list[dict]:
        return [{"path": path, "auth": auth, "body": body} for path, auth, body
                in zip(self.endpoint.targets, self.endpoint.authorizations, self.bodies, strict=True)]


@pytest.fixture
def judge_server(monkeypatch):
    judge = _Judge()
    with judge.endpoint:
        monkeypatch.setenv("LOOKCLOSER_JUDGE_BASE_URL", judge.endpoint.url)
        monkeypatch.setenv("LOOKCLOSER_JUDGE_MODEL", "judge-model")
        monkeypatch.setenv("LOOKCLOSER_JUDGE_API_KEY", "sk-test-secret")
        yield judge


def test_llm_judge_off_by_default(judge_server):
    assert imagemining.score("<answer>crimson</answer>", "Red") == 0.0
    assert judge_server.requests == []


def test_llm_judge_recalls_only_when_rule_score_is_zero(judge_server, caplog):
    with caplog.at_level(logging.DEBUG):
        assert imagemining.score("<answer>crimson</answer>", "Red", llm_judge=True) == 1.0
        assert imagemining.score("<answer>blue</answer>", "Red", llm_judge=True) == 0.0
        assert imagemining.score("<answer>red</answer>", "Red", llm_judge=True) == 1.0  # rule hit: no call
    assert len(judge_server.requests) == 2
    first = judge_server.requests[0]
    assert first["path"] == "/v1/chat/completions"
    assert first["auth"] == "Bearer sk-test-secret"
    assert first["body"]["model"] == "judge-model" and first["body"]["temperature"] == 0
    assert "sk-test-secret" not in caplog.text


@pytest.mark.parametrize("mode", ["error", "garbage", "slow"])
def test_llm_judge_failures_keep_the_rule_score(judge_server, mode, caplog):
    judge_server.mode = mode
    start = time.monotonic()
    assert imagemining.score("<answer>crimson</answer>", "Red", llm_judge=True, timeout=0.5) == 0.0
    assert time.monotonic() - start < 1.4  # the timeout holds
    assert "sk-test-secret" not in caplog.text


def test_llm_judge_arguments_override_env(judge_server, monkeypatch):
    base = "http://127.0.0.1:1"  # nothing listens there
    assert imagemining.score("<answer>crimson</answer>", "Red", llm_judge=True, base_url=base, timeout=0.5) == 0.0
    monkeypatch.delenv("LOOKCLOSER_JUDGE_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert imagemining.score("<answer>crimson</answer>", "Red", llm_judge=True, model="other") == 1.0
    assert judge_server.requests[-1]["auth"] is None
    assert judge_server.requests[-1]["body"]["model"] == "other"
