"""The processors lookcloser loads every checkpoint with (images only, torch tensors): the shared part
(``ImagesOnlyProcessor``) and Qwen3-VL's; each other family's lives in its module (``agent/families/``).

Its own module so that the tiny model's builder (``agent/tiny_qwen3_vl.py``), the family specs and the
loader (``agent/models.py``) all import it without importing each other.

Runtime classes only: what they save names transformers' own processor class (with its video
processor's settings where it has one), so any process loads our checkpoints with plain
``AutoProcessor`` where torchvision is installed, and fails loudly (torchvision missing) where the
stock class needs it, instead of returning a tokenizer alone as it does for a class it does not know.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from transformers import Qwen3VLProcessor

from lookcloser.trl_surface import init_qwen3vl_processor

SAVED_PROCESSOR_CLASS = "Qwen3VLProcessor"
VIDEO_PROCESSOR_CLASS = "Qwen3VLVideoProcessor"
# What a Qwen video processor shares with its image processor (patching, normalisation).
QWEN_VIDEO_SETTINGS = ("patch_size", "temporal_patch_size", "merge_size", "image_mean", "image_std")


class ImagesOnlyProcessor:
    """A family's stock processor (the next base class) for images only, returning torch tensors.

    Why: stock processors with a video half need torchvision's video processor (absent on CPU
    machines), the PIL image backend returns numpy (TRL's GRPO tool loop needs tensors), and GRPO
    batches that mix prompts with and without images pass ``None`` image entries. It saves itself as
    the stock processor (``saved_class``), keeping the video processor settings it was loaded with.
    A subclass whose stock class has a video half drops ``video_processor`` from its ``__init__``
    signature (``ProcessorMixin`` derives its sub-processors from it).
    """

    saved_class: ClassVar[str]
    # The stock video processor's class (its settings are written on save), or None: the family has none.
    video_processor_type: ClassVar[str | None] = None
    # The image processor's settings the video processor is saved with.
    video_settings: ClassVar[tuple[str, ...]] = QWEN_VIDEO_SETTINGS
    # Image outputs returned as torch tensors (the PIL backend gives numpy without return_tensors).
    image_tensor_keys: ClassVar[tuple[str, ...]] = ("pixel_values",)
    # The saved video processor settings (a dict); None: derived from the image processor on save.
    video_processor_config: dict | None = None

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        processor = super().from_pretrained(pretrained_model_name_or_path, **kwargs)
        if cls.video_processor_type:
            processor.video_processor_config = stored_video_processor_config(pretrained_model_name_or_path, **kwargs)
        return processor

    def __call__(self, images=None, text=None, videos=None, **kwargs):
        if videos is not None:
            raise ValueError(f"lookcloser's {self.saved_class} handles images only (no video processor on CPU)")
        out = super().__call__(images=_drop_empty_images(images), text=text, **kwargs)
        for key in self.image_tensor_keys:
            if key in out:
                out[key] = _as_tensor(out[key])
        return out

    def to_dict(self) -> dict:
        """``processor_config.json`` as the stock processor writes it: its class name, its video processor."""
        out = super().to_dict()
        out["processor_class"] = self.saved_class
        if self.video_processor_type:
            out["video_processor"] = self.video_processor_config or video_processor_config_for(
                self.image_processor, self.video_processor_type, self.video_settings)
        return out

    def save_pretrained(self, save_directory, push_to_hub: bool = False, **kwargs):
        files = super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)
        # ProcessorMixin writes this class's own name into tokenizer_config.json (it takes
        # ``self.__class__.__name__``, with no hook): name the stock class there too.
        tokenizer_config = Path(save_directory) / "tokenizer_config.json"
        if tokenizer_config.is_file():
            config = json.loads(tokenizer_config.read_text(encoding="utf-8"))
            if config.get("processor_class") not in (None, self.saved_class):
                config["processor_class"] = self.saved_class
                tokenizer_config.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return files


class LookcloserQwen3VLProcessor(ImagesOnlyProcessor, Qwen3VLProcessor):
    """Qwen3-VL processor without a video processor, returning torch tensors for images."""

    saved_class = SAVED_PROCESSOR_CLASS
    video_processor_type = VIDEO_PROCESSOR_CLASS
    image_tensor_keys = ("pixel_values", "image_grid_thw")

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        # ProcessorMixin derives its sub-processors from this signature: no video_processor here.
        init_qwen3vl_processor(self, image_processor, tokenizer, chat_template)


def video_processor_config_for(image_processor, video_processor_type: str = VIDEO_PROCESSOR_CLASS,
                               keys: tuple[str, ...] = QWEN_VIDEO_SETTINGS) -> dict:
    """The stock video processor's settings (``keys``) taken from an image processor (patching or tiling, and
    normalisation); what the video processor does not get here it takes from its own defaults.

    >>> from transformers import Qwen2VLImageProcessorPil
    >>> video_processor_config_for(Qwen2VLImageProcessorPil(patch_size=16))["patch_size"]
    16
    """
    saved = image_processor.to_dict()  # as the image processor writes them (lists, plain dicts, ints)
    return {"video_processor_type": video_processor_type, **{key: saved[key] for key in keys if key in saved}}


def stored_video_processor_config(name_or_path, **kwargs) -> dict | None:
    """The video processor settings a checkpoint holds (``processor_config.json`` or
    ``video_preprocessor_config.json``), read as files: building the video processor needs torchvision."""
    from transformers.video_processing_utils import BaseVideoProcessor

    hub_kwargs = {k: kwargs[k] for k in ("cache_dir", "force_download", "local_files_only", "token", "revision",
                                         "subfolder") if k in kwargs}
    try:
        config, _ = BaseVideoProcessor.get_video_processor_dict(str(name_or_path), **hub_kwargs)
    except OSError:  # none saved (older lookcloser checkpoints)
        return None
    # Without a video config transformers falls back to the image processor's: not a video config.
    return config if config.get("video_processor_type") else None


def _as_tensor(value):
    """A PIL image processor's output as one tensor: an array, a list of same-shape arrays (one per image), or a
    list of whole numbers or of equal-length tuples of them (LLaVA-OneVision's ``batch_num_images``, ``image_sizes``).

    >>> _as_tensor([np.zeros((3, 2, 2)), np.ones((3, 2, 2))]).shape
    torch.Size([2, 3, 2, 2])
    >>> _as_tensor([(128, 96), (48, 64)]).tolist(), _as_tensor([2]).dtype
    ([[128, 96], [48, 64]], torch.int64)
    """
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, np.ndarray) for v in value):
        return torch.from_numpy(np.stack(value))
    if isinstance(value, (list, tuple)) and value and all(_whole_numbers(v) for v in value):
        return torch.tensor(value, dtype=torch.int64)
    return value


def _whole_numbers(value) -> bool:
    return isinstance(value, int) or (isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value))


def _drop_empty_images(images):
    """Map ``None`` per-sample entries to ``[]`` and return ``None`` when there is no image at all."""
    if images is None:
        return None
    if isinstance(images, (list, tuple)):
        fixed = [[] if entry is None else entry for entry in images]
        flat = [x for entry in fixed for x in (entry if isinstance(entry, (list, tuple)) else [entry])]
        return fixed if flat else None
    return images
