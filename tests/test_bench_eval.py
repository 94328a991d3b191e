"""bench/bench_eval.py stays runnable end to end on a few items: the real loopback endpoint in its
own process, fresh client processes, and the timed run dealt to forked client processes
(``--client-processes``). Nothing here is timed; the figures live in docs/benchmarks.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _bench(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    return subprocess.run([sys.executable, str(REPO / "bench/bench_eval.py"), *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_forked_client_processes_answer_every_item_once_with_its_gold_reply():
    """Two forked client processes share 96 items: the merged predictions hold every item (a missing
    one would be scored failed) with the server's gold reply; the sequential baseline still runs."""
    proc = _bench("--latencies", "0.02", "--repeats", "1", "--items", "96", "--client-processes", "2",
                  "--sequential-seconds", "0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["items"] == 96 and result["client_processes"] == 2
    run = result["runs"][0]
    assert run["failed"] == 0 and run["accuracy_of_gold_replies"] == 1.0
    assert run["same_predictions_every_run"] and run["sequential"]["items_measured"] == 50
    assert run["ours"]["client_cpu_ms_per_item"][0] > 0


def test_more_client_processes_than_episodes_is_a_command_line_error():
    proc = _bench("--concurrency", "4", "--client-processes", "8")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "error: --client-processes 8: must be from 1 to --concurrency")
