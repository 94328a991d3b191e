"""TIR-Bench extraction and the two score modes: hand-written responses, generated agreement,
the evalscope-style baseline, and strict mode's resistance to hacking."""

from __future__ import annotations

import random

import pytest

from bench.evalscope_baseline import evalscope_extract
from lookcloser.rewards.tir_bench import extract_answer, judge, score
from testing.synthetic_responses import make_items, realistic_response

OPTIONS = "Which region is highlighted?\nA. top left\nB. top right\nC. bottom left\nD. bottom right\nE. center"
CHOICE = {"task": "visual_search", "answer": "B", "prompt": OPTIONS, "meta_data": {}}
MULTI = {"task": "symbolic", "answer": "ACD", "prompt": "Select all true.\nA. a\nB. b\nC. c\nD. d", "meta_data": {}}
NUMBER = {"task": "instrument", "answer": "72", "prompt": "Reading in °F?", "meta_data": {}}
FLOAT = {"task": "math", "answer": "3.5", "prompt": "Length?", "meta_data": {}}
PAIR = {"task": "word_search", "answer": "[3, 6]", "prompt": "Row and column?", "meta_data": {}}
SPOT = {"task": "spot_difference", "answer": "7, 11, 12", "meta_data": {},
        "prompt": "Output the list of patch indices where the two images differ. Note that in this image, n is 4 "
                  "and m is 5"}
JIGSAW = {"task": "jigsaw", "answer": "[4, 1, 8, 9, 3, 6, 2, 7, 5]", "meta_data": {"difficulty": 3},
          "prompt": "Output the correct order of the 3×3 pieces."}
OCR = {"task": "ocr", "answer": "Sunset Boulevard", "image_1": "data/ocr/12.jpg", "meta_data": {}}

# (item, response, the answer it states) — written by hand, in styles the generator does not use
HELD_OUT = [
    (CHOICE, ("The highlighted box covers x from 400 to 620 and y from 0 to 200, i.e. the upper right. "
             "Options A and C are on the left.\n\nAnswer: **B**"), "B"),
    (CHOICE, ("<think>It could be A or B; the crop at (500, 80) shows the object.</think>The object sits in the top "
             "right corner, so the answer is B."), "B"),
    (CHOICE, ("Let's go through them:\n(A) top left – empty\n(B) top right – has the cup\n(C) bottom left – empty\n\n"
             "Final answer: (B)"), "B"),
    (CHOICE, "After zooming twice, I believe the correct option is D. The bottom right has the logo.", "D"),
    (CHOICE, "经过放大，目标在右上角。\n答案：B", "B"),
    (CHOICE, "Neither A nor C fits; E is the centre which is empty.\n\\boxed{D}", "D"),
    (CHOICE, "My choice: C\nReasoning: the cup is on the left side near the bottom.", "C"),
    (CHOICE, "I checked all five regions. A: no. B: no. C: yes. D: no. E: no.\n\n**Answer: C. bottom left**", "C"),
    (CHOICE, "The answer is B) top right.", "B"),
    (CHOICE, "So, the best choice is **E** (center).", "E"),
    (CHOICE, "<answer>\nB\n</answer>", "B"),
    (CHOICE, "Comparing with option A, the object is clearly to the right.\n\nB", "B"),
    (MULTI, ("Statement B is false because the angle is 30°, not 45°. Statements A, C and D hold.\n"
            "Answer: ACD"), "ACD"),
    (MULTI, "After checking each: A true, B false, C true, D true.\n\\boxed{A, C, D}", "ACD"),
    (MULTI, "<answer>C, A</answer>", "AC"),
    (MULTI, "The correct options are A and D.", "AD"),
    (NUMBER, "The needle points between 70 and 75, at the second small tick past 70.\nAnswer: 72°F", "72"),
    (NUMBER, "Each small division is 2°F. Counting 6 divisions up from 60 gives 72.\n\nFinal Answer: 72", "72"),
    (NUMBER, "<think>maybe 68? no, the tick is above 70</think>\nThe thermometer reads **74 °F**.", "74"),
    (NUMBER, "Reading: about 72 degrees Fahrenheit (roughly 22 °C).\nSo the answer is 72.", "72"),
    (NUMBER, "答案是 70", "70"),
    (NUMBER, "There are 3 rulers and 2 gauges; the gauge on the left shows \\boxed{72}.", "72"),
    (FLOAT, "The segment spans 3.5 units (from 1.0 to 4.5).\nAnswer: 3.5", "3.5"),
    (FLOAT, "Measured length ≈ 3.25 cm, checking again at 2x zoom gives 3.5 cm.\n\nFinal answer: 3.5 cm", "3.5"),
    (FLOAT, "The answer is $\\frac{7}{2}$.", "3.5"),
    (PAIR, ("I scanned rows 1-5 first; the character is not at (2, 5) but at row 3, column 6.\n"
           "Answer: [3, 6]"), "[3, 6]"),
    (PAIR, "Found it in the third row and sixth column: (3, 6).", "[3, 6]"),
    (PAIR, "<answer>Row 4, Column 2</answer>", "[4, 2]"),
    (PAIR, "The grid is 10x10. Coordinates: [5, 9]", "[5, 9]"),
    (SPOT, ("The grid has 4 × 5 = 20 patches. I compared patches 1 to 20 one by one.\n"
           "Answer: [7, 11, 12]"), "7, 11, 12"),
    (SPOT, ("Differences: patch 7 (missing cloud), patch 11 (color) and patch 12 (extra bird).\n"
           "So the answer is 7, 11, 12."), "7, 11, 12"),
    (SPOT, "<answer>7, 12</answer>", "7, 12"),
    (SPOT, "Patches that differ: 3, 7, 11, 12 and 20.", "3, 7, 11, 12, 20"),
    (JIGSAW, "Piece 4 has the sky on the left, piece 1 continues it.\nFinal arrangement:\n4 1 8\n9 3 6\n2 7 5", 
     "4, 1, 8, 9, 3, 6, 2, 7, 5"),
    (JIGSAW, ("The first row should be 4, 1, 8 since they share the horizon.\n"
             "Answer: [4, 1, 8, 9, 3, 6, 2, 7, 5]"), "4, 1, 8, 9, 3, 6, 2, 7, 5"),
    (JIGSAW, "<answer>[[4, 1, 8], [9, 6, 3], [2, 7, 5]]</answer>", "4, 1, 8, 9, 6, 3, 2, 7, 5"),
    (JIGSAW, "Order (row by row): 4-1-8 / 9-3-6 / 2-7-5", "4, 1, 8, 9, 3, 6, 2, 7, 5"),
    (OCR, "The street sign reads “Sunset Boulevard”.", "Sunset Boulevard"),
]


@pytest.mark.parametrize(("item", "response", "stated"), HELD_OUT)
def test_held_out_responses(item, response, stated):
    assert score(item, response, "official") == judge(item, stated, response)


def test_held_out_extractions_are_canonical():
    wrong = [(r, extract_answer(i, r), s) for i, r, s in HELD_OUT
             if i["task"] != "ocr" and judge(i, extract_answer(i, r), r) != judge(i, s, r)]
    assert not wrong


def test_generated_agreement_ours_at_least_97_and_beats_baseline():
    rng = random.Random(1234)
    items = make_items(rng, 300)
    ours = base = 0
    n = 1500
    for _ in range(n):
        item = rng.choice(items)
        response, stated = realistic_response(item, rng)
        reference = judge(item, stated, response)
        ours += score(item, response, "official") == reference
        base += judge(item, evalscope_extract(item, response), response) == reference
    assert ours / n >= 0.97
    assert base / n < ours / n - 0.15  # the baseline is far behind (about 0.65 here)


def test_extraction_examples():
    assert extract_answer(CHOICE, "A? C? The answer is top right.") == "B"  # option text → its letter
    assert extract_answer(MULTI, "Answer: A, C and D") == "ACD"
    assert extract_answer(NUMBER, "Answer: 1,234 units") == "1234"
    assert extract_answer(PAIR, "Answer: row 3, column 6") == "[3, 6]"
    assert extract_answer(SPOT, "Answer: patches 7, 11, and 12 (3 in total)") == "7, 11, 12"
    assert extract_answer(JIGSAW, "Row 1: 4, 1, 8\nRow 2: 9, 3, 6\nRow 3: 2, 7, 5") == "4, 1, 8, 9, 3, 6, 2, 7, 5"
    assert extract_answer(CHOICE, "") == ""


def test_final_answer_after_think_wins_over_drafts():
    response = "<think>Answer: A? <answer>A</answer> no wait.</think>\n<answer>B</answer>"
    assert extract_answer(CHOICE, response) == "B"


# ---- strict mode ----------------------------------------------------------------------------------

def test_strict_rewards_clean_answers():
    assert score(CHOICE, "<think>zoom</think><answer>B</answer>") == 1.0
    assert score(MULTI, "Answer: A, C, D") == 1.0
    assert score(NUMBER, "Answer: 72°F (about 22 °C)") == 1.0
    assert score(PAIR, "Answer: (3, 6)") == 1.0
    assert score(SPOT, "Answer: 7, 11, 12") == 1.0
    assert score(JIGSAW, "Answer: 4 1 8 9 3 6 2 7 5") == 1.0
    assert score(OCR, 'The sign reads "Sunset Boulevard".') == 1.0


def test_strict_listing_every_option_gets_nothing():
    assert score(CHOICE, "Answer: A B C D E") == 0.0
    assert score(CHOICE, "Answer: B or C or D") == 0.0
    assert score({**CHOICE, "prompt": "A. yes\nB. no"}, "Answer: A or B") == 0.0
    assert score(MULTI, "Answer: ABCD") == 0.0


def test_strict_hedging_with_several_final_answers():
    assert score(CHOICE, "<answer>A</answer> or maybe <answer>B</answer>") == 0.0
    assert score(NUMBER, "\\boxed{71} \\boxed{72} \\boxed{73}") == 0.0


def test_strict_listing_every_index_or_number_gets_nothing():
    every = ", ".join(str(i) for i in range(1, 21))
    assert score(SPOT, f"Answer: {every}") == 0.0
    assert score(SPOT, f"Answer: {every}", "official") == pytest.approx(3 / 20)
    assert score(NUMBER, "Answer: 70, 71, 72, 73, 74") == 0.0
    assert score(PAIR, "Answer: (3, 5), (3, 6), (3, 7)") == 0.0
    assert score(JIGSAW, "Answer: 1 1 1 1 1 1 1 1 1") == 0.0
    assert score(JIGSAW, "Answer: 1 1 1 1 1 1 1 1 1", "official") == pytest.approx(1 / 9)


def test_strict_no_levenshtein_or_walk_rescue():
    colon = {"task": "refcoco", "answer": "A", "prompt": "A: 65%\nB: 73%"}
    assert judge(colon, "73%") == 1.0  # the official judge's Levenshtein quirk maps "73%" to A
    assert score(colon, "Answer: 73%", "official") == 0.0  # our extractor reads it as option B first
    assert score(colon, "Answer: 65%", "official") == 1.0
    assert score(colon, "Answer: 65%", "strict") == 0.0  # strict wants the letter
    assert score(CHOICE, "The answer is top right.", "strict") == 0.0  # option text, not a letter


def test_strict_length_cap_and_ocr_dump():
    assert score(CHOICE, "x" * 40_000 + "\nAnswer: B") == 0.0
    dump = "Answer: " + " ".join(["Sunset Boulevard", "Main St", "EXIT", "Sunrise Avenue"] * 10)
    assert score(OCR, dump) == 0.0
    assert score(OCR, dump, "official") == 1.0


def test_strict_ocr_override_only_for_exact_file_names():
    assert score({**OCR, "image_1": "data/ocr/60.jpg"}, "Answer: mobi") == 1.0
    assert score({**OCR, "image_1": "data/ocr/160.jpg"}, "Answer: Sunset Boulevard") == 1.0
    assert score({**OCR, "image_1": "data/ocr/160.jpg"}, "Answer: Sunset Boulevard", "official") == 0.0


def test_unknown_mode_is_a_caller_error():
    with pytest.raises(ValueError):
        score(CHOICE, "B", "lenient")


# (record id -> realistic response, its score): the real records', and the generated ones' (eval/fixtures.py,
# the same tasks and answer shapes) with each score worked out by hand from the record's gold.
REALISTIC = {
    "real": {
        1: ("Man occupies roughly 2/3 of the frame, a bit under 73%.\n\nAnswer: A", 1.0),
        6: ("The red column is at 72 (each tick is 2°F).\n\\boxed{72}", 1.0),
        8: ("Answer:\n[4, 1, 8]\n[9, 3, 6]\n[2, 7, 5]", 1.0),
        11: ("<answer>7, 11, 12, 13, 14, 15</answer>", 6 / 7),
        30: ("Rotating by 5° is not enough... The answer is B. 355°", 1.0),
        41: ("情 is in row 3, column 6.\nFinal answer: [3, 6]", 1.0),
        52: ("B is false. Answer: A, C, D", 1.0),
        60: ('The sign says "Sunset Boulevard".', 1.0),
    },
    "generated": {
        1: ("The blue region covers a bit under half of the frame, about 49%.\n\nAnswer: A", 1.0),  # gold A
        2: ("The red column stops at 49 (each tick is 1°F).\n\\boxed{49}", 1.0),  # gold 49, an int
        24: ("Answer:\n[2, 6, 1]\n[4, 7, 8]\n[9, 5, 3]", 1.0),  # gold [2, 6, 1, 4, 7, 8, 9, 5, 3]
        23: ("<answer>1</answer>", 1 / 2),  # gold 1, 16: one of two patches
        17: ("Rotating by 90° is not enough... The answer is C. 180°", 1.0),  # gold C (180°)
        19: ("CAT starts in row 3, column 6.\nFinal answer: [3, 6]", 1.0),
        9: ("A and C are false. Answer: B, D", 1.0),  # gold BD
        21: ('The sign says "Zoom In".', 1.0),
    },
}


def test_sample_records_with_realistic_responses(sample_records):
    items = sample_records.by_id("tir_bench")
    for item_id, (response, expected) in REALISTIC[sample_records.source].items():
        for mode in ("official", "strict"):
            assert score(items[item_id], response, mode) == pytest.approx(expected), (item_id, mode)
