"""``ImageToolEnv``: crop, zoom, rotate, flip, adjust and view the images of one episode.

Usable as TRL's ``environment_factory`` as is (``GRPOTrainer(..., environment_factory=ImageToolEnv)``)
and by ``agent.loop``. ``image_index`` counts the example's input images first, then every image
a tool returned, in order: the same order in which the model sees them.
"""

from __future__ import annotations

from PIL import Image

from lookcloser.agent import images as ops
from lookcloser.agent.toolkit import ToolEnv, ToolError, tool


def describe_images(sizes: list[tuple[int, int]]) -> str | None:
    """The note ``reset`` adds to the prompt: boxes are in pixels, so the model must know the sizes.

    >>> describe_images([(4000, 3000), (64, 48)])
    '\\nImage sizes: image 0 is 4000x3000 px, image 1 is 64x48 px.'
    """
    if not sizes:
        return None
    return "\nImage sizes: " + ", ".join(f"image {i} is {w}x{h} px" for i, (w, h) in enumerate(sizes)) + "."


def image_blocks(image: Image.Image, text: str) -> list[dict]:
    """The content blocks a tool returns: TRL sends the image back to the model with the text."""
    return [{"type": "image", "image": image}, {"type": "text", "text": text}]


class CropToolEnv(ToolEnv):
    """One tool, ``crop``, over the images of one example: the shortest tool prompt (the tool
    curriculum's environment; a tiny model's sequences are ~4x shorter than with every image tool).

    Args:
        max_pixels: Pixel budget of every picture a tool returns (crops are scaled under it;
            zooms and views past it are refused or scaled). Default 1024*1024.
        min_side: Boxes narrower or shorter than this (in full-resolution pixels) are grown to it;
            set it to the vision patch of the model (32 for Qwen3-VL: patch 16 x merge 2).
        max_zoom: Largest zoom factor.
        describe: ``reset`` returns a line giving each input image's size in pixels (TRL appends it
            to the prompt); off, ``reset`` returns None.

    Pass non-default settings to TRL with ``functools.partial(ImageToolEnv, max_pixels=...)``.
    ``max_zoom`` is used by ``ImageToolEnv``'s zoom.
    """

    def __init__(self, max_pixels: int = 1024 * 1024, min_side: int = 32, max_zoom: float = 8.0,
                 describe: bool = True) -> None:
        super().__init__()
        self._describe = describe
        self._max_pixels = int(max_pixels)
        self._min_side = int(min_side)
        self._max_zoom = float(max_zoom)
        self._images: list[ops.EpisodeImage] = []

    def reset(self, **example) -> str | None:
        """Start an episode on a data-set row: its ``images`` (or ``image``) column, PIL or paths."""
        self._reset_counters()
        self._images = [ops.make_root(img, self._max_pixels, show=False) for img in ops.load_example_images(example)]
        return describe_images([img.size for img in self._images]) if self._describe else None

    # -- helpers (private: TRL exposes every public method as a tool) --

    def _image(self, image_index: int) -> ops.EpisodeImage:
        if not self._images:
            raise ToolError("this episode has no images")
        if not 0 <= image_index < len(self._images):
            raise ToolError(f"image_index {image_index} does not exist; valid indices are 0 to {len(self._images) - 1}")
        return self._images[image_index]

    def _add(self, image: ops.EpisodeImage, what: str) -> list[dict]:
        self._images.append(image)
        index = len(self._images) - 1
        w, h = image.size
        note = "" if image.shown.size == image.size else f", shown at {image.shown.width}x{image.shown.height}"
        return image_blocks(image.shown, f"Image {index}: {what}. Its box coordinates span {w}x{h} px{note}.")

    # -- tools --

    @tool
    def crop(self, image_index: int, box: list[float]) -> list[dict] | str:
        """Crop a region of an image to look at it closely, at full resolution.

        Args:
            image_index: 0 is the first input image; images returned by tools follow.
            box: [x1, y1, x2, y2] in pixels of that image, or fractions of its size if all four are <= 1.
        """
        crop = ops.crop_image(self._image(image_index), box, min_side=self._min_side, max_pixels=self._max_pixels)
        return self._add(crop, f"crop of image {image_index} at {_fmt_box(box)}")


class ImageToolEnv(CropToolEnv):
    """Image tools over the images of one example (TIR-Bench, MIR, synthetic tasks): crop, zoom,
    rotate, flip, adjust and view_image. Arguments as ``CropToolEnv``."""

    @tool
    def zoom(self, image_index: int, box: list[float], factor: float = 2.0) -> list[dict] | str:
        """Enlarge a region of an image by a factor.

        Args:
            image_index: 0 is the first input image; images returned by tools follow.
            box: [x1, y1, x2, y2] in pixels of that image, or fractions of its size if all four are <= 1.
            factor: Magnification, from 1 to 8.
        """
        zoomed = ops.zoom_image(self._image(image_index), box, factor, min_side=self._min_side,
                                max_pixels=self._max_pixels, max_factor=self._max_zoom)
        return self._add(zoomed, f"zoom x{factor:g} of image {image_index} at {_fmt_box(box)}")

    @tool
    def rotate(self, image_index: int, angle: float) -> list[dict] | str:
        """Rotate an image counter-clockwise.

        Args:
            image_index: 0 is the first input image; images returned by tools follow.
            angle: Degrees counter-clockwise, e.g. 90, 180, 270 or -15.
        """
        rotated = ops.rotate_image(self._image(image_index), angle, max_pixels=self._max_pixels)
        return self._add(rotated, f"image {image_index} rotated {angle:g} degrees counter-clockwise")

    @tool
    def flip(self, image_index: int, direction: str) -> list[dict] | str:
        """Mirror an image.

        Args:
            image_index: 0 is the first input image; images returned by tools follow.
            direction: "horizontal" (left-right) or "vertical" (top-bottom).
        """
        flipped = ops.flip_image(self._image(image_index), direction, max_pixels=self._max_pixels)
        return self._add(flipped, f"image {image_index} flipped {direction.strip().lower()}")

    @tool
    def adjust(self, image_index: int, contrast: float = 1.0, brightness: float = 1.0) -> list[dict] | str:
        """Change the contrast and brightness of an image.

        Args:
            image_index: 0 is the first input image; images returned by tools follow.
            contrast: Contrast factor: 1 keeps it, 2 doubles it, 0.5 halves it.
            brightness: Brightness factor: 1 keeps it, 2 doubles it, 0.5 halves it.
        """
        adjusted = ops.adjust_image(self._image(image_index), contrast, brightness, max_pixels=self._max_pixels)
        return self._add(adjusted, f"image {image_index} with contrast x{contrast:g}, brightness x{brightness:g}")

    @tool
    def view_image(self, image_index: int) -> list[dict] | str:
        """Show an image again, e.g. the original after several crops.

        Args:
            image_index: 0 is the first input image; images returned by tools follow.
        """
        return self._add(ops.view(self._image(image_index), self._max_pixels), f"view of image {image_index}")


def _fmt_box(box: list[float]) -> str:
    """Compact box text for observations.

    >>> _fmt_box([0.1, 0.25, 1.0, 1.0])
    '[0.1, 0.25, 1, 1]'
    """
    return "[" + ", ".join(f"{v:g}" for v in box) + "]"


# The environment names this module's classes serve: name -> (class, the benchmark whose tasks it plays).
# agent.environments composes them (and a tool set: agent.environments.TOOL_SETS).
# The synthetic tasks are TIR-Bench's format; crop (crop only) is the tool curriculum's (recipes/tool_curriculum.yaml).
ENVIRONMENTS: dict[str, tuple[type[ToolEnv], str]] = {
    "tir_bench": (ImageToolEnv, "tir_bench"), "mir": (ImageToolEnv, "mir"), "synthetic": (ImageToolEnv, "tir_bench"),
    "crop": (CropToolEnv, "tir_bench")}
