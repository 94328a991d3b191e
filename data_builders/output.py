"""Writing built data sets: bounded-memory sharded output, a rejects file, and the closing summary.

Every builder streams rows into a ``DatasetWriter`` (a few thousand rows in memory at a time) and
reports each input record it read as written or rejected, so ``read = written + rejected`` holds
by construction. Output is either the ``save_to_disk`` layout (``datasets.load_from_disk`` opens
it) or parquet shards (``load_dataset("parquet", data_dir=...)``). It is written into a hidden
sibling folder and renamed into place at the end: a failed build leaves no half data set behind.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookcloser.data_builders.records import RecordError

FORMATS = ("hf", "parquet")
ON_ERROR = ("fail", "skip")


def reject_kind(err: RecordError) -> str:
    """A short, countable name for why a record was rejected (the full reason goes to the rejects file).

    >>> reject_kind(RecordError("m.json", 3, "summary", "missing required field"))
    'missing field summary'
    >>> reject_kind(RecordError("m.json", 3, "images", "image file not found: /x/1.png"))
    'image not found'
    >>> reject_kind(RecordError("m.json", 3, "options", "must be a non-empty list of strings or a dict"))
    'invalid options'
    """
    reason = err.reason
    for pattern, kind in (
        (r"missing required field", f"missing field {err.field}"),
        (r"image file not found", "image not found"),
        (r"does not decode", "image does not decode"),
        (r"pixels, over", "image over pixel limit"),
        (r"leaves the data root", "image outside data root"),
        (r"placeholders", "placeholder count != image count"),
        (r"no prediction", "no predictions"),
    ):
        if re.search(pattern, reason):
            return kind
    return f"invalid {err.field}" if err.field else reason


def _jsonable(value: Any) -> Any:
    """The raw record as JSON can hold it (bytes, e.g. image payloads, are replaced by their size)."""
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


@dataclass
class BuildReport:
    """Counts of one build. ``read`` input records; each is ``written`` or ``rejected`` (by kind)."""

    read: int = 0
    written: int = 0
    rows: int = 0
    rejected: Counter = field(default_factory=Counter)
    rejects_path: Path | None = None
    on_error: str = "fail"
    _rejects_file: Any = None

    def __post_init__(self) -> None:
        if self.on_error not in ON_ERROR:
            raise ValueError(f"on_error must be one of {ON_ERROR}, got {self.on_error!r}")

    def reject(self, err: RecordError, record: Any = None) -> None:
        """Count a bad record; with ``on_error='fail'`` re-raise it (the first bad record stops the build)."""
        if self.on_error == "fail":
            raise err
        self.rejected[reject_kind(err)] += 1
        if self.rejects_path is not None:
            if self._rejects_file is None:
                self.rejects_path.parent.mkdir(parents=True, exist_ok=True)
                self._rejects_file = self.rejects_path.open("w", encoding="utf-8")
            line = {"source": err.source, "record_id": _jsonable(err.record_id), "field": err.field,
                    "kind": reject_kind(err), "reason": err.reason, "record": _jsonable(record)}
            self._rejects_file.write(json.dumps(line, ensure_ascii=False) + "\n")

    @property
    def n_rejected(self) -> int:
        return sum(self.rejected.values())

    def close(self) -> None:
        if self._rejects_file is not None:
            self._rejects_file.close()
            self._rejects_file = None

    def summary(self, unit: str = "records") -> str:
        """The closing line(s) every CLI command prints.

        >>> r = BuildReport(read=5, written=4, rows=8, on_error="skip"); r.rejected["image not found"] = 1
        >>> print(r.summary())
        read 5 records, written 4 (8 rows), skipped 1
          image not found: 1
        """
        text = f"read {self.read} {unit}, written {self.written} ({self.rows} rows), skipped {self.n_rejected}"
        for kind, count in self.rejected.most_common():
            text += f"\n  {kind}: {count}"
        if self.n_rejected and self.rejects_path is not None:
            text += f"\n  rejected records with reasons: {self.rejects_path}"
        return text

    def as_dict(self) -> dict:
        return {"read": self.read, "written": self.written, "rows": self.rows, "rejected": self.n_rejected,
                "rejected_by_kind": dict(self.rejected)}


class DatasetWriter:
    """Stream rows (dicts) into a data set on disk with bounded memory.

    Rows are buffered ``batch_rows`` at a time, encoded with the given ``datasets.Features`` and
    appended to the current shard; a new shard starts every ``shard_rows`` rows.
    """

    def __init__(self, out_dir: str | Path, features, *, fmt: str = "hf", batch_rows: int = 1000,
                 shard_rows: int = 50_000):
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        self.out_dir, self.features, self.fmt = Path(out_dir), features, fmt
        self.batch_rows, self.shard_rows = batch_rows, shard_rows
        self.tmp_dir = self.out_dir.parent / f".{self.out_dir.name}.partial-{os.getpid()}"
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        # The outermost folder this writer creates: removed again (if empty) when the build fails.
        missing = [p for p in (self.out_dir.parent, *self.out_dir.parent.parents) if not p.exists()]
        self._created = missing[-1] if missing else None
        self.tmp_dir.mkdir(parents=True)
        self.rows = 0
        self._buffer: list[dict] = []
        self._shards: list[Path] = []
        self._writer = None
        self._shard_count = 0

    def __enter__(self) -> DatasetWriter:  # noqa: PYI034 - py3.10 has no typing.Self
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def add(self, row: dict) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if not self._buffer:
            return
        from datasets import Dataset

        columns = {name: [row[name] for row in self._buffer] for name in self.features}
        table = self._fast_table(columns)
        if table is None:  # datasets' own encoders (PIL images, Json -> text) build the Arrow batch
            table = Dataset.from_dict(columns, features=self.features).data.table
        self._buffer = []
        self._write_table(table)

    def _fast_table(self, columns: dict[str, list]):
        """Arrow straight from Python lists when every image is a path or a bytes/path dict (the common
        case, several times faster than per-value encoding); None to take the general path."""
        import pyarrow as pa
        from datasets import Image, Json, List

        encoded = {}
        for name, feature in self.features.items():
            values = columns[name]
            inner = feature.feature if isinstance(feature, List) else None
            if isinstance(feature, Json) or isinstance(inner, Json):
                return None
            if isinstance(feature, Image) or isinstance(inner, Image):
                as_struct = (lambda v: {"bytes": None, "path": v} if isinstance(v, str) else
                             v if isinstance(v, dict) else None)
                if inner is not None:
                    values = [[as_struct(v) for v in row] for row in values]
                else:
                    values = [as_struct(v) for v in values]
                if any(v is None for row in values for v in (row if inner is not None else [row])):
                    return None
            encoded[name] = values
        try:
            return pa.Table.from_pydict(encoded, schema=self.features.arrow_schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return None

    def _write_table(self, table) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._writer is None:
            suffix = "arrow" if self.fmt == "hf" else "parquet"
            path = self.tmp_dir / f"shard-{len(self._shards):05d}.{suffix}"
            self._shards.append(path)
            self._writer = (pa.ipc.new_stream(str(path), table.schema) if self.fmt == "hf"
                            else pq.ParquetWriter(str(path), table.schema))
            self._shard_count = 0
        if self.fmt == "hf":
            for batch in table.to_batches():
                self._writer.write_batch(batch)
        else:
            self._writer.write_table(table)
        self.rows += table.num_rows
        self._shard_count += table.num_rows
        if self._shard_count >= self.shard_rows:
            self._writer.close()
            self._writer = None

    def close(self) -> Path:
        """Finish the last shard, write the metadata and move the data set into place."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if not self._shards:  # an empty data set still has its schema
            from datasets import Dataset

            self._write_table(Dataset.from_dict({k: [] for k in self.features}, features=self.features).data.table)
            self._writer.close()
            self._writer = None
        n = len(self._shards)
        names = []
        for i, shard in enumerate(self._shards):
            name = f"data-{i:05d}-of-{n:05d}.{shard.suffix.lstrip('.')}"
            shard.rename(self.tmp_dir / name)
            names.append(name)
        if self.fmt == "hf":
            self._write_hf_metadata(names)
        if self.out_dir.exists():
            shutil.rmtree(self.out_dir)
        self.tmp_dir.rename(self.out_dir)
        return self.out_dir

    def _write_hf_metadata(self, names: list[str]) -> None:
        # The two files `datasets.load_from_disk` reads next to the Arrow stream shards.
        from datasets import DatasetInfo

        DatasetInfo(features=self.features).write_to_directory(str(self.tmp_dir))
        state = {"_data_files": [{"filename": name} for name in names], "_fingerprint": secrets.token_hex(8),
                 "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
                 "_output_all_columns": False, "_split": None}
        (self.tmp_dir / "state.json").write_text(json.dumps(state, indent=2), encoding="utf-8")

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        if self._created is not None:
            folder = self.tmp_dir.parent
            while folder.exists() and not any(folder.iterdir()):
                folder.rmdir()
                if folder == self._created:
                    break
                folder = folder.parent


def load_output(path: str | Path):
    """Open a data set written by ``DatasetWriter`` in either format."""
    from datasets import load_dataset, load_from_disk

    path = Path(path)
    if (path / "state.json").is_file():
        return load_from_disk(str(path))
    files = sorted(str(f) for f in path.glob("*.parquet"))  # only the shards (other files may sit beside them)
    return load_dataset("parquet", data_files=files, split="train")


def load_records(path: str | Path):
    """The one loader trainers use for local data: a folder written by ``DatasetWriter`` (either
    ``--format``), or one ``.parquet`` / ``.jsonl`` file of records. Anything else is a
    ``RecordError`` naming the path (MIR ``.json`` files are each trainer's own conversion)."""
    from datasets import load_dataset

    path = Path(path)
    if not path.exists():
        raise RecordError(path, None, None, "data file not found")
    if path.is_dir():
        if not (path / "state.json").is_file() and not any(path.glob("*.parquet")):
            raise RecordError(path, None, None, "no data set here: expected a folder written by "
                              "`python -m data_builders` (state.json or *.parquet shards)")
        return load_output(path)
    if path.suffix not in (".parquet", ".jsonl"):
        raise RecordError(path, None, None, "expected an MIR .json, a .parquet/.jsonl file or a saved data set folder")
    return load_dataset("parquet" if path.suffix == ".parquet" else "json", data_files=str(path), split="train")
