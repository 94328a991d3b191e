"""MIR -> SFT stages: every stage's user text and target pinned on the real sample records, both modes.

The expected strings are written out (docs/formats.md §1 + upstream preprocess.py): the paper's stages by
default, and ``faithful_upstream`` with the img2img leak in stages 2-3 and upstream's always-present
reasoning slot in their targets. Stages 0, 1 and 4 are the same in both modes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookcloser.data_builders.mir import build_stage

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MIR_SAMPLE = SHARED_DATA / "mir" / "sample.json"

pytestmark = pytest.mark.skipif(not MIR_SAMPLE.is_file(), reason=f"{MIR_SAMPLE} not present")

# (record id, stage, faithful_upstream) -> (user text with <image> where image blocks are, target)
EXPECTED = {
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
SAME_IN_BOTH_MODES = (0, 1, 4)


def _records() -> dict[str, dict]:
    return {r["id"]: r for r in json.loads(MIR_SAMPLE.read_text(encoding="utf-8"))}


def _render(content: list[dict]) -> str:
    return "".join(block["text"] if block["type"] == "text" else "<image>" for block in content)


@pytest.mark.parametrize("key", sorted(EXPECTED), ids=lambda k: f"{k[0]}-stage{k[1]}-{'upstream' if k[2] else 'paper'}")
def test_stage_user_text_and_target(key):
    rid, stage, faithful = key
    record = _records()[rid]
    user, target = EXPECTED[key]
    modes = (False, True) if stage in SAME_IN_BOTH_MODES else (faithful,)
    for mode in modes:
        out = build_stage(record, stage, faithful_upstream=mode)
        assert [m["role"] for m in out["messages"]] == ["user", "assistant"]
        assert _render(out["messages"][0]["content"]) == user
        assert out["messages"][1]["content"] == [{"type": "text", "text": target}]
        assert out["images"] == record["images"]
        # The image blocks sit where the question's placeholders are, one per image.
        assert sum(b["type"] == "image" for b in out["messages"][0]["content"]) == len(record["images"])


def test_every_stage_and_mode_is_pinned():
    for rid in _records():
        for stage in range(5):
            assert (rid, stage, False) in EXPECTED
            if stage not in SAME_IN_BOTH_MODES:
                assert (rid, stage, True) in EXPECTED


def test_numbered_placeholders_interleave_like_plain_ones():
    record = dict(_records()["chart_analysis_0042"])
    plain = build_stage(record, 2)
    record["question"] = record["question"].replace("<image>", "<image1>", 1).replace("<image>", "<image2>", 1)
    assert build_stage(record, 2) == plain
