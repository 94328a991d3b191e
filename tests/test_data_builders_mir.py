"""MIR -> SFT stages: every stage's user text and target pinned, both modes, on the real sample records
and on generated ones (the bundled ``data/mir_sample``, ``data_builders.sample_mir``'s output: a clone has it).

The expected strings are written out (docs/formats.md §1 + upstream preprocess.py): the paper's stages by
default, and ``faithful_upstream`` with the img2img leak in stages 2-3 and upstream's always-present
reasoning slot in their targets. Stages 0, 1 and 4 are the same in both modes. The real records show a
caption as one string and options as a dict; the generated ones pinned here show the generator's shapes
(a reasoning field, a sentence as the conclusion, no reasoning with a bare letter).
"""

from __future__ import annotations

import pytest

from lookcloser.data_builders.mir import build_stage

# (record id, stage, faithful_upstream) -> (user text with <image> where image blocks are, target)
REAL = {
    ('forced_perspective_0001', 0, False): (
        'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.',
        (
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
            'C'
        ),
    ),
    ('forced_perspective_0001', 1, False): (
        (
            'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.\n'
            'Reference Context:\n'
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
        ),
        'C',
    ),
    ('forced_perspective_0001', 2, False): (
        (
            'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.\n'
            'Reference Context:\n'
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
        ),
        (
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
            'C'
        ),
    ),
    ('forced_perspective_0001', 2, True): (
        (
            'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.\n'
            'Reference Context:\n'
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
        ),
        (
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
            '\n'
            'C'
        ),
    ),
    ('forced_perspective_0001', 3, False): (
        (
            'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.\n'
            'Reference Context:\n'
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
        ),
        (
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
            'C'
        ),
    ),
    ('forced_perspective_0001', 3, True): (
        (
            'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.\n'
            'Reference Context:\n'
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
        ),
        (
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
            '\n'
            'C'
        ),
    ),
    ('forced_perspective_0001', 4, False): (
        'Is the hand or is the tower in <image> bigger? Assume the car in <image> is the same size as in <image>. Select the correct option from the following options: A. The hand is bigger. B. The tower is as big as the hand. C. The tower is bigger.',
        (
            'To solve this problem, I will compare the relative sizes of the hand and the Eiffel Tower in the images.\n'
            "Let's analyze these images first:\n"
            'Image 1: A hand held up in front of the Eiffel Tower, appearing to pinch its top.\n'
            'Image 2: A red car parked at the foot of the tower.\n'
            "Image 3: A person's palm next to the same red car.\n"
            'The hand and the tower appear in image 1; the car appears in images 2 and 3.\n'
            'In image 2 the car is tiny next to the tower; in image 3 the palm is small next to the car, so the tower is far bigger than the palm.\n'
            'Based on the above, the correct answer is C'
        ),
    ),
    ('chart_analysis_0042', 0, False): (
        '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4',
        (
            "I need to compare each quarter's sales across the two charts.\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
            'Sales grew the most in Q2, so the answer is B.'
        ),
    ),
    ('chart_analysis_0042', 1, False): (
        (
            '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4\n'
            'Reference Context:\n'
            "I need to compare each quarter's sales across the two charts.\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
        ),
        'Sales grew the most in Q2, so the answer is B.',
    ),
    ('chart_analysis_0042', 2, False): (
        (
            '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4\n'
            'Reference Context:\n'
            "I need to compare each quarter's sales across the two charts.\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
        ),
        (
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
            'Sales grew the most in Q2, so the answer is B.'
        ),
    ),
    ('chart_analysis_0042', 2, True): (
        (
            '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4\n'
            'Reference Context:\n'
            "I need to compare each quarter's sales across the two charts.\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
        ),
        (
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
            'Sales grew the most in Q2, so the answer is B.'
        ),
    ),
    ('chart_analysis_0042', 3, False): (
        (
            '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4\n'
            'Reference Context:\n'
            "I need to compare each quarter's sales across the two charts.\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
        ),
        (
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
            'Sales grew the most in Q2, so the answer is B.'
        ),
    ),
    ('chart_analysis_0042', 3, True): (
        (
            '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4\n'
            'Reference Context:\n'
            "I need to compare each quarter's sales across the two charts.\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
        ),
        (
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
            'Sales grew the most in Q2, so the answer is B.'
        ),
    ),
    ('chart_analysis_0042', 4, False): (
        '<image> shows sales in 2022 and <image> shows sales in 2023. In which quarter did sales grow the most? Select the correct option from the following options: A: Q1 B: Q2 C: Q3 D: Q4',
        (
            "I need to compare each quarter's sales across the two charts.\n"
            "Let's analyze these images first:\n"
            'Two bar charts of quarterly sales, 2022 and 2023.\n'
            'The 2022 values are in the first chart and the 2023 values in the second.\n'
            'Q1 rises from 10 to 12, Q2 from 11 to 18, Q3 from 15 to 16, Q4 from 20 to 21.\n'
            'The largest increase is 7, in Q2.\n'
            'Sales grew the most in Q2, so the answer is B.'
        ),
    ),
}
BIGGER_Q = ('Which image holds the bigger circle, <image> or <image>? Select the correct option from the following '
            'options: A. The first image. B. The second image.')
BIGGER_SUMMARY = 'I need to compare the circle sizes across the two images.\n'
BIGGER_CAPTIONS = 'Image 1: A small green circle.\nImage 2: A large green circle.\n'
BIGGER_T2I = 'Each image holds one circle.\n'
BIGGER_I2I = 'The circle in image 2 covers more of the frame than the other.\n'
BIGGER_REASONING = 'Both images have the same size, so the larger circle is the one in image 2.\n'
COUNT_Q = ('How many blue squares are there in <image>? Select the correct option from the following options: '
           'A. 1 B. 2 C. 3 D. 4')
COUNT_SUMMARY = 'I need to count the blue squares.\n'
COUNT_CAPTIONS = 'Image 1: 4 blue squares in a 2x2 grid.\n'
COUNT_T2I = 'All squares in the question are in image 1.\n'
COUNT_I2I = 'There is a single image, so no cross-image relation is needed.\n'
COUNT_CONCLUSION = 'There are 4 squares, so the correct answer is D.'
CONTEXT = '\nReference Context:\n'
# Generated records (data/mir_sample): bigger_000 has a reasoning field and a bare letter; count_001 has no
# reasoning and a sentence as its conclusion (no "Based on the above" in stage 4; upstream's empty reasoning
# slot in stages 2-3).
GENERATED = {
    ('bigger_000', 0, False): (
        BIGGER_Q, BIGGER_SUMMARY + BIGGER_CAPTIONS + BIGGER_T2I + BIGGER_I2I + BIGGER_REASONING + 'B'),
    ('bigger_000', 1, False): (
        BIGGER_Q + CONTEXT + BIGGER_SUMMARY + BIGGER_CAPTIONS + BIGGER_T2I + BIGGER_I2I + BIGGER_REASONING, 'B'),
    ('bigger_000', 2, False): (
        BIGGER_Q + CONTEXT + BIGGER_SUMMARY + BIGGER_CAPTIONS + BIGGER_T2I, BIGGER_I2I + BIGGER_REASONING + 'B'),
    ('bigger_000', 2, True): (
        BIGGER_Q + CONTEXT + BIGGER_SUMMARY + BIGGER_CAPTIONS + BIGGER_T2I + BIGGER_I2I,
        BIGGER_I2I + BIGGER_REASONING + 'B'),
    ('bigger_000', 3, False): (
        BIGGER_Q + CONTEXT + BIGGER_SUMMARY + BIGGER_CAPTIONS, BIGGER_T2I + BIGGER_I2I + BIGGER_REASONING + 'B'),
    ('bigger_000', 3, True): (
        BIGGER_Q + CONTEXT + BIGGER_SUMMARY + BIGGER_CAPTIONS + BIGGER_I2I,
        BIGGER_T2I + BIGGER_I2I + BIGGER_REASONING + 'B'),
    ('bigger_000', 4, False): (
        BIGGER_Q, BIGGER_SUMMARY + "Let's analyze these images first:\n" + BIGGER_CAPTIONS + BIGGER_T2I + BIGGER_I2I
        + BIGGER_REASONING + 'Based on the above, the correct answer is B'),
    ('count_001', 0, False): (
        COUNT_Q, COUNT_SUMMARY + COUNT_CAPTIONS + COUNT_T2I + COUNT_I2I + COUNT_CONCLUSION),
    ('count_001', 1, False): (
        COUNT_Q + CONTEXT + COUNT_SUMMARY + COUNT_CAPTIONS + COUNT_T2I + COUNT_I2I, COUNT_CONCLUSION),
    ('count_001', 2, False): (
        COUNT_Q + CONTEXT + COUNT_SUMMARY + COUNT_CAPTIONS + COUNT_T2I, COUNT_I2I + COUNT_CONCLUSION),
    ('count_001', 2, True): (
        COUNT_Q + CONTEXT + COUNT_SUMMARY + COUNT_CAPTIONS + COUNT_T2I + COUNT_I2I, COUNT_I2I + '\n' + COUNT_CONCLUSION),
    ('count_001', 3, False): (
        COUNT_Q + CONTEXT + COUNT_SUMMARY + COUNT_CAPTIONS, COUNT_T2I + COUNT_I2I + COUNT_CONCLUSION),
    ('count_001', 3, True): (
        COUNT_Q + CONTEXT + COUNT_SUMMARY + COUNT_CAPTIONS + COUNT_I2I,
        COUNT_T2I + COUNT_I2I + '\n' + COUNT_CONCLUSION),
    ('count_001', 4, False): (
        COUNT_Q, COUNT_SUMMARY + "Let's analyze these images first:\n" + COUNT_CAPTIONS + COUNT_T2I + COUNT_I2I
        + COUNT_CONCLUSION),
}
EXPECTED = {"real": REAL, "generated": GENERATED}
CASES = [(source, key) for source, table in EXPECTED.items() for key in sorted(table)]
# A record with two images, for the numbered placeholders.
TWO_IMAGES = {"real": "chart_analysis_0042", "generated": "bigger_000"}
SAME_IN_BOTH_MODES = (0, 1, 4)


def _render(content: list[dict]) -> str:
    return "".join(block["text"] if block["type"] == "text" else "<image>" for block in content)


def _case_id(case) -> str:
    source, (rid, stage, faithful) = case
    return f"{source}-{rid}-stage{stage}-{'upstream' if faithful else 'paper'}"


@pytest.mark.parametrize(("sample_records", "key"), CASES, indirect=["sample_records"],
                         ids=[_case_id(case) for case in CASES])
def test_stage_user_text_and_target(sample_records, key):
    rid, stage, faithful = key
    record = sample_records.by_id("mir")[rid]
    user, target = EXPECTED[sample_records.source][key]
    modes = (False, True) if stage in SAME_IN_BOTH_MODES else (faithful,)
    for mode in modes:
        out = build_stage(record, stage, faithful_upstream=mode)
        assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
        assert _render(out["messages"][0]["content"]) == user
        assert out["messages"][1]["content"] == [{"type": "text", "text": target}]
        assert out["images"] == record["images"]
        # The image blocks sit where the question's placeholders are, one per image.
        assert sum(b["type"] == "image" for b in out["messages"][0]["content"]) == len(record["images"])


def test_every_stage_and_mode_is_pinned(sample_records):
    records = sample_records.by_id("mir")
    pinned = {rid for rid, _, _ in EXPECTED[sample_records.source]}
    # Every real record is pinned; of the 64 generated ones, those whose shapes differ (listed above).
    assert pinned <= set(records)
    for rid in records if sample_records.source == "real" else pinned:
        for stage in range(5):
            assert (rid, stage, False) in EXPECTED[sample_records.source]
            if stage not in SAME_IN_BOTH_MODES:
                assert (rid, stage, True) in EXPECTED[sample_records.source]


def test_numbered_placeholders_interleave_like_plain_ones(sample_records):
    record = dict(sample_records.by_id("mir")[TWO_IMAGES[sample_records.source]])
    plain = build_stage(record, 2)
    record["question"] = record["question"].replace("<image>", "<image1>", 1).replace("<image>", "<image2>", 1)
    assert build_stage(record, 2) == plain
