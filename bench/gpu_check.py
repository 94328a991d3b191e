"""One unattended check of a fresh, offline CUDA machine: install, test, measure, one JSON summary.

    python bench/gpu_check.py --wheels /path/to/wheels --out gpu_check.json   # on the GPU machine
    python bench/gpu_check.py --dry_run                                       # the plan, as JSON

Run from the checkout. It installs every wheel in ``--wheels`` with ``pip install --no-index --no-deps
--upgrade`` over the machine's own torch (then this checkout ``-e``, also ``--no-deps``), then runs, each
step with its own time limit and the whole within ``--budget_s`` (default 540 s = 9 minutes; a step that
would start past it is recorded as skipped):

1. ``fused_kernels``: tests/test_fused_kernels.py + tests/test_trl_surface.py (pytest, CUDA paths on);
2. ``sft_2b``: bench/bench_sft_2b.py, train/sft.py on the 2B architecture, plain and ``fused_kernels: liger``
   interleaved (one round, a reduced row count so that it fits);
3. ``rollout_plain`` / ``rollout_static``: bench/bench_gpu.py's GRPO tool rollouts, one measured step each,
   plain ``generate`` and ``cache_implementation: static``;
4. ``zero3_fresh_cache``: ``accelerate launch`` ZeRO-3 of train/sft.py from an EMPTY ``LOOKCLOSER_CACHE``
   (the embedded default is built during the launch), then ``reload``: a plain run from that cache, both
   checked for whole weights and for "size mismatch";
5. ``eval_cuda``: ``python -m eval`` of the ZeRO-3 checkpoint on the bundled MIR sample, on CUDA.

Without a CUDA GPU it writes and prints a skip record and exits 0. The wheels (Python 3.12, manylinux
x86_64, ~26 MB; ../shared/specs/platform.md lists them) are fetched on a machine with PyPI access:

    pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \\
        -d wheels transformers==5.23.0 tokenizers==0.23.3 trl==1.16.0 datasets==5.2.0 dill==0.4.1 \\
        multiprocess==0.70.19 orjson math-verify==0.9.0 latex2sympy2_extended==1.11.0 \\
        antlr4-python3-runtime==4.13.2 Levenshtein RapidFuzz bm25s beautifulsoup4 soupsieve httpx2 httpcore2 \\
        truststore liger-kernel==0.8.5 hjson pydantic==2.14.4 pydantic-core==2.50.5 annotated-types \\
        typing-inspection filelock
    DS_BUILD_OPS=0 pip wheel --no-deps -w wheels deepspeed==0.19.8     # pure Python, 2.1 MB
"""

from __future__ import annotations

import argparse
import glob
import importlib
import json
import os
import site
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PY = sys.executable


def plan(work: Path) -> list[dict]:
    """The steps in order: name, command, time limit (s), extra environment."""
    from lookcloser.agent.tiny_qwen3_vl import VERSION

    cache = str(work / "empty_cache")
    embedded = f"{cache}/tiny-qwen3-vl-v{VERSION}"
    one_step_sft = ["recipes/mir_stage1.yaml", "--bf16", "true", "--dtype", "bfloat16", "--report_to", "none",
                    "--logging_steps", "1"]
    rollout = [PY, "bench/bench_gpu.py", "--sft_variants", "", "--grpo_rows", "8", "--generations", "4",
               "--grpo_steps", "1", "--think_repeats", "4"]  # half the measured 2026-11-27 reply length: fits 9 min
    return [
        {"name": "fused_kernels", "limit_s": 120,
         "cmd": [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_fused_kernels.py",
                 "tests/test_trl_surface.py"]},
        {"name": "sft_2b", "limit_s": 150,
         "cmd": [PY, "bench/bench_sft_2b.py", "--rounds", "1", "--variants", "none,liger", "--records", "8",
                 "--rows", "4", "--warmup", "1", "--steps", "2"]},
        {"name": "rollout_plain", "limit_s": 120, "cmd": rollout},
        {"name": "rollout_static", "limit_s": 90, "cmd": [*rollout, "--grpo_flags", "--cache_implementation static"]},
        {"name": "zero3_fresh_cache", "limit_s": 90, "env": {"LOOKCLOSER_CACHE": cache},
         "cmd": [PY, "-m", "accelerate.commands.launch", "--config_file", "accelerate_configs/zero3.yaml",
                 "--num_processes", "1", "--main_process_port", "0", "train/sft.py", *one_step_sft,
                 "--max_steps", "20", "--output_dir", str(work / "zero3")],
         "whole": [embedded, str(work / "zero3")]},
        {"name": "reload", "limit_s": 60, "env": {"LOOKCLOSER_CACHE": cache},
         "cmd": [PY, "train/sft.py", *one_step_sft, "--max_steps", "2", "--output_dir", str(work / "plain")],
         "whole": [embedded, str(work / "plain")]},
        {"name": "eval_cuda", "limit_s": 60,
         "cmd": [PY, "-m", "eval", "--model", str(work / "zero3"), "--benchmarks", "mir", "--device", "cuda",
                 "--out", str(work / "eval")],
         "metrics": str(work / "eval" / "metrics.json")},
    ]


def last_json(text: str):
    """The JSON document a bench printed last on stdout (whole output, or its last line), else None."""
    for candidate in (text, *reversed(text.strip().splitlines()[-1:])):
        try:
            return json.loads(candidate)
        except (json.JSONDecodeError, TypeError):
            continue
    return None


def run_step(step: dict, deadline: float) -> dict:
    from lookcloser.checkpoints import weights_problem

    record = {"name": step["name"], "cmd": " ".join(step["cmd"])}
    left = deadline - time.monotonic()
    if left < 20:
        return {**record, "status": "skipped", "reason": "time budget spent"}
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", **step.get("env", {})}
    start = time.monotonic()
    try:
        proc = subprocess.run(step["cmd"], cwd=REPO, env=env, capture_output=True, text=True, check=False,
                              timeout=min(step["limit_s"], left))
    except subprocess.TimeoutExpired:
        return {**record, "status": "timeout", "seconds": round(time.monotonic() - start, 1)}
    out = proc.stdout + proc.stderr
    record.update(seconds=round(time.monotonic() - start, 1), returncode=proc.returncode,
                  status="ok" if proc.returncode == 0 else "failed")
    if proc.returncode != 0:
        record["tail"] = out[-1500:]
    if step["name"] == "fused_kernels":
        record["pytest"] = (proc.stdout.strip().splitlines() or [""])[-1]
    elif (result := last_json(proc.stdout)) is not None:
        record["result"] = result
    if "whole" in step:
        record["weights"] = {folder: weights_problem(folder) or "whole" for folder in step["whole"]
                             if Path(folder).is_dir()}
        record["size_mismatch_logged"] = "size mismatch" in out
        if record["size_mismatch_logged"] or any(v != "whole" for v in record["weights"].values()):
            record["status"] = "failed"
    if "metrics" in step and Path(step["metrics"]).is_file():
        record["metrics"] = json.loads(Path(step["metrics"]).read_text(encoding="utf-8"))
    return record


def install(wheels: str) -> dict:
    files = sorted(glob.glob(os.path.join(wheels, "*.whl")))
    if not files:
        return {"name": "install", "status": "failed", "reason": f"no .whl files in {wheels}"}
    start = time.monotonic()
    cmds = [[PY, "-m", "pip", "install", "--no-index", "--no-deps", "--upgrade", *files],
            [PY, "-m", "pip", "install", "--no-index", "--no-deps", "--no-build-isolation", "-e", str(REPO)]]
    for cmd in cmds:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            return {"name": "install", "status": "failed", "tail": (proc.stdout + proc.stderr)[-1500:]}
    return {"name": "install", "status": "ok", "wheels": len(files), "seconds": round(time.monotonic() - start, 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--wheels", help="folder of .whl files to install first (--no-deps, over the machine's torch)")
    p.add_argument("--out", default="gpu_check.json", help="where the JSON summary is written (also printed)")
    p.add_argument("--budget_s", type=float, default=540, help="no step starts after this many seconds")
    p.add_argument("--dry_run", action="store_true", help="print the plan as JSON and run nothing")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gpu_check-"))
    if args.dry_run:
        print(json.dumps({"bench": "gpu_check", "dry_run": True, "budget_s": args.budget_s,
                          "steps": [{"name": s["name"], "limit_s": s["limit_s"], "cmd": " ".join(s["cmd"])}
                                    for s in plan(work)]}, indent=1))
        return
    import torch

    summary = {"bench": "gpu_check", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "torch": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        summary.update(skipped=True, reason="no CUDA GPU (torch.cuda.is_available() is False)")
    else:
        summary["device"] = torch.cuda.get_device_name()
        deadline = time.monotonic() + args.budget_s
        steps = [install(args.wheels)] if args.wheels else []
        if not steps or steps[0]["status"] == "ok":
            # The checkout was installed after this process started: read site-packages' .pth files again
            # (the editable install's finder maps lookcloser.agent etc.; the bare checkout's lookcloser/ does not).
            importlib.invalidate_caches()
            site.addsitedir(sysconfig.get_paths()["purelib"])
            for step in plan(work):
                steps.append(run_step(step, deadline))
                print(json.dumps({k: v for k, v in steps[-1].items() if k != "result"}), file=sys.stderr, flush=True)
        summary["steps"] = steps
        summary["passed"] = all(s["status"] == "ok" for s in steps)
    text = json.dumps(summary, indent=1)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
