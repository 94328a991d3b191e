"""What every synthetic TIR-Bench kind is made of: the item, the oracle's tool turns, the record, where its
images are saved, and the shapes and colours drawn on them.

One home for these (``data_builders.synthetic``'s five kinds and ``data_builders.program_tasks``' kinds both
build on them; ``synthetic`` re-exports them, so its importers are unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image, ImageDraw

from lookcloser.looktools import COLOURS as LOOKTOOLS_COLOURS

LETTERS = "ABCDEFGHIJ"
# The shapes' colours, by name: the image library's table (its home; the code the model writes names them the
# same), less white, black and gray, in the order every generator draws from.
COLOURS = {name: rgb for name, rgb in LOOKTOOLS_COLOURS.items() if name not in ("white", "black", "gray")}
SHAPES = ("circle", "square", "triangle")


@dataclass
class ToolStep:
    """One assistant turn of the oracle: its thinking, then tool calls ``(name, arguments)``."""

    think: str
    calls: list[tuple[str, dict]]


@dataclass
class SyntheticItem:
    record: dict  # the TIR-Bench record, image paths relative to the output folder
    image_paths: list[Path]  # the same images, absolute
    steps: list[ToolStep] = field(default_factory=list)
    final_think: str = ""
    # The question asked of the last tool result alone (the "look" warm-up), where that result
    # answers it by itself (visual_search: the crop of the named cell); None otherwise.
    look_prompt: str | None = None

    @property
    def answer_text(self) -> str:
        """What the oracle writes inside ``<answer>``."""
        return str(self.record["answer"])


def resize_long_side(img: Image.Image, size: int) -> Image.Image:
    scale = size / max(img.size)
    return img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.Resampling.LANCZOS)


def mcq(question: str, options: list[str], suffix: str = "") -> str:
    return question + "\n\n" + "\n".join(f"{LETTERS[i]}. {o}{suffix}" for i, o in enumerate(options))


def pixel_box(x1: float, y1: float, x2: float, y2: float) -> list[int]:
    return [round(x1), round(y1), round(x2), round(y2)]


def spot_difference_crops(cells: list[int], cols: int, cw: float, ch: float) -> tuple[list[ToolStep], str]:
    """The image-tool oracle of a spot-the-difference item: crop each differing cell (0-based, row by row, on a
    grid of ``cols`` columns of ``cw`` x ``ch`` pixels) in both pictures; then the closing thought."""
    steps, seen = [], []
    for cell in cells:
        r, c = divmod(cell, cols)
        box = pixel_box(c * cw, r * ch, (c + 1) * cw, (r + 1) * ch)
        lead = f"Patch {seen[-1]} differs between the two crops. " if seen else "Some patches look different. "
        steps.append(ToolStep(f"{lead}I compare patch {cell + 1} (row {r + 1}, column {c + 1}) in both images.",
                              [("crop", {"image_index": 0, "box": box}), ("crop", {"image_index": 1, "box": box})]))
        seen.append(cell + 1)
    answer = ", ".join(map(str, seen))
    return steps, f"Patch {seen[-1]} differs as well. The images differ in patches {answer}."


class ItemWriter:
    """Saves an item's images as ``data/{task}/{id:06d}_{k}.png`` (never a name the OCR overrides hit)."""

    def __init__(self, out_dir: Path):
        self.out_dir = out_dir

    def save(self, img: Image.Image, task: str, item_id: int, k: int) -> tuple[str, Path]:
        rel = f"data/{task}/{item_id:06d}_{k}.png"
        path = self.out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        img.save(path)
        return rel, path


def item_record(item_id: int, task: str, prompt: str, answer: str, rels: list[str], meta: dict) -> dict:
    return {"id": item_id, "task": task, "prompt": prompt, "answer": answer, "image_1": rels[0],
            "image_2": rels[1] if len(rels) > 1 else None, "meta_data": meta}


def draw_shape(draw: ImageDraw.ImageDraw, shape: str, box: tuple[float, float, float, float], fill,
               outline=None) -> None:
    x1, y1, x2, y2 = box
    if shape == "circle":
        draw.ellipse(box, fill=fill, outline=outline, width=2 if outline else 0)
    elif shape == "square":
        draw.rectangle(box, fill=fill, outline=outline, width=2 if outline else 0)
    else:
        draw.polygon([((x1 + x2) / 2, y1), (x2, y2), (x1, y2)], fill=fill, outline=outline, width=2 if outline else 0)


def spot_difference_prompt(rows: int, cols: int) -> str:
    """The spot-the-difference question for a ``rows`` x ``cols`` grid (TIR-Bench's wording)."""
    return ("The two images are divided into a grid of n rows and m columns; patches are numbered from 1, left to "
            "right and top to bottom. Output the list of patch indices where the two images differ. Note that in "
            f"this image, n is {rows} and m is {cols}")
