"""bench/probe_code_tool.py (the docs/grpo.md "Code tool" diagnosis): each program's reach on generated
items, run in the real sandbox; copy errors counted from trajectories in the form `python -m eval` saves
them; command-line mistakes are one error line and exit 2."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lookcloser.agent.code_oracle import rotation_program, spot_difference_program
from lookcloser.data_builders.synthetic import rotation_prompt, spot_difference_prompt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import probe_code_tool  # bench/ is not a package: imported by path (above)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_programs_reach_spot_the_difference_always_and_rotation_but_for_ties(tmp_path):
    reach = probe_code_tool.program_reach(seed=11, count=6, out=str(tmp_path))
    assert reach["spot_difference"]["items"] == 6 and reach["spot_difference"]["right"] == 6  # an exact program
    rotation = reach["rotation_game"]
    assert rotation["items"] == 6 and rotation["items"] - rotation["ties"] <= rotation["right"] <= rotation["items"]
    jigsaw = [v for k, v in reach.items() if k.startswith("jigsaw")]
    assert sum(v["items"] for v in jigsaw) == 6
    assert all(0 <= v["with_identical_pieces"] <= v["items"] for v in jigsaw)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_heldout_scores_each_program_on_a_heldout_folders_items(tmp_path):
    root = tmp_path / "heldout"
    subprocess.run([sys.executable, "-m", "data_builders", "heldout", "--out", str(root), "--seed", "1003", "--benchmarks",
                    "tir_bench", "--tir_tasks", "spot_difference", "rotation_game", "jigsaw", "--tir_count", "6"],
                   cwd=REPO, check=True, capture_output=True, timeout=300)
    reach = probe_code_tool.heldout_reach(str(root), str(tmp_path / "out"))
    assert set(reach) == {"data_root", "spot_difference", "rotation_game"}  # jigsaw has no program
    assert reach["spot_difference"]["items"] == 2 and reach["spot_difference"]["right"] == 2
    rotation = reach["rotation_game"]
    assert rotation["items"] == 2 and rotation["items"] - rotation["ties"] <= rotation["right"]


def _episode(question: str, code: str, printed: str, answer: str) -> dict:
    """A trajectory as eval's runner saves it (agent.loop's messages)."""
    call = {"type": "function", "function": {"name": "python", "arguments": {"code": code}}}
    return {"messages": [
        {"role": "user", "content": [{"type": "image", "image": "x.png"}, {"type": "text", "text": question}]},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "name": "python", "content": [{"type": "text", "text": f"Output:\n{printed}\n"}]},
        {"role": "assistant", "content": f"<answer>{answer}</answer>"}]}


def test_copies_counts_a_miscopied_question_and_an_answer_that_is_not_the_printed_line(tmp_path):
    folder = tmp_path / "run" / "tir_bench" / "trajectories"
    folder.mkdir(parents=True)
    options = [180, 220, 270, 150, 110, 15]
    episodes = {
        "1": _episode(rotation_prompt(options), rotation_program(options), "D", "D"),
        "2": _episode(rotation_prompt(options), rotation_program([180, 220, 270, 15, 110, 155]), "F", "F"),
        "3": _episode(spot_difference_prompt(3, 4), spot_difference_program(3, 4), "2, 7", "2, 7"),
        "4": _episode(spot_difference_prompt(3, 4), spot_difference_program(4, 3), "2, 7", "2, 8"),
    }
    for name, episode in episodes.items():
        (folder / f"{name}.json").write_text(json.dumps(episode), encoding="utf-8")
    counts = probe_code_tool.copy_errors([str(tmp_path / "run")])[str(tmp_path / "run")]
    assert counts["rotation_game"] == {"episodes": 2, "no_call": 0, "question_miscopied": 1, "answer_not_printed": 0}
    assert counts["spot_difference"] == {"episodes": 2, "no_call": 0, "question_miscopied": 1,
                                         "answer_not_printed": 1}


@pytest.mark.parametrize("args, says", [
    (("programs", "--count", "0", "--out", "x"), "--count 0: must be at least 1"),
    (("copies", "no-such-run"), "no-such-run: no tir_bench/trajectories folder"),
    (("heldout", "no-such-root", "--out", "x"), "no-such-root: no tir_bench/TIR-Bench.json"),
])
def test_command_line_mistakes_are_one_error_line_and_exit_2(args, says):
    done = subprocess.run([sys.executable, str(REPO / "bench/probe_code_tool.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("probe_code_tool.py: error:")]
    assert len(errors) == 1 and says in errors[0], done.stderr
