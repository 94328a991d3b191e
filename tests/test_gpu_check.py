"""bench/gpu_check.py (the one unattended check of a fresh GPU machine) on a machine without a GPU: the skip
record, the plan it would run within 9 minutes, and its whole-weights / size-mismatch verdict on real files.
The GPU figures themselves come from running it on a GPU (docs/benchmarks.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))


def _check(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(REPO / "bench/gpu_check.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_without_a_gpu_it_writes_a_skip_record_and_exits_0(tmp_path):
    proc = _check("--wheels", str(tmp_path), "--out", str(tmp_path / "summary.json"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "summary.json").read_text())
    assert record == json.loads(proc.stdout)
    assert record["skipped"] is True and "no CUDA GPU" in record["reason"] and "steps" not in record


def test_the_plan_covers_the_issue_in_order_within_nine_minutes():
    proc = _check("--dry_run")
    assert proc.returncode == 0, proc.stderr[-2000:]
    plan = json.loads(proc.stdout)
    names = [step["name"] for step in plan["steps"]]
    assert names == ["fused_kernels", "sft_2b", "rollout_plain", "rollout_static", "zero3_fresh_cache", "reload",
                     "eval_cuda"]
    assert plan["budget_s"] <= 540
    cmds = {step["name"]: step["cmd"] for step in plan["steps"]}
    assert "tests/test_fused_kernels.py" in cmds["fused_kernels"] and "none,liger" in cmds["sft_2b"]
    assert cmds["rollout_static"] == cmds["rollout_plain"] + " --grpo_flags --cache_implementation static"
    assert "accelerate_configs/zero3.yaml" in cmds["zero3_fresh_cache"] and "--device cuda" in cmds["eval_cuda"]


def test_a_step_that_leaves_empty_tensors_or_logs_a_size_mismatch_fails(tiny_model_dir, tmp_path):
    import time

    import gpu_check

    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    weights = load_file(broken / "model.safetensors")
    weights["lm_head.weight"] = torch.empty(0)
    save_file(weights, broken / "model.safetensors", metadata={"format": "pt"})
    deadline = time.monotonic() + 60
    ok = gpu_check.run_step({"name": "s", "limit_s": 30, "cmd": [sys.executable, "-c", "print(1)"],
                             "whole": [str(tiny_model_dir)]}, deadline)
    assert ok["status"] == "ok" and ok["weights"] == {str(tiny_model_dir): "whole"}
    empty = gpu_check.run_step({"name": "s", "limit_s": 30, "cmd": [sys.executable, "-c", "print(1)"],
                                "whole": [str(broken)]}, deadline)
    assert empty["status"] == "failed" and "1 of" in empty["weights"][str(broken)]
    logged = gpu_check.run_step({"name": "s", "limit_s": 30, "whole": [str(tiny_model_dir)],
                                 "cmd": [sys.executable, "-c", "print('MISMATCH | Reinit due to size mismatch')"]},
                                deadline)
    assert logged["status"] == "failed" and logged["size_mismatch_logged"]
    late = gpu_check.run_step({"name": "s", "limit_s": 30, "cmd": [sys.executable, "-c", "print(1)"]},
                              time.monotonic() + 5)
    assert late["status"] == "skipped"
