"""bench/bench_sft_2b.py (train/sft.py itself on the 2B architecture) stays runnable without a GPU: its skip
record, and a tiny CPU run of the real trainer whose MFU inputs are consistent. Nothing here is timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))


def _bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, str(REPO / "bench/bench_sft_2b.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_without_a_gpu_it_prints_a_skip_record():
    proc = _bench()
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(proc.stdout)
    assert record["skipped"] is True and "no CUDA GPU" in record["reason"]


@pytest.mark.slow
def test_tiny_run_of_train_sft_counts_the_flops_of_the_rows_it_trained():
    """~25 s: one process writes the folder and the MIR records, one runs train/sft.py for two steps."""
    import gpu_model
    from transformers import Qwen3VLForConditionalGeneration

    from lookcloser.agent.tiny_qwen3_vl import build_config, build_tokenizer

    proc = _bench("--tiny", "--device", "cpu", "--variants", "none", "--peak_tflops", "0.001")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["script"].startswith("train/sft.py")
    [run] = result["runs"]
    assert run["fused_kernels"] == "none" and run["step_s"] > 0 and run["loss"] > 0
    assert len(run["tokens_per_row"]) == 2 and all(100 < n <= 256 for n in run["tokens_per_row"])
    config = build_config(build_tokenizer())
    weights = gpu_model.linear_weights(Qwen3VLForConditionalGeneration(config))
    grids = [(1, 4, 4)] * 4  # two rows of two 64x64 images: 4x4 patches each
    assert run["model_flops_per_step"] == gpu_model.train_flops(weights, config, run["tokens_per_row"], grids)
    assert run["mfu"] == pytest.approx(run["model_flops_per_step"] / run["step_s"] / 1e9, rel=1e-2)
