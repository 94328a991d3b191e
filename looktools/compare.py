"""Two pictures compared, and the grid drawn on a picture (spot-the-difference)."""

from __future__ import annotations

import numpy as np

from .pictures import grid_cells, mask_of, pixels


def diff(a, b, threshold: int = 60) -> np.ndarray:
    """True where two same-size pictures differ: summed |channel difference| above ``threshold``.

    >>> a = np.zeros((2, 3, 3), np.uint8); b = a.copy(); b[1, 2] = 90
    >>> diff(a, b).tolist()
    [[False, False, False], [False, False, True]]
    """
    first, second = pixels(a), pixels(b)
    if first.shape != second.shape:
        raise ValueError(f"diff() needs pictures of one size: a is {first.shape[1]}x{first.shape[0]}, "
                         f"b is {second.shape[1]}x{second.shape[0]} (width x height)")
    return np.abs(first.astype(np.int16) - second.astype(np.int16)).sum(axis=2) > threshold


def _lines(full: np.ndarray) -> list[tuple[int, int]]:
    """Groups of consecutive True indices as (first, last)."""
    index = np.flatnonzero(full)
    if index.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(index) > 1)
    starts = np.concatenate(([index[0]], index[breaks + 1]))
    ends = np.concatenate((index[breaks], [index[-1]]))
    return list(zip(starts.tolist(), ends.tolist()))


def grid(img, colour=(0, 0, 0)) -> tuple[int, int]:
    """(rows, cols) of the grid drawn on a picture in ``colour`` (a name or RGB): pixel rows and columns at
    least 95% that colour (within 60) make lines; interior lines + 1 (lines at the picture's edge ignored).

    >>> from PIL import Image, ImageDraw
    >>> pic = Image.new("RGB", (90, 60), "white"); d = ImageDraw.Draw(pic)
    >>> d.line([(0, 30), (89, 30)], fill="black"); d.line([(30, 0), (30, 59)], fill="black")
    >>> d.line([(60, 0), (60, 59)], fill="black"); d.rectangle([0, 0, 89, 59], outline="black")
    >>> grid(pic)
    (2, 3)
    """
    mask = mask_of(img, colour)
    counts = []
    for axis, length in ((1, mask.shape[0]), (0, mask.shape[1])):
        lines = _lines(mask.mean(axis=axis) >= 0.95)
        counts.append(sum(1 for first, last in lines if first > 0 and last < length - 1) + 1)
    return counts[0], counts[1]


def changed(a, b, rows: int, cols: int, share: float = 0.01, threshold: int = 60) -> list[int]:
    """1-based numbers (row by row) of the patches of a ``rows`` x ``cols`` grid where more than ``share``
    of the pixels differ (``diff``). Patch r, c spans rows r*h//rows to (r+1)*h//rows, and so on.

    >>> a = np.zeros((40, 60, 3), np.uint8); b = a.copy(); b[25:35, 45:55] = 255
    >>> changed(a, b, 2, 3)
    [6]
    """
    different = diff(a, b, threshold)
    h, w = different.shape
    if not (isinstance(rows, (int, np.integer)) and isinstance(cols, (int, np.integer))
            and 0 < rows <= h and 0 < cols <= w):
        raise ValueError(f"rows and cols must be whole numbers from 1 to the picture's {h} x {w}, "
                         f"got {rows!r} and {cols!r}")
    return [k + 1 for k, cell in enumerate(grid_cells(different, rows, cols)) if cell.mean() > share]
