"""Issue 40, item 1: a two-process ZeRO-3 launch on a machine whose cache is empty builds the embedded
default whole (outside DeepSpeed's zero.Init, one rank building while the other waits), and a plain run
from that cache then loads it without any "Reinit due to size mismatch". Before the fix, that launch
cached 63 of the model's 64 tensors empty and died, and every later run loaded the empty weights.

70 s measured on the 2-core machine under load (load average ~4), one step each; plus DeepSpeed's CPU
shm op build (~60 s idle) on a machine where tests/test_sft_deepspeed.py has not built it yet. Without the
fix the launch hangs (rank 0 builds inside zero.Init, whose collectives the waiting rank never joins) or
caches empty tensors: the 300 s limit per command turns a hang into a failure."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file

from lookcloser.agent.tiny_qwen3_vl import build_tiny_qwen3_vl
from lookcloser.checkpoints import weights_problem
from tests.conftest import REPO

pytestmark = pytest.mark.slow

ONE_STEP = ["recipes/mir_stage1.yaml", "--model_name_or_path", "lookcloser/tiny-qwen3-vl", "--max_steps", "1",
            "--use_cpu", "true", "--logging_steps", "1", "--report_to", "none", "--max_train_samples", "32"]


def _run(cmd: list[str], cache, out_dir) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "LOOKCLOSER_CACHE": str(cache), "TRANSFORMERS_VERBOSITY": "info"}
    return subprocess.run([*cmd, *ONE_STEP, "--output_dir", str(out_dir)], check=False, cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_zero3_launch_from_an_empty_cache_caches_whole_weights_and_a_plain_run_loads_them(tmp_path):
    cache = tmp_path / "cache"  # empty: the launch builds the embedded default itself
    launch = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
              "accelerate_configs/cpu_2proc_zero3.yaml", "--main_process_port", "0", "train/sft.py"]
    zero3 = _run(launch, cache, tmp_path / "zero3")
    assert zero3.returncode == 0, zero3.stdout[-3000:] + zero3.stderr[-3000:]
    [cached] = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert weights_problem(cached) is None
    weights = load_file(cached / "model.safetensors")
    fresh = load_file(build_tiny_qwen3_vl(tmp_path / "fresh") / "model.safetensors")
    assert weights.keys() == fresh.keys() and all(torch.equal(weights[k], fresh[k]) for k in fresh)
    assert weights_problem(tmp_path / "zero3") is None  # what the ZeRO-3 run saved is whole too

    plain = _run([sys.executable, "train/sft.py"], cache, tmp_path / "plain")
    assert plain.returncode == 0, plain.stdout[-3000:] + plain.stderr[-3000:]
    for proc in (zero3, plain):
        assert "Reinit due to size mismatch" not in proc.stdout + proc.stderr
        assert "size mismatch" not in proc.stdout + proc.stderr
