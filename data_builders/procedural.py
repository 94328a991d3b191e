"""The synthetic kinds on procedural pictures (``SyntheticConfig.pictures = "procedural"``), varied so that a
program copied from the question alone fails.

Each item's source picture is drawn from the item's own rng (``data_builders.pictures``): non-square
(width / height 0.6-1.6), a smooth texture (jigsaw: every piece unique, edges that continue), with shapes for
rotation_game and the zoom kinds. On top of what the five kinds do on a folder of pictures:

- ``spot_difference``: a difference is filled with a named colour or with any colour far from the ground
  under it; the second picture carries per-pixel noise (+-4 per channel) and, in a share of items, a 1-pixel
  shift of the whole picture; in half the items the grid is drawn on both pictures (black lines, 2-3 px)
  and the prompt does not state its size (``meta_data``: ``grid_shown``, ``shift``, ``noise``). Patch ``r, c``
  spans rows ``r*h//rows`` to ``(r+1)*h//rows`` (columns alike), and the differing patches are exactly those
  where more than 1% of the pixels differ by more than 60 (channel differences summed).
- ``rotation_game``: the turned picture lies on a uniform fill of any colour (``meta_data.fill``).
"""

from __future__ import annotations

import random

import numpy as np
from PIL import Image, ImageDraw

from lookcloser.data_builders.pictures import aspect_size, picture, texture
from lookcloser.data_builders.tir_items import (
    COLOURS,
    SHAPES,
    ItemWriter,
    SyntheticItem,
    draw_shape,
    item_record,
    spot_difference_crops,
    spot_difference_prompt,
)

PICTURE_SOURCES = ("folder", "procedural")
SHIFT_SHARE = 0.3  # items whose second picture is shifted by one pixel
NOISE = 4
GRID_SHOWN_PROMPT = ("The two images are divided into a grid of patches by the black lines drawn on them; patches "
                     "are numbered from 1, left to right and top to bottom. Output the list of patch indices where the "
                     "two images differ.")


def procedural_source(rng: random.Random, task: str, base_size: int) -> Image.Image | None:
    """The item's source picture, drawn from its rng (None for kinds that draw their own picture)."""
    if task in ("maze", "color", "refcoco"):
        return None
    width, height = aspect_size(rng, base_size)
    if task in ("jigsaw", "spot_difference"):  # smooth: edges to match, and a 1-px shift stays under the threshold
        return texture(rng, width, height)
    return picture(rng, width, height, shapes=rng.randint(3, 8))


def rotation_fill(rng: random.Random) -> tuple[int, int, int]:
    """The uniform colour a turned picture lies on."""
    return tuple(rng.randrange(256) for _ in range(3))


def _far_fill(rng: random.Random, ground: np.ndarray) -> tuple[int, int, int]:
    """A named colour, or any colour at least 150 (summed) from ``ground`` and not dark."""
    if rng.random() < 0.5:
        return rng.choice(list(COLOURS.values()))
    while True:
        fill = tuple(rng.randrange(256) for _ in range(3))
        if np.abs(np.array(fill) - ground).sum() >= 150 and sum(fill) >= 150:
            return fill


def _shift(pixels: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """The picture moved by (dx, dy) pixels, the uncovered edge repeating its neighbour."""
    h, w = pixels.shape[:2]
    ys = np.clip(np.arange(h) - dy, 0, h - 1)
    xs = np.clip(np.arange(w) - dx, 0, w - 1)
    return pixels[ys][:, xs]


def draw_grid(pixels: np.ndarray, rows: int, cols: int, width: int) -> None:
    """Black lines of ``width`` pixels on the inner patch boundaries (``k*h//rows``, ``k*w//cols``), in place."""
    h, w = pixels.shape[:2]
    for k in range(1, rows):
        y = k * h // rows - width // 2
        pixels[y:y + width] = 0
    for k in range(1, cols):
        x = k * w // cols - width // 2
        pixels[:, x:x + width] = 0


def make_spot_difference_varied(rng: random.Random, src: Image.Image, item_id: int, writer: ItemWriter,
                                cfg) -> SyntheticItem:
    rows, cols = rng.randint(*cfg.grid_rows), rng.randint(*cfg.grid_cols)
    left = np.asarray(src.convert("RGB")).copy()
    h, w = left.shape[:2]
    cw, ch = w / cols, h / rows
    k = rng.randint(2, max(2, min(cfg.max_differences, rows * cols // 3)))
    cells = sorted(rng.sample(range(rows * cols), k))
    right_img = Image.fromarray(left.copy())
    draw = ImageDraw.Draw(right_img)
    for cell in cells:
        r, c = divmod(cell, cols)
        side = rng.uniform(0.35, 0.65) * min(cw, ch)
        # Inside the cell with a 10% margin, so a difference never spills into a neighbouring patch.
        x1 = c * cw + 0.1 * cw + rng.uniform(0, max(0.0, 0.8 * cw - side))
        y1 = r * ch + 0.1 * ch + rng.uniform(0, max(0.0, 0.8 * ch - side))
        ground = left[int(y1):int(y1 + side) + 1, int(x1):int(x1 + side) + 1].reshape(-1, 3).mean(axis=0)
        draw_shape(draw, rng.choice(SHAPES), (x1, y1, x1 + side, y1 + side), _far_fill(rng, ground),
                   outline=(0, 0, 0))
    right = np.asarray(right_img).astype(np.int16)
    shift = rng.choice([(1, 0), (-1, 0), (0, 1), (0, -1)]) if rng.random() < SHIFT_SHARE else None
    if shift:
        right = _shift(right, *shift)
    noise = np.random.default_rng(rng.getrandbits(64)).integers(-NOISE, NOISE + 1, size=right.shape)
    right = np.clip(right + noise, 0, 255).astype(np.uint8)
    grid_shown = rng.random() < 0.5
    if grid_shown:  # drawn after the noise and the shift: the lines are the same pixels in both pictures
        line = rng.choice((2, 3))
        draw_grid(left, rows, cols, line)
        draw_grid(right, rows, cols, line)
    rel_1, path_1 = writer.save(Image.fromarray(left), "spot_difference", item_id, 1)
    rel_2, path_2 = writer.save(Image.fromarray(right), "spot_difference", item_id, 2)
    answer = ", ".join(str(c + 1) for c in cells)
    prompt = GRID_SHOWN_PROMPT if grid_shown else spot_difference_prompt(rows, cols)
    steps, final = spot_difference_crops(cells, cols, cw, ch)
    meta = {"rows": rows, "cols": cols, "grid_shown": grid_shown, "shift": list(shift) if shift else None,
            "noise": NOISE}
    return SyntheticItem(item_record(item_id, "spot_difference", prompt, answer, [rel_1, rel_2], meta),
                         [path_1, path_2], steps, final)
