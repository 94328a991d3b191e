"""The README's quickstart figures are what the quickstart gives (slow): its commands, run in the order shown.

The main job (``python train/sft.py recipes/mir_stage1.yaml``, here into a temporary folder),
the held-out MIR records (``python -m data_builders heldout ... --benchmarks mir``), and the README's
four evaluations, each into its own ``--out`` as the README writes them (so they do not clash). The
test reads the table the README prints and asks for the same four percentages, to one decimal.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
ROWS = {  # README row label -> the eval flags of its two cells (real images, flat gray images)
    "as trained": [],
    "MIR's benchmark prompt": ["--mir_prompt_stage", "0", "--tools", "false", "--system_prompt", "", "--max_turns", "1"],
}


def readme_quickstart_table() -> dict[str, tuple[str, str]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    cells = {}
    for label in ROWS:
        match = re.search(rf"^\| {re.escape(label)}[^|]*\| ([\d.]+)% \| ([\d.]+)% \|$", text, re.MULTILINE)
        assert match, f"README.md has no quickstart row starting '| {label}'"
        cells[label] = match.groups()
    return cells


def test_readme_commands_give_the_readme_figures(tmp_path):
    from lookcloser.eval.__main__ import main as evaluate

    ckpt, held_out = tmp_path / "mir_stage1", tmp_path / "held_out"
    subprocess.run([sys.executable, "train/sft.py", "recipes/mir_stage1.yaml", "--output_dir", str(ckpt)], cwd=REPO,
                   check=True)
    subprocess.run([sys.executable, "-m", "data_builders", "heldout", "--out", str(held_out), "--seed", "7007",
                    "--benchmarks", "mir"], cwd=REPO, check=True)
    measured = {}
    for label, flags in ROWS.items():
        pair = []
        for gray in ("false", "true"):
            out = tmp_path / f"eval_{len(measured)}_{gray}"
            metrics = evaluate(["--model", str(ckpt), "--benchmarks", "mir", "--data_root", str(held_out),
                                "--out", str(out), *flags, "--gray_images", gray])
            pair.append(f"{100 * metrics['benchmarks']['mir']['overall']['accuracy']:.1f}")
        measured[label] = tuple(pair)
    assert readme_quickstart_table() == measured
