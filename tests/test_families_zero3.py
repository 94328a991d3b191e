"""A family other than Qwen under the two-process DeepSpeed ZeRO-3 launch users run (CPU, gloo): SFT trains
on both ranks' shards and saves a whole, plain checkpoint (the README's support table, ZeRO-3 column)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lookcloser.agent.families import FAMILIES
from tests.conftest import REPO, assert_trained_full_weights

pytestmark = pytest.mark.slow

FAMILY = "internvl"  # no M-RoPE, no token-type map, its own tool template: the furthest from Qwen3-VL's path


def test_two_process_zero3_sft_of_a_non_qwen_family(tmp_path):
    start = FAMILIES[FAMILY].build_tiny(tmp_path / f"tiny-{FAMILY}")
    out_dir = tmp_path / "out"
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", "accelerate_configs/cpu_2proc_zero3.yaml",
           "--main_process_port", "0", "train/sft.py", "recipes/mir_stage1.yaml", "--model_name_or_path", str(start),
           "--output_dir", str(out_dir), "--max_steps", "2", "--use_cpu", "true", "--logging_steps", "1",
           "--report_to", "none"]
    proc = subprocess.run(cmd, check=False, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    state = json.loads((out_dir / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and state["epoch"] == pytest.approx(0.5)  # 2 x 8 x 2 ranks of 64 records
    assert json.loads((out_dir / "config.json").read_text())["model_type"] == FAMILY
    assert_trained_full_weights(out_dir, start)
