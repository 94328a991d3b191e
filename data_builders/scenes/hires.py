"""High-resolution synthetic scenes where one small object decides the answer, written in V* Bench's
and HR-Bench's official layouts (../shared/specs/vstar_hrbench.md), for held-out eval and fixtures.

A scene is a large canvas of soft clutter (big faint blobs) with a few small solid shapes, each a
few percent of the width: at the pixel budget a model sees the whole picture in, a shape's colour
or count is unreadable; a crop around it reads it. Questions follow the benchmarks' families:

- V*: ``direct_attributes`` ("What is the color of the triangle?", 4 options, the gold first) and
  ``relative_position`` ("Is the red circle on the left or right side of the blue square?", 2 options,
  the gold first), one ``<stem>.jpg`` + ``<stem>.json`` per item, as SEAL ships them.
- HR-Bench: ``single`` (FSP: one object's colour) and ``cross`` (FCP: how many objects of a colour),
  4 options, each question in 4 rows with the options rotated (``cycle_category`` 0-3), images
  base64 in ``hr_bench_4k.tsv`` (3840 x 2160) / ``hr_bench_8k.tsv`` (7680 x 4320).

Deterministic in the seed (``random.Random``, no clock). The 8K images are big: the held-out
writer makes few of them (``HRBENCH_8K_QUESTIONS``); tests pass a small ``size``.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

from lookcloser.data_builders.scenes.writer import HeldoutWriter

COLOURS = {"red": (215, 35, 35), "green": (35, 150, 60), "blue": (40, 70, 215), "yellow": (230, 195, 20),
           "purple": (145, 65, 185), "orange": (240, 130, 20), "black": (20, 20, 20), "white": (250, 250, 250)}
SHAPES = ("circle", "square", "triangle")
VSTAR_SIZE = (2048, 1536)
HRBENCH_SIZES = {"hrbench_4k": (3840, 2160), "hrbench_8k": (7680, 4320)}
VSTAR_QUESTIONS = (24, 16)  # held out: attribute, relative-position items
HRBENCH_QUESTIONS = {"hrbench_4k": 16, "hrbench_8k": 6}  # held out: questions (half FSP, half FCP), 4 rows each


def _canvas(rng: random.Random, size: tuple[int, int]) -> Image.Image:
    """Soft clutter: drawn at 1/16 of the size and scaled up (cheap at 8K), muted colours only."""
    small = (max(8, size[0] // 16), max(8, size[1] // 16))
    img = Image.new("RGB", small, tuple(rng.randint(150, 200) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(30):
        x, y = rng.randrange(small[0]), rng.randrange(small[1])
        r = rng.randint(2, max(3, small[0] // 6))
        draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rng.randint(120, 210) for _ in range(3)))
    return img.resize(size, Image.BILINEAR)


def _draw(draw: ImageDraw.ImageDraw, shape: str, colour: str, box: tuple[int, int, int, int]) -> None:
    x0, y0, x1, y1 = box
    fill, outline = COLOURS[colour], (60, 60, 60)
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=outline)
    elif shape == "square":
        draw.rectangle(box, fill=fill, outline=outline)
    else:
        draw.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=fill, outline=outline)


def _place(rng: random.Random, size: tuple[int, int], objects: list[tuple[str, str]],
           xs: list[float] | None = None) -> tuple[Image.Image, list[list[int]]]:
    """``objects`` (shape, colour) drawn small at non-overlapping places; their ``[x, y, w, h]`` boxes.
    ``xs``: wanted horizontal centres (fractions of the width), e.g. for left/right questions."""
    img = _canvas(rng, size)
    draw = ImageDraw.Draw(img)
    side = max(6, size[0] // 40)
    boxes: list[list[int]] = []
    for k, (shape, colour) in enumerate(objects):
        for _ in range(200):
            cx = int((xs[k] if xs else rng.uniform(0.05, 0.95)) * size[0]) + rng.randint(-side, side)
            x = min(max(0, cx - side // 2), size[0] - side - 1)
            y = rng.randint(0, size[1] - side - 1)
            if all(abs(x - b[0]) > 2 * side or abs(y - b[1]) > 2 * side for b in boxes):
                break
        boxes.append([x, y, side, side])
        _draw(draw, shape, colour, (x, y, x + side, y + side))
    return img, boxes


def _others(rng: random.Random, right: str, pool, k: int) -> list[str]:
    return rng.sample([c for c in pool if c != right], k)


def write_vstar(out: str | Path, seed: int, counts: tuple[int, int] = VSTAR_QUESTIONS,
                size: tuple[int, int] = VSTAR_SIZE) -> Path:
    """V*'s raw layout: ``direct_attributes/`` and ``relative_position/``, ``sa_<n>.jpg`` + ``.json``
    (``question``, ``options`` with the gold first, ``target_object``, ``bbox``)."""
    rng = random.Random(f"vstar:{seed}")
    out = Path(out)
    for category, count in zip(("direct_attributes", "relative_position"), counts, strict=True):
        folder = out / category
        folder.mkdir(parents=True, exist_ok=True)
        for n in range(count):
            shapes = rng.sample(SHAPES, 2)
            colours = rng.sample(list(COLOURS), 2)
            if category == "direct_attributes":
                img, boxes = _place(rng, size, [(shapes[0], colours[0])])
                record = {"question": f"What is the color of the {shapes[0]}?",
                          "options": [colours[0], *_others(rng, colours[0], COLOURS, 3)],
                          "target_object": [shapes[0]], "bbox": boxes}
            else:
                left = rng.random() < 0.5
                xs = [0.25, 0.75] if left else [0.75, 0.25]
                img, boxes = _place(rng, size, [(shapes[0], colours[0]), (shapes[1], colours[1])],
                                    [x + rng.uniform(-0.15, 0.15) for x in xs])
                a, b = f"{colours[0]} {shapes[0]}", f"{colours[1]} {shapes[1]}"
                record = {"question": f"Is the {a} on the left or right side of the {b}?",
                          "options": ["left", "right"] if left else ["right", "left"],
                          "target_object": [a, b], "bbox": boxes}
            stem = f"sa_{seed % 1000:03d}{len(category)}{n:03d}"
            img.save(folder / f"{stem}.jpg", quality=90)
            (folder / f"{stem}.json").write_text(json.dumps(record) + "\n", encoding="utf-8")
    return out


def _hrbench_question(rng: random.Random, size: tuple[int, int], single: bool) -> tuple[Image.Image, str, list]:
    """One question's image, text and options (the gold first)."""
    if single:
        shape, colour = rng.choice(SHAPES), rng.choice(list(COLOURS))
        img, _ = _place(rng, size, [(shape, colour)])
        return img, f"What is the color of the small {shape} in the image?", [colour, *_others(rng, colour, COLOURS, 3)]
    colour = rng.choice(list(COLOURS))
    count = rng.randint(1, 4)
    distractors = [(rng.choice(SHAPES), rng.choice([c for c in COLOURS if c != colour])) for _ in range(3)]
    img, _ = _place(rng, size, [(rng.choice(SHAPES), colour) for _ in range(count)] + distractors)
    wrong = rng.sample([c for c in range(1, 6) if c != count], 3)
    return img, f"How many small {colour} objects are there in the image?", [str(count), *map(str, wrong)]


def write_hrbench(out: str | Path, seed: int, name: str = "hrbench_4k", questions: int | None = None,
                  size: tuple[int, int] | None = None) -> Path:
    """HR-Bench's ``hr_bench_{4k,8k}.tsv``: per question 4 rows, the options rotated, ``cycle_category`` 0-3."""
    rng = random.Random(f"{name}:{seed}")
    size = size or HRBENCH_SIZES[name]
    questions = questions or HRBENCH_QUESTIONS[name]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    columns = ["index", "question", "answer", "category", "A", "B", "C", "D", "cycle_category", "image"]
    with open(out / f"hr_bench_{name.rsplit('_', 1)[1]}.tsv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, delimiter="\t")
        writer.writerow(columns)
        for q in range(questions):
            single = q % 2 == 0
            img, text, options = _hrbench_question(rng, size, single)
            options = [options[0], *rng.sample(options[1:], 3)]
            gold_at = rng.randrange(4)
            options = options[1:gold_at + 1] + [options[0]] + options[gold_at + 1:]
            buf = io.BytesIO()
            img.save(buf, "JPEG", quality=85)
            encoded = base64.b64encode(buf.getvalue()).decode("ascii")
            for cycle in range(4):
                rotated = options[cycle:] + options[:cycle]
                answer = "ABCD"[rotated.index(options[gold_at])]
                writer.writerow([q * 4 + cycle, text, answer, "single" if single else "cross", *rotated, str(cycle),
                                 encoded])
    return out


HELDOUT = {
    "vstar": HeldoutWriter(lambda out, seed, **_: write_vstar(out, seed)),
    "vstar_shuffled": HeldoutWriter(lambda out, seed, **_: write_vstar(out, seed)),
    "hrbench_4k": HeldoutWriter(lambda out, seed, **_: write_hrbench(out, seed, "hrbench_4k")),
    "hrbench_8k": HeldoutWriter(lambda out, seed, **_: write_hrbench(out, seed, "hrbench_8k")),
}
