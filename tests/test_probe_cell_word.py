"""bench/probe_cell_word.py (the docs/grpo.md diagnosis): on the tiny model and a real visual_search SFT
split, one entry per target cell with the three column words' probabilities; command-line mistakes are
one error line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import probe_cell_word  # bench/ is not a package: imported by path (above)


@pytest.fixture(scope="module")
def sft_split(tmp_path_factory, tiny_model_dir) -> Path:
    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments, build

    built = build(ToolTaskArguments(output_dir=str(tmp_path_factory.mktemp("probe")), count=6, heldout_count=1,
                                    model_name_or_path=str(tiny_model_dir)))
    return built["train"] / "sft"


def test_probe_gives_each_cell_its_column_word_distribution(sft_split, tiny_model_dir):
    table = probe_cell_word.column_word_probabilities(str(tiny_model_dir), str(sft_split), 6)
    assert sum(v["records"] for v in table.values()) == 6
    for cell, row in table.items():
        assert cell.split()[0] in probe_cell_word.ROWS and cell.split()[1] in probe_cell_word.COLUMNS
        words = [row[w] for w in probe_cell_word.COLUMNS]
        assert all(0 < p < 1 for p in words) and sum(words) < 1  # first tokens of a 558-token vocabulary


def test_command_line_mistakes_are_one_error_line_and_exit_2(tmp_path, sft_split, tiny_model_dir):
    for args, says in (((str(tiny_model_dir), str(tmp_path)), "not a saved dataset"),
                       ((str(tiny_model_dir), str(sft_split), "--records", "0"), "--records 0: must be at least 1"),
                       ((str(tmp_path / "no-model"), str(sft_split)), "model folder not found")):
        done = subprocess.run([sys.executable, str(REPO / "bench/probe_cell_word.py"), *args], cwd=REPO,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        errors = [line for line in done.stderr.splitlines() if line.startswith("probe_cell_word.py: error:")]
        assert len(errors) == 1 and says in errors[0], done.stderr
