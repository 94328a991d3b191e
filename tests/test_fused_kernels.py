"""The ``fused_kernels`` recipe key of train/sft.py and train/grpo.py (train/fused_kernels.py).

Here, without a CUDA GPU: the key parses, a bad value and an unrunnable ``liger`` are one ``error:``
line before any model loads, and TRL's own Liger switch is refused for Qwen3-VL. On a CUDA machine
with liger-kernel: the first training step's loss and gradient norm equal the plain path's (bf16).
What the patch swaps in the model is tested in tests/test_trl_surface.py (no GPU needed there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lookcloser.recipes import RecipeError
from lookcloser.train import grpo, sft
from lookcloser.train.fused_kernels import liger_unavailable

REPO = Path(__file__).resolve().parents[1]
UNAVAILABLE = liger_unavailable()


pytestmark = pytest.mark.usefixtures("repo_cwd")  # recipes name data relative to the repo root


def _sft_args(model, out, *extra):
    return sft.parse_args(["recipes/mir_stage1.yaml", "--model_name_or_path", str(model),
                           "--output_dir", str(out), "--report_to", "none", *extra])


def test_both_scripts_have_the_key_and_default_to_the_models_own_layers(tmp_path):
    script_args, *_ = _sft_args("lookcloser/tiny-qwen3-vl", tmp_path)
    assert script_args.fused_kernels == "none"
    script_args, *_ = grpo.parse_args(["recipes/grpo_synthetic.yaml", "--output_dir", str(tmp_path),
                                       "--fused_kernels", "none"])
    assert script_args.fused_kernels == "none"


def test_liger_is_an_optional_extra_from_the_version_we_check_for():
    tomllib = pytest.importorskip("tomllib")
    from lookcloser.train.fused_kernels import LIGER_MIN_VERSION

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert not [d for d in project["dependencies"] if "liger" in d or "triton" in d]  # the CPU install stays as is
    (liger,) = project["optional-dependencies"]["gpu"]
    assert liger.startswith(f"liger-kernel>={LIGER_MIN_VERSION},"), liger


def test_an_unknown_value_is_a_recipe_error_naming_the_choices(tmp_path):
    with pytest.raises(RecipeError, match="fused_kernels.*invalid choice.*triton.*none.*liger"):
        _sft_args("lookcloser/tiny-qwen3-vl", tmp_path, "--fused_kernels", "triton")


@pytest.mark.skipif(UNAVAILABLE is None, reason="this machine can run Liger's kernels")
@pytest.mark.parametrize("script", [sft, grpo], ids=["sft", "grpo"])
def test_liger_where_it_cannot_run_stops_the_parse(script, tmp_path):
    recipe = "recipes/mir_stage1.yaml" if script is sft else "recipes/grpo_synthetic.yaml"
    with pytest.raises(RecipeError) as err:
        script.parse_args([recipe, "--output_dir", str(tmp_path), "--fused_kernels", "liger"])
    assert str(err.value) == f"fused_kernels: liger {UNAVAILABLE}"


@pytest.mark.skipif(UNAVAILABLE is None, reason="this machine can run Liger's kernels")
def test_the_script_says_so_in_one_error_line_before_any_model_loads(tmp_path):
    """A model path that does not exist would be the error if anything loaded a model first."""
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "train/sft.py", "recipes/mir_stage1.yaml", "--fused_kernels", "liger",
                           "--model_name_or_path", str(tmp_path / "no-such-model"), "--output_dir", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == f"error: fused_kernels: liger {UNAVAILABLE}"
    assert "Traceback" not in proc.stderr and not out.exists()


def test_trls_own_liger_switch_is_refused_for_qwen3vl_with_our_key_named(tiny_model_dir, tmp_path):
    """TRL's ``use_liger_kernel`` would fail when training starts (Liger's Qwen3-VL patch cannot import on
    transformers 5.23, tests/test_trl_surface.py): refused once the model is known, before any step."""
    with pytest.raises(RecipeError, match="use_liger_kernel: .* set fused_kernels: liger instead"):
        sft.build_trainer(*_sft_args(tiny_model_dir, tmp_path, "--use_liger_kernel", "true",
                                     "--max_train_samples", "2", "--max_steps", "1"))


@pytest.mark.skipif(UNAVAILABLE is not None, reason=f"Liger's kernels cannot run here: {UNAVAILABLE}")
def test_first_step_loss_and_gradient_equal_the_plain_path_on_cuda(tiny_model_dir, tmp_path, monkeypatch):
    from liger_kernel.transformers import LigerRMSNorm
    from transformers.models.qwen3_vl import modeling_qwen3_vl

    for name in ("apply_rotary_pos_emb", "apply_rotary_pos_emb_vision"):  # patched for good: restore after
        monkeypatch.setattr(modeling_qwen3_vl, name, getattr(modeling_qwen3_vl, name))
    first = {}
    for kernels in ("none", "liger"):  # plain first: the liger run swaps the rotary functions process-wide
        trainer = sft.build_trainer(*_sft_args(
            tiny_model_dir, tmp_path / kernels, "--fused_kernels", kernels, "--max_steps", "1",
            "--logging_steps", "1", "--dtype", "bfloat16", "--bf16", "true", "--save_strategy", "no"))
        fused = sum(isinstance(m, LigerRMSNorm) for m in trainer.model.modules())
        assert (fused > 0) == (kernels == "liger")
        trainer.train()
        first[kernels] = next(e for e in trainer.state.log_history if "loss" in e)
    assert first["liger"]["loss"] == pytest.approx(first["none"]["loss"], rel=5e-3), first
    assert first["liger"]["grad_norm"] == pytest.approx(first["none"]["grad_norm"], rel=3e-2), first
