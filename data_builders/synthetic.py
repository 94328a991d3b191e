"""Synthetic verifiable tasks in TIR-Bench's record format, from any folder of images.

Each item is a TIR-Bench record (``id``, ``task``, ``prompt``, ``answer``, ``image_1``,
``image_2``, ``meta_data``) whose images are written under the output folder, so
``rewards.tir_bench`` scores it unchanged, plus the oracle's tool calls (``ToolStep``) that
``data_builders.tool_sft`` turns into a multi-turn SFT trajectory for the cold start:

- ``jigsaw``: an n x n shuffle; the answer lists, for each position of the original image
  (row by row), the number of the scrambled piece that belongs there. ``meta_data.difficulty = n``.
- ``rotation_game``: the image turned counter-clockwise; MCQ of clockwise angles that restore it.
- ``spot_difference``: two images that differ in chosen cells of an n-row x m-column grid; the
  answer lists the cell numbers (1-based, row by row).
- ``visual_search``: a tiny coloured shape in a named cell of a grid over a large image, beside shapes
  of every other option colour; MCQ of its colour (needs a crop of the cell; see ``search_sizes``).
  ``search_grid: 0`` is the free search (no hint, a pixel box).
- ``ocr``: a small printed code on a label in a large image; the answer is the code.

Deterministic: item ``i`` draws from ``random.Random(f"{seed}:{i}")`` whatever the other items are.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from lookcloser.data_builders.procedural import (
    PICTURE_SOURCES,
    make_spot_difference_varied,
    procedural_source,
    rotation_fill,
)
from lookcloser.data_builders.program_tasks import PROGRAM_MAKERS, PROGRAM_TASKS
from lookcloser.data_builders.records import RecordError, check_image, resolve_image_path
from lookcloser.data_builders.tir_items import (
    COLOURS,
    LETTERS,
    SHAPES,
    SyntheticItem,
    ToolStep,
    spot_difference_crops,
    spot_difference_prompt,
)
from lookcloser.data_builders.tir_items import ItemWriter as _Writer
from lookcloser.data_builders.tir_items import draw_shape as _draw_shape
from lookcloser.data_builders.tir_items import item_record as _record
from lookcloser.data_builders.tir_items import mcq as _mcq
from lookcloser.data_builders.tir_items import pixel_box as _box
from lookcloser.data_builders.tir_items import resize_long_side as _resize_long_side

TASKS = ("jigsaw", "rotation_game", "spot_difference", "visual_search", "ocr")
# Every kind: the five above (the default everywhere) and those a short program solves (data_builders.program_tasks).
ALL_TASKS = TASKS + PROGRAM_TASKS
# The benchmark whose format the tasks take: the environment that plays them by default (its tools), and their rows'.
BENCHMARK = "tir_bench"
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff")
# No look-alike characters (O/0, I/1/L, S/5, B/8, Z/2): a misread is the model's error, not the font's.
CODE_ALPHABET = "ACDEFGHJKMNPQRTUVWXY3479"


@dataclass
class SyntheticConfig:
    seed: int = 0
    tasks: tuple[str, ...] = TASKS
    base_size: int = 512  # long side of jigsaw / rotation / spot-the-difference images
    canvas_size: int = 1600  # long side of the large zoom-task images
    jigsaw_sizes: tuple[int, ...] = (2, 3)
    grid_rows: tuple[int, int] = (3, 5)
    grid_cols: tuple[int, int] = (3, 5)
    max_differences: int = 5
    rotation_step: int = 5
    n_options: int = 6
    # visual_search (see search_sizes): the target's cell of a search_grid x search_grid grid is named
    # in the prompt and a normalised box crops it; search_grid 0 is the free search on canvas_size.
    search_grid: int = 3
    model_pixels: int = 128 * 128  # the model's input pixel budget (the tiny model's processor)
    search_shape_px: float = 21.0  # shape side in the picture the model sees without a tool (x grid in a crop)
    search_canvas: int | None = None  # None: 2 x sqrt(model_pixels) per grid cell
    search_saturation: float = 0.0  # colour kept in the background photo
    search_shuffle_options: bool = False  # fixed colour order: the letter names the colour
    # "folder": the pictures of generate_items' image_dir; "procedural": drawn from each item's rng, and the kinds
    # varied so that a program copied from the question fails (data_builders.procedural).
    pictures: str = "folder"


def list_images(folder: str | Path) -> list[Path]:
    """Every image file under ``folder`` (recursive, sorted, so the pool is the same on every machine)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RecordError(folder, None, None, "image folder not found")
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def _font(size: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=size)


def _options(rng: random.Random, correct: str, pool: list[str], n: int) -> tuple[list[str], str]:
    """Shuffle ``correct`` among ``n - 1`` distractors; return the options and the gold letter."""
    choices = [correct, *rng.sample([p for p in pool if p != correct], min(n - 1, len(pool) - 1))]
    rng.shuffle(choices)
    return choices, LETTERS[choices.index(correct)]


def _context_box(cx: float, cy: float, side: float, width: int, height: int) -> list[int]:
    """A square box of ``side`` around a point, shifted to stay inside the image."""
    side = min(side, width, height)
    x1 = min(max(0.0, cx - side / 2), width - side)
    y1 = min(max(0.0, cy - side / 2), height - side)
    return _box(x1, y1, x1 + side, y1 + side)


def jigsaw_prompt(n: int) -> str:
    """The jigsaw question for an ``n`` x ``n`` puzzle."""
    return (f"Instructions: Please complete the jigsaw puzzle shown in the image. The original image has been "
            f"divided into {n}×{n} pieces and scrambled. The pieces are numbered 1 to {n * n} row by row in the "
            f"scrambled image. Output the correct order of the pieces as a list of piece numbers, row by row: "
            f"the i-th number is the piece that belongs at position i of the original image.")


def make_jigsaw(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
                cfg: SyntheticConfig) -> SyntheticItem:
    n = rng.choice(cfg.jigsaw_sizes)
    img = _resize_long_side(src, cfg.base_size)
    tw, th = img.width // n, img.height // n
    img = img.crop((0, 0, tw * n, th * n))
    perm = list(range(n * n))
    while perm == sorted(perm):  # a puzzle that is already solved teaches nothing
        rng.shuffle(perm)
    # Scrambled position j shows original piece perm[j].
    shuffled = Image.new("RGB", img.size)
    for j, piece in enumerate(perm):
        pr, pc = divmod(piece, n)
        r, c = divmod(j, n)
        shuffled.paste(img.crop((pc * tw, pr * th, (pc + 1) * tw, (pr + 1) * th)), (c * tw, r * th))
    draw = ImageDraw.Draw(shuffled)
    for k in range(1, n):  # thin seams show where the pieces are
        draw.line([(k * tw, 0), (k * tw, shuffled.height)], fill=(255, 255, 255), width=2)
        draw.line([(0, k * th), (shuffled.width, k * th)], fill=(255, 255, 255), width=2)
    answer_list = [perm.index(i) + 1 for i in range(n * n)]
    answer = "[" + ", ".join(map(str, answer_list)) + "]"
    rel, path = writer.save(shuffled, "jigsaw", item_id, 1)
    prompt = jigsaw_prompt(n)
    steps: list[ToolStep] = []
    prev: list[str] = []
    for r in range(n):
        pieces = [r * n + c + 1 for c in range(n)]
        places = [f"piece {p} belongs at row {divmod(perm[p - 1], n)[0] + 1}, column {divmod(perm[p - 1], n)[1] + 1}"
                  for p in pieces]
        think = (f"Row {r + 1} of the scrambled image holds pieces {', '.join(map(str, pieces))}; I crop it to "
                 f"match their edges and content." if r == 0 else
                 f"From the previous crop: {'; '.join(prev)}. Next, row {r + 1}.")
        steps.append(ToolStep(think, [("crop", {"image_index": 0, "box": _box(0, r * th, n * tw, (r + 1) * th)})]))
        prev = places
    final = f"From the last crop: {'; '.join(prev)}. Reading the original positions row by row gives {answer}."
    return SyntheticItem(_record(item_id, "jigsaw", prompt, answer, [rel], {"difficulty": n}), [path], steps, final)


def rotation_prompt(options: list[int]) -> str:
    """The rotation_game question with these options (degrees)."""
    return _mcq("How many degrees should you rotate this image CLOCKWISE to restore it to its original orientation?",
                [str(a) for a in options], "°")


def make_rotation(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
                  cfg: SyntheticConfig) -> SyntheticItem:
    # On procedural pictures the turned picture lies on a fill of any colour (drawn first); else on white.
    fill = rotation_fill(rng) if cfg.pictures == "procedural" else (255, 255, 255)
    step = cfg.rotation_step
    angles = list(range(step, 360, step))
    angle = rng.choice(angles)
    # Distractors at least 20 degrees from the answer and each other: the task is solvable by trying them.
    pool = [angle]
    for candidate in rng.sample(angles, len(angles)):
        if len(pool) == cfg.n_options:
            break
        if all(min(abs(candidate - a), 360 - abs(candidate - a)) >= 20 for a in pool):
            pool.append(candidate)
    rng.shuffle(pool)
    letter = LETTERS[pool.index(angle)]
    img = _resize_long_side(src, cfg.base_size)
    rotated = img.rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=fill)
    rel, path = writer.save(rotated, "rotation_game", item_id, 1)
    prompt = rotation_prompt(pool)
    steps = [ToolStep("The image looks tilted. The rotate tool turns counter-clockwise, so I try a clockwise turn of "
                      f"{angle}° as a rotation by {-angle}°.", [("rotate", {"image_index": 0, "angle": -angle})])]
    final = f"Rotating {angle}° clockwise puts the image upright, which is option {letter}."
    meta = {"angle": angle, "options": pool, **({"fill": list(fill)} if cfg.pictures == "procedural" else {})}
    return SyntheticItem(_record(item_id, "rotation_game", prompt, letter, [rel], meta), [path], steps, final)


def make_spot_difference(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
                         cfg: SyntheticConfig) -> SyntheticItem:
    rows, cols = rng.randint(*cfg.grid_rows), rng.randint(*cfg.grid_cols)
    left = _resize_long_side(src, cfg.base_size)
    right = left.copy()
    cw, ch = left.width / cols, left.height / rows
    k = rng.randint(2, max(2, min(cfg.max_differences, rows * cols // 3)))
    cells = sorted(rng.sample(range(rows * cols), k))
    draw = ImageDraw.Draw(right)
    for cell in cells:
        r, c = divmod(cell, cols)
        side = rng.uniform(0.35, 0.65) * min(cw, ch)
        # Inside the cell with a 10% margin, so a difference never spills into a neighbouring patch.
        x1 = c * cw + 0.1 * cw + rng.uniform(0, max(0.0, 0.8 * cw - side))
        y1 = r * ch + 0.1 * ch + rng.uniform(0, max(0.0, 0.8 * ch - side))
        _draw_shape(draw, rng.choice(SHAPES), (x1, y1, x1 + side, y1 + side), rng.choice(list(COLOURS.values())),
                    outline=(0, 0, 0))
    rel_1, path_1 = writer.save(left, "spot_difference", item_id, 1)
    rel_2, path_2 = writer.save(right, "spot_difference", item_id, 2)
    answer = ", ".join(str(c + 1) for c in cells)
    prompt = spot_difference_prompt(rows, cols)
    steps, final = spot_difference_crops(cells, cols, cw, ch)
    return SyntheticItem(_record(item_id, "spot_difference", prompt, answer, [rel_1, rel_2],
                                 {"rows": rows, "cols": cols}), [path_1, path_2], steps, final)


def _canvas(src: Image.Image, cfg: SyntheticConfig) -> Image.Image:
    return _resize_long_side(src, cfg.canvas_size)


def make_visual_search(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
                       cfg: SyntheticConfig) -> SyntheticItem:
    if cfg.search_grid <= 0:
        return _free_search(rng, src, item_id, writer, cfg)
    return _grid_search(rng, src, item_id, writer, cfg)


def search_sizes(cfg: SyntheticConfig) -> tuple[int, float]:
    """Canvas side and shape side (full-resolution pixels) of the grid ``visual_search``.

    Sized from the model's input pixel budget so that the shape is ``search_shape_px`` pixels
    wide in the picture the model sees (colour smeared into the background: unreadable), and
    ``search_grid`` times wider in a crop of its cell, which the model sees at (up to) the same
    pixel budget. The canvas is twice the crop's shown side per cell, so a cell crop is shown
    at the full budget, never upscaled.

    >>> search_sizes(SyntheticConfig())
    (768, 126.0)
    """
    view = math.isqrt(cfg.model_pixels)
    canvas = cfg.search_canvas or 2 * view * cfg.search_grid
    return canvas, cfg.search_shape_px * canvas / view


def _desaturate(img: Image.Image, keep: float) -> Image.Image:  # only the shapes carry strong colour
    gray = img.convert("L").convert("RGB")
    return Image.blend(gray, img, keep) if keep > 0 else gray


def _square(img: Image.Image, side: int) -> Image.Image:
    scale = side / min(img.size)
    img = img.resize((max(side, round(img.width * scale)), max(side, round(img.height * scale))),
                     Image.Resampling.LANCZOS)
    left, top = (img.width - side) // 2, (img.height - side) // 2
    return img.crop((left, top, left + side, top + side))


# The six most separable colours, in this order in every grid-search question.
SEARCH_COLOURS = ("red", "green", "blue", "yellow", "cyan", "magenta")
ROW_WORDS = {3: ("top", "middle", "bottom")}
COL_WORDS = {3: ("left", "centre", "right")}


def cell_name(row: int, col: int, n: int) -> str:
    """A grid cell in words for a 3x3 grid (one distinct word per row and per column: a tiny model
    finds them by content), else "row R, column C".

    >>> cell_name(0, 2, 3), cell_name(1, 0, 4)
    ('top right', 'row 2, column 1')
    """
    if n in ROW_WORDS:
        return f"{ROW_WORDS[n][row]} {COL_WORDS[n][col]}"
    return f"row {row + 1}, column {col + 1}"


def _fraction(v: float) -> float | int:  # a grid line as the model writes it: 0, 0.333, 1
    return int(round(v, 3)) if round(v, 3) in (0, 1) else round(v, 3)


def _grid_search(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
                 cfg: SyntheticConfig) -> SyntheticItem:
    """The target shape sits in a named cell of an n x n grid; every other option colour sits on a
    shape in another cell. Without a crop the colours are a few pixels each and all present; the
    crop of the named cell (normalised box) shows only the target, ``search_grid`` times larger."""
    n = cfg.search_grid
    canvas, side = search_sizes(cfg)
    img = _desaturate(_square(src, canvas), cfg.search_saturation)
    colours = list(SEARCH_COLOURS)[:min(cfg.n_options, len(SEARCH_COLOURS))]
    options = colours[:]
    if cfg.search_shuffle_options:
        rng.shuffle(options)
    colour = rng.choice(colours)
    letter = LETTERS[options.index(colour)]
    others = [c for c in colours if c != colour]
    cells = rng.sample(range(n * n), 1 + len(others))
    cell_side = canvas / n
    draw = ImageDraw.Draw(img)
    shape = rng.choice(SHAPES)
    for cell, name in zip(cells, [colour, *others]):
        r, c = divmod(cell, n)
        # Inside the cell with a margin, so a cell crop shows the whole shape and no neighbour.
        x1 = c * cell_side + rng.uniform(0.2, 0.8) * (cell_side - side)
        y1 = r * cell_side + rng.uniform(0.2, 0.8) * (cell_side - side)
        kind = shape if name == colour else rng.choice(SHAPES)
        _draw_shape(draw, kind, (x1, y1, x1 + side, y1 + side), COLOURS[name])
    rel, path = writer.save(img, "visual_search", item_id, 1)
    row, col = divmod(cells[0], n)
    where = cell_name(row, col, n)
    prompt = _mcq(f"A small {shape} is in the {where} cell of a {n}x{n} grid over this image. What colour is it?",
                  options)
    box = [_fraction(col / n), _fraction(row / n), _fraction((col + 1) / n), _fraction((row + 1) / n)]
    steps = [ToolStep(f"The {where} cell is too small to see. I crop it.", [("crop", {"image_index": 0, "box": box})])]
    final = f"The crop shows {colour}: option {letter}."
    meta = {"shape": shape, "colour": colour, "grid": n, "row": row + 1, "col": col + 1, "box": box}
    look = _mcq(f"What colour is the {shape} in this picture?", options)
    return SyntheticItem(_record(item_id, "visual_search", prompt, letter, [rel], meta), [path], steps, final, look)


def _free_search(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
                 cfg: SyntheticConfig) -> SyntheticItem:
    """The original search: anywhere on a large canvas, no hint, a pixel box (for large models)."""
    img = _canvas(src, cfg)
    shape = rng.choice(SHAPES)
    colour = rng.choice(list(COLOURS))
    side = rng.randint(12, 20)
    x1, y1 = rng.uniform(side, img.width - 2 * side), rng.uniform(side, img.height - 2 * side)
    _draw_shape(ImageDraw.Draw(img), shape, (x1, y1, x1 + side, y1 + side), COLOURS[colour], outline=(0, 0, 0))
    options, letter = _options(rng, colour, list(COLOURS), min(cfg.n_options, len(COLOURS)))
    rel, path = writer.save(img, "visual_search", item_id, 1)
    prompt = _mcq(f"A small {shape} is hidden somewhere in this image. What colour is it?", options)
    box = _context_box(x1 + side / 2, y1 + side / 2, 8 * side, img.width, img.height)
    steps = [ToolStep(f"The {shape} is too small to judge at this size. There is a small object near "
                      f"({round(x1 + side / 2)}, {round(y1 + side / 2)}); I crop around it.",
                      [("crop", {"image_index": 0, "box": box})])]
    final = f"The crop shows a small {colour} {shape}, so the answer is option {letter}."
    return SyntheticItem(_record(item_id, "visual_search", prompt, letter, [rel], {"shape": shape}), [path], steps,
                         final)


def make_ocr(rng: random.Random, src: Image.Image, item_id: int, writer: _Writer,
             cfg: SyntheticConfig) -> SyntheticItem:
    img = _canvas(src, cfg)
    code = "".join(rng.choice(CODE_ALPHABET) for _ in range(rng.randint(5, 6)))
    font = _font(rng.randint(11, 15))
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = draw.textbbox((0, 0), code, font=font)
    pad = 3
    w, h = right - left + 2 * pad, bottom - top + 2 * pad
    x1, y1 = rng.uniform(0, img.width - w), rng.uniform(0, img.height - h)
    draw.rectangle((x1, y1, x1 + w, y1 + h), fill=(255, 255, 255), outline=(0, 0, 0))
    draw.text((x1 + pad - left, y1 + pad - top), code, fill=(0, 0, 0), font=font)
    rel, path = writer.save(img, "ocr", item_id, 1)
    prompt = ("A small white label with a printed code is somewhere in this image. What is the code on the label? "
              "Answer with the code only.")
    box = _context_box(x1 + w / 2, y1 + h / 2, max(96, 3 * w), img.width, img.height)
    steps = [ToolStep(f"The label is tiny at this size; it is near ({round(x1 + w / 2)}, {round(y1 + h / 2)}). "
                      "I crop around it to read the code.", [("crop", {"image_index": 0, "box": box})])]
    final = f"The crop shows the label clearly: it reads {code}."
    return SyntheticItem(_record(item_id, "ocr", prompt, code, [rel], {}), [path], steps, final)


MAKERS = {"jigsaw": make_jigsaw, "rotation_game": make_rotation, "spot_difference": make_spot_difference,
          "visual_search": make_visual_search, "ocr": make_ocr, **PROGRAM_MAKERS}


def check_config(cfg: SyntheticConfig) -> None:
    """Known task kinds and picture source (a caller's mistake: ValueError)."""
    unknown = sorted(set(cfg.tasks) - set(MAKERS))
    if unknown:
        raise ValueError(f"unknown synthetic task(s) {unknown}; choose from {list(MAKERS)}")
    if cfg.pictures not in PICTURE_SOURCES:
        raise ValueError(f"unknown pictures {cfg.pictures!r}; choose from {list(PICTURE_SOURCES)}")


def config_settings(cfg: SyntheticConfig) -> dict:
    """The config as a build's settings record it (JSON values); ``pictures`` only when not the folder's, so the
    settings (and the folders keyed on them) of builds made before it existed stay the same."""
    settings = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}
    if cfg.pictures == "folder":
        del settings["pictures"]
    return settings


def generate_items(image_dir: str | Path | None, out_dir: str | Path, count: int, cfg: SyntheticConfig | None = None,
                   *, report=None, max_pixels: int | None = None, start_id: int = 1) -> Iterator[SyntheticItem]:
    """Yield ``count`` items, cycling through ``cfg.tasks`` and a seeded order of the source images.

    A source image that is missing, broken, outside the folder or over the pixel limit is
    rejected through ``report`` (fail: raise; skip: log it and use the next image).
    ``cfg.pictures == "procedural"``: each item's picture is drawn from the item's own rng instead
    (``image_dir`` unused) and the kinds vary (``data_builders.procedural``).
    """
    cfg = cfg or SyntheticConfig()
    check_config(cfg)
    procedural = cfg.pictures == "procedural"
    sources = None if procedural else _folder_pictures(image_dir, cfg.seed, report, max_pixels)
    makers = {**MAKERS, "spot_difference": make_spot_difference_varied} if procedural else MAKERS
    writer = _Writer(Path(out_dir))
    for i in range(count):
        item_id = start_id + i
        task = cfg.tasks[i % len(cfg.tasks)]
        rng = random.Random(f"{cfg.seed}:{item_id}")
        src, rel = (procedural_source(rng, task, cfg.base_size), None) if procedural else next(sources)
        item = makers[task](rng, src, item_id, writer, cfg)
        if rel is not None:
            item.record["meta_data"]["source_image"] = rel
        if report is not None:
            report.written += 1
        yield item


def _folder_pictures(image_dir: str | Path, seed: int, report, max_pixels: int | None) -> Iterator[tuple]:
    """The folder's pictures as ``(picture, path relative to the folder)``, in a seeded order, cycling."""
    root = Path(image_dir).resolve()
    pool = list_images(root)
    if not pool:
        raise RecordError(root, None, None, "the image folder holds no images")
    random.Random(seed).shuffle(pool)
    return _checked_pictures(root, pool, report, {"max_pixels": max_pixels} if max_pixels else {})


def _checked_pictures(root: Path, pool: list[Path], report, kwargs: dict) -> Iterator[tuple]:
    bad, cursor = set(), 0
    while True:
        if len(bad) == len(pool):
            raise RecordError(root, None, None, "no usable source image left (every image was rejected)")
        path = pool[cursor % len(pool)]
        cursor += 1
        if path in bad:
            continue
        if report is not None:
            report.read += 1
        try:
            rel = str(path.relative_to(root))
            checked = resolve_image_path(root, rel, source=root, rid=rel, field="image")
            check_image(checked, source=root, rid=rel, field="image", **kwargs)
            with Image.open(checked) as opened:
                src = opened.convert("RGB")
        except RecordError as err:
            bad.add(path)
            if report is None:
                raise
            report.reject(err, {"image": str(path)})
            continue
        yield src, rel
