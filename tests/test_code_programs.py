"""The program grammar (agent/code_programs.py) and the python oracle (agent/code_oracle.py): trajectories
composed per item over looktools, every call run in the real sandbox while the data is built, kept only when
the last call printed the gold answer; copy drills on what the programs copy from the question."""

from __future__ import annotations

import json
import random
import re
import shutil

import pytest

from lookcloser.agent.code_programs import KINDS, plans_for

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
KIND_NAMES = ("spot_difference", "rotation_game", "jigsaw", "maze", "color", "refcoco")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """36 procedural items, six of each program kind, built with crop+python and two drills per copying
    trajectory."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap (bwrap) is not installed")
    from lookcloser.agent.oracle import build_synthetic
    from lookcloser.data_builders.output import load_output
    from lookcloser.data_builders.synthetic import SyntheticConfig

    out = tmp_path_factory.mktemp("programs")
    build_synthetic(None, out, 36, SyntheticConfig(seed=21, tasks=KIND_NAMES, pictures="procedural"), progress=False,
                    environment="crop+python", copy_drills=2)
    records = {str(r["id"]): r for r in json.loads((out / "TIR-Bench.json").read_text())}
    return records, load_output(out / "sft"), load_output(out / "copy")


def _text(message: dict) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def _calls(record: dict) -> list[tuple[dict, dict]]:
    """(assistant turn, tool result) per python call."""
    messages = record["messages"]
    return [(m, messages[i + 1]) for i, m in enumerate(messages) if m.get("tool_calls")]


@needs_bwrap
def test_every_kind_is_solved_by_programs_the_sandbox_ran_and_the_answer_copies_the_last_printed_line(built):
    records, trajectories, _ = built
    solved = {k: 0 for k in KIND_NAMES}
    for record in trajectories:
        gold = str(records[record["id"]]["answer"])
        calls = _calls(record)
        assert 1 <= len(calls) <= 2 and all(
            [c["function"]["name"] for c in turn["tool_calls"]] == ["python"] for turn, _ in calls)
        assert _text(calls[-1][1]) == f"Output:\n{gold}\n"
        assert record["messages"][-1]["content"].endswith(f"<answer>{gold}</answer>")
        solved[record["task"]] += 1
    # Exact kinds: every item; rotation_game may lose an item to a tie of options a quarter turn apart.
    assert all(solved[k] == 6 for k in KIND_NAMES if KINDS[k].exact) and 4 <= solved["rotation_game"] <= 6


@needs_bwrap
def test_two_call_trajectories_read_what_the_first_printed_or_fix_what_failed(built):
    _, trajectories, _ = built
    shapes = set()
    for record in trajectories:
        calls = _calls(record)
        if len(calls) < 2:
            shapes.add("one")
            continue
        (_, first_result), (second, _) = calls
        code = second["tool_calls"][0]["function"]["arguments"]["code"]
        if _text(first_result).startswith("Error:"):  # a mistake, then the program with it mended
            shapes.add("fix")
            error = _text(first_result).strip().splitlines()[-1]
            assert second["content"].startswith(f"<think>The call failed with {error[:100]}.")
        else:  # print, read, decide: the second program holds what the first printed
            shapes.add("read")
            printed = _text(first_result).removeprefix("Output:\n")
            assert re.findall(r"\d+", printed)[0] in code
    assert shapes == {"one", "read", "fix"}


@needs_bwrap
def test_programs_vary_across_items_of_a_kind(built):
    """Not one template: the programs of a kind differ beyond the values they copy (imports, names,
    thresholds, decompositions)."""
    _, trajectories, _ = built
    for kind in KIND_NAMES:
        codes = {re.sub(r"\d+", "#", turn["tool_calls"][0]["function"]["arguments"]["code"])
                 for record in trajectories if record["task"] == kind for turn, _ in _calls(record)}
        assert len(codes) >= 3, (kind, codes)


@needs_bwrap
def test_shown_grids_are_read_from_the_picture_not_the_question(built):
    records, trajectories, _ = built
    shown = [r for r in trajectories if r["task"] == "spot_difference"
             and records[r["id"]]["meta_data"].get("grid_shown")]
    assert shown
    for record in shown:
        question = records[record["id"]]["prompt"]
        assert "n is" not in question  # the question does not state the grid
        code = "\n".join(turn["tool_calls"][0]["function"]["arguments"]["code"] for turn, _ in _calls(record))
        assert "grid(" in code


@needs_bwrap
def test_copy_drills_repeat_the_questions_values_and_the_printed_lines_all_drawn(built):
    """Two drills per python trajectory, of every kind: the program reads what the drawn question states
    (grid, options) from its text or repeats it (size, colour), a read plan's second program repeats what its
    first printed, and the answer repeats the last printed line."""
    _, trajectories, drills = built
    assert sorted(d["id"] for d in drills) == sorted(f"{r['id']}-drill" for r in trajectories for _ in range(2))
    drawn, shapes = set(), set()
    for drill in drills:
        question, *turns, answer = drill["messages"]
        asked = question["content"][-2]["text"]
        codes = [t["tool_calls"][0]["function"]["arguments"]["code"] for t in turns[::2]]
        printed = [_text(t).removeprefix("Output:\n").removesuffix("\n") for t in turns[1::2]]
        assert answer["content"].endswith(f"<answer>{printed[-1]}</answer>") and drill["tools"] == ""
        shapes.add(len(codes))
        if len(codes) == 2:
            assert re.findall(r"\d+", printed[0])[0] in codes[1]
        if stated := re.search(r"n is (\d+) and m is (\d+)$", asked):
            assert "stated_grid(question)" in codes[-1]  # read from the question's text, not copied
            assert f"{stated[1]},{stated[2]}" not in codes[-1].replace(" ", "")
            drawn.add(stated.groups())
        elif options := re.findall(r"^[A-J]\. (\d+)°$", asked, re.MULTILINE):
            assert "options(question)" in codes[-1]  # read from the question's text, not copied
            drawn.add(tuple(options))
        elif size := re.search(r"divided into (\d)×", asked):
            assert f",{size[1]})" in codes[-1]
        elif colour := re.search(r"How many (\w+) shapes", asked):
            assert f"'{colour[1]}'" in codes[-1]
    assert len(drawn) > 2 and shapes == {1, 2}  # drawn, not the items' own


def test_plans_are_drawn_from_the_items_rng_and_written_from_what_earlier_calls_printed():
    meta = {"options": [35, 120, 200, 310, 75, 250]}
    first = [[s(["41.5\n"]).code for s in p.stages] for p in plans_for("rotation_game", meta, random.Random(4))]
    again = [[s(["41.5\n"]).code for s in p.stages] for p in plans_for("rotation_game", meta, random.Random(4))]
    assert first == again
    read = next(p for p in plans_for("rotation_game", meta, random.Random(4)) if p.shape == "read")
    assert "41.5" in read.stages[1](["41.5\n"]).code and "41.5" not in read.stages[0]([]).code
    assert plans_for("ocr", {}, random.Random(0)) == []  # no program kind: the image tools' oracle
