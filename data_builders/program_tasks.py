"""Three of TIR-Bench's kinds that a short program solves exactly from the pixels, in TIR-Bench's record format.

- ``maze``: a perfect block maze (randomised depth-first search on an odd grid of cells): walls black, one
  cell wide, the border included; paths white or a pale uniform fill; the start cell green, the goal red.
  The answer is the number of moves (up, down, left, right, one cell each) of the shortest path from start
  to goal. ``meta_data``: ``rows``, ``cols`` (cells, walls included), ``pitch`` (pixels per cell), ``fill``.
- ``color``: how many shapes of a named colour (``COLOURS``) are on a pale procedural background, among shapes
  of other named colours; none overlap or touch, each covers at least 20 pixels. ``meta_data``: ``colour``.
- ``refcoco``: which of six percentages, 8 points apart, is closest to the share of the picture that one large
  shape of a named colour covers (TIR-Bench's wording); the true share is within 0.5 points of the gold
  option. ``meta_data``: ``colour``, ``shape``, ``options`` (the numbers, in the prompt's order), ``share``.

The pictures are non-square. No image tool solves these: the oracle has no tool steps (``steps`` is empty);
they are solved with the ``python`` tool (``agent.code_oracle``). Every answer is checked from the saved
pictures in tests/test_program_tasks.py with plain numpy, as ``looktools`` computes it.
"""

from __future__ import annotations

import random

import numpy as np
from PIL import Image, ImageDraw

from lookcloser.data_builders.pictures import aspect_size, light_background
from lookcloser.data_builders.tir_items import (
    COLOURS,
    LETTERS,
    SHAPES,
    ItemWriter,
    SyntheticItem,
    draw_shape,
    item_record,
)
from lookcloser.looktools import bfs

PROGRAM_TASKS = ("maze", "color", "refcoco")
WALL, START, GOAL = (0, 0, 0), COLOURS["green"], COLOURS["red"]
MAZE_PROMPT = ("The picture shows a maze: black cells are walls, the other cells are paths. Moving one cell up, "
               "down, left or right at a time, how many moves does the shortest path from the green cell to the red "
               "cell take? Answer as an integer.")


def perfect_maze(rng: random.Random, rows: int, cols: int) -> np.ndarray:
    """A ``rows`` x ``cols`` (odd) grid, True on paths: rooms at odd coordinates, carved by a randomised
    depth-first search, so exactly one path joins any two path cells; the border is wall.

    >>> free = perfect_maze(random.Random(0), 5, 7)
    >>> free.shape, bool(free[0].any() or free[:, 0].any()), int(free.sum())  # 6 rooms + 5 passages
    ((5, 7), False, 11)
    """
    free = np.zeros((rows, cols), dtype=bool)
    start = (2 * rng.randrange(rows // 2) + 1, 2 * rng.randrange(cols // 2) + 1)
    free[start] = True
    stack = [start]
    while stack:
        r, c = stack[-1]
        nexts = [(r + dr, c + dc) for dr, dc in ((-2, 0), (2, 0), (0, -2), (0, 2))
                 if 0 < r + dr < rows - 1 and 0 < c + dc < cols - 1 and not free[r + dr, c + dc]]
        if not nexts:
            stack.pop()
            continue
        nr, nc = rng.choice(nexts)
        free[(r + nr) // 2, (c + nc) // 2] = free[nr, nc] = True
        stack.append((nr, nc))
    return free


def make_maze(rng: random.Random, src: Image.Image, item_id: int, writer: ItemWriter, cfg) -> SyntheticItem:
    rows, cols = 2 * rng.randint(4, 10) + 1, 2 * rng.randint(4, 10) + 1  # 9-21 cells each way
    pitch = rng.randint(6, 14)
    free = perfect_maze(rng, rows, cols)
    paths = [tuple(int(v) for v in cell) for cell in np.argwhere(free)]
    start, goal = rng.sample(paths, 2)
    fill = (255, 255, 255) if rng.random() < 0.5 else tuple(rng.randint(200, 250) for _ in range(3))
    grid = np.where(free[..., None], np.array(fill, np.uint8), np.array(WALL, np.uint8))
    grid[start], grid[goal] = START, GOAL
    img = Image.fromarray(np.repeat(np.repeat(grid, pitch, axis=0), pitch, axis=1).astype(np.uint8), "RGB")
    rel, path = writer.save(img, "maze", item_id, 1)
    answer = bfs(free, start, goal)  # the library's search: start and goal are path cells here
    meta = {"rows": rows, "cols": cols, "pitch": pitch, "fill": list(fill)}
    return SyntheticItem(item_record(item_id, "maze", MAZE_PROMPT, str(answer), [rel], meta), [path], [],
                         f"The shortest path from the green cell to the red cell takes {answer} moves.")


def _place(rng: random.Random, taken: list[tuple[float, ...]], width: int, height: int, side: float,
           gap: float = 4.0) -> tuple[float, float, float, float] | None:
    """A free square box of ``side`` at least ``gap`` pixels from every box in ``taken`` (None after 200 tries)."""
    for _ in range(200):
        x, y = rng.uniform(2, width - side - 2), rng.uniform(2, height - side - 2)
        box = (x, y, x + side, y + side)
        if all(box[2] + gap < t[0] or t[2] + gap < box[0] or box[3] + gap < t[1] or t[3] + gap < box[1]
               for t in taken):
            taken.append(box)
            return box
    return None


def color_prompt(colour: str) -> str:
    """The color question for shapes of ``colour``."""
    return f"How many {colour} shapes are in the picture? Answer as an integer."


def make_color(rng: random.Random, src: Image.Image, item_id: int, writer: ItemWriter, cfg) -> SyntheticItem:
    width, height = aspect_size(rng, rng.randint(320, 480))
    img = light_background(rng, width, height)
    colour = rng.choice(list(COLOURS))
    count = rng.randint(1, 6)
    others = [c for c in COLOURS if c != colour]
    wanted = [colour] * count + [rng.choice(others) for _ in range(rng.randint(2, 8))]  # targets placed first
    draw, taken, drawn = ImageDraw.Draw(img), [], 0
    for name in wanted:
        box = _place(rng, taken, width, height, rng.uniform(14, 0.18 * min(width, height)))
        if box is None:  # no room left: a distractor is dropped; a target never is (they are placed first)
            if name == colour:
                raise RuntimeError(f"color item {item_id}: no room for target shape {drawn + 1} of {count}")
            continue
        draw_shape(draw, rng.choice(SHAPES), box, COLOURS[name])
        drawn += name == colour
    prompt = color_prompt(colour)
    rel, path = writer.save(img, "color", item_id, 1)
    return SyntheticItem(item_record(item_id, "color", prompt, str(count), [rel], {"colour": colour}), [path], [],
                         f"There are {count} {colour} shapes.")


# The largest share of the picture each shape can cover inside a square of 0.9 x the short side, for a
# picture of aspect 1.6 (circle pi/4, triangle 1/2 of the square).
_MAX_SHARE = {"square": 0.9 ** 2 / 1.6, "circle": 0.9 ** 2 / 1.6 * 0.785, "triangle": 0.9 ** 2 / 1.6 * 0.5}


def refcoco_options(rng: random.Random, gold: int, n: int = 6, spacing: int = 8) -> list[int]:
    """``n`` percentages ``spacing`` apart, within 1-99, one of them ``gold``, shuffled.

    >>> opts = refcoco_options(random.Random(1), 30)
    >>> 30 in opts, sorted(opts) == list(range(min(opts), min(opts) + 48, 8)), bool(min(opts) >= 1 and max(opts) <= 99)
    (True, True, True)
    """
    firsts = [gold - spacing * k for k in range(n) if gold - spacing * k >= 1 and gold + spacing * (n - 1 - k) <= 99]
    first = rng.choice(firsts)
    options = [first + spacing * k for k in range(n)]
    rng.shuffle(options)
    return options


def refcoco_prompt(colour: str, shape: str, options: list[int]) -> str:
    """The refcoco question (TIR-Bench's wording) with these percentages."""
    return (f"Which of the following values is the closest to the proportion of the image occupied by the {colour} "
            f"{shape}?\n" + "\n".join(f"{LETTERS[i]}: {v}%" for i, v in enumerate(options)))


def make_refcoco(rng: random.Random, src: Image.Image, item_id: int, writer: ItemWriter, cfg) -> SyntheticItem:
    width, height = aspect_size(rng, rng.randint(320, 480))
    img = light_background(rng, width, height)
    colour, shape = rng.choice(list(COLOURS)), rng.choice(SHAPES)
    others = [c for c in COLOURS if c != colour]
    share = rng.uniform(0.06, _MAX_SHARE[shape])
    side = min(0.9 * min(width, height), (share * width * height / {"square": 1, "circle": 0.785,
                                                                      "triangle": 0.5}[shape]) ** 0.5)
    x, y = rng.uniform(0, width - side), rng.uniform(0, height - side)
    taken = [(x, y, x + side, y + side)]
    draw = ImageDraw.Draw(img)
    for _ in range(rng.randint(1, 4)):  # smaller shapes of other colours, beside the named one
        box = _place(rng, taken, width, height, rng.uniform(12, 0.15 * min(width, height)))
        if box is not None:
            draw_shape(draw, rng.choice(SHAPES), box, COLOURS[rng.choice(others)])
    draw_shape(draw, shape, taken[0], COLOURS[colour])
    covered = float((np.asarray(img) == np.array(COLOURS[colour], np.uint8)).all(axis=-1).mean())
    gold = round(100 * covered)
    options = refcoco_options(rng, gold)
    letter = LETTERS[options.index(gold)]
    prompt = refcoco_prompt(colour, shape, options)
    rel, path = writer.save(img, "refcoco", item_id, 1)
    meta = {"colour": colour, "shape": shape, "options": options, "share": round(covered, 4)}
    return SyntheticItem(item_record(item_id, "refcoco", prompt, letter, [rel], meta), [path], [],
                         f"The {colour} {shape} covers {100 * covered:.1f}% of the picture, closest to {gold}%: "
                         f"option {letter}.")


PROGRAM_MAKERS = {"maze": make_maze, "color": make_color, "refcoco": make_refcoco}
