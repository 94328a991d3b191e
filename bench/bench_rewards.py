"""Reward scorer throughput and TIR-Bench extraction agreement; prints one JSON object.

    python bench/bench_rewards.py [--n 100000] [--agreement-n 5000] [--seed 0] [--strict-only]
                                  [--baseline DIR] [--passes 5]

- ``rule_scorings_per_s_per_core``: one process, CPU time (``time.process_time``, so other load on
  the machine does not count), over N mixed completions: TIR-Bench (every answer kind, strict
  reward mode) 70%, MIR, DISBench and ImageMining 10% each, realistic responses from
  ``testing/synthetic_responses.py``; best of 3 passes. ``cpu_share_of_wall`` < 1 means the machine was busy.
- ``tir_strict``: the strict TIR-Bench scorer alone (the GRPO reward) on the TIR-Bench part of the
  workload, and a fixed pure-Python calibration loop timed in the same run, interleaved pass by
  pass: ``ratio`` = scorings per calibration loop, which holds when the machine is busy (both slow
  down alike). ``quiet_equivalent_per_s`` = ratio x ``CALIBRATION_QUIET_PER_S`` (the loop's rate on
  this machine when quiet, see the constant); the goal is >= 60,000 (issue 15). ``spread`` is the
  min-max of the per-pass ratios. ``--baseline DIR`` (an older checkout, ``git archive <commit> rewards
  | tar -x -C DIR``) times that checkout's strict scorer on the same chunks, interleaved with ours:
  ``baseline`` holds its figures and ``speedup`` ours / baseline per pass (median, min-max).
- ``math_verify_fallback``: the official int/float judges' math-verify fallback, timed apart
  (extractions the cheap integer/float comparison cannot settle, such as ``\\frac{3}{2}``).
- ``extraction_agreement``: share of responses where ``score(item, r, "official")`` equals
  ``judge(item, stated_answer, r)``, for our extractor and for the evalscope-style baseline.
"""

from __future__ import annotations

import argparse
import importlib
import json
import random
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.evalscope_baseline import evalscope_extract
from lookcloser.rewards import disbench, imagemining, mir, tir_bench
from lookcloser.rewards.tir_judge import judge_float, judge_int
from testing.synthetic_responses import (
    _kind,
    disbench_response,
    imagemining_response,
    make_items,
    mir_response,
    realistic_response,
)

_IMAGEMINING_ANSWERS = [("Red", "红色"), ("(Pale/Light) purple", "（淡/浅）紫色"), ("4700 mAh", "4700毫安时"),
                        ("1944", "1944年"), ("Pure black", "纯黑"), ("30.679 billion yuan", "306.79亿元")]


def build_workload(n: int, rng: random.Random) -> list[tuple[str, tuple]]:
    items = make_items(rng, 400)
    work: list[tuple[str, tuple]] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.7:
            item = rng.choice(items)
            work.append(("tir_bench", (item, realistic_response(item, rng)[0])))
        elif roll < 0.8:
            text, gold = mir_response(rng)
            work.append(("mir", (text, gold)))
        elif roll < 0.9:
            text, gold = disbench_response(rng)
            work.append(("disbench", (text, gold)))
        else:
            answer, answer_zh = rng.choice(_IMAGEMINING_ANSWERS)
            work.append(("imagemining", (imagemining_response(rng, answer), answer, answer_zh)))
    return work


def run_scorer(source: str, args: tuple, tir_mode: str = "strict") -> float:
    if source == "tir_bench":
        return tir_bench.score(args[0], args[1], tir_mode)
    if source == "mir":
        return mir.score(*args)
    if source == "disbench":
        return disbench.score(*args)
    return imagemining.score(*args)


def _rate(work: list[tuple[str, tuple]], tir_mode: str = "strict", repeats: int = 3) -> tuple[float, float]:
    """(scorings per CPU-second, per wall-second), best of ``repeats`` untimed passes: the best
    pass is the one least disturbed by other processes, as ``timeit`` does."""
    best_cpu = best_wall = float("inf")
    for _ in range(repeats):
        cpu, wall = time.process_time(), time.perf_counter()
        for source, args in work:
            run_scorer(source, args, tir_mode)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return len(work) / max(best_cpu, 1e-9), len(work) / max(best_wall, 1e-9)


def throughput(work: list[tuple[str, tuple]]) -> dict:
    _rate(work[:2000], repeats=1)  # warm caches and lazy imports
    per_core, per_wall = _rate(work)
    by_source: dict[str, list] = defaultdict(list)
    for source, args in work:
        by_source[source].append((source, args))
    rates = {source: round(_rate(subset)[0]) for source, subset in by_source.items()}
    rates["tir_bench_official"] = round(_rate(by_source["tir_bench"], "official")[0])
    return {"completions": len(work), "rule_scorings_per_s_per_core": round(per_core),
            "wall_scorings_per_s": round(per_wall), "cpu_share_of_wall": round(per_wall / per_core, 2),
            "per_benchmark_per_s_per_core": rates, "mix": {k: len(v) for k, v in by_source.items()}}


# A fixed amount of the work a scorer does (regex scans, lowering, splitting, slicing, dict
# look-ups) on a fixed text: its rate tracks how fast this core runs Python right now.
_CAL_TEXT = ("Looking at the image, option A seems small; the answer is (C). I count 3, 6 and 12 patches.\n"
             "Row 1: 4 1 8\nRow 2: 9 3 6\n") * 4
_CAL_WORD = re.compile(r"(?<![A-Za-z])([A-J])(?![A-Za-z])|\d+")
# The loop's rate on the 2-core machine when quiet. Derived, since the machine was never quiet on
# 2026-11-23: the strict scorer's documented quiet rate (42,500/s, docs/benchmarks.md) divided by
# its ratio to this loop measured that day (1.81, median of interleaved runs): 23,500 loops/s.
CALIBRATION_QUIET_PER_S = 23_500


def calibration_loop(rounds: int = 2) -> int:
    total = 0
    counts: dict[str, int] = {}
    for i in range(rounds):
        text = _CAL_TEXT[i:]
        lowered = text.lower()
        total += lowered.rfind("answer") + len(_CAL_WORD.findall(text)) + len(text.split("\n"))
        for word in text[:200].split():
            counts[word] = counts.get(word, 0) + 1
    return total + len(counts)


def load_baseline_score(root: Path):
    """``rewards.tir_bench.score`` of an older checkout at ``root`` (``git archive <commit> | tar -x -C
    root``), imported beside ours: its modules are swapped out of ``sys.modules`` once loaded, and
    its functions keep their own globals."""
    ours = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".")[0] == "rewards"}
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("rewards.tir_bench")
        if Path(module.__file__).resolve().parents[1] != root.resolve():
            raise SystemExit(f"error: --baseline {root} has no rewards/tir_bench.py")
        return module.score
    finally:
        sys.path.remove(str(root))
        for name in [name for name in sys.modules if name.split(".")[0] == "rewards"]:
            del sys.modules[name]
        sys.modules.update(ours)


def _summary(scorings: int, rates: list[float], cal_rates: list[float], passes: int) -> dict:
    ratios = [r / c for r, c in zip(rates, cal_rates)]
    ratio = sorted(ratios)[len(ratios) // 2]  # median pass
    return {"scorings": scorings, "passes": passes, "strict_per_s_per_core": round(max(rates)),
            "calibration_per_s_per_core": round(max(cal_rates)), "ratio": round(ratio, 3),
            "spread": [round(min(ratios), 3), round(max(ratios), 3)],
            "quiet_equivalent_per_s": round(ratio * CALIBRATION_QUIET_PER_S), "goal_per_s": 60_000}


def strict_vs_calibration(work: list[tuple[str, tuple]], passes: int = 5, chunk: int = 250,
                          baseline=None) -> dict:
    """Strict TIR-Bench scorings per CPU-second, and per calibration loop: each chunk of scorings is
    followed by a matching amount of calibration work, so both see the same load. With ``baseline``
    (an older ``score``), each chunk is scored by both, in alternating order, each followed by its
    own calibration: ``speedup`` is ours / baseline per pass, both measured under the same load."""
    tir = [args for source, args in work if source == "tir_bench"]
    scorers = {"ours": tir_bench.score}
    if baseline is not None:
        scorers["baseline"] = baseline
    for score in scorers.values():
        for item, response in tir[:2000]:
            score(item, response, "strict")  # warm caches and lazy imports
    loops = max(1, chunk // 10)
    rates: dict[str, list[float]] = {name: [] for name in scorers}
    cal_rates: dict[str, list[float]] = {name: [] for name in scorers}
    for _ in range(passes):
        score_time = dict.fromkeys(scorers, 0.0)
        cal_time = dict.fromkeys(scorers, 0.0)
        for k, at in enumerate(range(0, len(tir), chunk)):
            for name in (list(scorers) if k % 2 == 0 else list(scorers)[::-1]):
                score = scorers[name]
                start = time.process_time()
                for item, response in tir[at:at + chunk]:
                    score(item, response, "strict")
                middle = time.process_time()
                for _ in range(loops):
                    calibration_loop()
                score_time[name] += middle - start
                cal_time[name] += time.process_time() - middle
        n_chunks = -(-len(tir) // chunk)
        for name in scorers:
            rates[name].append(len(tir) / max(score_time[name], 1e-9))
            cal_rates[name].append(n_chunks * loops / max(cal_time[name], 1e-9))
    result = _summary(len(tir), rates["ours"], cal_rates["ours"], passes)
    if baseline is not None:
        result["baseline"] = _summary(len(tir), rates["baseline"], cal_rates["baseline"], passes)
        speedups = sorted(a / b for a, b in zip(rates["ours"], rates["baseline"]))
        result["speedup"] = {"median": round(speedups[len(speedups) // 2], 3),
                             "spread": [round(speedups[0], 3), round(speedups[-1], 3)]}
    return result


def math_verify_fallback(rng: random.Random, n: int = 300) -> dict:
    cases = []
    for _ in range(n):
        a, b = rng.randint(1, 50), rng.randint(2, 9)
        cases.append((f"\\frac{{{a * b}}}{{{b}}}", str(a), judge_int))
        cases.append((f"\\frac{{{a}}}{{{b}}}", str(round(a / b, 6)), judge_float))
    start = time.process_time()
    hits = sum(judge(ext, answer) for ext, answer, judge in cases)
    elapsed = time.process_time() - start
    return {"calls": len(cases), "per_s_per_core": round(len(cases) / elapsed, 1),
            "ms_per_call": round(1000 * elapsed / len(cases), 3), "equivalent_found": int(hits)}


def agreement(rng: random.Random, n: int) -> dict:
    items = make_items(rng, 400)
    ours = base = 0
    per_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for _ in range(n):
        item = rng.choice(items)
        response, stated = realistic_response(item, rng)
        reference = tir_bench.judge(item, stated, response)
        a = tir_bench.score(item, response, "official") == reference
        b = tir_bench.judge(item, evalscope_extract(item, response), response) == reference
        ours += a
        base += b
        row = per_kind[_kind(item)]
        row[0] += 1
        row[1] += a
        row[2] += b
    return {"responses": n, "ours": round(ours / n, 4), "evalscope_baseline": round(base / n, 4),
            "per_kind": {k: {"n": v[0], "ours": round(v[1] / v[0], 4), "baseline": round(v[2] / v[0], 4)}
                         for k, v in sorted(per_kind.items())}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--agreement-n", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strict-only", action="store_true", help="only the strict scorer vs calibration")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="an older checkout (git archive <commit> | tar -x -C DIR): its strict scorer is "
                             "timed interleaved with ours")
    parser.add_argument("--passes", type=int, default=5, help="strict scorer passes over the workload")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "rewards" / "tir_bench.py").is_file():
        parser.error(f"--baseline {args.baseline}: no rewards/tir_bench.py there")
    baseline = None if args.baseline is None else load_baseline_score(args.baseline)
    rng = random.Random(args.seed)
    work = build_workload(args.n, rng)
    strict = strict_vs_calibration(work, passes=args.passes, baseline=baseline)
    if args.strict_only:
        print(json.dumps({"tir_strict": strict}, indent=2))
        return
    mean_chars = sum(len(a[0] if s != "tir_bench" else a[1]) for s, a in work) / max(1, len(work))
    result = {"tir_strict": strict, "throughput": throughput(work),
              "mean_response_chars": round(mean_chars),
              "math_verify_fallback": math_verify_fallback(random.Random(args.seed + 1)),
              "extraction_agreement": agreement(random.Random(args.seed + 2), args.agreement_n)}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
