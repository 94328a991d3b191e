"""The whole pipeline as written: recipes/mir_curriculum.yaml from nothing to its held-out table, timed.

Runs every stage in this process on one torch thread (as tests/test_pipeline_curriculum.py does, which
runs the same recipe cut down for CI's 45 minutes) and prints JSON: the wall time and each stage's
seconds, the held-out table (seed 9009) with the untrained row and the gray-image and tools-off
controls measured in the same run, and every issue-25 target by name, met or not.

    python bench/bench_pipeline.py [--work DIR] [--reduced]

``--reduced`` runs CI's cut (testing/pipeline_run.REDUCED) instead. The budget: ≤ 55 minutes as written on
the idle 2-core machine (issue 40). The machine may be shared: times are wall-clock under whatever load.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--reduced", action="store_true", help="CI's cut of the recipe (testing/pipeline_run.py)")
    args = parser.parse_args()
    os.environ.setdefault("WANDB_MODE", "offline")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from testing.pipeline_run import REDUCED, figures, run_pipeline, targets

    work = Path(args.work or tempfile.mkdtemp(prefix="bench_pipeline_"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    with contextlib.redirect_stdout(sys.stderr):  # the stages' logs to stderr: stdout is the JSON alone
        result = run_pipeline(work, None, REDUCED if args.reduced else ())
    wall = time.time() - started
    stages = {}
    for done in sorted(result["root"].glob("*/curriculum_done.json"), key=lambda p: p.stat().st_mtime):
        stages[done.parent.name] = json.loads(done.read_text(encoding="utf-8")).get("seconds")
    met = targets(result["table"])
    print(json.dumps({
        "bench": "pipeline", "date": date.today().isoformat(), "machine": f"{platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores", "recipe": "recipes/mir_curriculum.yaml", "reduced": list(REDUCED) if args.reduced else [],
        "wall_seconds": round(wall, 1), "wall_minutes": round(wall / 60, 1), "stage_seconds": stages,
        "table": figures(result["table"]),
        "references": result["table"]["references"], "targets": met, "all_targets_met": all(met.values()),
        "comparison": str(result["root"] / "eval" / "comparison.md"),
    }, indent=1))


if __name__ == "__main__":
    main()
