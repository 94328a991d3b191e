"""Data-builder throughput and memory on generated full-size inputs; prints one JSON object.

    python bench/bench_data_builders.py [--mir-records 22257] [--imagenet-rows 250000] [--workdir DIR]

- ``mir``: stages 1-4 from a generated MIR file the size of the real one (22,257 records, ~6
  images each, every path a distinct file: hard links to a few tiny PNGs, made once), through
  ``data_builders.mir.build_mir``: read, validate, check every image (exists, inside the root,
  decodes, pixel limit) once, write four data sets that reference the images. Target: < 60 s.
- ``imagenet_think``: ``build_imagenet_think`` over generated parquet shards (tiny PNGs, GLM- and
  Kimi-tagged traces of ~1.5k characters, both generators), in a fresh subprocess whose peak RSS
  (its ``VmHWM``; ``resource.getrusage`` where /proc is missing) is reported next to the same
  subprocess's RSS after imports. Target: < 2 GB.

``seconds`` is wall time, ``cpu_seconds`` the process's CPU time (the honest figure on a shared
machine: ``machine.load_average_1min`` says how busy it was).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

IMAGES_PER_RECORD = (4, 5, 6, 6, 7, 8)  # ~6 on average, as in MIR (138,277 images / 22,257 questions)
_WORDS = ("the", "image", "shows", "a", "small", "animal", "with", "fur", "near", "grass", "and", "light", "from",
          "left", "so", "it", "is", "likely", "cat", "dog", "bird", "texture", "colour", "edge", "shape")


def _tiny_pngs(n: int) -> list[bytes]:
    from PIL import Image

    out = []
    for i in range(n):
        buffer = io.BytesIO()
        Image.new("RGB", (16, 12), (i * 37 % 256, i * 91 % 256, i * 53 % 256)).save(buffer, format="PNG")
        out.append(buffer.getvalue())
    return out


def make_mir(folder: Path, n_records: int) -> Path:
    """A deterministic MIR file: every field shape the real one has (list/dict options, caption
    list/string, letter/sentence conclusions, optional reasoning)."""
    pool = folder / "pool"
    pool.mkdir(parents=True)
    sources = []
    for i, data in enumerate(_tiny_pngs(16)):
        sources.append(pool / f"{i}.png")
        sources[-1].write_bytes(data)
    records = []
    for r in range(n_records):
        k = IMAGES_PER_RECORD[r % len(IMAGES_PER_RECORD)]
        rels = [f"images/{r // 1000:03d}/{r:05d}_{j}.png" for j in range(k)]
        if r % 1000 == 0:
            (folder / f"images/{r // 1000:03d}").mkdir(parents=True)
        for j, rel in enumerate(rels):
            os.link(sources[(r + j) % len(sources)], folder / rel)
        question = " ".join(f"In <image> the object {j} is" for j in range(k)) + " which is largest?"
        records.append({
            "id": f"mir_{r:05d}", "subtask": "Scale Blur", "images": rels, "question": question,
            "options": ["A. first", "B. second", "C. third", "D. fourth"] if r % 2 else {"A": "yes", "B": "no"},
            "summary": "I need to compare the objects across the images.",
            "caption": [f"Image of object {j}, seen from afar." for j in range(k)] if r % 3 else "Several objects.",
            "text2img": "Each object in the question appears in its own image.",
            "img2img": "Object 2 covers more of its frame than the others at the same distance.",
            "conclusion": "ABCD"[r % 4] if r % 5 else f"So the answer is {'ABCD'[r % 4]}.",
            **({"reasoning": "Same distance, so the larger footprint wins."} if r % 4 == 0 else {}),
        })
    path = folder / "all_data_rel.json"
    path.write_text(json.dumps(records))
    return path


def bench_mir(workdir: Path, n_records: int) -> dict:
    from lookcloser.data_builders.mir import build_mir
    from lookcloser.data_builders.output import BuildReport, load_output

    started = time.perf_counter()
    path = make_mir(workdir / "mir", n_records)
    setup = time.perf_counter() - started
    n_images = sum(len(r["images"]) for r in json.loads(path.read_text()))
    report = BuildReport()
    started, cpu_started = time.perf_counter(), time.process_time()
    build_mir(path, workdir / "mir_out", report, stages=[1, 2, 3, 4], progress=False)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    rows = [len(load_output(workdir / "mir_out" / f"stage_{s}")) for s in (1, 2, 3, 4)]
    return {"records": n_records, "images": n_images, "stages": [1, 2, 3, 4], "rows": sum(rows),
            "written": report.written, "seconds": round(seconds, 2), "cpu_seconds": round(cpu_seconds, 2),
            "records_per_s": round(n_records / seconds), "setup_seconds": round(setup, 1),
            "target_seconds": 60, "ok": seconds < 60 and rows == [n_records] * 4}


def _trace(rng: random.Random, n_chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < n_chars:
        words.append(rng.choice(_WORDS))
    return " ".join(words)


def make_imagenet_think(folder: Path, n_rows: int, shard_rows: int = 25_000, seed: int = 0) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    pngs = _tiny_pngs(64)
    thinks = [_trace(rng, 1500) for _ in range(200)]
    answers = [_trace(rng, 300) for _ in range(200)]
    folder.mkdir(parents=True)
    for start in range(0, n_rows, shard_rows):
        n = min(shard_rows, n_rows - start)
        ids = [f"n{start + i:08d}" for i in range(n)]
        t1 = [f"<think>{thinks[(start + i) % 200]}</think><answer>{answers[(start + i) % 200]}</answer>" for i in range(n)]
        a1 = [f"<answer>{answers[(start + i) % 200]}</answer>" for i in range(n)]
        t2 = [f"◁think▷{thinks[(start + i * 7) % 200]}◁/think▷" for i in range(n)]
        a2 = [f"◁think▷{thinks[(start + i * 7) % 200]}◁/think▷{answers[(start + i * 3) % 200]}" for i in range(n)]
        images = [{"bytes": pngs[(start + i) % 64], "path": f"{ids[i]}.JPEG"} for i in range(n)]
        table = pa.table({"image": images, "id": ids, "think_1": t1, "answer_1": a1, "think_2": t2, "answer_2": a2})
        pq.write_table(table, folder / f"train-{start // shard_rows:05d}.parquet")
    return folder


# Peak RSS: getrusage's ru_maxrss survives exec on Linux (a child starts at its parent's peak),
# so the child reads its own high-water mark, VmHWM, and falls back to getrusage elsewhere.
_CHILD = """
import json, resource, sys, time

def peak_kb():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

from lookcloser.data_builders.imagenet_think import build_imagenet_think
from lookcloser.data_builders.output import BuildReport
baseline = peak_kb()
report = BuildReport()
started, cpu_started = time.perf_counter(), time.process_time()
build_imagenet_think([sys.argv[1]], sys.argv[2], report, progress=False)
seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
print(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds, "peak_kb": peak_kb(), "baseline_kb": baseline, "read": report.read,
                  "written": report.written, "rows": report.rows}))
"""


def bench_imagenet_think(workdir: Path, n_rows: int) -> dict:
    started = time.perf_counter()
    shards = make_imagenet_think(workdir / "imagenet_think", n_rows)
    setup = time.perf_counter() - started
    input_mb = sum(f.stat().st_size for f in shards.iterdir()) / 2**20
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(shards), str(workdir / "imagenet_think_out")],
                          capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[1])
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    peak_mb = child["peak_kb"] / 1024  # VmHWM and ru_maxrss are in KiB on Linux
    output_mb = sum(f.stat().st_size for f in (workdir / "imagenet_think_out").iterdir()) / 2**20
    return {"rows": n_rows, "traces": child["read"], "written": child["written"], "output_rows": child["rows"],
            "seconds": round(child["seconds"], 1), "cpu_seconds": round(child["cpu_seconds"], 1), "rows_per_s": round(n_rows / child["seconds"]),
            "peak_rss_mb": round(peak_mb), "rss_after_imports_mb": round(child["baseline_kb"] / 1024),
            "input_parquet_mb": round(input_mb), "output_mb": round(output_mb), "setup_seconds": round(setup, 1),
            "target_peak_rss_mb": 2048, "ok": peak_mb < 2048 and child["rows"] == 2 * n_rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mir-records", type=int, default=22_257)
    parser.add_argument("--imagenet-rows", type=int, default=250_000)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temporary folder, removed after")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_data_builders_"))
    try:
        result = {"mir": bench_mir(workdir, args.mir_records),
                  "imagenet_think": bench_imagenet_think(workdir, args.imagenet_rows),
                  "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                              "load_average_1min": round(os.getloadavg()[0], 2),
                              "bench_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}}
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
