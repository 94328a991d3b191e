"""Block mazes: the cell size, one value per cell, where a colour is, and the shortest path."""

from __future__ import annotations

from collections import deque

import numpy as np

from .pictures import mask_of


def pitch(mask) -> int:
    """The side of a block grid's cells: the shortest run of equal values along the rows and columns of a
    mask (runs touching the border are ignored).

    >>> cells = np.array([[1, 0, 1, 1], [1, 0, 0, 1], [1, 1, 0, 1]], bool)
    >>> pitch(np.kron(cells, np.ones((5, 5), bool)))
    5
    """
    mask = np.asarray(mask)
    if mask.ndim != 2:
        raise ValueError(f"pitch() takes a 2-D mask, not shape {mask.shape}")
    shortest = None
    for lines in (mask, mask.T):
        change = np.diff(lines.astype(np.int16), axis=1) != 0
        for row in change:
            edges = np.flatnonzero(row)
            if len(edges) >= 2:  # runs between two changes: the ones that touch no border
                run = int(np.diff(edges).min())
                shortest = run if shortest is None else min(shortest, run)
    if shortest is None:
        raise ValueError("pitch() found no run between two changes: the mask holds no grid of cells")
    return shortest


def shrink(mask, p: int) -> np.ndarray:
    """One value per p x p cell: the value at each cell's centre.

    >>> shrink(np.kron(np.array([[1, 0], [0, 1]]), np.ones((4, 4), int)), 4).tolist()
    [[1, 0], [0, 1]]
    """
    mask = np.asarray(mask)
    if not isinstance(p, (int, np.integer)) or p < 1 or mask.ndim != 2:
        raise ValueError(f"shrink() takes a 2-D mask and a cell side p >= 1, got shape {mask.shape} and p={p!r}")
    return mask[p // 2::p, p // 2::p]


def find(img, colour, p: int = 1) -> tuple[int, int]:
    """(row, col) of the centroid of the pixels of a colour (``mask_of``: a name or RGB), divided by ``p``
    (the cell side) when given: the cell a marker sits in.

    >>> pic = np.full((40, 40, 3), 255, np.uint8); pic[20:30, 10:20] = (220, 30, 30)
    >>> find(pic, "red"), find(pic, "red", p=10)
    ((24, 14), (2, 1))
    """
    rows, cols = np.nonzero(mask_of(img, colour))
    if rows.size == 0:
        raise ValueError(f"find() found no pixel of colour {colour!r}")
    return int(rows.mean()) // p, int(cols.mean()) // p


def bfs(free, start, goal) -> int:
    """Fewest up/down/left/right steps from ``start`` to ``goal`` (row, col) over True cells of ``free``;
    -1 when the goal cannot be reached. The start and goal cells count as free (markers sit on them).

    >>> free = np.array([[1, 1, 1], [0, 0, 1], [1, 1, 1]], bool)
    >>> bfs(free, (0, 0), (2, 0)), bfs(free, (0, 0), (1, 0))
    (6, 1)
    >>> bfs(np.array([[1, 0, 1]], bool), (0, 0), (0, 2))
    -1
    """
    free = np.asarray(free, dtype=bool).copy()
    if free.ndim != 2:
        raise ValueError(f"bfs() takes a 2-D grid of free cells, not shape {free.shape}")
    h, w = free.shape
    start, goal = tuple(int(v) for v in start), tuple(int(v) for v in goal)
    for name, (r, c) in (("start", start), ("goal", goal)):
        if not (0 <= r < h and 0 <= c < w):
            raise ValueError(f"bfs() {name} {(r, c)} is outside the {h} x {w} grid")
        free[r, c] = True
    steps = np.full((h, w), -1)
    steps[start] = 0
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        if (r, c) == goal:
            return int(steps[r, c])
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < h and 0 <= nc < w and free[nr, nc] and steps[nr, nc] < 0:
                steps[nr, nc] = steps[r, c] + 1
                queue.append((nr, nc))
    return -1
