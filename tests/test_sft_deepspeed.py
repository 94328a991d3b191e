"""SFT under DeepSpeed ZeRO-2 and ZeRO-3 with two CPU processes (gloo), launched as users launch it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, assert_trained_full_weights

pytestmark = pytest.mark.slow


def _launch(config: str, tiny_model_dir, out_dir) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch", "--config_file", f"accelerate_configs/{config}",
        "--main_process_port", "0", "train/sft.py", "recipes/mir_stage1.yaml",
        "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(out_dir),
        "--max_steps", "2", "--use_cpu", "true", "--logging_steps", "1", "--report_to", "none",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.run(cmd, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("config", ["cpu_2proc_zero2.yaml", "cpu_2proc_zero3.yaml"])
def test_two_process_deepspeed_sft_trains_shards_and_saves(config, tiny_model_dir, tmp_path):
    out_dir = tmp_path / "out"
    proc = _launch(config, tiny_model_dir, out_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    state = json.loads((out_dir / "trainer_state.json").read_text())
    # 2 steps x 8 per device x 2 ranks = 32 of 64 records: both ranks trained, each on its shard.
    assert state["global_step"] == 2 and state["epoch"] == pytest.approx(0.5)
    assert_trained_full_weights(out_dir, tiny_model_dir)
