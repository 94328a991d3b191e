"""The python tool's sandbox, printed as JSON.

1. One call (start, two 1024x1024 images in, printed result out) in the sandbox (``agent.sandbox.run_python``:
   bubblewrap, limits, the call's cgroup where one can be made, a fresh interpreter) against a plain subprocess of the same interpreter running the same
   code on the same image files, interleaved rounds, medians and the median of each round's difference (the
   overhead; target <= 150 ms). Also the first call of an episode through ``PythonImageToolEnv`` (its images
   written to files first).
2. 64 calls at once, as ``python -m eval --concurrency 64`` makes them from its tool threads: failures and the
   total time (``agent.sandbox.PARALLEL`` run at once, the rest wait for a slot).
3. Memory per live sandbox: the proportional set size (PSS, /proc/PID/smaps_rollup) of every process of
   ``PARALLEL`` sandboxes holding their images, divided by their number, against one plain subprocess doing the same.

    python bench/bench_sandbox.py [--rounds 15]

The bench's own code runs unsandboxed in the plain subprocess: it is this file's fixed program, not model output.
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
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image

from lookcloser.agent.code_env import PythonImageToolEnv
from lookcloser.agent.sandbox import PARALLEL, SandboxLimits, require_sandbox, run_python, write_inputs
from lookcloser.agent.sandbox_cgroup import cgroups_made

CODE = ("import numpy as np\na = np.asarray(image_1, dtype=np.int16)\nb = np.asarray(image_2, dtype=np.int16)\n"
        "print('mean abs difference', float(np.abs(a - b).mean()))")
# The plain baseline: the same interpreter, imports, image loading and code, without the sandbox.
PLAIN = ("import sys, numpy\nfrom PIL import Image\nfolder = sys.argv[1]\nimages = []\n"
         "for n in (1, 2):\n    with Image.open(f'{folder}/image_{n}.bmp') as img:\n        img.load()\n"
         "        images.append(img.copy())\nimage_1, image_2 = images\n")


def pictures(seed: int = 0) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (1024, 1024, 3), dtype=np.uint8)) for _ in range(2)]


def plain_call(folder: Path) -> float:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-I", "-B", "-c", PLAIN + CODE, str(folder)], capture_output=True,
                          text=True, check=True)
    assert "mean abs difference" in done.stdout
    return time.monotonic() - start


def sandbox_call(folder: Path, limits: SandboxLimits) -> float:
    result = run_python(CODE, folder, limits)
    assert result.ok and "mean abs difference" in result.text, (result.limit, result.error, result.text)
    return result.seconds


def first_call_in_episode(images: list[Image.Image]) -> float:
    env = PythonImageToolEnv()
    env.reset(images=images)
    start = time.monotonic()
    result = env.python(CODE)
    assert "mean abs difference" in result[0]["text"], result
    return time.monotonic() - start


def pss_kb(marker: bytes) -> tuple[int, int]:
    """(summed PSS in kB, number) of the processes whose command line holds ``marker``."""
    total, count = 0, 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
        count += 1
    return total, count


def memory(folder: Path, live: int = PARALLEL) -> dict:
    hold = "import time\nx = np.asarray(image_1).sum() + np.asarray(image_2).sum()\ntime.sleep(4)"
    threads = [threading.Thread(target=run_python, args=("import numpy as np\n" + hold, folder,
                                                          SandboxLimits(wall_s=30))) for _ in range(live)]
    for thread in threads:
        thread.start()
    time.sleep(2.5)
    sandbox_kb, processes = pss_kb(b"/sandbox_runner.py")
    plain = subprocess.Popen([sys.executable, "-I", "-B", "-c", PLAIN + "import numpy as np\n" + hold, str(folder),
                              "plain-bench-marker"])
    time.sleep(2.5)
    plain_kb, _ = pss_kb(b"plain-bench-marker")
    plain.wait()
    for thread in threads:
        thread.join()
    return {"live_sandboxes": live, "processes_per_sandbox": processes / live,
            "pss_mb_per_sandbox": round(sandbox_kb / live / 1024, 1), "pss_mb_plain_subprocess": round(plain_kb / 1024, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--concurrent", type=int, default=64)
    args = parser.parse_args()
    require_sandbox()
    limits = SandboxLimits(wall_s=60)  # the bench measures time; a loaded machine must not fail it
    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        folder = Path(tmp)
        images = pictures()
        write_inputs(folder, images)
        plain_call(folder), sandbox_call(folder, limits)  # warm the page cache
        plain, sandbox = [], []
        for _ in range(args.rounds):  # interleaved: a shared machine's load hits both alike
            plain.append(plain_call(folder))
            sandbox.append(sandbox_call(folder, limits))
        first = [first_call_in_episode(images) for _ in range(5)]
        start = time.monotonic()
        with ThreadPoolExecutor(args.concurrent) as pool:
            results = list(pool.map(lambda _: run_python(CODE, folder, SandboxLimits()), range(args.concurrent)))
        burst = time.monotonic() - start
        failed = [r.limit or r.error for r in results if not r.ok or "mean abs difference" not in r.text]
        mem = memory(folder)
    print(json.dumps({
        "machine": {"cpus": len(os.sched_getaffinity(0)), "python": platform.python_version(),
                    "load_avg_1min": round(os.getloadavg()[0], 2), "root": os.geteuid() == 0,
                    "call_cgroups": cgroups_made()},
        "call_two_1024px_images": {
            "rounds": args.rounds, "plain_subprocess_median_s": round(statistics.median(plain), 4),
            "sandbox_call_median_s": round(statistics.median(sandbox), 4),
            "overhead_median_ms": round(1000 * statistics.median(s - p for s, p in zip(sandbox, plain, strict=True)), 1),
            "overhead_target_ms": 150,
            "first_call_of_an_episode_median_s": round(statistics.median(first), 4)},
        "concurrent_calls": {"calls": args.concurrent, "failed": len(failed), "failures": failed[:5],
                             "total_s": round(burst, 2), "parallel_slots": PARALLEL,
                             "median_call_s": round(statistics.median(r.seconds for r in results), 3)},
        "memory": mem,
    }, indent=1))


if __name__ == "__main__":
    main()
