"""SFT tokens/s and loss: ours (train/sft.py) versus plain TRL ``SFTTrainer``, side by side (JSON).

    OMP_NUM_THREADS=1 python bench/bench_sft.py [--epochs 10] [--pairs 3] [--recipe recipes/mir_stage1.yaml]

Both sides train the recipe's model on the recipe's data with the recipe's settings (the main job:
the tiny offline Qwen3-VL on the bundled MIR stage-1 sample), each run in a fresh process with one
torch thread, runs interleaved in pairs (alternating which side goes first). "plain" is TRL's
``SFTTrainer`` with its own vision collator, records re-processed every step, random batches.
"ours" is ``train/sft.py``'s ``build_trainer``: records featurized once (``preprocess_once``),
the recipe's sampler (``group_by_length``) and batching (padded on CPU, packed with flash attention).
tokens/s counts real (non-padding) tokens over the ``trainer.train()`` wall time (and, steadier on a
shared machine, over its CPU time: one thread, so CPU seconds are the work done); ours' one-off
featurizing is reported and also charged in ``end_to_end_ratio``. Loss: the mean logged loss over
the last 10% of steps, and TRL's ``train_loss`` (mean over the run).
"""

from __future__ import annotations

import argparse
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


def _build_plain(script_args, training_args, model_args):
    """TRL as it comes: SFTTrainer with its own collator (what train/sft.py replaces)."""
    from trl import SFTTrainer

    from lookcloser.agent.models import load_processor, resolve_model_path
    from lookcloser.train.sft import load_sft_dataset

    model_path = resolve_model_path(model_args.model_name_or_path)
    training_args.model_init_kwargs = {"dtype": model_args.dtype or "float32",
                                       "attn_implementation": model_args.attn_implementation}
    training_args.remove_unused_columns = False
    training_args.train_sampling_strategy = "random"
    return SFTTrainer(model=model_path, args=training_args, train_dataset=load_sft_dataset(script_args),
                      processing_class=load_processor(model_path))


def one_run(side: str, args) -> dict:
    """One side, in this (fresh) process."""
    import torch

    torch.set_num_threads(1)
    from lookcloser.train.sft import build_trainer, parse_args

    out = Path(args.workdir) / side
    argv = [args.recipe, "--output_dir", str(out), "--num_train_epochs", str(args.epochs), "--logging_steps", "1",
            "--report_to", "none", "--disable_tqdm", "true", "--save_strategy", "no", *args.extra]
    script_args, training_args, model_args = parse_args(argv)
    start = time.perf_counter()
    trainer = (_build_plain if side == "plain" else build_trainer)(script_args, training_args, model_args)
    build_s = time.perf_counter() - start
    lengths = getattr(trainer.train_dataset, "lengths", None)
    featurize_s = getattr(trainer.train_dataset, "seconds", 0.0)  # ours: part of build_s, charged below
    start, cpu = time.perf_counter(), time.process_time()
    result = trainer.train()
    train_s, train_cpu_s = time.perf_counter() - start, time.process_time() - cpu
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    tail = losses[-max(1, len(losses) // 10):]
    collator = trainer.data_collator
    packed = bool(getattr(collator, "pack", False))
    tokens = sum(lengths) * args.epochs if packed else trainer._total_train_tokens
    return {"side": side, "train_s": train_s, "train_cpu_s": train_cpu_s, "build_s": build_s, "featurize_s": featurize_s, "tokens": int(tokens),
            "steps": trainer.state.global_step, "final_loss": statistics.fmean(tail),
            "train_loss": result.metrics["train_loss"], "collator": type(collator).__name__, "packed": packed,
            "sampler": trainer.args.train_sampling_strategy}


def _spawn(side: str, args) -> dict:
    cmd = [sys.executable, __file__, "--one", side, "--epochs", str(args.epochs), "--recipe", args.recipe,
           "--workdir", args.workdir, "--", *args.extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "WANDB_MODE": "offline",
           "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, check=False)
    if proc.returncode:
        sys.exit(f"error: the {side} run failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _spread(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=float, default=10, help="epochs per run (the main job runs 60)")
    parser.add_argument("--pairs", type=int, default=3, help="interleaved ours/plain pairs")
    parser.add_argument("--recipe", default="recipes/mir_stage1.yaml")
    parser.add_argument("--one", choices=["ours", "plain"], help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("extra", nargs="*", help="more recipe flags for both sides, after --")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.one, args)))
        return

    load_before = os.getloadavg()
    runs = {"ours": [], "plain": []}
    with tempfile.TemporaryDirectory(prefix="bench_sft_") as workdir:
        args.workdir = workdir
        for pair in range(args.pairs):
            for side in (("ours", "plain") if pair % 2 == 0 else ("plain", "ours")):
                runs[side].append(_spawn(side, args))
    ours, plain = runs["ours"], runs["plain"]
    rate = {side: [r["tokens"] / r["train_s"] for r in runs[side]] for side in runs}
    ratio = [o / p for o, p in zip(rate["ours"], rate["plain"])]
    # Per CPU second too: on a shared machine the wall time swings with the other jobs, the CPU time much less.
    cpu_rate = {side: [r["tokens"] / r["train_cpu_s"] for r in runs[side]] for side in runs}
    cpu_ratio = [o / p for o, p in zip(cpu_rate["ours"], cpu_rate["plain"])]
    end_to_end = [p["train_s"] / (o["train_s"] + o["featurize_s"]) for o, p in zip(ours, plain)]
    print(json.dumps({
        "benchmark": "SFT tokens/s, ours vs plain TRL SFTTrainer (interleaved pairs, 1 torch thread each)",
        "recipe": args.recipe, "epochs": args.epochs, "pairs": args.pairs, "extra_flags": args.extra,
        "ours": {"tokens_per_s": _spread(rate["ours"]), "tokens_per_cpu_s": _spread(cpu_rate["ours"]), "final_loss": _spread([r["final_loss"] for r in ours]),
                 "train_loss": _spread([r["train_loss"] for r in ours]),
                 "featurize_s": _spread([r["featurize_s"] for r in ours]), "tokens": ours[0]["tokens"],
                 "steps": ours[0]["steps"], "collator": ours[0]["collator"], "packed": ours[0]["packed"],
                 "sampler": ours[0]["sampler"]},
        "plain": {"tokens_per_s": _spread(rate["plain"]), "tokens_per_cpu_s": _spread(cpu_rate["plain"]), "final_loss": _spread([r["final_loss"] for r in plain]),
                  "train_loss": _spread([r["train_loss"] for r in plain]), "tokens": plain[0]["tokens"],
                  "steps": plain[0]["steps"], "collator": plain[0]["collator"], "sampler": plain[0]["sampler"]},
        "tokens_per_s_ratio": _spread(ratio),
        "tokens_per_cpu_s_ratio": _spread(cpu_ratio),
        "end_to_end_ratio": _spread(end_to_end),
        "goal_ratio": 1.3,
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "cpu_count": os.cpu_count(), "python": platform.python_version(),
    }, indent=1))


if __name__ == "__main__":
    main()
