"""looktools.best_order's speed, printed as JSON: a 3 x 3 jigsaw cut from a sinusoid texture (9! = 362,880
arrangements), the vectorised search against the same search as a plain Python loop over
``itertools.permutations`` (the baseline, measured in the same run); medians of ``--rounds``. Target: <= 0.5 s
for 3 x 3. Also the answer of each, which must agree.

    python bench/bench_looktools.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import statistics
import time

import numpy as np

from lookcloser.looktools import best_order, edge_cost, pieces


def texture(seed: int, size: int = 360) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    channels = []
    for _ in range(3):
        wave = sum(np.sin(2 * np.pi * (rng.uniform(0.5, 5) * x + rng.uniform(0.5, 5) * y) + rng.uniform(0, 6))
                   for _ in range(4))
        channels.append((wave - wave.min()) / (wave.max() - wave.min()) * 255)
    return np.stack(channels, axis=2).astype(np.uint8)


def looped_order(tiles: list, n: int) -> list[int]:
    """The baseline: the same costs, every arrangement scored one by one in Python."""
    right = [[edge_cost(a, b, "right") for b in tiles] for a in tiles]
    below = [[edge_cost(a, b, "below") for b in tiles] for a in tiles]
    best, best_cost = None, float("inf")
    for order in itertools.permutations(range(len(tiles))):
        cost = sum(right[order[p]][order[p + 1]] for p in range(len(tiles)) if p % n < n - 1)
        cost += sum(below[order[p]][order[p + n]] for p in range(len(tiles) - n))
        if cost < best_cost:
            best, best_cost = order, cost
    return [k + 1 for k in best]


def timed(fn, *args) -> tuple[float, list[int]]:
    started = time.perf_counter()
    answer = fn(*args)
    return time.perf_counter() - started, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    cut = pieces(texture(1), 3)
    scrambled = [cut[k] for k in np.random.default_rng(2).permutation(9)]
    vectorised, looped = [], []
    for _ in range(args.rounds):
        seconds, answer = timed(best_order, scrambled, 3)
        vectorised.append(seconds)
        seconds, baseline_answer = timed(looped_order, scrambled, 3)
        looped.append(seconds)
    print(json.dumps({
        "best_order_3x3_s": round(statistics.median(vectorised), 3),
        "python_loop_3x3_s": round(statistics.median(looped), 3),
        "speedup": round(statistics.median(looped) / statistics.median(vectorised), 1),
        "target_s": 0.5, "answers_agree": answer == baseline_answer, "rounds": args.rounds,
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
    }, indent=1))


if __name__ == "__main__":
    main()
