"""GRPO step time and the rollout's share of it, multi-turn rollouts batched versus one at a time (JSON).

    OMP_NUM_THREADS=1 python bench/bench_grpo.py --steps 4

The tiny offline Qwen3-VL runs the real train/grpo.py stack (ImageToolEnv through TRL's tool
loop, the rewards, the loss and the optimizer step) on synthetic tasks. Its replies are scripted
inside the real ``generate`` (testing/scripted.py): a crop call, then an answer after the tool result,
so every rollout has the same two turns and the comparison measures batching, not luck. "batched"
generates the whole generation batch per turn (TRL's loop); "sequential" sets
``rollout_chunk_size: 1``. The first step is a warm-up and is not counted; times are medians.

``rollout_settings``: generated tokens/s of the batched rollout under each ``--settings`` entry (the GPU
guidance in docs/grpo.md, "Rollout speed"), side by side with plain ``generate``: ``static`` is
``cache_implementation: static`` (transformers' static KV cache). TRL's continuous batching
(``use_transformers_continuous_batching``) refuses vision processors in TRL 1.16, so it is not offered.
Greedy outputs of each setting equal the plain path's (tests/test_grpo_rollout_settings.py).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CROP = '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}\n</tool_call>'
ANSWER = "<think>The crop shows it.</think><answer>A</answer>"


# Rollout settings by name: the train/grpo.py flags each adds (plain: none).
SETTINGS = {"plain": [], "static": ["--cache_implementation", "static"]}


def run(chunk: int | None, args, workdir: Path, flags: tuple[str, ...] = (), name: str = "") -> dict:
    from transformers import LogitsProcessorList

    from lookcloser.train import grpo
    from testing.scripted import ScriptedLogitsProcessor

    argv = [str(REPO / "recipes/grpo_synthetic.yaml"), "--output_dir", str(workdir / f"run_{chunk}{name}"),
            "--synthetic_dir", str(workdir / "data"), "--synthetic_count", "16", "--synthetic_canvas_size", "512",
            "--environment", "tir_bench", "--synthetic_tasks", "jigsaw", "rotation_game",
            "spot_difference", "visual_search", "ocr",
            "--max_steps", str(args.steps + 1), "--per_device_train_batch_size", str(args.rows),
            "--num_generations", str(args.generations), "--max_turn_tokens", "64", "--max_completion_length", "256",
            "--filter_groups", "false", "--use_cpu", "true", "--report_to", "none", "--log_completions", "false",
            "--logging_steps", "1", "--disable_tqdm", "true"]
    if chunk:
        argv += ["--rollout_chunk_size", str(chunk)]
    argv += list(flags)
    trainer = grpo.build_trainer(*grpo.parse_args(argv))
    forcing = ScriptedLogitsProcessor(trainer.processing_class.tokenizer, lambda turn, _: CROP if turn == 0 else ANSWER)
    trainer.model.generate = functools.partial(trainer.model.generate, logits_processor=LogitsProcessorList([forcing]))
    trainer.train()
    steps, rollouts = trainer.timings["step"][1:], trainer.timings["rollout"][1:]  # drop the warm-up step
    step, rollout = statistics.median(steps), statistics.median(rollouts)  # medians: the CPUs are shared
    lengths = [e["completions/mean_length"] for e in trainer.state.log_history if "completions/mean_length" in e][1:]
    generated = statistics.median(lengths) * args.rows if lengths else None  # tokens generated per step
    return {"generated_tokens_per_step": generated,
            "generated_tokens_per_s": round(generated / rollout, 1) if generated else None,"step_s": round(step, 3), "rollout_s": round(rollout, 3), "rollout_share": round(rollout / step, 3),
            "step_s_all": [round(s, 3) for s in steps], "rollout_s_all": [round(s, 3) for s in rollouts]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="measured steps (after one warm-up step)")
    parser.add_argument("--rows", type=int, default=8, help="per_device_train_batch_size (completions per step)")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--settings", default="plain,static", help=f"rollout settings to compare ({', '.join(SETTINGS)})")
    args = parser.parse_args()
    unknown = [name for name in args.settings.split(",") if name and name not in SETTINGS]
    if unknown:
        parser.error(f"--settings: unknown {', '.join(unknown)} (choose from {', '.join(SETTINGS)})")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    # The trainer prints its logs to stdout; keep stdout for the JSON.
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
        batched = run(None, args, Path(tmp))
        sequential = run(1, args, Path(tmp))
        settings = {name: run(None, args, Path(tmp), tuple(SETTINGS[name]), name)
                    for name in args.settings.split(",") if name}
    print(json.dumps({
        "bench": "grpo_step", "device": "cpu", "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(), "python": platform.python_version(), "torch": torch.__version__,
        "model": "lookcloser/tiny-qwen3-vl", "environment": "tir_bench (ImageToolEnv)",
        "rollout": "2 turns: scripted crop call, tool result image, scripted answer",
        "completions_per_step": args.rows, "num_generations": args.generations, "measured_steps": args.steps,
        "batched": batched, "sequential": sequential,
        "rollout_speedup_batched": round(sequential["rollout_s"] / batched["rollout_s"], 2),
        "step_speedup_batched": round(sequential["step_s"] / batched["step_s"], 2),
        "rollout_settings": settings,
    }, indent=1))


if __name__ == "__main__":
    main()
