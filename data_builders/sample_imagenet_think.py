"""Generate a small ImageNet-Think-250K-format sample: pictures whose content the traces describe.

Deterministic from the seed. Parquet shards in the data set's schema (docs/formats.md §2): ``image``
(an HF Image feature: ``{"bytes", "path"}``), ``id``, and two numbered think/answer pairs, one per
generator in its own tag style: GLM-4.1V-Thinking (``think_1``/``answer_1``:
``<think>…</think><answer>…</answer>``) and Kimi-VL-Thinking (``think_2``/``answer_2``:
``◁think▷…◁/think▷`` then the answer). No prompt column, as upstream: the converter supplies the
generation prompt.

Each 224x224 picture (ImageNet's smallest side) holds one to four shapes, one per quadrant, each a
colour and a shape from MIR's sample vocabulary. The traces walk the quadrants, name each shape's
colour, kind and position, and count them: what the MIR stages ask later (the colour of a shape,
which image holds the red one, which is bigger, how many squares), so the answer depends on the pixels.

    python -m data_builders.sample_imagenet_think outputs/data/imagenet_think_parquet --seed 0
    python -m data_builders imagenet-think outputs/data/imagenet_think_parquet --out outputs/data/imagenet_think
"""

from __future__ import annotations

import io
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

from lookcloser.data_builders.sample_mir import COLOURS, SHAPES, SampleFolder, draw_shape, sample_command

SIZE = 224
QUADRANTS = ("top left", "top right", "bottom left", "bottom right")
NUMBERS = ("no", "one", "two", "three", "four")


def draw_picture(rng: random.Random) -> tuple[Image.Image, list[dict]]:
    """One picture and what is in it: ``[{"colour", "shape", "where", "size"}]`` in quadrant order."""
    img = Image.new("RGB", (SIZE, SIZE), (245, 245, 245))
    draw = ImageDraw.Draw(img)
    half = SIZE // 2
    placed = []
    for q in sorted(rng.sample(range(4), rng.randint(1, 4))):
        colour, shape = rng.choice(list(COLOURS)), rng.choice(SHAPES)
        side = rng.randint(36, 92)
        x0 = (q % 2) * half + rng.randint(6, half - side - 6)
        y0 = (q // 2) * half + rng.randint(6, half - side - 6)
        draw_shape(draw, shape, (x0, y0, x0 + side, y0 + side), COLOURS[colour])
        placed.append({"colour": colour, "shape": shape, "where": QUADRANTS[q], "size": "large" if side > 64 else "small"})
    return img, placed


def _plural(n: int, word: str) -> str:
    return f"{NUMBERS[n]} {word}{'' if n == 1 else 's'}"


def describe(placed: list[dict], style: str) -> tuple[str, str]:
    """The think and answer texts of one generator (``glm`` or ``kimi``) for one picture.

    >>> describe([{"colour": "red", "shape": "circle", "where": "top left", "size": "large"}], "glm")[1]
    'One shape: a large red circle at the top left.'
    """
    items = [f"a {p['size']} {p['colour']} {p['shape']} at the {p['where']}" for p in placed]
    squares = sum(p["shape"] == "square" for p in placed)
    listing = "; ".join(items)
    answer = f"{_plural(len(placed), 'shape').capitalize()}: {listing}."
    if style == "glm":
        steps = " ".join(f"The {p['where']}: {p['colour']} {p['shape']}." for p in placed)
        think = (f"I look at each part of the picture. {steps} That makes {_plural(len(placed), 'shape')}, "
                 f"{_plural(squares, 'square')}.")
    else:
        colours = sorted({p["colour"] for p in placed})
        think = (f"Shapes on a light background. Colours: {', '.join(colours)}. "
                 f"Counting them: {len(placed)}. Squares: {squares}.")
    return think, answer


def generate_sample(out_dir: str | Path, rows: int = 400, seed: int = 0, shards: int = 2) -> Path:
    """Write ``out_dir/data/train-0000K-of-0000N.parquet``; return the data folder."""
    from datasets import Dataset, Features, Value
    from datasets import Image as ImageFeature

    rng = random.Random(seed)
    columns: dict[str, list] = {"image": [], "id": [], "think_1": [], "answer_1": [], "think_2": [], "answer_2": []}
    for i in range(rows):
        img, placed = draw_picture(rng)
        buffer = io.BytesIO()
        img.save(buffer, format="PNG")
        rid = f"s{seed}_{i:05d}"
        glm_think, glm_answer = describe(placed, "glm")
        kimi_think, kimi_answer = describe(placed, "kimi")
        columns["image"].append({"bytes": buffer.getvalue(), "path": f"{rid}.png"})
        columns["id"].append(rid)
        columns["think_1"].append(f"<think>{glm_think}</think><answer>{glm_answer}</answer>")
        columns["answer_1"].append(f"<answer>{glm_answer}</answer>")
        columns["think_2"].append(f"◁think▷{kimi_think}◁/think▷")
        columns["answer_2"].append(f"◁think▷{kimi_think}◁/think▷{kimi_answer}")
    features = Features({"image": ImageFeature(), **{k: Value("string") for k in columns if k != "image"}})
    dataset = Dataset.from_dict(columns, features=features)
    folder = Path(out_dir) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(shards):
        target = folder / f"train-{k:05d}-of-{shards:05d}.parquet"
        partial = target.with_suffix(".parquet.partial")  # a cancelled run leaves no shard that looks whole
        dataset.shard(shards, k, contiguous=True).to_parquet(str(partial))
        partial.replace(target)
    return folder


@dataclass
class SampleArguments(SampleFolder):
    """Where the sample goes (data/train-*.parquet) and how big it is."""

    rows: int = field(default=400, metadata={"help": "pictures, two traces each"})
    seed: int = 0
    shards: int = 2

    def __post_init__(self) -> None:
        from lookcloser.checks import check_range

        super().__post_init__()
        check_range("rows", self.rows, 1)
        check_range("shards", self.shards, 1, self.rows)


def main(argv: list[str] | None = None) -> int:
    def write(args: SampleArguments) -> None:
        print(generate_sample(args.out_dir, args.rows, args.seed, args.shards))

    return sample_command(SampleArguments, write, argv, "python -m data_builders.sample_imagenet_think",
                          __doc__.splitlines()[0])


if __name__ == "__main__":
    sys.exit(main())
