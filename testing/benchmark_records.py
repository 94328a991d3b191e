"""The four benchmarks' sample records from two sources, so that each test on them runs in any clone.

- ``generated``: ``eval.fixtures`` writes every benchmark in its official on-disk format, with every
  answer shape the real files have (MIR: the bundled ``data/mir_sample``, ``data_builders.sample_mir``'s
  output). tests/conftest.py writes it once a session; a clone has it.
- ``real``: the real sample records in ``../shared/data`` beside the checkout. A clone lacks them: the
  tests on them skip there with ``REAL_ABSENT`` and keep checking fidelity where the records exist.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SOURCES = ("generated", "real")
REAL_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
REAL_ABSENT = "needs the real sample records in ../shared/data (absent in a clone)"


@dataclass(frozen=True)
class SampleRecords:
    """One source's records, each benchmark's as its data file holds them."""

    source: str
    mir: list[dict]
    tir_bench: list[dict]
    disbench_queries: list[dict]
    disbench_metadata: list[dict]  # lines of one user's metadata file: {"photo_id", "metadata"}
    imagemining: list[dict]

    def by_id(self, benchmark: str) -> dict:
        return {record["id"]: record for record in getattr(self, benchmark)}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_records(source: str, generated_root: Path) -> SampleRecords:
    """``source``'s records; ``generated_root`` is where ``eval.loaders.write_fixtures`` wrote (used
    for ``generated`` only). The caller skips ``real`` where ``REAL_DATA`` is absent."""
    if source == "real":
        root = REAL_DATA
        files = {"mir": root / "mir" / "sample.json", "tir_bench": root / "tir_bench" / "sample.json",
                 "metadata": root / "disbench" / "metadata_sample.jsonl"}
    elif source == "generated":
        root = generated_root
        queries = _lines(root / "disbench" / "queries.jsonl")
        files = {"mir": root / "mir" / "all_data_rel.json", "tir_bench": root / "tir_bench" / "TIR-Bench.json",
                 "metadata": root / "disbench" / "metadata" / f"{queries[0]['user_id']}.jsonl"}
    else:
        raise ValueError(f"unknown source {source!r}: one of {SOURCES}")
    return SampleRecords(
        source=source,
        mir=json.loads(files["mir"].read_text(encoding="utf-8")),
        tir_bench=json.loads(files["tir_bench"].read_text(encoding="utf-8")),
        disbench_queries=_lines(root / "disbench" / "queries.jsonl"),
        disbench_metadata=_lines(files["metadata"]),
        imagemining=_lines(root / "imagemining" / "data.jsonl"),
    )
