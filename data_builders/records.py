"""The one record schema: reading, validating and locating the images of data-set records.

Every builder, trainer and eval loader reports bad input the same way: a ``RecordError``
naming the file, the record id and the field. Image paths are resolved inside their data root
and checked (exists, decodes, not a decompression bomb) before anything trains on them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

from lookcloser.errors import RecordError, record_id  # moved to the base layer; importable here too

# Matches MIR's interleaved placeholders: "<image>" and the numbered "<image1>" form.
IMAGE_PLACEHOLDER = re.compile(r"<image\d*>")
MIR_REQUIRED_FIELDS = ("question", "options", "images", "summary", "caption", "text2img", "img2img", "conclusion")
# Far above any benchmark image (TIR-Bench's largest is 6944x9280 = 64 Mpx), far below a bomb.
DEFAULT_MAX_PIXELS = 100_000_000


def read_json_records(path: str | Path) -> list[dict]:
    """Read a JSON list (MIR, TIR-Bench) or a JSONL file of objects, with clear errors."""
    path = Path(path)
    if not path.is_file():
        raise RecordError(path, None, None, "data file not found")
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return list(iter_jsonl(path, text))
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(path, None, None, f"not valid JSON ({err})") from err
    if not isinstance(data, list):
        raise RecordError(path, None, None, f"expected a JSON list of records, got {type(data).__name__}")
    return data


def iter_jsonl(path: str | Path, text: str | None = None) -> Iterator[dict]:
    path = Path(path)
    if text is None:
        if not path.is_file():
            raise RecordError(path, None, None, "data file not found")
        text = path.read_text(encoding="utf-8")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError as err:
            raise RecordError(path, f"line {lineno}", None, f"not valid JSON ({err})") from err


def validate_mir_record(record: object, source: str | Path, index: int) -> dict:
    """Check one MIR record against its schema (docs/formats.md §1): return it unchanged or raise.

    >>> validate_mir_record({"id": "x", "question": "<image> and <image>?", "images": ["a.png"],
    ...     "options": ["A. a"], "summary": "s", "caption": "c", "text2img": "t", "img2img": "i",
    ...     "conclusion": "A"}, "mir.json", 0)
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecordError: mir.json: record 'x', field 'images': the question has 2 <image> placeholders but 'images' lists 1 images
    """
    rid = record_id(record, index)
    if not isinstance(record, dict):
        raise RecordError(source, rid, None, f"expected an object, got {type(record).__name__}")
    for field in MIR_REQUIRED_FIELDS:
        if field not in record or record[field] is None:
            raise RecordError(source, rid, field, "missing required field")
    for field in ("question", "summary", "text2img", "img2img", "conclusion"):
        if not isinstance(record[field], str) or not record[field].strip():
            raise RecordError(source, rid, field, "must be a non-empty string")
    if "reasoning" in record and record["reasoning"] is not None and not isinstance(record["reasoning"], str):
        raise RecordError(source, rid, "reasoning", "must be a string when present")
    images = record["images"]
    if not isinstance(images, list) or not images or not all(isinstance(p, str) and p for p in images):
        raise RecordError(source, rid, "images", "must be a non-empty list of relative image paths")
    options = record["options"]
    if isinstance(options, dict):
        if not options or not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
            raise RecordError(source, rid, "options", "a dict of options must map letters to strings")
    elif not isinstance(options, list) or not options or not all(isinstance(o, str) for o in options):
        raise RecordError(source, rid, "options", "must be a non-empty list of strings or a dict")
    caption = record["caption"]
    if isinstance(caption, list):
        if not all(isinstance(c, str) for c in caption):
            raise RecordError(source, rid, "caption", "a list of captions must hold strings")
    elif not isinstance(caption, str):
        raise RecordError(source, rid, "caption", "must be a string or a list of strings")
    n_placeholders = len(IMAGE_PLACEHOLDER.findall(record["question"]))
    if n_placeholders != len(images):
        raise RecordError(
            source, rid, "images",
            f"the question has {n_placeholders} <image> placeholders but 'images' lists {len(images)} images",
        )
    return record


def resolve_image_path(root: str | Path, relative: str, *, source: str | Path = "", rid: object = None,
                       field: str = "images") -> Path:
    """Resolve a data-set image path inside its root, refusing escapes (``..``, absolute, symlinks out).

    >>> resolve_image_path("/data", "../etc/passwd", source="x.json", rid=1)
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecordError: x.json: record 1, field 'images': image path '../etc/passwd' leaves the data root /data
    """
    root_path = Path(root).resolve()
    candidate = (root_path / relative).resolve()
    if not candidate.is_relative_to(root_path):
        raise RecordError(source, rid, field, f"image path {relative!r} leaves the data root {root_path}")
    return candidate


def check_image(path: Path, *, source: str | Path = "", rid: object = None, field: str = "images",
                max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """Make sure an image exists, decodes and is not a decompression bomb; return (width, height)."""
    with verified_image(path, source=source, rid=rid, field=field, max_pixels=max_pixels) as img:
        return img.size


@contextlib.contextmanager
def verified_image(path: Path, *, source: str | Path = "", rid: object = None, field: str = "images",
                   max_pixels: int = DEFAULT_MAX_PIXELS, in_memory: bool = False) -> Iterator:
    """The image at ``path``, opened and checked, not yet decoded: the file exists, its pixel count
    (read from the header, before any decoding) is within ``max_pixels``, and Pillow's ``verify``
    passes (PNG: every chunk whole and its CRC right; Pillow's ``ImageFile.LOAD_TRUNCATED_IMAGES``
    applies). Any failure, a decode inside the ``with`` block's included, is a ``RecordError``
    naming the file, the record and the field. ``in_memory``: the file is read whole and the image
    parsed from those bytes, so it can still be decoded after the block (lazily, when first used);
    its ``checked_bytes`` are the bytes checked (send those: the file may have changed since)."""
    import io

    from PIL import Image

    if not os.path.isfile(path):  # missing, a folder, or a FIFO that would block the open
        raise RecordError(source, rid, field, f"image file not found: {path}")
    try:
        with open(path, "rb") as fh:
            data = fh.read() if in_memory else None
            stream = fh if data is None else io.BytesIO(data)
            img = Image.open(stream)
            width, height = img.size
            if width * height > max_pixels:
                raise RecordError(source, rid, field, f"image {path} has {width}x{height} pixels, over {max_pixels}")
            img.verify()  # consumes the parsed image: parse the header again to decode
            stream.seek(0)
            img = Image.open(stream)
            if not in_memory:
                with img:
                    yield img
                return
        img.checked_bytes = data
        yield img  # the file is closed; the image reads its bytes from memory
    except RecordError:
        raise
    except Exception as err:  # PIL raises many types for broken files
        raise RecordError(source, rid, field, f"image {path} does not decode ({type(err).__name__}: {err})") from err
