"""Issue 12: scorers that match the benchmarks exactly (MIR options, TIR-Bench jigsaw, ImageMining
sentence answers, visible scorer errors). Each test here failed on main before the fix."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lookcloser.rewards import imagemining, mir, tir_bench
from lookcloser.rewards.trl_rewards import REGISTRY

FOUR = ["A. red", "B. blue", "C. the tower", "D. none"]

# ---- 1. MIR option extraction ----------------------------------------------------------------------

# (response, letter it states); every response mentions the cue word in the plural or in odd case
STYLES = [
    ("Among the choices, C fits best.", "C"),
    ("Of the options, C is correct.", "C"),
    ("Looking at all options, the tower is bigger (C).", "C"),
    ("Comparing the choices: the first image is faster, so B.", "B"),
    ("Both options A and B ignore the shadow; the answer is D.", "D"),
    ("OPTIONS considered. ANSWER: B", "B"),
    ("THE CORRECT ANSWER IS C.", "C"),
    ("None of the choices is perfect, but D is the closest.", "D"),
    ("After checking all the choices, option (B) is the best.", "B"),
    ("The answers differ by image; my choice: A", "A"),
    ("Choices A and C are ruled out. Correct option: B.", "B"),
    ("All four options look similar.\n\nFinal answer: **D**", "D"),
    ("Of the given options, the answer is (a).", "A"),
    ("options? choices? Your option: C\nReason: the options show a tower.", "C"),
    ("Given the choices, I pick C.", "C"),
    ("Between these options, B seems right.", "B"),
    ("Option C", "C"),
    ("choices", None),
    ("Looking at the options, none fits.", None),
]


@pytest.mark.parametrize(("text", "letter"), STYLES)
def test_mir_plural_and_case_cue_words(text, letter):
    assert mir.extract_option(text) == letter  # before: "Among the choices, C fits best." -> "S"
    assert mir.extract_option(text, FOUR) == letter
    if letter is not None:
        assert mir.score(text, letter, FOUR) == 1.0


# Answers that weigh several options before naming one (issue 27). Before the fix the first nine were
# misread (a letter weighed earlier) or unread (None); the last three were read right and still are.
WEIGHED = [
    # the choice after "but …" / "however"
    ("Image 2 could match option A, but the cup in image 4 is clearly larger, so D.", "D"),
    ("It might be (B), but the tower's base is hidden behind the trees, so I go with C.", "C"),
    ("A and B are both possible, but C fits the depth cues best.", "C"),
    ("The speedometer in option B reads higher; however, D shows the longer blur, which means faster.", "D"),
    # "the second one, X, …"
    ("Options A and C both show a kitchen. The second one, C, has the pan on the stove, matching step 3.", "C"),
    ("Looking at the two candidates, B and D: the second one, D, places the chair behind the table.", "D"),
    ("Between A (the red car) and B (the blue car), the second one, B, covers more ground per frame.", "B"),
    # the choice alone on the last line
    ("Option B looks plausible since the needle is higher, and option D seems unlikely.\nC", "C"),
    ("Image 1 suggests option A, image 3 suggests option B.\nWeighing the shadows:\n\n**D**", "D"),
    ("A: the man is closer. B: he is further away. C: same distance.\nHe overlaps the wall.\n(A)", "A"),
    # the earlier choice stands when what follows "but" only concedes or rules out
    ("B is the best match, but A is also close.", "B"),
    ("C looks right, but D does not.", "C"),
]


@pytest.mark.parametrize(("text", "letter"), WEIGHED)
def test_mir_answers_that_weigh_options_before_naming_one(text, letter):
    assert mir.extract_option(text, FOUR) == letter
    assert mir.score(text, letter, FOUR) == 1.0


@pytest.mark.parametrize("text", ["The answer is E.", "Answer: S", "Of the options, E is correct.", "(F)"])
def test_mir_never_returns_a_letter_outside_the_options(text):
    assert mir.extract_option(text, FOUR) is None
    assert mir.extract_option(text, {"A": "x", "B": "y"}) is None


def test_mir_option_letters_of_list_and_dict():
    assert mir.option_letters(FOUR) == frozenset("ABCD")
    assert mir.option_letters({"A": "x", "b": "y"}) == frozenset("AB")
    assert mir.option_letters(None) is None


_LEADS = ["Among the choices, ", "Of the options, ", "Looking at all options, ", "Comparing the CHOICES, ",
          "Given these Options: ", "The options differ. ", "", "After the choices were read, "]
_STATEMENTS = ["{l} fits best.", "{l} is correct.", "the answer is {l}.", "the tower is bigger ({l}).",
               "Answer: {l}", "I choose {l}.", "the correct option is {l}", "\\boxed{{{l}}}",
               "<answer>{l}</answer>", "Your option: {l}\nReason: the options differ.", "option {l}.",
               "{l} is the best choice.", "my final answer is ({l})", "The answer is {lower}."]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lead=st.sampled_from(_LEADS), statement=st.sampled_from(_STATEMENTS),
       n_options=st.integers(2, 6), pick=st.integers(0, 5),
       as_dict=st.booleans(), noise=st.text(alphabet="abcdefghij ,.", max_size=40))
def test_mir_realistic_styles_property(lead, statement, n_options, pick, as_dict, noise):
    letters = "ABCDEF"[:n_options]
    letter = letters[pick % n_options]
    options = {c: f"thing {c}" for c in letters} if as_dict else [f"{c}. thing {c}" for c in letters]
    text = noise.strip(" ,.") + (". " if noise.strip(" ,.") else "") + lead + statement.format(
        l=letter, lower=letter.lower())
    assert mir.extract_option(text, options) == letter


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=200), n_options=st.integers(2, 6))
def test_mir_extraction_stays_inside_the_options(text, n_options):
    options = [f"{c}. x" for c in "ABCDEF"[:n_options]]
    assert mir.extract_option(text, options) in {None, *"ABCDEF"[:n_options]}


def test_mir_reward_and_eval_use_the_records_options():
    from lookcloser.eval.loaders import EvalItem
    from lookcloser.eval.scoring import score_response

    text = "Answer: E\nso B."  # E is no option of this record: the stated option is B
    info = {"answer": "B", "options": ["A. x", "B. y"]}
    assert REGISTRY["mir"]([text], data_source=["mir"], reward_info=[json.dumps(info)]) == [1.0]
    assert REGISTRY["mir"]([text], data_source=["mir"], reward_info=[json.dumps({"answer": "B"})]) == [0.0]
    item = EvalItem("1", "mir", {}, {"conclusion": "B", "options": {"A": "x", "B": "y"}})
    assert score_response(item, text) == {"accuracy": 1.0}


# ---- 2. TIR-Bench jigsaw, official mode and strict over-count ----------------------------------------

ORDER = "[4, 1, 8, 9, 3, 6, 2, 7, 5]"


def _jigsaw(**meta):
    return {"task": "jigsaw", "answer": ORDER, "prompt": "Order the 3x3 pieces.", **meta}


def test_jigsaw_official_float_difficulty_works_like_upstream():
    item = _jigsaw(meta_data={"difficulty": 3.0})
    assert tir_bench.judge(item, "4 1 8 9 3 6 2 7 5") == 1.0
    assert tir_bench.score(item, "Answer: 4, 1, 8, 9, 3, 6, 2, 5, 7", "official") == pytest.approx(7 / 9)
    assert tir_bench.score(item, "Answer: 4, 1, 8, 9, 3, 6, 2, 7, 5", "strict") == 1.0
    assert tir_bench.judge(_jigsaw(meta_data={"difficulty": 2.5}), "4 1 8 9 3 6 2 7 5") == 0.0


def test_jigsaw_official_string_difficulty_scores_zero_like_upstream():
    item = _jigsaw(meta_data={"difficulty": "3"})
    assert tir_bench.judge(item, "4 1 8 9 3 6 2 7 5") == 0.0
    assert tir_bench.score(item, "Answer: 4 1 8 9 3 6 2 7 5", "official") == 0.0


def test_jigsaw_official_prefers_metadata_beside_meta_data():
    item = _jigsaw(metadata={"difficulty": 2}, meta_data={"difficulty": 3}, answer="[2, 1, 4, 3]")
    assert tir_bench.judge(item, "2 1 4 3") == 1.0
    assert tir_bench.judge(item, "2 1 4 3 5 6 7 8 9") == 0.0  # nine numbers: not a 2x2 order


@pytest.mark.parametrize("response", [
    "Answer: 4, 1, 8, 9, 3, 6, 2, 7, 5 or 1, 2, 3, 4, 5, 6, 7, 8, 9",
    "<answer>1 2 3 4 5 6 7 8 9\n4 1 8 9 3 6 2 7 5</answer>",
    "Final answer:\nRow 1: 4 1 8\nRow 2: 9 3 6\nRow 3: 2 7 5\nRow 4: 1 2 3",
    r"\boxed{4, 1, 8, 9, 3, 6, 2, 7, 5, 10}",
])
def test_jigsaw_strict_pays_nothing_for_more_numbers_than_pieces(response):
    assert tir_bench.score(_jigsaw(meta_data={"difficulty": 3}), response, "strict") == 0.0


def test_jigsaw_strict_still_pays_one_clean_order():
    for response in ("Answer: 4, 1, 8, 9, 3, 6, 2, 7, 5", "Row 1: 4 1 8\nRow 2: 9 3 6\nRow 3: 2 7 5",
                     "<answer>[[4, 1, 8], [9, 3, 6], [2, 7, 5]]</answer>"):
        assert tir_bench.score(_jigsaw(meta_data={"difficulty": 3}), response, "strict") == 1.0


# ---- 3. ImageMining gold answers that are sentences -----------------------------------------------------

# Golds that are sentences (the real file's ids) or several words (the generated file's: eval/fixtures.py
# writes no sentence-long answer).
TEXT_GOLDS = {"real": (14, 16, 61, 199), "generated": (16, 19, 34)}
# Among text golds, the pairs one gold stated plainly scores on (once per prefix): "Light purple" (196) is a
# true alternative of "(Pale/Light) purple" (7) in the real file; the generated file has no such pair.
TEXT_COLLISIONS = {"real": [(196, 7), (196, 7)], "generated": []}


@pytest.mark.parametrize(("sample_records", "rid"), [(source, rid) for source, rids in TEXT_GOLDS.items()
                                                     for rid in rids], indirect=["sample_records"])
@pytest.mark.parametrize("prefix", ["", "Final answer: ", "Final Answer:\n", "I checked the figure.\n\n"])
def test_imagemining_sentence_gold_stated_plainly_scores_one(sample_records, rid, prefix):
    row = sample_records.by_id("imagemining")[rid]
    assert len(row["answer"].split()) > 1
    for gold in (row["answer"], row["answer_zh"]):
        assert imagemining.score(prefix + gold, row["answer"], row["answer_zh"]) == 1.0, (rid, prefix, gold)


def test_imagemining_plain_statements_of_other_answers_score_about_zero(sample_records):
    rows = sample_records.imagemining
    for row in rows:  # every gold stated plainly, with and without a prefix, scores 1 against itself
        for prefix in ("", "Final answer: "):
            assert imagemining.score(prefix + row["answer"], row["answer"], row["answer_zh"]) == 1.0, row["id"]
    pairs = [(prefix, a, b) for prefix in ("", "Final answer: ") for a in rows for b in rows
             if a["answer"].casefold() != b["answer"].casefold()]
    wrong = [(a["id"], b["id"]) for prefix, a, b in pairs
             if imagemining.score(prefix + a["answer"], b["answer"], b["answer_zh"])]
    assert len(wrong) / len(pairs) < 1e-3  # ~0: numeric golds ("4") accept any text stating just 4
    text_golds = {b["id"] for b in rows if imagemining._numeric_answer(b["answer"]) is None}
    assert [pair for pair in wrong if pair[1] in text_golds] == TEXT_COLLISIONS[sample_records.source]


# ---- 6. scorer errors are visible -----------------------------------------------------------------------

TIR = {"task": "refcoco", "answer": "B", "prompt": "A. 1\nB. 2"}
ROWS = {"data_source": ["tir_bench", "tir_bench"], "reward_info": [json.dumps(TIR)] * 2}


@pytest.fixture
def broken_strict_scorer(monkeypatch):
    def boom(item, response):
        raise RuntimeError("scorer bug")
    monkeypatch.setattr(tir_bench, "_strict_score", boom)


def test_scorers_let_bugs_raise(broken_strict_scorer):
    with pytest.raises(RuntimeError, match="scorer bug"):
        tir_bench.score(TIR, "<answer>B</answer>", "strict")


def test_the_suite_runs_with_reward_errors_raising(broken_strict_scorer):
    from lookcloser.rewards.trl_rewards import errors_raise
    assert errors_raise()  # tests/conftest.py sets LOOKCLOSER_REWARD_ERRORS=raise
    with pytest.raises(RuntimeError, match="scorer bug"):
        REGISTRY["tir_bench"](["<answer>B</answer>"], **{k: v[:1] for k, v in ROWS.items()})


def test_reward_boundary_returns_none_counts_and_warns_once(broken_strict_scorer, monkeypatch, caplog):
    from lookcloser.rewards import trl_rewards
    monkeypatch.setenv(trl_rewards.RAISE_ENV, "")
    monkeypatch.setattr(trl_rewards, "_warned", set())
    monkeypatch.setattr(trl_rewards, "ERROR_COUNTS", trl_rewards.Counter())
    logged = []
    with caplog.at_level(logging.WARNING, logger="lookcloser.rewards.trl_rewards"):
        for _ in range(2):
            out = REGISTRY["tir_bench"](["<answer>B</answer>", "x"], log_metric=lambda n, v: logged.append((n, v)),
                                        **ROWS)
            assert out == [None, None]
        ok = REGISTRY["tir_bench_official"](["<answer>B</answer>"], log_metric=lambda n, v: logged.append((n, v)),
                                            **{k: v[:1] for k, v in ROWS.items()})
    assert ok == [1.0]  # official mode does not use the broken strict scorer
    assert logged == [("rewards/tir_bench/errors", 2.0), ("rewards/tir_bench/errors", 2.0),
                      ("rewards/tir_bench_official/errors", 0.0)]
    assert trl_rewards.ERROR_COUNTS["tir_bench"] == 4
    warnings = [r for r in caplog.records if "scorer bug" in r.getMessage()]
    assert len(warnings) == 1 and "rewards/tir_bench/errors" in warnings[0].getMessage()


def test_verl_adapter_takes_extra_kwargs_and_rejects_unknown_sources():
    from lookcloser.rewards.verl import compute_score
    kwargs = {"reward_router_address": "127.0.0.1:9", "reward_model_tokenizer": None, "extra_flag": 1}
    assert compute_score("mir", "Answer: C", "C", {"index": 3}, **kwargs) == 1.0
    with pytest.raises(ValueError, match="unknown data_source 'gsm8k'"):
        compute_score("gsm8k", "42", "42")
