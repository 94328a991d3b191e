"""Does MIR's staged curriculum beat training on the final stage alone? Printed as JSON.

For each training seed: the curriculum recipe's MIR stages 1 -> 4 (``recipes/mir_curriculum.yaml``,
ImageNet-Think and GRPO left out), and, from the same initial model, stage 4 alone for the same
number of optimizer steps. Both are scored on held-out records (``data_builders.sample_mir`` with
seeds never trained or tuned on) with MIR's benchmark prompt, with the real images and with every
image flat gray. Reports each run, the mean and the spread (min, max, standard deviation).

    python bench/bench_curriculum.py [--seeds 42,43,44] [--held_out_seeds 11,13] [--jobs 2]

Each run is a subprocess with one torch thread; ``--jobs`` runs that many at once (the machine
may be shared: times are wall-clock under whatever load there is).
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "mir_curriculum.yaml"
SKIP = ("imagenet_think", "grpo")


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as fh:
        subprocess.run(cmd, check=True, cwd=REPO, env=_env(), stdout=fh, stderr=subprocess.STDOUT)


def curriculum_recipe(seed: int, out: Path, stage4_only: bool) -> Path:
    """The repo's curriculum with this seed; ``stage4_only``: one stage-4 stage with all the epochs.

    Every MIR stage sees the same records with the same batch size, so equal epochs = equal steps.
    """
    recipe = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    stages = [s for s in recipe["stages"] if s["name"] not in SKIP]
    defaults = {**recipe["defaults"], "seed": seed}
    if stage4_only:
        epochs = sum(s.get("num_train_epochs", defaults["num_train_epochs"]) for s in stages)
        stages = [{**stages[-1], "num_train_epochs": epochs}]
    path = out / "recipe.yaml"
    path.write_text(yaml.safe_dump({"output_dir": str(out / "run"), "launcher": None, "defaults": defaults,
                                    "stages": stages}, sort_keys=False), encoding="utf-8")
    return path


def accuracy(model: Path, data: Path, out: Path, gray: bool, log: Path) -> dict:
    _run([sys.executable, "-m", "eval", "--model", str(model), "--benchmarks", "mir", "--data_root", str(data),
          "--mir_prompt_stage", "0", "--tools", "false", "--system_prompt", "", "--max_turns", "1",
          "--gray_images", str(gray).lower(), "--out", str(out), "--resume", "false", "--batch_size", "32"], log)
    mir = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["benchmarks"]["mir"]
    return {"overall": mir["overall"]["accuracy"],
            "by_family": {k: round(v["accuracy"], 4) for k, v in mir["groups"]["task"].items()}}


def one_run(arm: str, seed: int, held_out: list[Path], work: Path) -> dict:
    out = work / f"{arm}_seed{seed}"
    out.mkdir(parents=True)
    log = out / "log.txt"
    recipe = curriculum_recipe(seed, out, stage4_only=arm == "stage4_only")
    started = time.time()
    _run([sys.executable, "train/curriculum.py", str(recipe)], log)
    seconds = round(time.time() - started, 1)
    final = out / "run" / "mir_stage4"  # both arms end in a stage named mir_stage4
    row = {"arm": arm, "seed": seed, "train_seconds": seconds}
    for gray in (False, True):
        scores = [accuracy(final, data, out / f"eval_{data.name}_{'gray' if gray else 'real'}", gray, log)
                  for data in held_out]
        key = "gray" if gray else "real"
        row[key] = round(statistics.mean(s["overall"] for s in scores), 4)
        row[f"{key}_by_family"] = {fam: round(statistics.mean(s["by_family"][fam] for s in scores), 4)
                                   for fam in scores[0]["by_family"]}
    print(json.dumps(row), file=sys.stderr, flush=True)  # partial results while the others run
    return row


def spread(values: list[float]) -> dict:
    return {"mean": round(statistics.mean(values), 4), "min": min(values), "max": max(values),
            "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="42,43,44", help="training seeds (one run per arm each)")
    parser.add_argument("--held_out_seeds", default="11,13", help="sample_mir seeds of the held-out records")
    parser.add_argument("--per_family", type=int, default=16, help="held-out records per family and seed")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one torch thread each)")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    from lookcloser.data_builders.sample_mir import generate_sample

    work = Path(args.work or tempfile.mkdtemp(prefix="bench_curriculum_"))
    held_out = [generate_sample(work / f"held_out_{s}", args.per_family, s).parent
                for s in (int(x) for x in args.held_out_seeds.split(","))]
    # Interleave the arms so that load changes on a shared machine hit both alike.
    jobs = [(arm, seed) for seed in seeds for arm in ("curriculum", "stage4_only")]
    started = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda job: one_run(*job, held_out, work), jobs))
    summary = {}
    for arm in ("curriculum", "stage4_only"):
        mine = [r for r in rows if r["arm"] == arm]
        summary[arm] = {"real": spread([r["real"] for r in mine]), "gray": spread([r["gray"] for r in mine]),
                        "train_seconds": spread([r["train_seconds"] for r in mine])}
    diff = [a["real"] - b["real"] for a, b in zip(rows[0::2], rows[1::2])]
    print(json.dumps({
        "benchmark": "curriculum (MIR stages 1->4) vs stage 4 only, same steps",
        "recipe": str(RECIPE.relative_to(REPO)), "training_seeds": seeds,
        "held_out": {"seeds": args.held_out_seeds, "records": sum(4 * args.per_family for _ in held_out),
                     "prompt": "MIR benchmark prompt (stage 0), no tools, no system prompt"},
        "chance": 0.375, "summary": summary,
        "curriculum_minus_stage4_only_real": spread(diff), "runs": rows,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "jobs": args.jobs,
                    "note": "shared machine: wall-clock times include other load"},
        "seconds": round(time.time() - started, 1), "work": str(work),
    }, indent=1))


if __name__ == "__main__":
    main()
