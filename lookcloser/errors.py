"""The mistakes a user can make, as exception classes every layer raises and every command reports.

A ``UserError`` means "what the user gave is wrong" (a recipe, a flag, a record, a path): each
command prints it as one ``error:`` line and exits with status 2 (``lookcloser.cli``), never a
traceback. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from pathlib import Path


class UserError(ValueError):
    """A mistake in what the user gave: one ``error:`` line, exit 2."""


class RecipeError(UserError):
    """A bad recipe key or value, flag or command-line argument."""


class ModelPathError(UserError):
    """A model name that names nothing loadable here (said in one line, before any hub call)."""


class RecordError(UserError):
    """A bad record: says which file, which record and which field, and why.

    >>> str(RecordError("m.json", "mir_7", "images", "image file not found"))
    "m.json: record 'mir_7', field 'images': image file not found"
    >>> str(RecordError("m.json", None, None, "not valid JSON"))
    'm.json: not valid JSON'
    """

    def __init__(self, source: str | Path, record_id: object, field: str | None, reason: str):
        self.source, self.record_id, self.field, self.reason = str(source), record_id, field, reason
        where = self.source
        if record_id is not None:  # a whole-file problem names no record (never "record None")
            where += f": record {record_id!r}"
        if field:
            where += f", field {field!r}"
        super().__init__(f"{where}: {reason}")


def record_id(record: object, index: int) -> object:
    """The id a message names a record by: its own id field, else its position in the file.

    >>> record_id({"id": "mir_7"}, 3), record_id({"question": "?"}, 3)
    ('mir_7', '#3')
    """
    if isinstance(record, dict):
        for key in ("id", "query_id", "question_id", "uid"):
            if record.get(key) not in (None, ""):
                return record[key]
    return f"#{index}"
