"""Generate the bundled MIR-format sample: small images whose content decides the answer.

Deterministic from the seed. Four question families (16 records each by default): the colour
of a shape, which of two images holds the red shape, which of two images holds the bigger
circle, and how many squares an image holds. Every record has the five annotated steps. Each
family's answers are balanced exactly over its letters and the question text gives nothing away,
so without the reference context only the pixels answer (chance: 0.375).

    python -m data_builders.sample_mir data/mir_sample                           # seed 0, 64 records
    python -m data_builders.sample_mir data/mir_train --seed 1 --per_family 100  # the curriculum's 400
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from PIL import Image, ImageDraw

SIZE = 64
COLOURS = {"red": (220, 30, 30), "green": (30, 170, 60), "blue": (40, 70, 220), "yellow": (235, 200, 20)}
SHAPES = ("circle", "square", "triangle")
LETTERS = "ABCD"


def _canvas() -> Image.Image:
    return Image.new("RGB", (SIZE, SIZE), (245, 245, 245))


def draw_shape(draw: ImageDraw.ImageDraw, shape: str, box: tuple[int, int, int, int], fill) -> None:
    x0, y0, x1, y1 = box
    if shape == "circle":
        draw.ellipse(box, fill=fill)
    elif shape == "square":
        draw.rectangle(box, fill=fill)
    else:
        draw.polygon([((x0 + x1) // 2, y0), (x1, y1), (x0, y1)], fill=fill)


def _centered_box(rng: random.Random, size: int) -> tuple[int, int, int, int]:
    x0 = rng.randint(2, SIZE - size - 2)
    y0 = rng.randint(2, SIZE - size - 2)
    return (x0, y0, x0 + size, y0 + size)


def _steps(summary: str, captions: list[str], text2img: str, img2img: str, letter: str) -> dict:
    return {"summary": summary, "caption": captions, "text2img": text2img, "img2img": img2img, "conclusion": letter}


def _colour_record(rng: random.Random, i: int, out: Path, answer: int) -> dict:
    colour = list(COLOURS)[answer]
    shape = rng.choice(SHAPES)
    img = _canvas()
    draw_shape(ImageDraw.Draw(img), shape, _centered_box(rng, rng.randint(24, 40)), COLOURS[colour])
    rel = f"colour/{i:03d}.png"
    img.save(out / rel)
    letter = LETTERS[list(COLOURS).index(colour)]
    return {
        "images": [rel],
        "question": f"What colour is the {shape} in <image>?",
        "options": [f"{letter_}. {name}" for letter_, name in zip(LETTERS, COLOURS)],
        **_steps(f"I need to name the colour of the {shape}.", [f"A {colour} {shape} on a light background."],
                 f"The {shape} in the question is the only shape in image 1.",
                 "There is a single image, so no cross-image relation is needed.", letter),
    }


def _which_red_record(rng: random.Random, i: int, out: Path, answer: int) -> dict:
    red_index = answer
    other = rng.choice([c for c in COLOURS if c != "red"])
    shape = rng.choice(SHAPES)
    rels, captions = [], []
    for k in range(2):
        colour = "red" if k == red_index else other
        img = _canvas()
        draw_shape(ImageDraw.Draw(img), shape, _centered_box(rng, rng.randint(24, 40)), COLOURS[colour])
        rel = f"which_red/{i:03d}_{k + 1}.png"
        img.save(out / rel)
        rels.append(rel)
        captions.append(f"A {colour} {shape}.")
    letter = "AB"[red_index]
    return {
        "images": rels,
        "question": f"One {shape} is red. Is it in <image> or in <image>?",
        "options": {"A": "the first image", "B": "the second image"},
        **_steps(f"I need to find which image holds the red {shape}.", captions,
                 f"Each image holds one {shape}.",
                 f"Only image {red_index + 1} has a red {shape}; the other is {other}.", letter),
    }


def _bigger_record(rng: random.Random, i: int, out: Path, answer: int) -> dict:
    big, small = rng.randint(40, 56), rng.randint(10, 20)
    bigger_index = answer
    colour = rng.choice(list(COLOURS))
    rels, captions = [], []
    for k in range(2):
        size = big if k == bigger_index else small
        img = _canvas()
        draw_shape(ImageDraw.Draw(img), "circle", _centered_box(rng, size), COLOURS[colour])
        rel = f"bigger/{i:03d}_{k + 1}.png"
        img.save(out / rel)
        rels.append(rel)
        captions.append(f"A {'large' if size == big else 'small'} {colour} circle.")
    letter = "AB"[bigger_index]
    return {
        "images": rels,
        "question": "Which image holds the bigger circle, <image> or <image>?",
        "options": ["A. The first image.", "B. The second image."],
        **_steps("I need to compare the circle sizes across the two images.", captions,
                 "Each image holds one circle.",
                 f"The circle in image {bigger_index + 1} covers more of the frame than the other.", letter),
        "reasoning": f"Both images have the same size, so the larger circle is the one in image {bigger_index + 1}.",
    }


def _count_record(rng: random.Random, i: int, out: Path, answer: int) -> dict:
    count = answer + 1
    img = _canvas()
    draw = ImageDraw.Draw(img)
    cells = rng.sample([(0, 0), (1, 0), (0, 1), (1, 1)], count)
    for cx, cy in cells:
        x0, y0 = 6 + cx * 32 + rng.randint(0, 4), 6 + cy * 32 + rng.randint(0, 4)
        draw.rectangle((x0, y0, x0 + 16, y0 + 16), fill=COLOURS["blue"])
    rel = f"count/{i:03d}.png"
    img.save(out / rel)
    letter = LETTERS[count - 1]
    return {
        "images": [rel],
        "question": "How many blue squares are there in <image>?",
        "options": ["A. 1", "B. 2", "C. 3", "D. 4"],
        **_steps("I need to count the blue squares.", [f"{count} blue square{'s' if count > 1 else ''} in a 2x2 grid."],
                 "All squares in the question are in image 1.",
                 "There is a single image, so no cross-image relation is needed.",
                 f"There are {count} squares, so the correct answer is {letter}." if i % 2 else letter),
    }


FAMILIES = {"colour": _colour_record, "which_red": _which_red_record, "bigger": _bigger_record, "count": _count_record}
N_OPTIONS = {"colour": 4, "which_red": 2, "bigger": 2, "count": 4}


def balanced_answers(rng: random.Random, n: int, n_options: int) -> list[int]:
    """Each option index equally often (up to one), in random order: no letter prior to learn.

    >>> sorted(balanced_answers(random.Random(0), 8, 4))
    [0, 0, 1, 1, 2, 2, 3, 3]
    """
    answers = [k % n_options for k in range(n)]
    rng.shuffle(answers)
    return answers


def pixel_digest(img: Image.Image) -> str:
    """sha1 of a picture's RGB pixels and size: equal pictures, whatever their file's bytes."""
    rgb = img.convert("RGB")
    return hashlib.sha1(repr(rgb.size).encode() + rgb.tobytes()).hexdigest()


def pixel_digests(folder: str | Path) -> dict[str, Path]:
    """Pixel digest (``pixel_digest``) -> path of every picture under ``folder`` ({} if none)."""
    digests = {}
    for path in sorted(Path(folder).rglob("*")) if Path(folder).is_dir() else []:
        if path.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp"):
            with Image.open(path) as img:
                digests[pixel_digest(img)] = path
    return digests


def _digests(out: Path, rels: list[str]) -> set[str]:
    digests = set()
    for rel in rels:
        with Image.open(out / rel) as img:
            digests.add(pixel_digest(img))
    return digests


def generate_sample(out_dir: str | Path, per_family: int = 16, seed: int = 0, avoid: set[str] | None = None) -> Path:
    """Write ``all_data_rel.json`` and its images under ``out_dir``; return the JSON path.

    ``avoid``: pixel digests of pictures that must not appear (a held-out set avoids the training
    pictures: one blue square in a 2x2 grid has only ~100 placements). A record that draws one is
    drawn again, with the same answer.
    """
    out = Path(out_dir)
    rng = random.Random(seed)
    records = []
    for family, make in FAMILIES.items():
        (out / family).mkdir(parents=True, exist_ok=True)
        for i, answer in enumerate(balanced_answers(rng, per_family, N_OPTIONS[family])):
            record = make(rng, i, out, answer)
            for _ in range(1000):
                if not avoid or not _digests(out, record["images"]) & avoid:
                    break
                record = make(rng, i, out, answer)
            else:
                raise ValueError(f"{family}: could not draw a picture outside the {len(avoid)} to avoid")
            records.append({"id": f"{family}_{i:03d}", "subtask": family, **record})
    path = out / "all_data_rel.json"
    path.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    return path


@dataclass
class SampleFolder:
    """Where a generated sample goes: the first argument (or ``--out_dir``)."""

    POSITIONAL: ClassVar = ("out_dir",)
    out_dir: str | None = field(default=None, metadata={"help": "output folder"})

    def __post_init__(self) -> None:
        from lookcloser.checks import check_output_folder
        from lookcloser.errors import RecipeError

        if not self.out_dir:
            raise RecipeError("give the output folder (first argument, or --out_dir)")
        check_output_folder("out_dir", self.out_dir)


def sample_command(arguments: type, write, argv: list[str] | None, prog: str, description: str) -> int:
    """Parse ``arguments`` from ``argv`` and ``write(args)``: one ``error:`` line and exit 2 for a mistake."""
    from lookcloser.cli import run
    from lookcloser.recipes import parse_flags

    return run(write, lambda: (parse_flags(arguments, argv, prog=prog, description=description),), prog=prog,
               argv=argv)


@dataclass
class SampleArguments(SampleFolder):
    """Where the sample goes (all_data_rel.json and its images) and how big it is."""

    per_family: int = 16
    seed: int = 0

    def __post_init__(self) -> None:
        from lookcloser.checks import check_range

        super().__post_init__()
        check_range("per_family", self.per_family, 1)


def main(argv: list[str] | None = None) -> int:
    def write(args: SampleArguments) -> None:
        print(generate_sample(args.out_dir, args.per_family, args.seed))

    return sample_command(SampleArguments, write, argv, "python -m data_builders.sample_mir",
                          __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
