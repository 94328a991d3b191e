"""Procedural source pictures, drawn from an item's ``random.Random`` (no image folder needed).

A texture is a sum of random plane waves per colour channel plus a linear gradient: every n x n
jigsaw piece of it is different, and neighbouring pieces continue each other smoothly, so edge
matching solves the puzzle. Its steepest change per pixel is bounded (``max_slope``), which keeps a
1-pixel shift of the whole picture below ``spot_difference``'s change threshold. Shapes can be drawn
on it; ``light_background`` is a pale, low-saturation texture that no named colour
(``tir_items.COLOURS``) matches within 60 summed.
"""

from __future__ import annotations

import math
import random

import numpy as np
from PIL import Image, ImageDraw

from lookcloser.data_builders.tir_items import SHAPES, draw_shape


def aspect_size(rng: random.Random, long_side: int, low: float = 0.6, high: float = 1.6) -> tuple[int, int]:
    """A (width, height) whose longer side is ``long_side`` and whose width / height lies in [low, high].

    >>> w, h = aspect_size(random.Random(3), 512)
    >>> max(w, h) == 512 and 0.6 <= w / h <= 1.6
    True
    """
    aspect = math.exp(rng.uniform(math.log(low), math.log(high)))
    if aspect >= 1:
        return long_side, max(1, round(long_side / aspect))
    return max(1, round(long_side * aspect)), long_side


def _channel(rng: random.Random, xs: np.ndarray, ys: np.ndarray, size: float, waves: int) -> tuple[np.ndarray, float]:
    """A sum of ``waves`` plane waves and a ramp, in [-1, 1], and its steepest change per pixel."""
    values = np.zeros(np.broadcast(xs, ys).shape)
    total, slope = 0.0, 0.0
    for _ in range(waves):
        amplitude = rng.uniform(0.3, 1.0)
        wavelength = size * rng.uniform(0.15, 0.9)
        angle, phase = rng.uniform(0, math.pi), rng.uniform(0, 2 * math.pi)
        k = 2 * math.pi / wavelength
        values += amplitude * np.sin(k * (xs * math.cos(angle) + ys * math.sin(angle)) + phase)
        total, slope = total + amplitude, slope + amplitude * k
    ramp, angle = rng.uniform(0, 0.8), rng.uniform(0, 2 * math.pi)  # the gradient, across the whole picture
    values += ramp * ((xs * math.cos(angle) + ys * math.sin(angle)) / size * 2)
    total, slope = total + ramp * 2 * math.sqrt(2), slope + ramp * 2 / size
    return values / total, slope / total


def texture(rng: random.Random, width: int, height: int, *, low: int = 30, high: int = 230, waves: int = 5,
            max_slope: float = 10.0) -> Image.Image:
    """A coloured texture: each channel a sum of random waves around its own mean, within [low, high], changing
    by at most ``max_slope`` per pixel in any direction.

    >>> img = texture(random.Random(0), 96, 64)
    >>> img.size, img.mode
    ((96, 64), 'RGB')
    >>> a = np.asarray(img).astype(int)
    >>> bool(a.min() >= 30 and a.max() <= 230), bool(np.abs(np.diff(a, axis=1)).max() <= 11)
    (True, True)
    >>> np.array_equal(a, np.asarray(texture(random.Random(0), 96, 64)))  # the same rng, the same picture
    True
    """
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    size = float(max(width, height))
    planes = []
    for _ in range(3):
        values, slope = _channel(rng, xs, ys, size, waves)
        half = rng.uniform(0.35, 1.0) * (high - low) / 2
        half = min(half, max_slope / slope)  # values change by slope * half per pixel
        mean = rng.uniform(low + half, high - half)
        planes.append(mean + half * values)
    return Image.fromarray(np.clip(np.rint(np.stack(planes, axis=-1)), 0, 255).astype(np.uint8), "RGB")


def shapes_on(rng: random.Random, img: Image.Image, count: int, *, outline=None) -> Image.Image:
    """``img`` with ``count`` random filled shapes (random colours, sides 8-35% of the short side) drawn on it.

    >>> base = texture(random.Random(1), 80, 60)
    >>> bool((np.asarray(shapes_on(random.Random(2), base.copy(), 4)) != np.asarray(base)).any())
    True
    """
    draw = ImageDraw.Draw(img)
    short = min(img.size)
    for _ in range(count):
        side = rng.uniform(0.08, 0.35) * short
        x, y = rng.uniform(0, img.width - side), rng.uniform(0, img.height - side)
        fill = tuple(rng.randrange(256) for _ in range(3))
        draw_shape(draw, rng.choice(SHAPES), (x, y, x + side, y + side), fill, outline=outline)
    return img


def picture(rng: random.Random, width: int, height: int, shapes: int = 0) -> Image.Image:
    """A source picture: a texture with ``shapes`` shapes on it.

    >>> picture(random.Random(5), 120, 90, shapes=3).size
    (120, 90)
    """
    return shapes_on(rng, texture(rng, width, height), shapes)


def light_background(rng: random.Random, width: int, height: int) -> Image.Image:
    """A pale, low-saturation texture (every channel in [185, 245]): each named colour has a channel at or below
    60, so no background pixel lies within 60 (summed) of one.

    >>> a = np.asarray(light_background(random.Random(4), 64, 48)).astype(int)
    >>> bool(a.min() >= 185 and a.max() <= 245)
    True
    """
    return texture(rng, width, height, low=185, high=245, waves=4, max_slope=3.0)
