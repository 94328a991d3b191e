"""Agent benchmarks, printed as JSON.

1. Crop and zoom latency on a 4000x3000 image (through ``ImageToolEnv``, as a rollout calls them).
2. Trajectories per second of ``agent.loop.run_episodes`` with the tiny Qwen3-VL: all episodes
   batched per turn versus one episode at a time, measured side by side (interleaved rounds,
   median; the machine may be shared, so each round's ratio is reported too). The model runs real
   forward passes; its replies are scripted (reasoning + a crop call, then reasoning + an answer) with ``testing.scripted.ScriptedLogitsProcessor`` so every trajectory has the same work.

    python bench/bench_agent.py [--episodes 16] [--rounds 5] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from transformers import LogitsProcessorList

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # testing/ (not installed) from the checkout

from lookcloser.agent.environments import ImageToolEnv
from lookcloser.agent.hf_policy import HFPolicy
from lookcloser.agent.loop import run_episodes
from lookcloser.agent.models import TINY_MODEL_NAME, load_model, load_processor
from testing.scripted import ScriptedLogitsProcessor

# Replies with a short reasoning part, as tool-using models write (a rollout turn is rarely a bare call).
TURN_0 = ("<think>The square is small and the question is about its colour; crop the centre of image 0 to "
          "look closer before answering.</think>\n"
          '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0.25, 0.25, 0.75, 0.75]}}\n</tool_call>')
TURN_1 = ("<think>The crop shows the square clearly: one uniform colour, red, with no other shape near it, "
          "so the answer is A.</think>\nThe square is red. <answer>A</answer>")


def bench_tools(repeats: int) -> dict:
    rng = np.random.default_rng(0)
    big = Image.fromarray(rng.integers(0, 255, (3000, 4000, 3), dtype=np.uint8))
    env = ImageToolEnv()
    timings: dict[str, list[float]] = {"crop": [], "crop_small_box": [], "zoom": [], "crop_then_zoom": []}
    for _ in range(repeats):
        env.reset(images=[big])
        for name, call in (
            ("crop", lambda: env.crop(image_index=0, box=[500, 400, 3500, 2600])),
            ("crop_small_box", lambda: env.crop(image_index=0, box=[1000, 1000, 1300, 1200])),
            ("zoom", lambda: env.zoom(image_index=0, box=[1000, 1000, 1400, 1300], factor=2.0)),
            ("crop_then_zoom", lambda: (env.crop(image_index=0, box=[0.1, 0.1, 0.6, 0.6]),
                                        env.zoom(image_index=len(env._images) - 1, box=[0, 0, 200, 150], factor=3))),
        ):
            start = time.perf_counter()
            call()
            timings[name].append(time.perf_counter() - start)
    assert env.tool_errors == 0, "a benchmark call failed"
    return {f"{k}_ms_median": round(1000 * statistics.median(v), 2) for k, v in timings.items()}


def bench_loop(episodes: int, rounds: int, max_new_tokens: int) -> dict:
    processor = load_processor(TINY_MODEL_NAME)
    model = load_model(TINY_MODEL_NAME).eval()

    def script(turn: int, prompt: str) -> str:
        return TURN_0 if turn == 0 else TURN_1

    forcing = LogitsProcessorList([ScriptedLogitsProcessor(processor.tokenizer, script)])
    policy = HFPolicy(model, processor, generation_kwargs={"logits_processor": forcing})
    image = Image.new("RGB", (256, 192), (200, 30, 30))
    examples = [{"question": f"What colour is the square? ({i})", "images": [image]} for i in range(episodes)]
    kwargs = {"max_turns": 4, "max_new_tokens_per_turn": max_new_tokens, "system_prompt": ""}
    run_episodes(policy, ImageToolEnv, examples[:2], **kwargs)  # warm-up

    batched, sequential, ratios, turns = [], [], [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        trajectories = run_episodes(policy, ImageToolEnv, examples, **kwargs)
        batched.append(time.perf_counter() - start)
        assert all(t.stop_reason == "answer" and t.tool_calls == 1 for t in trajectories), "scripted run went wrong"
        turns = sum(t.num_turns for t in trajectories)
        start = time.perf_counter()
        for example in examples:
            run_episodes(policy, ImageToolEnv, [example], **kwargs)
        sequential.append(time.perf_counter() - start)
        ratios.append(sequential[-1] / batched[-1])
    tps_batched = episodes / statistics.median(batched)
    tps_sequential = episodes / statistics.median(sequential)
    return {
        "episodes": episodes, "rounds": rounds, "turns_per_trajectory": turns / episodes,
        "trajectories_per_s_batched": round(tps_batched, 2),
        "trajectories_per_s_sequential": round(tps_sequential, 2),
        "speedup_batched_vs_sequential": round(tps_batched / tps_sequential, 2),
        "speedup_per_round": [round(r, 2) for r in ratios],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--tool-repeats", type=int, default=10)
    # One intra-op thread by default: on the shared 2-core CPU machines, two threads contend with other
    # jobs and make single runs swing several-fold. Both modes run with the same setting.
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    result = {
        "device": "cpu", "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
        "tools_4000x3000": bench_tools(args.tool_repeats),
        "loop_tiny_qwen3_vl": bench_loop(args.episodes, args.rounds, args.max_new_tokens),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
