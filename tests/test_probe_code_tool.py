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

from lookcloser.data_builders.synthetic import rotation_prompt, spot_difference_prompt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import probe_code_tool  # bench/ is not a package: imported by path (above)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_programs_reach_every_kind_on_procedural_pictures_and_no_jigsaw_holds_identical_pieces(tmp_path):
    reach = probe_code_tool.program_reach(seed=11, count=3, out=str(tmp_path))
    for task in ("spot_difference", "jigsaw", "maze", "color", "refcoco"):  # exact kinds
        assert reach[task]["items"] == 3 and reach[task]["right"] == 3, reach
    rotation = reach["rotation_game"]
    assert rotation["items"] == 3 and rotation["items"] - rotation.get("ties", 0) <= rotation["right"] <= 3
    assert reach["jigsaw"]["with_identical_pieces"] == 0


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_heldout_scores_each_kind_on_a_heldout_folders_items(tmp_path):
    root = tmp_path / "heldout"
    subprocess.run([sys.executable, "-m", "data_builders", "heldout", "--out", str(root), "--seed", "1003", "--benchmarks",
                    "tir_bench", "--tir_tasks", "spot_difference", "rotation_game", "maze", "--tir_count", "6",
                    "--tir_pictures", "procedural"], cwd=REPO, check=True, capture_output=True, timeout=300)
    reach = probe_code_tool.heldout_reach(str(root), str(tmp_path / "out"))
    assert set(reach) == {"data_root", "spot_difference", "rotation_game", "maze"}
    assert reach["spot_difference"]["items"] == 2 and reach["spot_difference"]["right"] == 2
    assert reach["maze"]["items"] == 2 and reach["maze"]["right"] == 2
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
    rotation = "from looktools import *\no=[{}]\nprint(letter(nearest(tilt(image_1),o,90)))\n"
    spot = "import looktools as lt\nd=lt.changed(image_1,image_2,{},{})\nprint(*d, sep=', ')\n"
    episodes = {
        "1": _episode(rotation_prompt(options), rotation.format("180,220,270,150,110,15"), "D", "D"),
        "2": _episode(rotation_prompt(options), rotation.format("180,220,270,15,110,155"), "F", "F"),
        "3": _episode(spot_difference_prompt(3, 4), spot.format(3, 4), "2, 7", "2, 7"),
        "4": _episode(spot_difference_prompt(3, 4), spot.format(4, 3), "2, 7", "2, 8"),
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
