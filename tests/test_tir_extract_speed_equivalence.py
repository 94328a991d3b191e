"""Issue 15.2: the faster strict TIR-Bench scorer returns exactly what the old one returned.

The old functions are frozen verbatim in tests/_tir_scorer_before_15_2.py; swapping them into
``rewards.*`` gives the old scorer. The corpus test compares old and new on generated responses
(realistic ones from ``rewards.synthetic``, the same with cue words, tags, boxes, numbers, case and
width changes spliced in, cut ones, and bare runs of those pieces); the property tests compare the
rewritten building blocks (regexes, early exits) on random text. Speed itself is measured in
bench/bench_rewards.py, not here.
"""

from __future__ import annotations

import random
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lookcloser.rewards import _text, cues, tir_bench, tir_extract
from testing.synthetic_responses import make_items, realistic_response
from tests import _tir_scorer_before_15_2 as before

# Pieces that steer the extractor: every cue word (also inside longer words and overlapping: "answeright"),
# tags, boxes, meta sentences, numbers in each format, row labels, index words, odd case and width.
BITS = ["answer", "Answer: ", "ANSWER", "the answer is ", "final answer", "correct answer: ", "option ",
        "Option B", "choice", "best choice is ", "I choose ", "I pick", "select", "go with",
        "B is correct", "(C) is the best", "right", "upright", "best", "答案是", "最终答案：", "故选", "选项", " B",
        " (C)", "A", "I ", ". ", "! ", "? ", "\n", "\n\n", "<think>", "</think>", "<answer>", "</answer>",
        "\\boxed{", "\\fbox{", "}", "**", "$", "Note: x. ", "(aside)", "I hope this helps.", "72", "-3.5",
        "−4", "1,234", "1/2", "3 / 4", "(3, 6)", "row 2 column 5", "[1, 4, 9]", "1 2 3 4",
        "Row 1: 2 1\nRow 2: 4 3", "第2行", "line 3 -", "patches 7, 11", "#4", "No. 5", "cells 2 and 3",
        "four", "三个", "none", "İ", "ı", "ǅ", "ß", "Ａ", "\u3000", "\xa0", '"quoted words"',
        "x" * 40, " " * 33, "answeright", "tseb", "3.", ".5", "12.5.6"]


def corpus(seed: int, n: int) -> list[tuple[dict, str]]:
    rng = random.Random(seed)
    items = make_items(rng, 300)
    out = []
    for _ in range(n):
        item = rng.choice(items)
        response = realistic_response(item, rng)[0]
        roll = rng.random()
        if roll < 0.35:
            pass
        elif roll < 0.6:  # pieces spliced in at random places
            for _ in range(rng.randint(1, 6)):
                at = rng.randint(0, len(response))
                response = response[:at] + rng.choice(BITS) + response[at:]
        elif roll < 0.75:  # cut at the front or at the back
            a, b = sorted(rng.randint(0, len(response)) for _ in range(2))
            response = response[a:] if rng.random() < 0.5 else response[:b]
        elif roll < 0.9:  # pieces only
            response = "".join(rng.choice(BITS) for _ in range(rng.randint(0, 20)))
        else:  # case and width changes
            response = response.upper() if rng.random() < 0.5 else response.translate({65: "Ａ", 49: "１"})
        out.append((item, response))
    return out


def outputs(pairs: list[tuple[dict, str]]) -> list[tuple]:
    """Everything the scorer returns, and what its rewritten parts return, per response."""
    rows = []
    for item, response in pairs:
        region = tir_extract.after_think(response)
        tail = region[-300:]
        rows.append((
            tir_bench.score(item, response, "strict"), tir_bench.score(item, response, "official"),
            tir_extract.extract_with_context(item, response), tir_bench.extract_answer(item, response),
            tir_extract.last_answer_cue(response), tir_extract.last_answer_cue(region),
            list(tir_extract._tail_sentences(region)), tir_extract.clean(tail),
            tir_extract.NUMBER.findall(response), tir_extract.read_index_set(tail),
            tir_extract.read_jigsaw(tail, 3), tir_extract.jigsaw_numbers_text(tail),
            tir_extract.read_span("int", tail, True), tir_extract.read_span("set", tail, False),
        ))
    return rows


def old_outputs(pairs: list[tuple[dict, str]], monkeypatch) -> list[tuple]:
    for module, names in before.PATCHES.items():
        for name in names:
            assert hasattr(sys.modules[module], name), f"{module}.{name}"
            monkeypatch.setattr(sys.modules[module], name, getattr(before, name))
    try:
        return outputs(pairs)
    finally:
        monkeypatch.undo()


def assert_same(pairs, monkeypatch):
    old, new = old_outputs(pairs, monkeypatch), outputs(pairs)
    assert tir_extract.clean is not before.clean and tir_bench._strict_score is not before._strict_score
    differ = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
    assert not differ, (len(differ), pairs[differ[0]][1][-300:], old[differ[0]], new[differ[0]])


def test_the_reference_is_the_old_scorer(monkeypatch):
    """The swap reaches the scorer: scoring calls the frozen cue scan (a reversed regex, which only the
    reference has), so the corpus test does compare the old code with the new."""
    calls = []
    monkeypatch.setattr(before, "_scan", lambda *a: calls.append(a) or None)
    old_outputs([({"task": "math", "answer": "B", "prompt": "A. 1\nB. 2"}, "I think B.")], monkeypatch)
    assert calls, "the frozen cue scan was never called: the reference is not the old scorer"


def test_new_scorer_equals_old_on_a_generated_corpus(monkeypatch):
    assert_same(corpus(0, 3000), monkeypatch)


@pytest.mark.slow
def test_new_scorer_equals_old_on_a_large_generated_corpus(monkeypatch):
    for seed in range(1, 9):
        assert_same(corpus(seed, 6000), monkeypatch)


# ---- the rewritten building blocks, on random text ---------------------------------------------------

@settings(max_examples=600, deadline=None)
@given(text=st.text(alphabet="ABCDEJKabz0'’() \n.", max_size=16), pos=st.integers(0, 16))
def test_letter_regexes_starting_with_a_letter_match_the_old_ones(text, pos):
    for name in ("_LETTER_TOKEN", "_LETTER_RUN", "LETTER_CUE"):
        new, old = getattr(tir_extract, name), getattr(before, name)
        # the new run regex has no group: its whole match is the old group 1
        assert [(m.start(), m.group(), m.end(1) if new.groups else m.end()) for m in new.finditer(text, pos)] == \
            [(m.start(), m.group(), m.end(1)) for m in old.finditer(text, pos)], name
    phrase = text + " is the "
    for end in range(len(phrase) + 1):
        old, new = before._LETTER_BEFORE.search(phrase, pos, end), cues._LETTER_BEFORE.search(phrase, pos, end)
        assert (old and (old.start(), old.group(1))) == (new and (new.start(), new.group(1)))


_NUMBERISH = st.text(alphabet="0123456789٣,.-−+/ a\n", max_size=24)


@settings(max_examples=600, deadline=None)
@given(text=_NUMBERISH, pos=st.integers(0, 24))
def test_number_regex_starting_with_a_sign_or_digit_matches_the_old_one(text, pos):
    assert tir_extract.NUMBER.findall(text) == before.NUMBER.findall(text)
    old, new = before.NUMBER.search(text, pos), tir_extract.NUMBER.search(text, pos)
    assert (old and old.span()) == (new and new.span())


@settings(max_examples=600, deadline=None)
@given(text=st.text(alphabet="0123456789 \n,，;、|[]()ab٣", max_size=30))
def test_jigsaw_runs_are_the_old_runs_that_hold_a_digit(text):
    for new, old in ((_text._JIGSAW_CHARS, before._JIGSAW_CHARS),
                     (_text._OFFICIAL_JIGSAW_CHARS, before._OFFICIAL_JIGSAW_CHARS)):
        assert [r for r in new.findall(text) if r] == [r for r in old.findall(text) if re.search(r"\d", r)]
    assert tir_extract.read_jigsaw(text, 2) == before.read_jigsaw(text, 2)
    assert tir_extract.read_index_set(text) == before.read_index_set(text)


def test_leading_junk_characters_are_exactly_the_old_regex_class():
    whitespace = {chr(c) for c in range(sys.maxunicode + 1) if re.match(r"\s", chr(c))}
    assert set(tir_extract._LEADING_JUNK) == whitespace | set(":：=-–—>*_#`$")


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=" \t\n\u3000\xa0:：=-–—>*_#`$B", max_size=12))
def test_leading_junk_lstrip_equals_the_old_sub(text):
    assert text.lstrip(tir_extract._LEADING_JUNK) == before._LEADING_JUNK.sub("", text)


_META_WORDS = st.sampled_from(["note", "Confidence", "p.s.", "PS", "I hope", "İ hope", "ı hope", "hope",
                               "Let me know", "DISCLAIMER", "(x)", "（x）", "Row", "the", "7", "_x"])


@settings(max_examples=600, deadline=None)
@given(parts=st.lists(st.one_of(_META_WORDS, st.text(max_size=3)), max_size=4))
def test_meta_sentence_never_starts_with_a_skipped_character(parts):
    text = "".join(parts)
    if text[:1] in tir_extract._NOT_META_START:
        assert tir_extract._META_SENTENCE.match(text) is None


_HINTED = st.sampled_from(["row", "ROW 2:", "row 3 col 4", "Row 1, column 2", "第2行第3列", "line 3 -",
                           "Line4=", "第2行", "patch", "patches 7", "index", "indices", "cell", "Cells",
                           "no. 5", "number", "NUMBERS", "#", "x", "1", " ", ":", "ro", "w", "ı", "ſ"])


@settings(max_examples=600, deadline=None)
@given(parts=st.lists(_HINTED, max_size=6))
def test_regexes_are_skipped_only_where_they_cannot_match(parts):
    text = "".join(parts)
    for hints, regex in ((_text._ROW_LABEL_HINTS, _text._ROW_LABEL),
                         (_text._INDEX_WORD_HINTS, _text._INDEX_WORDS),
                         (tir_extract.ROW_COL_HINTS, tir_extract.ROW_COL)):
        if not _text.may_match(text, hints):
            assert regex.search(text) is None, (hints, text)


@settings(max_examples=600, deadline=None)
@given(parts=st.lists(st.sampled_from(BITS), max_size=16))
def test_cue_scan_with_rfind_equals_the_old_reversed_regex_scan(parts):
    text = "".join(parts)
    assert cues.last_answer_cue(text) == before.last_answer_cue(text)
    region = _text.after_think(text)
    assert region == before.after_think(text)
    assert _text.last_boxed(region) == before.last_boxed(region)
    assert _text.last_tag_block(region, "answer") == before.last_tag_block(region, "answer")
    assert tir_bench._final_answers_disagree(region) == before._final_answers_disagree(region)
