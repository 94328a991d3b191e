"""GRPO with the image tools under DeepSpeed ZeRO-2 and ZeRO-3, two CPU processes (gloo), as users launch it.

ZeRO-3 runs full fine-tuning with a reference model (``beta > 0``), the case that needs DeepSpeed's
process group up before the model loads. The entropy bonus gives the random tiny model a gradient
whatever its rewards, so the saved weights must differ from the initial ones.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, assert_trained_full_weights

pytestmark = pytest.mark.slow


def _launch(config: str, tiny_model_dir, out_dir, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable, "-m", "accelerate.commands.launch", "--config_file", f"accelerate_configs/{config}",
        "--main_process_port", "0", "train/grpo.py", "recipes/grpo_synthetic.yaml",
        "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(out_dir), "--use_cpu", "true",
        "--max_steps", "2", "--synthetic_count", "8", "--synthetic_canvas_size", "384",
        "--per_device_train_batch_size", "4", "--num_generations", "4", "--max_turn_tokens", "24",
        "--max_completion_length", "64", "--entropy_coef", "0.01", "--filter_groups", "false",
        "--mask_out_of_length", "false", "--report_to", "none", *extra,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    return subprocess.run(cmd, check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("config, extra", [("cpu_2proc_zero2.yaml", ()), ("cpu_2proc_zero3.yaml", ("--beta", "0.04"))])
def test_two_process_deepspeed_grpo_trains_shards_and_saves(config, extra, tiny_model_dir, tmp_path):
    out_dir = tmp_path / "out"
    proc = _launch(config, tiny_model_dir, out_dir, *extra)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    state = json.loads((out_dir / "trainer_state.json").read_text())
    # 2 steps x 4 rows per rank x 2 ranks / 4 generations = 4 of the 8 prompts: both ranks generated, each its share.
    assert state["global_step"] == 2 and state["epoch"] == pytest.approx(0.5)
    logs = [entry for entry in state["log_history"] if "tools/call_frequency" in entry]
    assert len(logs) == 2 and all("trajectory/turns" in entry for entry in logs)
    if "--beta" in extra:
        assert logs[-1]["kl"] > 0  # the reference model ran and the policy moved away from it
    assert_trained_full_weights(out_dir, tiny_model_dir)
