"""looktools (the sandbox's image library) on real generated pictures: grids drawn with Pillow, jigsaws cut
from sum-of-sinusoids textures and scrambled as data_builders.synthetic does, pictures rotated with
``expand``, block mazes, coloured shapes. Each answer is computed from how the picture was made, never by
looktools itself."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

from lookcloser import looktools
from lookcloser.looktools import (
    COLOURS,
    best_order,
    bfs,
    binarise,
    changed,
    components,
    diff,
    edge_cost,
    equalise,
    find,
    grid,
    hue_name,
    letter,
    mask_of,
    nearest,
    options,
    pieces,
    pitch,
    share,
    shrink,
    stated_grid,
    tilt,
)

API = {"COLOURS", "pixels", "diff", "grid", "changed", "tilt", "nearest", "options", "letter", "pieces",
       "edge_cost", "stated_grid",
       "best_order", "binarise", "pitch", "shrink", "find", "bfs", "mask_of", "hue_name", "components", "share",
       "equalise"}  # docs/agent.md, "The image library"


def texture(seed: int, width: int = 360, height: int = 300) -> Image.Image:
    """A sum of random sinusoids per channel: no two pieces of it are alike."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / max(width, height)
    channels = []
    for _ in range(3):
        wave = sum(np.sin(2 * np.pi * (rng.uniform(0.5, 5) * x + rng.uniform(0.5, 5) * y) + rng.uniform(0, 6))
                   for _ in range(4))
        channels.append((wave - wave.min()) / (wave.max() - wave.min()) * 255)
    return Image.fromarray(np.stack(channels, axis=2).astype(np.uint8))


def test_the_api_is_exactly_the_agreed_names_and_each_is_documented():
    assert set(looktools.__all__) == API and len(looktools.__all__) == len(API)
    for name in API - {"COLOURS"}:
        assert ">>> " in getattr(looktools, name).__doc__, name
    assert COLOURS["magenta"] == (230, 0, 160) and list(COLOURS)[-3:] == ["white", "black", "gray"]


def test_the_library_imports_nothing_of_lookcloser():
    """It is bound alone into the sandbox: only numpy, Pillow, the standard library and itself."""
    for path in Path(looktools.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [] if node.level else [node.module.split(".")[0]]
            else:
                continue
            assert not {"lookcloser", "agent", "rewards", "data_builders", "train", "eval"} & set(names), path


@pytest.mark.parametrize(("rows", "cols", "size", "colour"), [(3, 4, (400, 300), "black"), (2, 5, (250, 410), "blue"),
                                                              (4, 4, (320, 320), (255, 255, 255))])
def test_grid_counts_the_lines_drawn_on_a_picture(rows, cols, size, colour):
    picture = texture(rows * 10 + cols, *size)
    picture = Image.fromarray((np.asarray(picture) // 2 + 60).astype(np.uint8))  # no pixel near black or white
    draw = ImageDraw.Draw(picture)
    w, h = size
    fill = COLOURS[colour] if isinstance(colour, str) else colour
    for r in range(1, rows):
        draw.line([(0, r * h // rows), (w, r * h // rows)], fill=fill, width=2)
    for c in range(1, cols):
        draw.line([(c * w // cols, 0), (c * w // cols, h)], fill=fill, width=3)
    draw.rectangle([0, 0, w - 1, h - 1], outline=fill, width=2)  # an outer frame is no interior line
    assert grid(picture, colour) == (rows, cols)


def test_changed_finds_the_patches_where_shapes_were_drawn():
    left = texture(3, 480, 320)
    right = left.copy()
    draw = ImageDraw.Draw(right)
    rows, cols = 4, 6
    cells = [2, 9, 17, 24]  # 1-based, row by row
    for cell in cells:
        r, c = divmod(cell - 1, cols)
        x, y = c * 80 + 20, r * 80 + 20
        draw.ellipse([x, y, x + 40, y + 40], fill=COLOURS["magenta"], outline=(0, 0, 0))
    assert changed(left, right, rows, cols) == cells
    assert changed(left, left, rows, cols) == [] and diff(left, right).sum() > 4 * 1000
    with pytest.raises(ValueError, match="a is 480x320, b is 320x480"):
        diff(left, left.rotate(90, expand=True))


def _scrambled(seed: int, n: int) -> tuple[Image.Image, list[int]]:
    """A jigsaw as data_builders.synthetic.make_jigsaw makes one (white seams of width 2), and its answer."""
    img = texture(seed, 300 + 7 * seed % 60, 270)
    tw, th = img.width // n, img.height // n
    img = img.crop((0, 0, tw * n, th * n))
    perm = list(range(n * n))
    rng = random.Random(seed)
    while perm == sorted(perm):
        rng.shuffle(perm)
    shuffled = Image.new("RGB", img.size)
    for j, piece in enumerate(perm):
        (pr, pc), (r, c) = divmod(piece, n), divmod(j, n)
        shuffled.paste(img.crop((pc * tw, pr * th, (pc + 1) * tw, (pr + 1) * th)), (c * tw, r * th))
    draw = ImageDraw.Draw(shuffled)
    for k in range(1, n):
        draw.line([(k * tw, 0), (k * tw, shuffled.height)], fill=(255, 255, 255), width=2)
        draw.line([(0, k * th), (shuffled.width, k * th)], fill=(255, 255, 255), width=2)
    return shuffled, [perm.index(i) + 1 for i in range(n * n)]


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_best_order_recovers_a_scrambled_texture(n, seed):
    picture, answer = _scrambled(seed, n)
    tiles = pieces(picture, n)
    assert len({t.shape for t in tiles}) == 1 and len(tiles) == n * n
    assert best_order(tiles, n) == answer
    assert str(best_order(tiles, n)).startswith("[")  # print() writes the answer's own form


def test_edge_cost_is_least_for_the_true_neighbour():
    cut = pieces(texture(7), 3)
    right = [edge_cost(cut[0], other, "right") for other in cut]
    below = [edge_cost(cut[0], other, "below") for other in cut]
    assert int(np.argmin(right[1:])) + 1 == 1 and int(np.argmin(below[1:])) + 1 == 3
    with pytest.raises(ValueError, match="'right' or 'below'"):
        edge_cost(cut[0], cut[1], "left")
    with pytest.raises(ValueError, match="n from 1 to 3"):
        best_order(pieces(texture(7), 4), 4)


@pytest.mark.parametrize(("angle", "fill"), [(25, "white"), (130, "white"), (212.5, (40, 40, 40)), (301, "black"),
                                            (7, "white")])
def test_tilt_recovers_the_rotation_within_a_degree(angle, fill):
    rgb = COLOURS[fill] if isinstance(fill, str) else fill
    rotated = texture(11, 400, 260).rotate(angle, Image.Resampling.BICUBIC, expand=True, fillcolor=rgb)
    found = tilt(rotated) if fill == "white" else tilt(rotated, fill=fill)
    gap = abs(found - angle % 90)
    assert 0 <= found < 90 and min(gap, 90 - gap) <= 1.0, found
    assert tilt(texture(11)) == 0.0  # no fill shows: the edges are the frame's


def test_nearest_and_letter_answer_a_multiple_choice():
    angles = [90, 250, 35, 180, 310, 145]
    assert letter(nearest(360 - 52, angles, period=360)) == "E"
    assert nearest(3, [350, 20], period=360) == 0 and nearest(3, [350, 20]) == 1
    # keyed by letter, as a question lists them: the key comes back, so no index is counted
    assert nearest(360 - 52, dict(zip("ABCDEF", angles)), period=360) == "E"
    assert nearest(50, {"C": 95, "F": 140}, period=90) == "F"
    # the options read from the question's text, as TIR-Bench writes them
    question = "How many degrees?\n\nA. 90°\nB. 250°\nC. 35°\nD. 180°\nE. 310°\nF. 145°"
    assert options(question) == dict(zip("ABCDEF", angles))
    assert nearest(308, options(question), period=360) == "E"
    with pytest.raises(ValueError, match="found no lines"):
        options("Which colour is it?")
    # the grid a spot-the-difference question states, in TIR-Bench's words and the generator's own
    from lookcloser.data_builders.tir_items import spot_difference_prompt
    assert stated_grid(spot_difference_prompt(4, 3)) == (4, 3)
    with pytest.raises(ValueError, match="found no grid"):
        stated_grid("The two images are divided into a grid of patches by the black lines drawn on them")
    with pytest.raises(ValueError, match="from 0 to 9"):
        letter(10)


def _maze(seed: int, cells: int) -> tuple[np.ndarray, tuple[int, int], tuple[int, int], int]:
    """A perfect maze on a (2 cells + 1) square block grid (True: wall), dug depth first; its start, its goal
    and their distance in blocks, read off the digging tree."""
    rng = random.Random(seed)
    side = 2 * cells + 1
    wall = np.ones((side, side), bool)
    parent = {(0, 0): None}
    stack = [(0, 0)]
    wall[1, 1] = False
    while stack:
        r, c = stack[-1]
        nexts = [(r + dr, c + dc) for dr, dc in ((0, 1), (1, 0), (0, -1), (-1, 0))
                 if 0 <= r + dr < cells and 0 <= c + dc < cells and (r + dr, c + dc) not in parent]
        if not nexts:
            stack.pop()
            continue
        nr, nc = rng.choice(nexts)
        parent[(nr, nc)] = (r, c)
        wall[2 * nr + 1, 2 * nc + 1] = wall[r + nr + 1, c + nc + 1] = False
        stack.append((nr, nc))
    goal = (cells - 1, cells - 1)
    up = [goal]
    while parent[up[-1]] is not None:
        up.append(parent[up[-1]])
    return wall, (1, 1), (2 * cells - 1, 2 * cells - 1), 2 * (len(up) - 1)


@pytest.mark.parametrize(("seed", "cells", "block"), [(1, 5, 12), (2, 8, 9), (3, 6, 16)])
def test_a_block_maze_is_solved_from_its_picture(seed, cells, block):
    wall, start, goal, distance = _maze(seed, cells)
    picture = np.where(np.kron(wall, np.ones((block, block), bool))[:, :, None], 0, 255).astype(np.uint8)
    picture = np.repeat(picture, 3, axis=2)
    for (r, c), name in ((start, "red"), (goal, "green")):  # markers fill their blocks
        picture[r * block:(r + 1) * block, c * block:(c + 1) * block] = COLOURS[name]
    dark = binarise(picture)
    p = pitch(dark)
    assert p == block
    free = ~shrink(dark, p)
    assert free.shape == wall.shape
    assert find(picture, "red", p) == start and find(picture, "green", p) == goal
    assert bfs(free, find(picture, "red", p), find(picture, "green", p)) == distance
    free[goal[0] - 1, goal[1]] = free[goal[0], goal[1] - 1] = False  # walled in
    assert bfs(free, start, goal) == -1


def test_colour_masks_and_components_count_the_shapes():
    picture = Image.new("RGB", (300, 200), "white")
    draw = ImageDraw.Draw(picture)
    draw.ellipse([10, 10, 70, 70], fill=COLOURS["red"])
    draw.ellipse([100, 20, 130, 50], fill=COLOURS["red"])
    draw.rectangle([200, 100, 239, 139], fill=COLOURS["red"])  # 40 x 40
    draw.rectangle([20, 120, 119, 169], fill=COLOURS["blue"])  # 100 x 50
    draw.point([(290, 190)], fill=COLOURS["red"])  # a speck, under min_pixels
    red = components(mask_of(picture, "red"))
    assert len(red) == 3 and red[1] == 1600 and red[0] > red[1] > red[2]
    assert components(mask_of(picture, "red"), min_pixels=1)[-1] == 1
    assert share(mask_of(picture, "blue")) == pytest.approx(5000 / 60000)
    assert hue_name(np.asarray(picture)[150, 50]) == "blue" and hue_name((250, 140, 10)) == "orange"
    with pytest.raises(ValueError, match="known: red, green, blue"):
        mask_of(picture, "teal")


def test_equalise_stretches_a_faint_picture_to_full_range():
    faint = (np.asarray(texture(5)) // 4 + 100).astype(np.uint8)
    stretched = equalise(faint)
    assert stretched.dtype == np.uint8 and stretched.min() == 0 and stretched.max() == 255
    assert np.corrcoef(stretched[:, :, 0].ravel(), faint[:, :, 0].ravel())[0, 1] > 0.99
