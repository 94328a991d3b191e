"""TIR-Bench official judge: every branch and quirk of docs/formats.md §3, expected values by hand."""

from __future__ import annotations

import pytest

from lookcloser.rewards.tir_bench import judge
from lookcloser.rewards.tir_judge import (
    jigsaw_sequence,
    judge_choice,
    judge_float,
    judge_int,
    nearest_letter,
    prompt_walk,
)

COLON_PROMPT = "Which value is closest?\nA: 65%\nB: 73%\nC: 81%\nD: 89%\nE: 49%\nF: 57%"  # sample id 1
DOT_PROMPT = "How many degrees?\n\nA. 10°\nB. 355°\nC. 40°\nD. 5°"


def choice(answer, prompt=DOT_PROMPT, task="rotation_game"):
    return {"task": task, "answer": answer, "prompt": prompt, "image_1": "data/x/1.jpg", "meta_data": {}}


# ---- choice judge, single letter ----------------------------------------------------------------

def test_exact_letter_needs_no_walk():
    assert judge(choice("B"), "B") == 1.0
    assert judge(choice("B"), "C") == 0.0
    assert judge(choice("B"), "Extracted answer: B") == 1.0  # the prefix is dropped


def test_answer_colon_c_maps_to_a():
    # "Answer: C" is no letter; no prompt hit; Levenshtein: 8 to both "A" and "C" → tie → A
    assert judge(choice("A", COLON_PROMPT), "Answer: C") == 1.0
    assert judge(choice("C", COLON_PROMPT), "Answer: C") == 0.0


def test_levenshtein_ties_go_to_earliest_letter():
    assert nearest_letter("c") == "A"  # distance 1 to every letter
    assert judge(choice("C"), "c") == 0.0 and judge(choice("A"), "c") == 1.0
    assert nearest_letter("(C)") == "C"  # distance 2 to C, 3 to the rest
    assert nearest_letter("xyz") == "A"
    assert nearest_letter("DB") == "B"  # several capitals → alphabetically first


def test_prompt_walk_dot_format_maps_option_text():
    assert prompt_walk("355°", DOT_PROMPT) == "B"
    assert judge(choice("B"), "355°") == 1.0


def test_prompt_walk_misses_colon_format_then_levenshtein():
    # "B: 73%" matches none of "B. 73%", "B.73%", "B 73%", "B73%"; distance 3 to all → A
    assert judge(choice("A", COLON_PROMPT), "73%") == 1.0
    assert judge(choice("B", COLON_PROMPT), "73%") == 0.0


def test_prompt_walk_e_changes_on_a_hit():
    # A hits ("A. x") so e becomes "A"; B then tests "BA", which the prompt holds → "B"
    assert prompt_walk("x", "A. x\nBA") == "B"
    assert judge(choice("B", "A. x\nBA"), "x") == 1.0
    assert judge(choice("A", "A. x\nBA"), "x") == 0.0


def test_prompt_walk_first_hit_usually_sticks():
    # "1" is a prefix of A's "10": A hits and e becomes "A"; B then tests "B. A"… (not "B. 1"), no hit
    assert prompt_walk("1", "A. 10\nB. 1\nC. 2") == "A"
    assert judge(choice("B", "A. 10\nB. 1\nC. 2"), "1") == 0.0


def test_prompt_walk_visits_a_to_j_once_as_the_spec_says():
    # After I hits, e = "I"; the walk ends at J, so H is not tested again against "I" (upstream's
    # stray trailing "H" would test "HI" and move e to H).
    prompt = "I. cat\nHI there"
    assert prompt_walk("cat", prompt) == "I"
    assert judge(choice("I", prompt), "cat") == 1.0
    assert judge(choice("H", prompt), "cat") == 0.0


def test_empty_extraction_walks_to_a():
    # e = "" → "A. " + "" is in the prompt → e = "A"
    assert judge(choice("A"), None) == 1.0
    assert judge(choice("A", COLON_PROMPT), "") == 1.0  # "A" + "" is in any prompt with an "A"
    assert judge(choice("B"), None) == 0.0


def test_stars_removed_and_stripped():
    assert judge(choice("B"), "  **B**  ") == 1.0


def test_single_letter_outside_a_to_j_scores_zero():
    assert judge(choice("K"), "K") == 0.0
    assert judge_choice("Z", "Z", "") == 0.0


# ---- choice judge, several letters -------------------------------------------------------------

def test_multi_letter_sorted_characters():
    item = choice("ACD", task="symbolic")
    assert judge(item, "DCA") == 1.0
    assert judge(item, "**ACD**") == 1.0  # "*" removed first
    assert judge(item, "A, C, D") == 0.0  # no clean-up of commas or spaces
    assert judge(item, "acd") == 0.0  # case matters
    assert judge(item, "AC") == 0.0


# ---- int / float judges -------------------------------------------------------------------------

def test_int_judge_deletes_letters_stars_colons_spaces():
    assert judge_int("7 apples and 2 pears", "72") == 1.0  # → "72"
    assert judge_int("Extracted answer: **72**", "72") == 1.0
    assert judge_int("x: 7 2", "72") == 1.0
    assert judge_int("seventy-two", "72") == 0.0  # "-" survives; math-verify finds nothing
    assert judge({"task": "instrument", "answer": 72}, "72") == 1.0  # int answer


def test_int_judge_math_verify_fallback():
    assert judge_int(r"\frac{144}{2}", "72") == 1.0
    assert judge_int("72.0", "72") == 1.0  # int("72.0") fails; math-verify: 72.0 == 72
    assert judge_int("1,234", "1234") == 1.0
    assert judge_int("73", "72") == 0.0


def test_float_judge():
    assert judge_float("3.50", "3.5") == 1.0
    assert judge_float("x = 3.5", "3.5") == 1.0  # "=3.5" fails float(); math-verify parses 3.5
    assert judge_float(r"\frac{7}{2}", "3.5") == 1.0
    assert judge_float("3.51", "3.5") == 0.0
    assert judge({"task": "math", "answer": "3.5"}, "it is 3.5") == 1.0


def test_other_answer_types_score_zero():
    assert judge({"task": "math", "answer": "[3, 6]"}, "[3, 6]") == 0.0


def test_missing_answer_scores_zero():
    assert judge({"task": "math", "prompt": "x"}, "A") == 0.0
    assert judge({"task": "ocr", "image_1": "a.jpg"}, "x", "x") == 0.0


# ---- word_search ---------------------------------------------------------------------------------

def test_word_search_first_pair():
    item = {"task": "word_search", "answer": "[3, 6]"}
    assert judge(item, "(3,6)") == 1.0
    assert judge(item, "[6, 3]") == 0.0
    assert judge(item, "[1, 2] no, [3, 6]") == 0.0  # the FIRST pair of the extraction counts
    assert judge(item, "row 3, column 6") == 0.0  # no "a, b" integer pair in it
    assert judge(item, "3 6") == 0.0


def test_word_search_int_answer_uses_int_judge():
    assert judge({"task": "word_search", "answer": "3"}, "3 times") == 1.0


# ---- spot_difference ------------------------------------------------------------------------------

def test_spot_difference_iou():
    item = {"task": "spot_difference", "answer": "7, 11, 12, 13, 14, 15, 19"}
    assert judge(item, "7, 11, 12") == pytest.approx(3 / 7)
    assert judge(item, "7, 11, 12, 13, 14, 15, 19, 20") == pytest.approx(7 / 8)
    assert judge(item, "[19, 15, 14, 13, 12, 11, 7]") == 1.0
    assert judge(item, "patch 07 and 11") == pytest.approx(2 / 7)
    assert judge(item, "") == 0.0
    assert judge({"task": "spot_difference", "answer": "none"}, "no differences") == 1.0  # both empty


def test_spot_difference_int_answer():
    assert judge({"task": "spot_difference", "answer": "3"}, "3") == 1.0


# ---- jigsaw -----------------------------------------------------------------------------------------

def jigsaw(answer="[4, 1, 8, 9, 3, 6, 2, 7, 5]", key="meta_data", n=3):
    return {"task": "jigsaw", "answer": answer, key: {"difficulty": n}}


def test_jigsaw_first_run_with_exactly_n_squared():
    assert judge(jigsaw(), "4 1 8 9 3 6 2 7 5") == 1.0
    assert judge(jigsaw(), "3x3: 4 1 8 9 3 6 2 7 5") == 1.0  # runs "3", "3", then the nine
    assert judge(jigsaw(), "4, 1, 8, 9, 3, 6, 2, 5, 7") == pytest.approx(7 / 9)
    assert judge(jigsaw(), "4，1，8，9，3，6，2，7，5") == 1.0  # full-width commas are separators
    assert judge(jigsaw(), "[[4, 1, 8], [9, 3, 6], [2, 7, 5]]") == 0.0  # brackets split the run
    assert judge(jigsaw(), "4 1 8 9 3 6 2 7 5 1") == 0.0  # ten in the run


def test_jigsaw_metadata_keys_and_missing_difficulty():
    assert judge(jigsaw(key="metadata"), "4 1 8 9 3 6 2 7 5") == 1.0
    assert judge({"task": "jigsaw", "answer": "[1, 2, 3, 4]"}, "1 2 3 4") == 0.0
    assert jigsaw_sequence("[2, 1, 4, 3]", 2) == [2, 1, 4, 3]


# ---- ocr ------------------------------------------------------------------------------------------

def test_ocr_substring_of_raw_response_case_sensitive():
    item = {"task": "ocr", "answer": "Sunset Boulevard", "image_1": "data/ocr/12.jpg"}
    assert judge(item, "ignored", "The sign says Sunset Boulevard.") == 1.0
    assert judge(item, "Sunset Boulevard", "the sign says sunset boulevard") == 0.0
    assert judge(item, "Sunset Boulevard") == 1.0  # no response given: the extraction is used


def test_ocr_overrides_including_160_jpg_quirk():
    for image in ("data/ocr/60.jpg", "data/ocr/160.jpg"):
        item = {"task": "ocr", "answer": "Sunset Boulevard", "image_1": image}
        assert judge(item, None, "mobile phone") == 1.0
        assert judge(item, None, "Sunset Boulevard") == 0.0
    aires = {"task": "ocr", "answer": "x", "image_1": "data/ocr/62.jpg"}
    assert judge(aires, None, "buenos aires") == 1.0
    assert judge(aires, None, "Buenos Aires") == 0.0


# ---- old field names, sample records --------------------------------------------------------------------

def test_category_and_metadata_old_names():
    assert judge({"category": "instrument", "answer": 72}, "72") == 1.0
    assert judge({"category": "jigsaw", "answer": "[2, 1, 4, 3]", "metadata": {"difficulty": 2}}, "2 1 4 3") == 1.0


# (record id, extracted answer, its score): the spec's quirks on the real records, and the same quirks on
# generated ones (eval/fixtures.py), each score worked out by hand from the record's gold.
QUIRKS = {
    "real": [
        (1, "Answer: C", 1.0),  # gold A: the spec's "Answer: C" quirk
        (11, "7, 11, 12", 3 / 7),
        (8, "4 1 8 9 3 6 2 5 7", 7 / 9),
        (41, "(3, 6)", 1.0),
        (52, "DAC", 1.0),
        (6, "7 apples and 2 pears", 1.0),
    ],
    "generated": [
        (1, "Answer: C", 1.0),  # gold A in a colon-style prompt: the same quirk
        (23, "1", 1 / 2),  # gold 1, 16
        (24, "2 6 1 4 7 8 9 3 5", 7 / 9),  # gold [2, 6, 1, 4, 7, 8, 9, 5, 3], the last two swapped
        (19, "(3, 6)", 1.0),
        (9, "DB", 1.0),  # gold BD
        (15, "8 apples and 6 pears", 1.0),  # gold 86
    ],
}


def test_sample_records_judge_their_own_answers(sample_records):
    items = sample_records.tir_bench
    for item in items:
        answer = str(item["answer"])
        assert judge(item, answer, answer) == 1.0, item["id"]
    by_id = sample_records.by_id("tir_bench")
    for item_id, extracted, expected in QUIRKS[sample_records.source]:
        assert judge(by_id[item_id], extracted) == pytest.approx(expected), (item_id, extracted)
