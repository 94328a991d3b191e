"""Pixels, colours and masks: the arrays every other looktools function works on."""

from __future__ import annotations

import numpy as np
from PIL import Image

# The synthetic tasks' palette (data_builders.synthetic draws its shapes in the first eight) plus the neutrals.
COLOURS = {
    "red": (220, 30, 30), "green": (20, 170, 50), "blue": (30, 60, 230), "yellow": (245, 210, 0),
    "purple": (140, 40, 190), "orange": (250, 130, 0), "cyan": (0, 200, 220), "magenta": (230, 0, 160),
    "white": (255, 255, 255), "black": (0, 0, 0), "gray": (128, 128, 128),
}


def pixels(img) -> np.ndarray:
    """The picture as a uint8 array of shape (H, W, 3): a PIL image in any mode, or an array (grey, RGB,
    RGBA; bool as 0/255; floats in [0, 1] scaled to 0..255).

    >>> pixels(Image.new("RGBA", (3, 2), (10, 20, 30, 0))).shape
    (2, 3, 3)
    >>> pixels(np.array([[True, False]]))[0].tolist()
    [[255, 255, 255], [0, 0, 0]]
    """
    if isinstance(img, Image.Image):
        return np.asarray(img.convert("RGB"))
    array = np.asarray(img)
    if array.ndim == 3 and array.shape[2] in (1, 3, 4):
        array = array[:, :, :3] if array.shape[2] != 1 else array[:, :, 0]
    if array.ndim == 2:
        array = np.stack([array] * 3, axis=2)
    if array.ndim != 3 or array.size == 0 or array.dtype.kind not in "biuf":
        raise ValueError(f"pixels() takes a PIL image or an array of shape (H, W), (H, W, 3) or (H, W, 4), "
                         f"not {type(img).__name__} of shape {getattr(array, 'shape', None)} and dtype {array.dtype}")
    if array.dtype.kind == "b":
        return array.astype(np.uint8) * 255
    if array.dtype.kind == "f" and array.size and float(np.nanmax(array)) <= 1.0:
        array = array * 255.0
    return np.clip(np.nan_to_num(array), 0, 255).astype(np.uint8)


def grid_cells(array: np.ndarray, rows: int, cols: int) -> list[np.ndarray]:
    """The cells of a ``rows`` x ``cols`` grid over an array, row by row: cell r, c spans rows r*h//rows to
    (r+1)*h//rows and columns c*w//cols to (c+1)*w//cols (one rule for patches and jigsaw pieces).

    >>> [c.shape for c in grid_cells(np.zeros((5, 7)), 2, 2)]
    [(2, 3), (2, 4), (3, 3), (3, 4)]
    """
    h, w = array.shape[:2]
    return [array[r * h // rows:(r + 1) * h // rows, c * w // cols:(c + 1) * w // cols]
            for r in range(rows) for c in range(cols)]


def colour_rgb(colour) -> tuple[int, int, int]:
    """An RGB triple from a COLOURS name or a triple.

    >>> colour_rgb("cyan"), colour_rgb((1, 2, 3))
    ((0, 200, 220), (1, 2, 3))
    """
    if isinstance(colour, str):
        if colour.lower() not in COLOURS:
            raise ValueError(f"unknown colour {colour!r}; known: {', '.join(COLOURS)} (or an RGB tuple)")
        return COLOURS[colour.lower()]
    rgb = tuple(int(v) for v in np.asarray(colour).ravel())
    if len(rgb) != 3:
        raise ValueError(f"a colour is a name ({', '.join(COLOURS)}) or an RGB triple, not {colour!r}")
    return rgb


def _gap(img, rgb) -> np.ndarray:
    """Summed |channel - rgb| of every pixel (int)."""
    return np.abs(pixels(img).astype(np.int16) - np.array(rgb, dtype=np.int16)).sum(axis=2)


def mask_of(img, colour, tolerance: int = 60) -> np.ndarray:
    """True where a pixel is within ``tolerance`` (summed |difference| over R, G, B) of the colour: a
    COLOURS name or an RGB tuple.

    >>> int(mask_of(Image.new("RGB", (4, 2), (225, 35, 30)), "red").sum())
    8
    >>> mask_of(np.zeros((2, 2, 3), np.uint8), "teal")
    Traceback (most recent call last):
    ValueError: unknown colour 'teal'; known: red, green, blue, yellow, purple, orange, cyan, magenta, white, black, gray (or an RGB tuple)
    """
    rgb = colour_rgb(colour)
    return _gap(img, rgb) <= tolerance


def hue_name(rgb) -> str:
    """The COLOURS name nearest to an RGB triple (squared distance).

    >>> hue_name((200, 40, 35)), hue_name([250, 250, 240])
    ('red', 'white')
    """
    value = np.asarray(colour_rgb(rgb), dtype=np.int32)
    return min(COLOURS, key=lambda name: int(((np.array(COLOURS[name]) - value) ** 2).sum()))


def binarise(img, threshold: int = 128) -> np.ndarray:
    """True where a pixel is dark: the mean of its channels is below ``threshold``.

    >>> binarise(np.array([[0, 200], [127, 128]], np.uint8)).tolist()
    [[True, False], [True, False]]
    """
    return pixels(img).mean(axis=2) < threshold


def share(mask) -> float:
    """The fraction of True pixels of a mask.

    >>> share(np.array([[True, False], [False, False]]))
    0.25
    """
    mask = np.asarray(mask, dtype=bool)
    if mask.size == 0:
        raise ValueError("share() of an empty mask")
    return float(mask.mean())


def equalise(img) -> np.ndarray:
    """Per-channel min-max contrast stretch to 0..255 (a constant channel stays as it is).

    >>> equalise(np.array([[[100, 5, 7]], [[150, 5, 9]]], np.uint8))[:, 0].tolist()
    [[0, 5, 0], [255, 5, 255]]
    """
    array = pixels(img).astype(np.float64)
    low, high = array.min(axis=(0, 1)), array.max(axis=(0, 1))
    span = np.where(high > low, high - low, 1.0)
    stretched = np.where(high > low, (array - low) * (255.0 / span), array)
    return np.round(stretched).astype(np.uint8)


def components(mask, min_pixels: int = 20) -> list[int]:
    """Pixel counts of the 4-connected regions of True with at least ``min_pixels`` pixels, largest first.

    >>> m = np.zeros((6, 6), bool); m[0:2, 0:2] = True; m[3:6, 3:6] = True; m[0, 5] = True
    >>> components(m, min_pixels=1)
    [9, 4, 1]
    """
    mask = np.asarray(mask, dtype=bool)
    if mask.ndim != 2:
        raise ValueError(f"components() takes a 2-D mask, not shape {mask.shape}")
    # numpy has no connected-component labelling (scipy is not in the sandbox): runs of True per row,
    # joined to the overlapping runs of the row above with a union-find.
    parent: list[int] = []
    size: list[int] = []

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    above: list[tuple[int, int, int]] = []
    for row in mask:
        edges = np.flatnonzero(np.diff(np.concatenate(([0], row.view(np.uint8), [0]))))
        runs = []
        k = 0
        for start, end in zip(edges[::2].tolist(), edges[1::2].tolist()):
            parent.append(len(parent))
            size.append(end - start)
            label = len(parent) - 1
            while k < len(above) and above[k][1] <= start:
                k += 1
            j = k
            while j < len(above) and above[j][0] < end:  # runs of the row above that overlap this one
                a, b = root(above[j][2]), root(label)
                if a != b:
                    parent[b] = a
                    size[a] += size[b]
                j += 1
            runs.append((start, end, label))
        above = runs
    counts = [size[i] for i in range(len(parent)) if parent[i] == i and size[i] >= min_pixels]
    return sorted(counts, reverse=True)
