"""Rollout settings (issue 40, item 2): a faster generation setting must generate what the plain path
generates. The real tiny model, unforced and greedy, in one real GRPO step of train/grpo.py on the same
synthetic items; the generated token ids are read from the real ``generate`` (a pass-through spy)."""

from __future__ import annotations

import functools

import pytest
import torch

from lookcloser.train import grpo

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _greedy_rollout(tiny_model_dir, workdir, *flags: str) -> list[torch.Tensor]:
    argv = ["recipes/grpo_synthetic.yaml", "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(workdir / ("run" + "_".join(flags))), "--synthetic_dir", str(workdir / "data"),
            "--synthetic_count", "4", "--synthetic_tasks", "visual_search",
            "--max_steps", "1", "--per_device_train_batch_size", "4", "--num_generations", "2",
            "--max_turn_tokens", "24", "--max_completion_length", "96", "--filter_groups", "false",
            "--generation_kwargs", '{"do_sample": false}', "--use_cpu", "true", "--bf16", "false",
            "--report_to", "none", "--save_strategy", "no", "--logging_steps", "1", *flags]
    trainer = grpo.build_trainer(*grpo.parse_args(argv))
    outputs, generate = [], trainer.model.generate

    @functools.wraps(generate)
    def recording(*args, **kwargs):
        out = generate(*args, **kwargs)
        outputs.append((out if isinstance(out, torch.Tensor) else out.sequences).clone())
        return out

    trainer.model.generate = recording
    trainer.train()
    assert outputs, "the rollout must go through generate"
    assert trainer.generation_config.do_sample is False
    if flags:  # the setting reached generate
        assert trainer.generation_config.cache_implementation == "static"
    return outputs


def test_static_cache_rollout_generates_what_the_plain_path_generates(tiny_model_dir, tmp_path, repo_cwd):
    plain = _greedy_rollout(tiny_model_dir, tmp_path)
    static = _greedy_rollout(tiny_model_dir, tmp_path, "--cache_implementation", "static")
    assert len(plain) == len(static)
    for a, b in zip(plain, static, strict=True):
        assert torch.equal(a, b)
    assert sum(t.numel() for t in plain) > 0
