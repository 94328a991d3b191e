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
    if candidate != root_path and root_path not in candidate.parents:
        raise RecordError(source, rid, field, f"image path {relative!r} leaves the data root {root_path}")
    return candidate


class ImageResolver:
    """``resolve_image_path`` for many images under one root, with each folder resolved once.

    Same guarantees (no ``..`` escape, no absolute path, no symlink out of the root), a fraction
    of the system calls: a plain relative path costs one ``lstat`` once its folder is known.

    >>> ImageResolver("/data")("../etc/passwd", source="x.json", rid=1)
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecordError: x.json: record 1, field 'images': image path '../etc/passwd' leaves the data root /data
    """

    def __init__(self, root: str | Path):
        self.root = os.path.realpath(root)
        self._prefix = self.root.rstrip(os.sep) + os.sep
        self._folders: dict[str, str] = {}

    def __call__(self, relative: str, *, source: str | Path = "", rid: object = None, field: str = "images") -> str:
        parts = relative.replace("\\", "/").split("/")
        if os.path.isabs(relative) or ".." in parts:  # rare: let the full resolution decide
            return str(resolve_image_path(self.root, relative, source=source, rid=rid, field=field))
        folder, name = os.path.split(os.path.join(self.root, relative))
        real_folder = self._folders.get(folder)
        if real_folder is None:
            real_folder = self._folders[folder] = os.path.realpath(folder)
        candidate = os.path.join(real_folder, name)
        if os.path.islink(candidate):
            candidate = os.path.realpath(candidate)
        if candidate != self.root and not candidate.startswith(self._prefix):
            raise RecordError(source, rid, field, f"image path {relative!r} leaves the data root {self.root}")
        return candidate


def check_image(path: Path, *, source: str | Path = "", rid: object = None, field: str = "images",
                max_pixels: int = DEFAULT_MAX_PIXELS) -> tuple[int, int]:
    """Make sure an image exists, decodes and is not a decompression bomb; return (width, height)."""
    with verified_image(path, source=source, rid=rid, field=field, max_pixels=max_pixels) as img:
        return img.size


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_chunks_intact(data: bytes) -> bool:
    """Every chunk of a PNG file, up to its IEND, is whole and its CRC matches: what PIL's
    ``verify`` checks for a PNG, at C speed and without parsing the image again after it.

    >>> import zlib
    >>> chunk = lambda kind, body: (len(body).to_bytes(4, "big") + kind + body
    ...                             + zlib.crc32(kind + body).to_bytes(4, "big"))
    >>> good = PNG_SIGNATURE + chunk(b"IHDR", bytes(13)) + chunk(b"IEND", b"")
    >>> png_chunks_intact(good), png_chunks_intact(good[:-1]), png_chunks_intact(good[:20] + b"x" + good[21:])
    (True, False, False)
    """
    import zlib

    view, pos, size = memoryview(data), len(PNG_SIGNATURE), len(data)
    while pos + 12 <= size:
        length = int.from_bytes(view[pos:pos + 4], "big")
        end = pos + 8 + length
        if end + 4 > size or zlib.crc32(view[pos + 4:end]) != int.from_bytes(view[end:end + 4], "big"):
            return False
        if view[pos + 4:pos + 8] == b"IEND":
            return True
        pos = end + 4
    return False  # cut before its IEND


@contextlib.contextmanager
def verified_image(path: Path, *, source: str | Path = "", rid: object = None, field: str = "images",
                   max_pixels: int = DEFAULT_MAX_PIXELS, in_memory: bool = False) -> Iterator:
    """The image at ``path``, opened once and checked, not yet decoded: the file exists, its pixel
    count (read from the header, before any decoding) is within ``max_pixels``, and the checks of
    PIL's ``verify`` pass where the format has one of its own (PNG: every chunk whole, its CRC
    right, ``png_chunks_intact``; other formats' ``verify`` checks nothing). Any failure, a decode
    inside the ``with`` block's included, is a ``RecordError`` naming the file, the record and the
    field. ``in_memory``: the file is read whole and the image parsed from those bytes, so it can
    still be decoded after the block (lazily, when first used); its ``checked_bytes`` are the bytes
    checked (send those: the file may have changed since). A PNG is read whole either way."""
    import io

    from PIL import Image, ImageFile, PngImagePlugin

    if not os.path.isfile(path):  # missing, a folder, or a FIFO that would block the open
        raise RecordError(source, rid, field, f"image file not found: {path}")
    try:
        with open(path, "rb") as fh:
            is_png = fh.read(len(PNG_SIGNATURE)) == PNG_SIGNATURE
            fh.seek(0)
            data = fh.read() if in_memory or is_png else None  # a PNG's check reads every chunk anyway
            if is_png and not png_chunks_intact(data):
                raise RecordError(source, rid, field, f"image {path} does not decode (a PNG chunk is cut short "
                                                      "or fails its CRC)")
            stream = fh if data is None else io.BytesIO(data)
            img = Image.open(stream)
            width, height = img.size
            if width * height > max_pixels:
                raise RecordError(source, rid, field, f"image {path} has {width}x{height} pixels, over {max_pixels}")
            if type(img).verify not in (ImageFile.ImageFile.verify, PngImagePlugin.PngImageFile.verify):
                img.verify()  # a format with a check of its own (in Pillow 11-13 PNG's is the only one)
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
