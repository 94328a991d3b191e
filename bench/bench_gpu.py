"""Qwen3-VL-2B-architecture SFT and GRPO steps on a GPU: tokens/s, MFU and peak memory (JSON).

    python bench/bench_gpu.py                        # a CUDA GPU: SFT variants, then GRPO tool rollouts
    python bench/bench_gpu.py --tiny --device cpu    # smoke run: the tiny config, one step each, on CPU

Without a CUDA GPU (and without ``--device cpu``) it prints a JSON skip record and exits 0.

The model has Qwen3-VL-2B's architecture (text: 28 layers, hidden 2048, 16 heads / 8 KV heads of
128, MLP 6144, vocab 151,936, tied embeddings; vision: 24 blocks, hidden 1024, patch 16, merge 2,
deepstack [5, 11, 17]) with random bf16 weights, built in code: nothing comes from a hub. The
tokenizer is the tiny offline one (agent.tiny_qwen3_vl); its ids are a subset of the vocabulary.

SFT: forward + backward + fused AdamW on synthetic batches (text ids, images as random patches;
no padding). GRPO: the real train/grpo.py stack on visual_search tasks from data_builders
synthetic, with the image tools: two scripted turns per rollout (reasoning + a crop call, then
reasoning + the answer, forced inside the real ``generate`` as in bench_grpo.py; random weights
would write byte soup), then the loss step. Rollouts run through transformers' ``generate``
(vLLM is not available here, see docs/benchmarks.md).

MFU = model FLOPs per step / step time / the device's dense bf16 peak; the FLOP count is in
bench/gpu_model.py. Figures and commands: docs/benchmarks.md, "GPU".
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import platform
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # gpu_model sits beside this script (bench/ is no package)

from gpu_model import (
    chunked_loss,
    fused_loss,
    kernel_profile,
    linear_weights,
    matmul_tflops,
    nvidia_driver,
    peak_tflops,
    qwen3_vl_2b_config,
    sft_batch,
    train_flops,
    trl_head_loss,
)

# Two scripted assistant turns per rollout: reasoning + a crop call, then reasoning + the answer.
THINK = ("<think>The question asks about the small shape. The image is large and the shape is tiny, so I "
         "should look closer at the region where it is before I answer. {} </think>")
FILLER = "I check the colours and the edges of each object in the image one by one. "


def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def sft_variant(model, optimizer, config, tokenizer, weights, variant: dict, args, device, dtype, peak) -> dict:
    import torch

    inputs, labels, seq_lens, grids = sft_batch(config, tokenizer, variant["batch"], args.seq_len, variant["images"],
                                                args.image_px, device, dtype, seed=args.seed)
    if variant["positions"]:  # M-RoPE positions computed once, as train/sft_data.py's featurized batches carry
        inputs["position_ids"], _ = model.model.get_rope_index(
            inputs["input_ids"], inputs["mm_token_type_ids"], inputs.get("image_grid_thw"),
            attention_mask=inputs["attention_mask"])
    if not variant["attention_mask"]:  # no padding: without a mask SDPA may take its causal flash kernel
        del inputs["attention_mask"]
    if variant["checkpointing"]:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.activation_checkpointing_disable()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    times, losses = [], []
    for step in range(args.warmup + args.steps):
        _sync(device)
        start = time.perf_counter()
        loss = _one_step(model, optimizer, inputs, labels, variant, args)
        _sync(device)
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
            losses.append(round(loss.item(), 4))
    step_s = statistics.median(times)
    if args.profile and device.type == "cuda":
        try:
            profile = kernel_profile(lambda: _one_step(model, optimizer, inputs, labels, variant, args))
        except Exception as err:  # noqa: BLE001 (a diagnostic: never lose the timings for it)
            profile = {"error": repr(err)[:200]}
    flops = train_flops(weights, config, seq_lens, grids)
    tokens = sum(seq_lens)
    out = {**variant, "tokens_per_step": tokens, "images_per_step": len(grids), "step_s": round(step_s, 4),
           "step_s_all": [round(t, 4) for t in times], "tokens_per_s": round(tokens / step_s, 1),
           "model_flops_per_step": flops, "model_tflops_per_s": round(flops / step_s / 1e12, 3),
           "mfu": round(flops / step_s / (peak * 1e12), 4) if peak else None, "loss": losses[-1]}
    if device.type == "cuda":
        out["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
        if args.profile:
            out["kernel_profile"] = profile
    return out


def _one_step(model, optimizer, inputs, labels, variant, args):
    """Forward, backward and optimizer step; returns the (detached) loss."""
    if variant["loss_impl"] == "chunked":
        loss = chunked_loss(model, inputs, labels, args.ce_chunk)
    elif variant["loss_impl"] == "fused":
        loss = fused_loss(model, inputs, labels)
    elif variant["loss_impl"] == "trl":
        loss = trl_head_loss(model, inputs, labels)
    else:
        loss = model(**inputs, labels=labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


def build_model(config, device, dtype, attn: str):
    import copy

    import torch
    from transformers import Qwen3VLForConditionalGeneration

    torch.manual_seed(0)
    with torch.device(device):
        # A copy: the model keeps (and the SFT run edits) its config object.
        return Qwen3VLForConditionalGeneration._from_config(copy.deepcopy(config), dtype=dtype,
                                                            attn_implementation=attn)


def run_sft(args, config, tokenizer, device, dtype, peak, deadline: float) -> dict:
    import torch

    from lookcloser.train.fused_kernels import liger_unavailable
    from lookcloser.trl_surface import apply_liger_kernels

    model = build_model(config, device, dtype, args.attn).train()
    model.config.use_cache = False  # training only (the GRPO checkpoint keeps the cache for generate)
    weights = linear_weights(model)
    n_params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")
    results, liger = [], None
    for spec in filter(None, args.sft_variants.split(",")):
        batch, loss, ckpt, *extra = spec.split(":")
        variant = {"batch": int(batch), "loss_impl": loss, "checkpointing": ckpt == "gc", "compile": "compile" in extra,
                   "attention_mask": "nomask" not in extra, "images": 0 if "noimg" in extra else args.images,
                   "liger": "liger" in extra, "positions": "pos" in extra}
        if time.monotonic() > deadline:
            results.append({**variant, "skipped": "time budget spent"})
            continue
        if liger and not variant["liger"]:
            results.append({**variant, "error": "liger kernels are patched in for good: list liger variants last"})
            continue
        if variant["liger"] and liger is None:
            reason = liger_unavailable() if device.type == "cuda" else "runs on CUDA only (--device cpu)"
            if reason:
                results.append({**variant, "error": f"liger: {reason}"})
                continue
            liger = apply_liger_kernels(model)  # the product's patch: the recipe key fused_kernels: liger
            print(json.dumps({"liger": liger}), file=sys.stderr, flush=True)
        if variant["compile"]:  # regional compilation: each decoder layer and vision block once
            for block in [*model.model.language_model.layers, *model.model.visual.blocks]:
                block.compile()
        try:
            results.append(sft_variant(model, optimizer, config, tokenizer, weights, variant, args, device, dtype, peak))
        except torch.cuda.OutOfMemoryError as err:
            optimizer.zero_grad(set_to_none=True)
            results.append({**variant, "error": f"out of memory: {str(err).splitlines()[0][:160]}"})
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    del model, optimizer
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return {"parameters": n_params, "linear_weights": weights, "liger": liger, "seq_len": args.seq_len,
            "images_per_row": args.images, "image_px": args.image_px, "variants": results}


def run_grpo(args, config, tokenizer, processor, device, dtype, workdir: Path) -> dict:
    import torch
    from transformers import LogitsProcessorList

    from lookcloser.train import grpo
    from testing.scripted import ScriptedLogitsProcessor

    folder = workdir / "qwen3-vl-2b-random"
    model = build_model(config, device, dtype, args.attn)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    del model
    think = THINK.format(FILLER * args.think_repeats)
    crop = think + ('<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0.25, 0.25, 0.75, '
                    '0.75]}}\n</tool_call>')
    answer = think + "<answer>A</answer>"
    cpu = device.type == "cpu"
    argv = [str(REPO / "recipes/grpo_synthetic.yaml"), "--model_name_or_path", str(folder),
            "--output_dir", str(workdir / "grpo"), "--synthetic_dir", str(workdir / "data"),
            "--synthetic_tasks", "visual_search", "--synthetic_count", str(args.grpo_tasks),
            "--environment", "tir_bench",
            "--synthetic_canvas_size", str(args.canvas), "--environment_kwargs", json.dumps({"max_pixels": args.tool_px}),
            "--max_steps", str(args.grpo_steps + 1), "--per_device_train_batch_size", str(args.grpo_rows),
            "--num_generations", str(args.generations), "--max_turn_tokens", str(args.turn_tokens),
            "--max_completion_length", str(args.completion_tokens), "--max_prompt_length", str(args.prompt_tokens),
            "--filter_groups", "false", "--use_cpu", str(cpu).lower(), "--report_to", "none",
            "--log_completions", "false", "--logging_steps", "1", "--disable_tqdm", "true", "--save_strategy", "no",
            "--dtype", "float32" if cpu else "bfloat16", "--bf16", str(not cpu).lower(),
            "--attn_implementation", args.attn, "--activation_checkpointing", str(args.grpo_gc).lower(),
            *shlex.split(args.grpo_flags)]
    trainer = grpo.build_trainer(*grpo.parse_args(argv))
    forcing = ScriptedLogitsProcessor(trainer.processing_class.tokenizer, lambda turn, _: crop if turn == 0 else answer)
    trainer.model.generate = functools.partial(trainer.model.generate, logits_processor=LogitsProcessorList([forcing]))
    shapes = []
    compute_loss = trainer.compute_loss

    def noting_shapes(model, inputs, *rest, **kw):  # the loss batch's size, for the report
        shapes.append({"prompt": list(inputs["prompt_ids"].shape), "completion": list(inputs["completion_ids"].shape),
                       "pixel_rows": int(inputs["pixel_values"].shape[0]) if "pixel_values" in inputs else 0,
                       "allocated_gib_before_loss": _allocated_gib(device)})
        return compute_loss(model, inputs, *rest, **kw)

    trainer.compute_loss = noting_shapes
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    error = None
    try:
        trainer.train()
    except torch.cuda.OutOfMemoryError as err:  # keep what was measured before it
        import traceback

        error = f"out of memory: {str(err).splitlines()[0][:200]}"
        where = [f"{f.filename.split('/')[-1]}:{f.lineno} {f.name}" for f in traceback.extract_tb(err.__traceback__)]
        error += " | at " + " < ".join(reversed(where[-12:]))
    if error or not trainer.timings["step"]:
        return {"error": error or "no step ran", "rollout_s_all": [round(s, 3) for s in trainer.timings["rollout"]],
                "loss_batches": shapes, "peak_memory_gib": _peak_gib(device)}
    skip = 1 if len(trainer.timings["step"]) > 1 else 0  # the first step is a warm-up when there are more
    steps, rollouts = trainer.timings["step"][skip:], trainer.timings["rollout"][skip:]
    logs = [e for e in trainer.state.log_history if "loss" in e][skip:]
    med = lambda key: round(statistics.median(e[key] for e in logs), 3) if logs and key in logs[0] else None
    step, rollout = statistics.median(steps), statistics.median(rollouts)
    out = {"completions_per_step": args.grpo_rows, "num_generations": args.generations,
           "measured_steps": len(steps), "step_s": round(step, 3), "rollout_s": round(rollout, 3),
           "rollout_share": round(rollout / step, 3), "step_s_all": [round(s, 3) for s in steps],
           "rollout_s_all": [round(s, 3) for s in rollouts], "completion_mean_tokens": med("completions/mean_length"),
           "turns_mean": med("trajectory/turns"), "images_mean": med("trajectory/images"),
           "tool_failure_frequency": med("tools/failure_frequency"), "gradient_checkpointing": args.grpo_gc,
           "loss_batches": shapes[-1:]}
    if logs and "num_tokens" in logs[-1] and len(logs) > 1:  # TRL's cumulative prompt+completion token count
        per_step = (logs[-1]["num_tokens"] - logs[0]["num_tokens"]) / (len(logs) - 1)
        out.update(tokens_per_step=round(per_step), tokens_per_s=round(per_step / step, 1))
    out["peak_memory_gib"] = _peak_gib(device)
    return out


def _allocated_gib(device) -> float | None:
    import torch

    return round(torch.cuda.memory_allocated() / 2 ** 30, 2) if device.type == "cuda" else None


def _peak_gib(device) -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2 ** 30, 2) if device.type == "cuda" else None


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"),
                   help="auto: CUDA if present, else print a skip record")
    p.add_argument("--tiny", action="store_true", help="the tiny test config and sizes (a smoke run, not a figure)")
    p.add_argument("--peak_tflops", type=float, default=None,
                   help="dense bf16 peak for MFU when the device name is not in the table (or on CPU)")
    p.add_argument("--attn", default="sdpa", help="attn_implementation (sdpa, eager, flash_attention_2)")
    p.add_argument("--seq_len", type=int, default=4096, help="SFT sequence length (tokens per row)")
    p.add_argument("--images", type=int, default=4, help="images per SFT row")
    p.add_argument("--image_px", type=int, default=512, help="SFT image side in pixels (512: 256 tokens)")
    p.add_argument("--sft_variants", default="2:hf:nogc:nomask,2:hf:nogc,3:chunked:nogc:nomask,8:chunked:gc:nomask",
                   help="comma-separated batch:loss(hf|chunked|fused|trl):nogc|gc[:compile][:nomask][:noimg][:liger][:pos]; compile "
                        "stays on for later variants; nomask: no attention_mask; noimg: text only; liger: Liger's "
                        "kernels (CUDA, liger-kernel installed; stays on, so list them last); fused: Liger's fused "
                        "linear cross-entropy; trl: TRL's fused LM head, as train/sft.py scores; pos: M-RoPE position_ids precomputed, as our SFT batches carry")
    p.add_argument("--ce_chunk", type=int, default=4096, help="tokens per lm_head/CE chunk of the chunked loss")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=5, help="measured SFT steps per variant")
    p.add_argument("--grpo_steps", type=int, default=2, help="measured GRPO steps (after one warm-up step)")
    p.add_argument("--grpo_rows", type=int, default=8, help="completions per GRPO step")
    p.add_argument("--generations", type=int, default=4)
    p.add_argument("--grpo_tasks", type=int, default=32, help="synthetic visual_search tasks")
    p.add_argument("--canvas", type=int, default=1600, help="visual_search canvas long side (px)")
    p.add_argument("--image_max_px", type=int, default=1024 * 1024, help="processor's max pixels per input image")
    p.add_argument("--tool_px", type=int, default=512 * 512, help="max pixels of a tool's result image")
    p.add_argument("--think_repeats", type=int, default=8, help="filler sentences in each scripted <think>")
    p.add_argument("--turn_tokens", type=int, default=1024)
    p.add_argument("--prompt_tokens", type=int, default=8192, help="GRPO max_prompt_length")
    p.add_argument("--completion_tokens", type=int, default=4096)
    p.add_argument("--grpo_gc", action=argparse.BooleanOptionalAction, default=True,
                   help="gradient checkpointing in the GRPO loss step")
    p.add_argument("--skip_grpo", action="store_true")
    p.add_argument("--grpo_flags", default="", help="more train/grpo.py flags for the GRPO step, appended last, "
                                                     "e.g. '--fused_kernels liger --cache_implementation static'")
    p.add_argument("--profile", action="store_true", help="CUDA: one more step per SFT variant under torch.profiler")
    p.add_argument("--budget_s", type=float, default=420, help="stop starting new SFT variants after this")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            p.error("--device cuda but torch sees no CUDA GPU")
    if args.tiny:  # everything small enough for a CPU smoke test in seconds
        if args.sft_variants == p.get_default("sft_variants"):
            args.sft_variants = "1:hf:nogc,2:chunked:gc"
        args.seq_len, args.images, args.image_px = 192, 1, 64
        args.ce_chunk, args.warmup, args.steps, args.grpo_steps = 64, 0, 1, 1
        args.grpo_rows, args.generations, args.grpo_tasks, args.canvas = 2, 2, 2, 256
        args.image_max_px, args.tool_px, args.think_repeats = 64 * 64, 64 * 64, 0
        args.turn_tokens, args.completion_tokens = 192, 512
    return args


def main() -> None:
    args = parse()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    if args.device == "auto":
        if not torch.cuda.is_available():
            print(json.dumps({"bench": "gpu_steps", "skipped": True,
                              "reason": "no CUDA GPU (torch.cuda.is_available() is False); "
                                        "--device cpu --tiny runs the smoke path"}))
            return
        args.device = "cuda"
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    from transformers import Qwen2VLImageProcessorPil

    from lookcloser.agent.processor import LookcloserQwen3VLProcessor
    from lookcloser.agent.tiny_qwen3_vl import build_config, build_tokenizer

    tokenizer = build_tokenizer()
    config = build_config(tokenizer) if args.tiny else qwen3_vl_2b_config(tokenizer)
    vision = config.vision_config
    unit = (vision.patch_size * vision.spatial_merge_size) ** 2
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=vision.patch_size, merge_size=vision.spatial_merge_size, temporal_patch_size=2,
        size={"shortest_edge": 4 * unit, "longest_edge": args.image_max_px}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    processor = LookcloserQwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                           chat_template=tokenizer.chat_template)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    peak = args.peak_tflops or (peak_tflops(name) if device.type == "cuda" else None)
    header = {"bench": "gpu_steps", "device": name, "dense_bf16_peak_tflops": peak,
              "torch": torch.__version__, "cuda": torch.version.cuda, "python": platform.python_version(),
              "attn_implementation": args.attn, "dtype": str(dtype).replace("torch.", ""),
              "model": "Qwen3-VL-2B architecture, random weights" if not args.tiny else "tiny Qwen3-VL config"}
    try:
        import transformers
        import trl

        header.update(transformers=transformers.__version__, trl=trl.__version__)
    except ImportError:
        pass
    if device.type == "cuda":
        header["driver"] = nvidia_driver()
        header["measured_matmul_tflops"] = matmul_tflops(device, dtype)
        try:
            import flash_attn

            header["flash_attn"] = flash_attn.__version__
        except ImportError:
            header["flash_attn"] = "not installed"
    deadline = time.monotonic() + args.budget_s
    with contextlib.redirect_stdout(sys.stderr):  # stdout is the JSON record alone (importing TRL may print)
        sft = run_sft(args, config, tokenizer, device, dtype, peak, deadline)
    result = {**header, "sft": sft}
    if not args.skip_grpo:
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(sys.stderr):
            result["grpo"] = run_grpo(args, config, tokenizer, processor, device, dtype, Path(tmp))
    result["flops_formula"] = ("3 x forward; forward = 2 x (text weights x tokens + vision weights x patches + "
                               "merger weights x merged tokens) + causal attention 4*H*d*S(S+1)/2 per layer + vision "
                               "attention 4*hidden*P^2 per block and image")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
