"""Issue 49, item 8: a launch of several processes on a machine without CUDA never trains silently wrong.

Without ``--use_cpu true`` each rank of ``accelerate_configs/cpu_2proc.yaml`` took itself for the only one
and trained alone on all the data; with ``cpu_2proc_zero3.yaml`` DeepSpeed stopped with its 20-line
``Check batch related parameters`` assertion after the model loaded. Now ``train/checks.check_launch``
stops both when the command is parsed, with one ``error:`` line naming the flag. The launches are real
(``accelerate launch -q``, two processes over gloo); torchrun then reports the failed rank its own way
(README, "One process: python; several: accelerate launch"), which no script can change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from trl import SFTConfig

from lookcloser.errors import RecipeError
from lookcloser.train.checks import check_launch
from tests.conftest import REPO

LINE = ("error: this launch starts 2 processes on a machine without CUDA: add --use_cpu true to the script's "
        "arguments (without it each process would train alone on all the data, or DeepSpeed would stop at its "
        "batch-size check)")


def _args(tmp_path, **changes) -> SFTConfig:
    return SFTConfig(output_dir=str(tmp_path / "out"), report_to="none", bf16=False, **changes)


def test_several_processes_without_cuda_need_use_cpu(tmp_path):
    with pytest.raises(RecipeError, match=r"starts 2 processes on a machine without CUDA: add --use_cpu true"):
        check_launch(_args(tmp_path), {"WORLD_SIZE": "2"}, cuda=False)
    check_launch(_args(tmp_path, use_cpu=True), {"WORLD_SIZE": "2"}, cuda=False)
    check_launch(_args(tmp_path), {"WORLD_SIZE": "2"}, cuda=True)  # GPUs: the flag is not needed
    check_launch(_args(tmp_path), {}, cuda=False)  # one process: plain python on a CPU


def test_a_deepspeed_config_whose_batch_sizes_do_not_divide_stops_at_parse_time(tmp_path):
    config = tmp_path / "ds.json"
    config.write_text(json.dumps({"train_batch_size": 8, "train_micro_batch_size_per_gpu": "auto"}))
    launch = {"WORLD_SIZE": "2", "ACCELERATE_USE_DEEPSPEED": "true", "ACCELERATE_DEEPSPEED_CONFIG_FILE": str(config)}
    args = _args(tmp_path, use_cpu=True, per_device_train_batch_size=2, gradient_accumulation_steps=4)
    with pytest.raises(RecipeError, match=rf"deepspeed config {config}: train_batch_size is 8, but "
                                          r"per_device_train_batch_size 2 x gradient_accumulation_steps 4 x 2 "
                                          r"processes is 16; set it to \"auto\" or to 16"):
        check_launch(args, launch, cuda=False)
    config.write_text(json.dumps({"train_batch_size": 16, "gradient_accumulation_steps": 4}))
    check_launch(args, launch, cuda=False)
    config.write_text("{not json")
    with pytest.raises(RecipeError, match="cannot be read as JSON"):
        check_launch(args, launch, cuda=False)


@pytest.mark.slow  # about 15 s each (two ranks starting torch; the ZeRO-3 one also loads DeepSpeed's CPU ops)
@pytest.mark.parametrize("config", ["cpu_2proc.yaml", "cpu_2proc_zero3.yaml"])
def test_a_two_process_cpu_launch_without_use_cpu_stops_before_any_work(tmp_path, config):
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "-q", "--config_file",
                           f"accelerate_configs/{config}", "--main_process_port", "0", "train/sft.py",
                           "recipes/mir_stage1.yaml", "--max_steps", "2", "--output_dir", str(out)],
                          check=False, cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"})
    said = done.stdout + done.stderr
    assert done.returncode != 0 and said.count(LINE) == 1, said[-3000:]
    assert [line for line in said.splitlines() if line.startswith("error:")] == [LINE]
    assert "Check batch related parameters" not in said and "AssertionError" not in said
    assert 'File "train/sft.py"' not in said and "/train/sft.py\", line" not in said  # no traceback of ours
    assert not out.exists() and "'loss'" not in said  # stopped before the model, the data, a step
