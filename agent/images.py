"""Pure image operations behind the image tools: boxes, budgets, crops, zooms and transforms.

Coordinates. Every image of an episode has a *coordinate size* (``EpisodeImage.size``): an input
image's own pixel size; a crop's size at the full resolution of the region it shows; a zoom's
size after zooming. A box is ``[x1, y1, x2, y2]`` in those pixels, or normalized fractions of
width and height when all four values are <= 1 (so ``[0, 0, 1, 1]`` is the whole image, never a
1-pixel box). Each image remembers the region of a full-resolution *source* it shows, so a
crop of a crop is cut from the original pixels, never from a downscaled intermediate.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageEnhance

from lookcloser.agent.toolkit import ToolError

# Same ceiling as the data builders: far above any benchmark image, far below a decompression bomb.
DEFAULT_MAX_PIXELS = 100_000_000

Box = tuple[float, float, float, float]
# Qwen-style image processors refuse images with an aspect ratio of 200 or more; stay well below.
MAX_ASPECT = 100.0


@dataclass
class EpisodeImage:
    """One image of an episode: what the model saw, and where its pixels come from.

    Attributes:
        source: Full-resolution pixels (an input image, or the result of a rotate/flip/adjust).
        box: Region of ``source`` this image shows, in source pixels.
        size: Coordinate size (width, height) the model's boxes for this image refer to.
        shown: The picture sent to the model (``size`` scaled under the pixel budget); None for
            inputs, which the prompt shows.
    """

    source: Image.Image
    box: Box
    size: tuple[int, int]
    shown: Image.Image | None


def to_rgb(image: Image.Image) -> Image.Image:
    """Decode into plain RGB (palette, alpha, CMYK, 16-bit and grey images all occur in benchmarks)."""
    if image.mode == "RGB":
        return image
    if image.mode in ("RGBA", "LA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        canvas = Image.new("RGB", rgba.size, (255, 255, 255))
        canvas.paste(rgba, mask=rgba.getchannel("A"))
        return canvas
    if image.mode.startswith("I;16") or image.mode in ("I", "F"):
        image = image.point(lambda v: v / 256).convert("L")
    return image.convert("RGB")


def open_image(path: str | Path) -> Image.Image:
    """Open and fully decode an image file into RGB (the file handle is closed on return)."""
    with Image.open(path) as img:
        img.load()
        return to_rgb(img)


def open_checked_image(path: Path, *, source: str | Path = "", rid: object = None, field: str = "images",
                       max_pixels: int = DEFAULT_MAX_PIXELS, decode: bool = True) -> Image.Image:
    """``check_image``'s checks and the decode into RGB on one read of the file
    (``data_builders.records.verified_image``): every failure, a file that passes the checks but
    does not decode included, is a ``RecordError`` naming the file, the record and the field.

    ``decode=False`` (an endpoint's episodes, which send the file's own bytes): an RGB image is
    checked but left undecoded, from the file's bytes in memory, and PIL decodes it when something
    first reads its pixels (a tool, a PNG re-encode); other modes are decoded to RGB as before.
    Decoding a 1600x1200 JPEG costs ~11 ms, sending its bytes ~0.6 ms. The bytes sent are the ones
    checked (``checked_bytes``), never the file read again. A file that passes the checks but does
    not decode then fails where it is first read: in a tool (an error observation) or at the server."""
    from lookcloser.data_builders.records import verified_image

    with verified_image(path, source=source, rid=rid, field=field, max_pixels=max_pixels,
                        in_memory=not decode) as image:
        if decode or image.mode != "RGB":
            image.load()
    image.filename = os.fspath(path)  # as if opened by path: image_url_json sends this file's bytes
    # (or, undecoded, the checked_bytes verified_image kept; a converted image has neither)
    return to_rgb(image)


def fit_under_budget(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """Largest size with the same aspect ratio and at most ``max_pixels`` pixels (never upscales).

    >>> fit_under_budget(4000, 3000, 1_000_000)
    (1154, 866)
    >>> fit_under_budget(320, 240, 1_000_000)
    (320, 240)
    """
    if width * height <= max_pixels:
        return width, height
    scale = math.sqrt(max_pixels / (width * height))
    return max(1, math.floor(width * scale)), max(1, math.floor(height * scale))


def parse_box(box: list[float], width: int, height: int) -> Box:
    """Validate a box against an image of ``width`` x ``height`` and return it in pixels.

    Normalized when all four values are <= 1. Refuses wrong lengths, negative values, inverted
    or empty boxes and boxes reaching past the image, with a message the model can act on.

    >>> parse_box([0.25, 0, 0.75, 0.5], 400, 200)
    (100.0, 0.0, 300.0, 100.0)
    >>> parse_box([10, 20, 110, 220], 400, 300)
    (10.0, 20.0, 110.0, 220.0)
    >>> parse_box([50, 0, 10, 10], 400, 300)
    Traceback (most recent call last):
    ...
    lookcloser.agent.toolkit.ToolError: box [50, 0, 10, 10] is inverted or empty: need x1 < x2 and y1 < y2
    """
    if len(box) != 4:
        raise ToolError(f"box must have 4 numbers [x1, y1, x2, y2], got {len(box)}")
    shown = "[" + ", ".join(f"{v:g}" for v in box) + "]"
    if any(not math.isfinite(v) for v in box):
        raise ToolError(f"box {shown} has a value that is not a finite number")
    if any(v < 0 for v in box):
        raise ToolError(f"box {shown} has a negative coordinate")
    x1, y1, x2, y2 = (float(v) for v in box)
    if max(box) <= 1:
        x1, x2, y1, y2 = x1 * width, x2 * width, y1 * height, y2 * height
    if x2 <= x1 or y2 <= y1:
        raise ToolError(f"box {shown} is inverted or empty: need x1 < x2 and y1 < y2")
    if x2 > width or y2 > height:
        raise ToolError(f"box {shown} reaches outside the image, which is {width}x{height} px")
    return x1, y1, x2, y2


def _grow_1d(lo: float, hi: float, target: float, limit: float) -> tuple[float, float]:
    target = min(target, limit)
    if hi - lo >= target:
        return lo, hi
    center = (lo + hi) / 2
    lo = min(max(0.0, center - target / 2), limit - target)
    return lo, lo + target


def grow_box(box: Box, min_side: float, width: float, height: float, max_aspect: float = MAX_ASPECT) -> Box:
    """Grow a box about its centre to at least ``min_side`` per side (and under ``max_aspect``),
    shifting it to stay inside the ``width`` x ``height`` image.

    >>> grow_box((0, 0, 10, 10), 32, 640, 480)
    (0.0, 0.0, 32.0, 32.0)
    >>> grow_box((100, 100, 104, 140), 32, 640, 480)
    (86.0, 100.0, 118.0, 140.0)
    >>> grow_box((0, 0, 6000, 32), 32, 6000, 4000)
    (0.0, 0.0, 6000.0, 60.0)
    """
    x1, y1, x2, y2 = box
    x1, x2 = _grow_1d(x1, x2, min_side, width)
    y1, y2 = _grow_1d(y1, y2, min_side, height)
    w, h = x2 - x1, y2 - y1
    if w / h > max_aspect:
        y1, y2 = _grow_1d(y1, y2, w / max_aspect, height)
    elif h / w > max_aspect:
        x1, x2 = _grow_1d(x1, x2, h / max_aspect, width)
    return float(x1), float(y1), float(x2), float(y2)


def to_source_box(image: EpisodeImage, box: Box) -> Box:
    """Map a box in an image's coordinates to pixels of its full-resolution source.

    >>> src = Image.new("RGB", (1000, 800))
    >>> crop = EpisodeImage(src, (100, 200, 300, 400), (400, 400), src)  # a 2x zoom of a region
    >>> to_source_box(crop, (0, 0, 200, 100))
    (100.0, 200.0, 200.0, 250.0)
    """
    bx1, by1, bx2, by2 = image.box
    sx, sy = (bx2 - bx1) / image.size[0], (by2 - by1) / image.size[1]
    x1, y1, x2, y2 = box
    return bx1 + x1 * sx, by1 + y1 * sy, bx1 + x2 * sx, by1 + y2 * sy


def render(source: Image.Image, box: Box, size: tuple[int, int]) -> Image.Image:
    """Cut ``box`` out of ``source`` and resample it to ``size`` in one step (fast on big images)."""
    full = (0.0, 0.0, float(source.width), float(source.height))
    if tuple(box) == full and size == source.size:
        return source
    return source.resize(size, Image.Resampling.BICUBIC, box=box, reducing_gap=3.0)


def make_root(image: Image.Image, max_pixels: int, *, show: bool = True) -> EpisodeImage:
    """Wrap a full-resolution picture (an input, or a transform's result) as an episode image.

    ``show=False`` skips rendering the picture for the model (inputs: the prompt shows them).
    """
    image = to_rgb(image)
    full = (0.0, 0.0, float(image.width), float(image.height))
    shown = render(image, full, fit_under_budget(image.width, image.height, max_pixels)) if show else None
    return EpisodeImage(image, full, image.size, shown)


def view(image: EpisodeImage, max_pixels: int) -> EpisodeImage:
    """The same image again, as a new picture for the model (rendered now if it never was)."""
    shown = image.shown if image.shown is not None else render(image.source, image.box,
                                                               fit_under_budget(*image.size, max_pixels))
    return EpisodeImage(image.source, image.box, image.size, shown)


def _region(image: EpisodeImage, box: list[float], min_side: int) -> tuple[Box, tuple[int, int]]:
    """Source box and full-resolution size of a requested region (grown to the minimum size)."""
    src_box = to_source_box(image, parse_box(box, *image.size))
    src_box = grow_box(src_box, min_side, image.source.width, image.source.height)
    return src_box, (max(1, round(src_box[2] - src_box[0])), max(1, round(src_box[3] - src_box[1])))


def crop_image(image: EpisodeImage, box: list[float], *, min_side: int, max_pixels: int) -> EpisodeImage:
    """A crop of ``image``: full-resolution region, shown scaled under ``max_pixels``.

    >>> img = make_root(Image.new("RGB", (4000, 3000)), max_pixels=1_000_000)
    >>> crop = crop_image(img, [0.5, 0.5, 1, 1], min_side=32, max_pixels=1_000_000)
    >>> crop.box, crop.size, crop.shown.size
    ((2000.0, 1500.0, 4000.0, 3000.0), (2000, 1500), (1154, 866))
    """
    src_box, size = _region(image, box, min_side)
    return EpisodeImage(image.source, src_box, size, render(image.source, src_box, fit_under_budget(*size, max_pixels)))


def zoom_image(image: EpisodeImage, box: list[float], factor: float, *, min_side: int, max_pixels: int,
               max_factor: float = 8.0) -> EpisodeImage:
    """A region of ``image`` enlarged ``factor`` times; refused when the result exceeds ``max_pixels``."""
    if not 1.0 <= factor <= max_factor:
        raise ToolError(f"factor must be between 1 and {max_factor:g}, got {factor:g}")
    src_box, region = _region(image, box, min_side)
    size = (max(1, round(region[0] * factor)), max(1, round(region[1] * factor)))
    if size[0] * size[1] > max_pixels:
        raise ToolError(
            f"zooming this {region[0]}x{region[1]} px region by {factor:g} gives {size[0]}x{size[1]} px, "
            f"over the budget of {max_pixels} pixels; use a smaller box or factor"
        )
    return EpisodeImage(image.source, src_box, size, render(image.source, src_box, size))


def full_pixels(image: EpisodeImage) -> Image.Image:
    """The image at its coordinate size, rendered from the full-resolution source."""
    return render(image.source, image.box, image.size)


def rotate_image(image: EpisodeImage, angle: float, *, max_pixels: int) -> EpisodeImage:
    """Rotate counter-clockwise by ``angle`` degrees (exact for multiples of 90, else expanded, white fill)."""
    angle = angle % 360.0
    pixels = full_pixels(image)
    exact = {90.0: Image.Transpose.ROTATE_90, 180.0: Image.Transpose.ROTATE_180, 270.0: Image.Transpose.ROTATE_270}
    if angle == 0.0:
        rotated = pixels.copy()
    elif angle in exact:
        rotated = pixels.transpose(exact[angle])
    else:
        rotated = pixels.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=(255, 255, 255))
    return make_root(rotated, max_pixels)


def flip_image(image: EpisodeImage, direction: str, *, max_pixels: int) -> EpisodeImage:
    """Mirror left-right (``horizontal``) or top-bottom (``vertical``)."""
    modes = {"horizontal": Image.Transpose.FLIP_LEFT_RIGHT, "vertical": Image.Transpose.FLIP_TOP_BOTTOM}
    key = direction.strip().lower()
    if key not in modes:
        raise ToolError(f"direction must be 'horizontal' or 'vertical', got {direction!r}")
    return make_root(full_pixels(image).transpose(modes[key]), max_pixels)


def adjust_image(image: EpisodeImage, contrast: float, brightness: float, *, max_pixels: int,
                 max_factor: float = 10.0) -> EpisodeImage:
    """Scale contrast and brightness (1.0 keeps them; 2.0 doubles; 0.5 halves)."""
    for name, value in (("contrast", contrast), ("brightness", brightness)):
        if not 0.0 < value <= max_factor:
            raise ToolError(f"{name} must be > 0 and <= {max_factor:g}, got {value:g}")
    pixels = full_pixels(image)
    if contrast != 1.0:
        pixels = ImageEnhance.Contrast(pixels).enhance(contrast)
    if brightness != 1.0:
        pixels = ImageEnhance.Brightness(pixels).enhance(brightness)
    return make_root(pixels if pixels is not image.source else pixels.copy(), max_pixels)


def load_example_images(example: dict, max_pixels: int = DEFAULT_MAX_PIXELS, decode: bool = True) -> list[Image.Image]:
    """The input images of a data-set row, decoded to RGB, in order (``decode=False``: RGB files
    checked but decoded when first used, ``open_checked_image``).

    Reads ``images`` (a list, or one entry) or else ``image``. An entry is a PIL image, a path, or
    a ``{"bytes": ..., "path": ...}`` dict (an undecoded ``datasets`` Image). Relative paths are
    resolved inside ``image_root`` or ``data_root`` (also trying its ``images/`` folder, the
    ImageMining layout), refusing paths that leave the root; absolute paths are used as given.
    Raises ``RecordError`` for a missing or broken file.
    """
    from lookcloser.data_builders.records import RecordError, resolve_image_path

    entries = example.get("images")
    if entries is None:
        entries = example.get("image")
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        entries = [entries]
    root = example.get("image_root") or example.get("data_root")
    rid = next((example[k] for k in ("id", "query_id", "question_id") if example.get(k) is not None), None)
    images = []
    for entry in entries:
        if isinstance(entry, Image.Image):
            images.append(to_rgb(entry))
            continue
        if isinstance(entry, dict) and entry.get("bytes"):
            import io

            images.append(open_image(io.BytesIO(entry["bytes"])))
            continue
        if isinstance(entry, dict):
            entry = entry.get("path")
        if not isinstance(entry, (str, Path)) or not str(entry):
            raise RecordError("example", rid, "images", f"cannot read an image from {type(entry).__name__}")
        path = Path(entry)
        if not path.is_absolute():
            base = Path(root) if root else Path.cwd()
            resolved = resolve_image_path(base, str(path), source="example", rid=rid)
            if not resolved.exists() and root and (base / "images").is_dir():
                resolved = resolve_image_path(base / "images", str(path), source="example", rid=rid)
            path = resolved
        images.append(open_checked_image(path, source="example", rid=rid, max_pixels=max_pixels, decode=decode))
    return images
