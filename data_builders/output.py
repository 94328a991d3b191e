"""Writing built data sets: bounded-memory output, a rejects file, and the closing summary.

Every builder streams rows into a ``DatasetWriter`` (a few thousand rows in memory at a time) and
reports each input record it read as written or rejected, so ``read = written + rejected`` holds
by construction. Output is either the ``save_to_disk`` layout (``datasets.load_from_disk`` opens
it) or parquet shards (``load_dataset("parquet", data_dir=...)``). It is written into a hidden
sibling folder and renamed into place at the end: a failed build leaves no half data set behind.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lookcloser.data_builders.records import RecordError

logger = logging.getLogger(__name__)

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

    ``datasets``' own ``ArrowWriter`` (what ``Dataset.from_generator`` writes with) takes each row
    encoded by ``features`` and writes ``batch_rows`` at a time to one Arrow file; ``close`` saves
    that file as the data set (``save_to_disk``, sharded by size, or ``to_parquet``).
    """

    def __init__(self, out_dir: str | Path, features, *, fmt: str = "hf", batch_rows: int = 1000):
        from datasets.arrow_writer import ArrowWriter

        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
        self.out_dir, self.features, self.fmt = Path(out_dir), features, fmt
        self.tmp_dir = self.out_dir.parent / f".{self.out_dir.name}.partial-{os.getpid()}"
        shutil.rmtree(self.tmp_dir, ignore_errors=True)
        # The outermost folder this writer creates: removed again (if empty) when the build fails.
        missing = [p for p in (self.out_dir.parent, *self.out_dir.parent.parents) if not p.exists()]
        self._created = missing[-1] if missing else None
        self.tmp_dir.mkdir(parents=True)
        self.rows = 0
        self._writer = ArrowWriter(features=features, path=str(self.tmp_dir / "rows.arrow"),
                                   writer_batch_size=batch_rows)

    def __enter__(self) -> DatasetWriter:  # noqa: PYI034 - py3.10 has no typing.Self
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def add(self, row: dict) -> None:
        self._writer.write(self.features.encode_example({name: row[name] for name in self.features}))
        self.rows += 1

    def close(self) -> Path:
        """Save the rows as the data set, in a hidden folder renamed into place."""
        import datasets

        self._writer.finalize()
        rows = datasets.Dataset.from_file(str(self.tmp_dir / "rows.arrow"))
        staged = self.tmp_dir / "data"
        bars = datasets.is_progress_bar_enabled()
        datasets.disable_progress_bars()  # the builder's own bar counted the rows
        try:
            if self.fmt == "hf":
                rows.save_to_disk(str(staged))
            else:
                staged.mkdir()
                rows.to_parquet(str(staged / "data-00000-of-00001.parquet"))
        finally:
            if bars:
                datasets.enable_progress_bars()
        del rows
        if self.out_dir.exists():
            shutil.rmtree(self.out_dir)
        staged.rename(self.out_dir)
        shutil.rmtree(self.tmp_dir)
        return self.out_dir

    def abort(self) -> None:
        self._writer.close()
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


def build_or_keep(target: Path, wanted: dict, make) -> Path:
    """``make(target)`` unless ``target/settings.json`` says it was built with ``wanted`` already."""
    marker = target / "settings.json"
    if marker.is_file() and json.loads(marker.read_text(encoding="utf-8")) == wanted:
        logger.info("kept (same settings) %s", target)
        return target
    marker.unlink(missing_ok=True)  # until the new build is whole, no marker says it is there
    make(target)
    marker.write_text(json.dumps(wanted, indent=1) + "\n", encoding="utf-8")
    logger.info("built %s", target)
    return target
