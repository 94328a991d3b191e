"""Angles and choices: the tilt of a rotated picture, the option nearest a value, an option's letter."""

from __future__ import annotations

import numpy as np

from .pictures import colour_rgb, pixels

LETTERS = "ABCDEFGHIJ"


def _outline(content: np.ndarray) -> np.ndarray:
    """(x, y) of the first and last content pixel of every row and column: the hull's candidates."""
    points = []
    for axis in (0, 1):
        lines = content if axis == 0 else content.T
        have = np.flatnonzero(lines.any(axis=1))
        first = lines[have].argmax(axis=1)
        last = lines.shape[1] - 1 - lines[have][:, ::-1].argmax(axis=1)
        for along in (first, last):
            points.append(np.stack([along, have], axis=1) if axis == 0 else np.stack([have, along], axis=1))
    return np.concatenate(points).astype(np.float64)


def _box_areas(points: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    """Area of the box around the points with edges at each angle (counter-clockwise as seen, y down)."""
    t = np.radians(degrees)[:, None]
    x, y = points[:, 0][None, :], points[:, 1][None, :]
    u = x * np.cos(t) - y * np.sin(t)
    v = x * np.sin(t) + y * np.cos(t)
    return (u.max(axis=1) - u.min(axis=1)) * (v.max(axis=1) - v.min(axis=1))


def tilt(img, fill=None) -> float:
    """The angle in degrees, in [0, 90), of the content's edges on a uniform ``fill`` (a name or RGB): what
    ``picture.rotate(angle, expand=True, fillcolor=fill)`` turned it by, modulo 90 (the box of least area
    around the content). ``fill`` None: the corners' colour; 0.0 when the four corners differ (no fill shows).

    >>> from PIL import Image
    >>> tilt(Image.new("RGB", (120, 80), (30, 60, 230)).rotate(25, expand=True, fillcolor="white"))
    25.0
    >>> tilt(Image.new("RGB", (120, 80), "red").rotate(120, expand=True, fillcolor=(0, 0, 0)))
    30.0
    """
    array = pixels(img).astype(np.int16)
    if fill is None:
        corners = array[[0, 0, -1, -1], [0, -1, 0, -1]]
        if np.abs(corners - corners[0]).sum(axis=1).max() > 60:
            return 0.0
        rgb = corners[0]
    else:
        rgb = np.array(colour_rgb(fill), dtype=np.int16)
    content = np.abs(array - rgb).sum(axis=2) > 40
    if content.sum() < 3:
        raise ValueError("tilt() found no content on the fill: the picture is all one colour")
    points = _outline(content)
    coarse = np.arange(0.0, 90.0, 1.0)
    best = coarse[np.argmin(_box_areas(points, coarse))]
    fine = np.arange(best - 1.0, best + 1.0, 0.05)
    angle = float(fine[np.argmin(_box_areas(points, fine))])
    return round(angle, 1) % 90.0


def nearest(value, options, period=None):
    """The option closest to ``value``: its index in a list, or its key when the options are keyed by their
    letters (``dict(A=140, B=30)``, written as the question lists them); with ``period``, distance goes round
    (angles: 360).

    >>> nearest(47, [90, 40, 60]), nearest(355, [90, 10, 180], period=360), nearest(52, dict(A=140, B=30), 90)
    (1, 1, 'A')
    """
    keys = list(options) if isinstance(options, dict) else None
    values = np.asarray(list(options.values()) if keys is not None else options, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("nearest() needs at least one option")
    gap = np.abs(values - float(value))
    if period is not None:
        gap = np.mod(gap, float(period))
        gap = np.minimum(gap, float(period) - gap)
    best = int(np.argmin(gap))
    return keys[best] if keys is not None else best


def letter(i) -> str:
    """The letter of option ``i`` (0 -> 'A').

    >>> letter(0), letter(3)
    ('A', 'D')
    """
    if not isinstance(i, (int, np.integer)) or not 0 <= i < len(LETTERS):
        raise ValueError(f"letter() takes an index from 0 to {len(LETTERS) - 1}, got {i!r}")
    return LETTERS[int(i)]
