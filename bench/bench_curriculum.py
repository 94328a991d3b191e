"""Does each stage earn its place? MIR accuracy of the curriculum's variants, printed as JSON.

For each training seed, from the same initial model, at a MIR budget small enough that stages can differ
(stage 4 at ``--stage4_epochs`` instead of the recipe's 12):

- ``imagenet_think``: the recipe's ImageNet-Think stage (its generated sample), then MIR stages 1 -> 4;
- ``mir_only``: MIR stages 1 -> 4 alone;
- ``stage4_only``: stage 4 alone for as many optimizer steps as stages 1 -> 4.

All are scored on held-out MIR records (``data_builders.heldout``, reserved seeds never trained or
tuned on) with MIR's benchmark prompt, with the real images and with every image flat gray. Reports
each run, the mean and the spread (min, max, standard deviation), and the paired differences.

    python bench/bench_curriculum.py [--seeds 42,43] [--held_out_seeds 2002,3003] [--stage4_epochs 3] [--jobs 2]

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
ARMS = ("imagenet_think", "mir_only", "stage4_only")
IMAGENET_THINK = ("imagenet_think_data", "imagenet_think")


def _env() -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "offline", "HF_HUB_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false", "PYTHONPATH": str(REPO)}


def _run(cmd: list[str], log: Path) -> None:
    with log.open("a") as fh:
        subprocess.run(cmd, check=True, cwd=REPO, env=_env(), stdout=fh, stderr=subprocess.STDOUT)


def curriculum_recipe(seed: int, out: Path, arm: str, stage4_epochs: int) -> Path:
    """The repo's curriculum up to MIR stage 4 with this seed, as ``arm`` trains it.

    Every MIR stage sees the same records with the same batch size, so equal epochs = equal steps.
    """
    recipe = yaml.safe_load(RECIPE.read_text(encoding="utf-8"))
    # ImageNet-Think and MIR stages 1-4 only: the recipe's photo-search warm-up before them is another skill
    stages = [s for s in recipe["stages"] if s["name"] in IMAGENET_THINK or s["name"].startswith("mir_stage")]
    if arm != "imagenet_think":
        stages = [s for s in stages if s["name"] not in IMAGENET_THINK]
    stages[-1] = {**stages[-1], "num_train_epochs": stage4_epochs}
    defaults = {**recipe["defaults"], "seed": seed}
    if arm == "stage4_only":
        epochs = sum(s.get("num_train_epochs", defaults["num_train_epochs"]) for s in stages)
        stages = [{**stages[-1], "num_train_epochs": epochs}]
    text = yaml.safe_dump({"output_dir": recipe["output_dir"], "launcher": None, "defaults": defaults,
                           "stages": stages}, sort_keys=False)
    path = out / "recipe.yaml"  # the recipe's own output folder -> this run's (data paths included)
    path.write_text(text.replace(recipe["output_dir"] + "/", str(out / "run") + "/")
                    .replace(f"output_dir: {recipe['output_dir']}", f"output_dir: {out / 'run'}"), encoding="utf-8")
    return path


def accuracy(model: Path, data: Path, out: Path, gray: bool, log: Path) -> dict:
    _run([sys.executable, "-m", "eval", "--model", str(model), "--benchmarks", "mir", "--data_root", str(data),
          "--mir_prompt_stage", "0", "--tools", "false", "--system_prompt", "", "--max_turns", "1",
          "--gray_images", str(gray).lower(), "--out", str(out), "--resume", "false", "--batch_size", "32"], log)
    mir = json.loads((out / "metrics.json").read_text(encoding="utf-8"))["benchmarks"]["mir"]
    return {"overall": mir["overall"]["accuracy"],
            "by_family": {k: round(v["accuracy"], 4) for k, v in mir["groups"]["task"].items()}}


def one_run(arm: str, seed: int, held_out: list[Path], work: Path, stage4_epochs: int) -> dict:
    out = work / f"{arm}_seed{seed}"
    out.mkdir(parents=True)
    log = out / "log.txt"
    recipe = curriculum_recipe(seed, out, arm, stage4_epochs)
    started = time.time()
    _run([sys.executable, "train/curriculum.py", str(recipe)], log)
    seconds = round(time.time() - started, 1)
    final = out / "run" / "mir_stage4"  # every arm ends in a stage named mir_stage4
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
    parser.add_argument("--seeds", default="42,43", help="training seeds (one run per arm each)")
    parser.add_argument("--held_out_seeds", default="2002,3003", help="held-out seeds (data_builders.heldout)")
    parser.add_argument("--per_family", type=int, default=16, help="held-out records per family and seed")
    parser.add_argument("--stage4_epochs", type=int, default=3, help="stage 4's epochs (the recipe: 12)")
    parser.add_argument("--arms", default=",".join(ARMS), help="variants to run")
    parser.add_argument("--jobs", type=int, default=2, help="runs at once (one torch thread each)")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    arms = [a for a in args.arms.split(",") if a]
    if not set(arms) <= set(ARMS) or not arms:
        parser.error(f"--arms: choose from {', '.join(ARMS)}")
    from lookcloser.data_builders.heldout import write_heldout

    work = Path(args.work or tempfile.mkdtemp(prefix="bench_curriculum_"))
    held_out = [write_heldout(work / f"held_out_{s}", s, ("mir",), mir_per_family=args.per_family)["mir"]
                for s in (int(x) for x in args.held_out_seeds.split(","))]
    # Interleave the arms so that load changes on a shared machine hit them alike.
    jobs = [(arm, seed) for seed in seeds for arm in arms]
    started = time.time()
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda job: one_run(*job, held_out, work, args.stage4_epochs), jobs))
    summary = {}
    for arm in arms:
        mine = [r for r in rows if r["arm"] == arm]
        summary[arm] = {"real": spread([r["real"] for r in mine]), "gray": spread([r["gray"] for r in mine]),
                        "train_seconds": spread([r["train_seconds"] for r in mine])}
    by = {(r["arm"], r["seed"]): r["real"] for r in rows}
    paired = {f"{a}_minus_{b}_real": spread([by[a, s] - by[b, s] for s in seeds])
              for a, b in (("imagenet_think", "mir_only"), ("mir_only", "stage4_only")) if a in arms and b in arms}
    print(json.dumps({
        "benchmark": "curriculum variants up to MIR stage 4, same MIR steps",
        "recipe": str(RECIPE.relative_to(REPO)), "training_seeds": seeds, "stage4_epochs": args.stage4_epochs,
        "held_out": {"seeds": args.held_out_seeds, "records": sum(4 * args.per_family for _ in held_out),
                     "prompt": "MIR benchmark prompt (stage 0), no tools, no system prompt"},
        "chance": 0.375, "summary": summary, **paired, "runs": rows,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "jobs": args.jobs,
                    "note": "shared machine: wall-clock times include other load"},
        "seconds": round(time.time() - started, 1), "work": str(work),
    }, indent=1))


if __name__ == "__main__":
    main()
