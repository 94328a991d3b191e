"""bench/bench_gpu.py stays runnable on a machine without a GPU: its skip record, its FLOP count
(checked against a hand count from the config) and a one-step smoke run of the tiny model on CPU.
The GPU figures themselves live in docs/benchmarks.md; nothing here is timed."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import gpu_model  # bench/ is not a package: imported by path (above)


def _bench(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "WANDB_MODE": "offline"}
    return subprocess.run([sys.executable, str(REPO / "bench/bench_gpu.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_without_a_gpu_it_prints_a_skip_record_and_exits_0():
    proc = _bench()
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(proc.stdout)
    assert record["skipped"] is True and "no CUDA GPU" in record["reason"]


def test_asking_for_cuda_without_one_is_a_command_line_error():
    proc = _bench("--device", "cuda")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith("error: --device cuda but torch sees no CUDA GPU")


def _hand_counted_weights(cfg) -> dict[str, int]:
    """Matrix weights of Qwen3-VL from its config alone (no module walk)."""
    t, v = cfg.text_config, cfg.vision_config
    attn = t.hidden_size * t.head_dim * (2 * t.num_attention_heads + 2 * t.num_key_value_heads)
    text = t.num_hidden_layers * (attn + 3 * t.hidden_size * t.intermediate_size) + t.hidden_size * t.vocab_size
    block = 4 * v.hidden_size ** 2 + 2 * v.hidden_size * v.intermediate_size
    patch = v.depth * block + 3 * v.temporal_patch_size * v.patch_size ** 2 * v.hidden_size
    wide = v.hidden_size * v.spatial_merge_size ** 2
    merged = (1 + len(v.deepstack_visual_indexes)) * (wide * wide + wide * v.out_hidden_size)
    return {"text": text, "patch": patch, "merged": merged}


def test_flop_count_matches_a_hand_count_of_the_real_2b_config():
    from transformers import Qwen3VLForConditionalGeneration

    from lookcloser.agent.tiny_qwen3_vl import build_tokenizer

    cfg = gpu_model.qwen3_vl_2b_config(build_tokenizer())
    with torch.device("meta"):  # the 2B shapes without allocating them
        model = Qwen3VLForConditionalGeneration._from_config(cfg, dtype=torch.bfloat16)
    weights = gpu_model.linear_weights(model)
    assert weights == _hand_counted_weights(cfg)
    assert sum(p.numel() for p in model.parameters()) == 2_127_532_032  # Qwen3-VL-2B's published size, ~2.13B
    # One 4096-token row with one 512x512 image (32x32 patches, 256 merged tokens).
    t, v = cfg.text_config, cfg.vision_config
    forward = 2 * (weights["text"] * 4096 + weights["patch"] * 1024 + weights["merged"] * 256)
    forward += t.num_hidden_layers * 4 * t.num_attention_heads * t.head_dim * 4096 * 4097 // 2
    forward += v.depth * 4 * v.hidden_size * 1024 ** 2
    assert gpu_model.train_flops(weights, cfg, [4096], [(1, 32, 32)]) == 3 * forward
    assert gpu_model.peak_tflops("NVIDIA H100 80GB HBM3") == 989.4


def test_doctests_of_the_flop_helpers():
    import doctest

    assert doctest.testmod(gpu_model).failed == 0


def test_tiny_sft_smoke_run_on_cpu_reports_consistent_mfu():
    proc = _bench("--tiny", "--device", "cpu", "--skip_grpo", "--peak_tflops", "0.001")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    variants = result["sft"]["variants"]
    assert [v["loss_impl"] for v in variants] == ["hf", "chunked"] and variants[1]["checkpointing"]
    for v in variants:
        assert v["step_s"] > 0 and math.isfinite(v["loss"]) and v["tokens_per_step"] == 192 * v["batch"]
        assert v["mfu"] == pytest.approx(v["model_flops_per_step"] / v["step_s"] / 1e9, rel=1e-2)
    # The flops scale with the batch: the second variant's two rows cost twice the first's one.
    assert variants[1]["model_flops_per_step"] == 2 * variants[0]["model_flops_per_step"]


def test_precomputed_positions_and_trls_head_give_the_models_own_loss_and_liger_needs_cuda():
    """`pos` passes the M-RoPE positions the model would compute itself, and `trl` scores through TRL's fused
    LM head (as train/sft.py does): the first step's loss is the model's own. Liger's kernels (the product's
    patch, fused_kernels: liger) run on CUDA only: on CPU they are an error record, and the run goes on."""
    one_step = ("--tiny", "--device", "cpu", "--skip_grpo", "--warmup", "0", "--steps", "1", "--sft_variants")
    proc = _bench(*one_step, "1:hf:nogc:pos")
    trl_head = _bench(*one_step, "1:trl:nogc")
    plain = _bench(*one_step, "1:hf:nogc,1:chunked:nogc:liger")
    assert proc.returncode == trl_head.returncode == plain.returncode == 0, (
        proc.stderr + trl_head.stderr + plain.stderr)[-3000:]
    with_pos = json.loads(proc.stdout)["sft"]["variants"][0]
    with_trl_head = json.loads(trl_head.stdout)["sft"]["variants"][0]
    without, liger = json.loads(plain.stdout)["sft"]["variants"]
    assert with_pos["positions"] and not without["positions"] and with_trl_head["loss_impl"] == "trl"
    assert with_pos["loss"] == pytest.approx(without["loss"], abs=1e-4)
    assert with_trl_head["loss"] == pytest.approx(without["loss"], abs=1e-4)
    assert liger["liger"] and liger["error"].startswith("liger: ") and "CUDA" in liger["error"], liger


@pytest.mark.slow
def test_tiny_grpo_smoke_run_makes_real_crop_calls():
    proc = _bench("--tiny", "--device", "cpu", "--sft_variants", "")
    assert proc.returncode == 0, proc.stderr[-3000:]
    grpo = json.loads(proc.stdout)["grpo"]
    assert grpo["turns_mean"] == 2 and grpo["images_mean"] == 2  # the crop returned an image every time
    assert grpo["tool_failure_frequency"] == 0
    assert 0 < grpo["rollout_s"] < grpo["step_s"] and 0 < grpo["rollout_share"] < 1
