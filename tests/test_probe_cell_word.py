"""bench/probe_cell_word.py (the docs/grpo.md diagnosis): on the tiny model and a real visual_search SFT
split, one entry per target cell with the three column words' probabilities."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import probe_cell_word  # bench/ is not a package: imported by path (above)


def test_probe_gives_each_cell_its_column_word_distribution(tmp_path, tiny_model_dir):
    from lookcloser.train.grpo_tasks import ToolTaskArguments, build

    built = build(ToolTaskArguments(output_dir=str(tmp_path), count=6, heldout_count=1,
                                    model_name_or_path=str(tiny_model_dir)))
    table = probe_cell_word.column_word_probabilities(str(tiny_model_dir), str(built["train"] / "sft"), 6)
    assert sum(v["records"] for v in table.values()) == 6
    for cell, row in table.items():
        assert cell.split()[0] in probe_cell_word.ROWS and cell.split()[1] in probe_cell_word.COLUMNS
        words = [row[w] for w in probe_cell_word.COLUMNS]
        assert all(0 < p < 1 for p in words) and sum(words) < 1  # first tokens of a 558-token vocabulary
