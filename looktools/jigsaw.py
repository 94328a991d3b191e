"""Jigsaw: cut the scrambled picture into pieces, score how well two pieces meet, find the best order."""

from __future__ import annotations

import itertools
import math

import numpy as np

from .pictures import grid_cells, pixels

MAX_SIDE = 3  # every arrangement is tried: 9! = 362,880 for 3 x 3; 16! for 4 x 4 is out of reach


def pieces(img, n: int, seam: int = 2) -> list[np.ndarray]:
    """The n x n pieces of a picture, row by row, each with ``seam`` pixels stripped from every side (the
    seam lines drawn between pieces go; the picture's own border loses the same, so that every piece has
    one size and facing edges line up).

    >>> [p.shape for p in pieces(np.zeros((40, 60, 3), np.uint8), 2)]
    [(16, 26, 3), (16, 26, 3), (16, 26, 3), (16, 26, 3)]
    """
    array = pixels(img)
    h, w = array.shape[:2]
    if not isinstance(n, (int, np.integer)) or n < 1 or h // n <= 2 * seam or w // n <= 2 * seam or seam < 0:
        raise ValueError(f"pieces() needs n >= 1 and seam >= 0 leaving pieces of at least 1 pixel: a {w}x{h} "
                         f"picture cut {n!r} x {n!r} with seam {seam!r}")
    return [cell[seam:cell.shape[0] - seam, seam:cell.shape[1] - seam] for cell in grid_cells(array, n, n)]


def edge_cost(a, b, side: str) -> float:
    """Mean |difference| between a's edge and b's facing edge: side 'right' (b right of a) or 'below'
    (b below a). Edges of different lengths are compared over the shorter.

    >>> a = np.zeros((4, 4, 3), np.uint8); b = a + 10
    >>> edge_cost(a, b, "right"), edge_cost(a, a, "below")
    (10.0, 0.0)
    """
    first, second = pixels(a).astype(np.float64), pixels(b).astype(np.float64)
    if side == "right":
        edge, facing = first[:, -1], second[:, 0]
    elif side == "below":
        edge, facing = first[-1], second[0]
    else:
        raise ValueError(f"edge_cost() side must be 'right' or 'below', not {side!r}")
    length = min(len(edge), len(facing))
    return float(np.abs(edge[:length] - facing[:length]).mean())


def _all_orders(count: int) -> np.ndarray:
    """Every permutation of range(count), one per row (int32)."""
    flat = np.fromiter(itertools.chain.from_iterable(itertools.permutations(range(count))), dtype=np.int8,
                       count=count * math.factorial(count))
    return flat.reshape(-1, count).astype(np.int32)


def best_order(tiles, n: int) -> list[int]:
    """For each position of the original picture (row by row), the 1-based number of the scrambled piece
    that belongs there: of every arrangement, the one whose neighbouring edges differ least in total
    (``edge_cost``). ``tiles``: the scrambled pieces in their order (``pieces``).

    >>> ramp = np.arange(0, 240, 4, dtype=np.uint8)
    >>> picture = np.stack([ramp[None, :] + ramp[:, None] // 2] * 3, axis=2)
    >>> cut = pieces(picture, 2, seam=0)
    >>> best_order([cut[3], cut[2], cut[0], cut[1]], 2)
    [3, 4, 2, 1]
    """
    count = len(tiles)
    if not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_SIDE or count != n * n:
        raise ValueError(f"best_order() takes n from 1 to {MAX_SIDE} and n * n tiles, got n={n!r} and {count} tiles")
    right = np.array([[edge_cost(a, b, "right") for b in tiles] for a in tiles])
    below = np.array([[edge_cost(a, b, "below") for b in tiles] for a in tiles])
    orders = _all_orders(count)
    total = np.zeros(len(orders))
    for p in range(count):
        if p % n < n - 1:
            total += right.ravel()[orders[:, p] * count + orders[:, p + 1]]
        if p + n < count:
            total += below.ravel()[orders[:, p] * count + orders[:, p + n]]
    return [int(k) + 1 for k in orders[int(np.argmin(total))]]
