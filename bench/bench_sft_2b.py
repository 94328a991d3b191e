"""train/sft.py itself on the Qwen3-VL-2B architecture: the trainer's step time and MFU, plain and with
``fused_kernels: liger``, each run in its own process, the variants interleaved (JSON).

    python bench/bench_sft_2b.py                                # a CUDA GPU: rows of 4096 tokens + 4 images of 512²
    python bench/bench_sft_2b.py --tiny --device cpu --variants none   # smoke run: the tiny config on CPU

Without a CUDA GPU (and without ``--device cpu``) it prints a JSON skip record and exits 0.

It writes a random-weight checkpoint folder of the 2B architecture (bench/gpu_model.py's config, the tiny
offline tokenizer, an image processor that keeps 512² images whole) and MIR-format records (bundled-sample
layout: question with one ``<image>`` per image, options, summary, captions, conclusion) padded with caption
text to about ``--seq_len`` tokens with ``--images`` random images each. Then it runs the real
``train/sft.py`` trainer (``build_trainer`` as the script builds it, recipes/mir_stage1.yaml plus flags) and
times each optimizer step (synchronised). MFU = bench/gpu_model.py's FLOP count of the rows the trainer
featurized / the median step time / the device's dense bf16 peak. Figures: docs/benchmarks.md, "GPU".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))  # gpu_model sits beside this script (bench/ is no package)

from gpu_model import linear_weights, peak_tflops, qwen3_vl_2b_config, train_flops

FILLER = "The left image shows a red square above a small blue circle near the edge of the frame. "


def processor_for(config, tokenizer, image_px: int):
    """The tiny tokenizer with an image processor that keeps ``image_px``² images at full size."""
    from transformers import Qwen2VLImageProcessorPil

    from lookcloser.agent.processor import LookcloserQwen3VLProcessor

    vision = config.vision_config
    unit = (vision.patch_size * vision.spatial_merge_size) ** 2
    image_processor = Qwen2VLImageProcessorPil(
        patch_size=vision.patch_size, merge_size=vision.spatial_merge_size, temporal_patch_size=2,
        size={"shortest_edge": 4 * unit, "longest_edge": image_px * image_px}, image_mean=[0.5] * 3, image_std=[0.5] * 3)
    return LookcloserQwen3VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                      chat_template=tokenizer.chat_template)


def write_inputs(args, workdir: Path) -> tuple[Path, Path]:
    """The random-weight checkpoint folder and the MIR JSON (with its images) the runs train on."""
    import numpy as np
    import torch
    from PIL import Image
    from transformers import Qwen3VLForConditionalGeneration

    from lookcloser.agent.tiny_qwen3_vl import build_config, build_tokenizer

    tokenizer = build_tokenizer()
    config = build_config(tokenizer) if args.tiny else qwen3_vl_2b_config(tokenizer)
    processor = processor_for(config, tokenizer, args.image_px)
    folder = workdir / "model"
    torch.manual_seed(args.seed)
    model = Qwen3VLForConditionalGeneration._from_config(config, dtype=torch.bfloat16 if args.bf16 else torch.float32)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    del model
    rng = np.random.default_rng(args.seed)
    (workdir / "images").mkdir()
    image_tokens = args.images * (args.image_px // (config.vision_config.patch_size * 2)) ** 2
    per_filler = len(tokenizer(FILLER)["input_ids"])
    fillers = max(0, (args.seq_len - image_tokens - 160) // per_filler)  # ~160: template, question, options
    records = []
    for i in range(args.records):
        names = []
        for j in range(args.images):
            name = f"images/{i}_{j}.png"
            pixels = rng.integers(0, 256, (args.image_px, args.image_px, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(workdir / name)
            names.append(name)
        records.append({
            "id": f"bench_{i:03d}", "subtask": "bench", "images": names,
            "question": "Which image shows the red square? " + " ".join(["<image>"] * args.images),
            "options": ["A. image 1", "B. image 2", "C. image 3", "D. image 4"],
            "summary": "I compare the images one by one.",
            "caption": [FILLER * (fillers // args.images) for _ in range(args.images)],
            "text2img": "The square is in the first image.", "img2img": "The images differ in colour.",
            "conclusion": "A"})
    data = workdir / "mir.json"
    data.write_text(json.dumps(records), encoding="utf-8")
    return folder, data


def one_run(args) -> dict:
    """One variant in this process: train/sft.py's trainer, each step timed."""
    import torch
    from transformers import TrainerCallback

    from lookcloser.train import sft

    workdir = Path(args.workdir)
    cuda = args.device == "cuda"

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], 0.0

        def on_step_begin(self, *_, **__):
            if cuda:
                torch.cuda.synchronize()
            self.start = time.perf_counter()

        def on_step_end(self, *_, **__):
            if cuda:
                torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self.start)

    argv = [str(REPO / "recipes/mir_stage1.yaml"), "--model_name_or_path", str(workdir / "model"),
            "--dataset_path", str(workdir / "mir.json"), "--output_dir", str(workdir / f"out_{args.one}"),
            "--max_steps", str(args.warmup + args.steps), "--per_device_train_batch_size", str(args.rows),
            "--max_length", str(2 * args.seq_len), "--num_train_epochs", "1000", "--learning_rate", "1e-5",
            "--fused_kernels", args.one, "--use_cpu", str(not cuda).lower(), "--bf16", str(args.bf16).lower(),
            "--dtype", "bfloat16" if args.bf16 else "float32", "--attn_implementation", args.attn,
            "--activation_checkpointing", str(args.checkpointing).lower(), "--logging_steps", "1000",
            "--report_to", "none", "--disable_tqdm", "true", "--save_strategy", "no"]
    trainer = sft.build_trainer(*sft.parse_args(argv))
    timer = StepTimer()
    trainer.add_callback(timer)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    featurized = trainer.train_dataset
    rows = [featurized[i] for i in range(min(len(featurized), args.rows))]
    seq_lens = [int(row["input_ids"].shape[0]) for row in rows]
    grids = [tuple(int(v) for v in g) for row in rows for g in row["image_grid_thw"]]
    model = trainer.model
    flops = train_flops(linear_weights(model), model.config, seq_lens, grids)
    times = timer.times[args.warmup:]
    step_s = statistics.median(times)
    out = {"fused_kernels": args.one, "rows": args.rows, "tokens_per_row": seq_lens, "images_per_row": args.images,
           "step_s": round(step_s, 4), "step_s_all": [round(t, 4) for t in times],
           "tokens_per_s": round(sum(seq_lens) / step_s, 1), "model_flops_per_step": flops,
           "model_tflops_per_s": round(flops / step_s / 1e12, 4),
           "mfu": round(flops / step_s / (args.peak * 1e12), 4) if args.peak else None,
           "loss": round(trainer.state.log_history[-1].get("train_loss", float("nan")), 4)}
    if cuda:
        out["peak_memory_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
    return out


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--tiny", action="store_true", help="the tiny config, rows of 256 tokens + 2 images of 64² (CPU)")
    p.add_argument("--variants", default="none,liger", help="fused_kernels values, comma-separated, run in turn")
    p.add_argument("--rounds", type=int, default=2, help="each variant this many times, interleaved")
    p.add_argument("--seq_len", type=int, default=4096, help="about this many tokens per record")
    p.add_argument("--images", type=int, default=4)
    p.add_argument("--image_px", type=int, default=512)
    p.add_argument("--rows", type=int, default=4, help="per_device_train_batch_size")
    p.add_argument("--records", type=int, default=16)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3, help="measured steps per run")
    p.add_argument("--attn", default="sdpa")
    p.add_argument("--checkpointing", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--peak_tflops", type=float, help="override the device's dense bf16 peak (TFLOP/s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--one", help=argparse.SUPPRESS)  # internal: run this variant in this process
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    p.add_argument("--peak", type=float, help=argparse.SUPPRESS)
    p.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.tiny:
        args.seq_len, args.images, args.image_px, args.rows, args.records = 256, 2, 64, 2, 4
        args.warmup, args.steps, args.rounds = 1, 1, 1
    return args


def main() -> None:
    args = parse()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    if args.one:
        with contextlib.redirect_stdout(sys.stderr):  # stdout is the JSON record alone
            result = one_run(args)
        print(json.dumps(result))
        return
    import torch

    if args.device == "auto":
        if not torch.cuda.is_available():
            print(json.dumps({"bench": "sft_2b", "skipped": True,
                              "reason": "no CUDA GPU (torch.cuda.is_available() is False); "
                                        "--tiny --device cpu runs the smoke path"}))
            return
        args.device = "cuda"
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("error: --device cuda but torch sees no CUDA GPU")
    args.bf16 = args.device == "cuda"
    name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu"
    args.peak = args.peak_tflops or (peak_tflops(name) if args.device == "cuda" else None)
    header = {"bench": "sft_2b", "device": name, "dense_bf16_peak_tflops": args.peak, "torch": torch.__version__,
              "model": "tiny Qwen3-VL config" if args.tiny else "Qwen3-VL-2B architecture, random weights",
              "script": "train/sft.py (recipes/mir_stage1.yaml)", "seq_len_target": args.seq_len,
              "images": args.images, "image_px": args.image_px, "rows": args.rows, "attn": args.attn,
              "activation_checkpointing": args.checkpointing}
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        with contextlib.redirect_stdout(sys.stderr):
            write_inputs(args, Path(tmp))
        variants = [v for v in args.variants.split(",") if v]
        for _ in range(args.rounds):
            for variant in variants:  # interleaved: drift (clocks, other load) hits each variant alike
                cmd = [sys.executable, __file__, "--one", variant, "--workdir", tmp, "--device", args.device,
                       "--seq_len", str(args.seq_len), "--images", str(args.images), "--rows", str(args.rows),
                       "--warmup", str(args.warmup), "--steps", str(args.steps), "--attn", args.attn,
                       "--image_px", str(args.image_px), "--peak", str(args.peak or 0),
                       "--bf16" if args.bf16 else "--no-bf16",
                       "--checkpointing" if args.checkpointing else "--no-checkpointing"]
                proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if proc.returncode == 0:
                    runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
                else:
                    runs.append({"fused_kernels": variant, "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:300]})
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    print(json.dumps({**header, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
