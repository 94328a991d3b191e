"""bench/bench_eval.py stays runnable end to end on a few items: the real loopback endpoint in its
own process, fresh client processes of ours and of a ``--baseline`` checkout (here this one again)
alternating. Nothing here is timed; the figures live in docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_bench_answers_every_item_once_with_its_gold_reply_for_both_clients():
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, str(REPO / "bench/bench_eval.py"), "--latencies", "0.05", "--repeats", "1",
                           "--items", "96", "--concurrency", "16", "--baseline", str(REPO)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["items"] == 96
    (run,) = result["runs"]
    assert run["failed"] == 0 and run["accuracy_of_gold_replies"] == 1.0 and run["same_predictions_every_run"]
    assert run["ideal_items_per_s"] == 320.0
    for client in ("ours", "baseline"):
        assert 0 < run[client]["share_of_ideal_items_per_s"][0] <= 1.05
        assert run[client]["client_cpu_ms_per_item"][0] > 0
