"""What every benchmark loader builds on: ``EvalItem`` and the public helpers a spec's loader
(``eval/benchmarks/<name>.py``) uses to read its official layout, each problem a ``RecordError`` naming file,
record and field. Nothing here knows a benchmark: ``eval.loaders`` reads the registry."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from lookcloser.data_builders.records import RecordError, check_image, record_id, resolve_image_path
from lookcloser.errors import UserError


class EvalError(UserError):
    """A bad setting or output folder: the CLI reports it as one line."""


@dataclass
class EvalItem:
    """One benchmark question, ready for the loop and the scorer.

    Attributes:
        id: Unique within the benchmark (the record's own id, as a string).
        benchmark: A name of ``eval.benchmarks.SPECS``.
        example: The row given to ``agent.loop.run_episodes``: ``question`` or ``prompt``, ``images``
            (absolute paths) and whatever the environment's ``reset`` needs (``user_id``, ``data_root``).
        gold: What ``eval.scoring`` passes to ``rewards/`` (e.g. the official TIR-Bench record).
        tags: Report groups, name -> values (several values: the item counts in each group).
        bad: Why the record could not be loaded (file, record, field, reason); None for a good item.
            A bad item is not run: it scores 0 as failed, so the denominator stays the benchmark's.
    """

    id: str
    benchmark: str
    example: dict
    gold: dict
    tags: dict[str, list[str]] = field(default_factory=dict)
    bad: str | None = None


def bad_item(name: str, rid: object, err: RecordError) -> EvalItem:
    """The item of a record that could not be loaded: not run, scored 0 as failed."""
    return EvalItem(id=str(rid), benchmark=name, example={}, gold={}, bad=str(err))


def each_record(name: str, records, strict: bool):
    """``(record, rid, catch)`` per record; the loader builds the item inside ``with catch:``, which
    turns a ``RecordError`` into a bad item (or lets it stop the load under ``strict``)."""
    for index, record in enumerate(records):
        rid = record_id(record, index) if isinstance(record, dict) else f"#{index}"
        yield record, rid, RecordCatch(name, rid, strict)


class RecordCatch:
    """Context manager: a RecordError inside becomes ``self.item`` (a bad item) unless ``strict``."""

    def __init__(self, name: str, rid: object, strict: bool) -> None:
        self.name, self.rid, self.strict, self.item = name, rid, strict, None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if kind is not None and issubclass(kind, RecordError) and not self.strict:
            self.item = bad_item(self.name, err.record_id if err.record_id is not None else self.rid, err)
            return True
        return False


def require(record: dict, key: str, kinds: type | tuple, source: Path, rid: object, *, nonempty: bool = True):
    """``record[key]``, of one of ``kinds`` (and not empty, with ``nonempty``); else a ``RecordError`` naming it."""
    value = record.get(key)
    if value is None:
        raise RecordError(source, rid, key, "missing required field")
    if not isinstance(value, kinds) or isinstance(value, bool):
        names = "/".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
        raise RecordError(source, rid, key, f"must be {names}, got {type(value).__name__}")
    if nonempty and isinstance(value, (str, list)) and not (value.strip() if isinstance(value, str) else value):
        raise RecordError(source, rid, key, "must not be empty")
    return value


def image_path(root: Path, rel: str, source: Path, rid: object, field_name: str, check: bool) -> str:
    """The absolute path of image ``rel`` (kept inside ``root``), opened first with ``check``."""
    path = resolve_image_path(root, rel, source=source, rid=rid, field=field_name)
    if check:
        check_image(path, source=source, rid=rid, field=field_name)
    return str(path)
