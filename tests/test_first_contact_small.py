"""The smaller first-contact items of issue 41: each through the real command or function.

- eval on a data file cut short stops with one error and leaves no ``--out/run.json`` behind;
- ``python -m data_builders --help`` lists ``heldout``, and the README's heldout line names every
  folder heldout writes;
- ``python -m eval prepare`` that cannot download prints its ``error:`` line and nothing before it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"


def test_eval_on_a_truncated_data_file_leaves_no_run_json(tmp_path, tiny_model_dir):
    from lookcloser.errors import UserError
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.pipeline import evaluate

    root = tmp_path / "data" / "mir"
    shutil.copytree(SAMPLE, root)
    data = root / "all_data_rel.json"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])  # a download cut short
    out = tmp_path / "out"
    with pytest.raises(UserError, match="all_data_rel.json: not valid JSON"):
        evaluate(EvalConfig(model=str(tiny_model_dir), benchmarks="mir", data_root=str(tmp_path / "data"),
                            out=str(out)))
    assert not (out / "run.json").exists() and not out.exists()


def test_data_builders_help_lists_heldout(capsys):
    from lookcloser.data_builders.cli import main

    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    rows = {line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    assert {"mir", "imagenet-think", "synthetic", "difficulty", "heldout"} <= rows, rows


def test_the_readme_names_every_folder_heldout_writes(tmp_path):
    from lookcloser.data_builders.heldout import DEFAULT_GENERATED

    line = next(line for line in (REPO / "README.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("python -m data_builders heldout --out outputs/heldout/"))
    named = re.findall(r"OUT/(\w+)", line)
    assert sorted(named) == sorted(DEFAULT_GENERATED), line  # by default heldout writes OUT/<name> for each


def test_eval_prepare_that_cannot_download_prints_only_its_error_line(tmp_path):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess.run([sys.executable, "-m", "lookcloser.eval", "prepare", "--benchmarks", "mir", "--data_root",
                           str(tmp_path / "bench")], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: could not download mir"), done.stderr
