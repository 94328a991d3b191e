"""The Qwen3-VL processor lookcloser loads every checkpoint with (images only, torch tensors).

Its own module so that the tiny model's builder (``agent/tiny_qwen3_vl.py``) and the loader
(``agent/models.py``) both import it without importing each other.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import AutoProcessor, Qwen3VLConfig, Qwen3VLProcessor

from lookcloser.trl_surface import init_qwen3vl_processor


class LookcloserQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3-VL processor without a video processor, returning torch tensors for images.

    Why: the stock processor needs torchvision's video processor (absent on CPU machines), the
    PIL image backend returns numpy (TRL's GRPO tool loop needs tensors), and GRPO batches that
    mix prompts with and without images pass ``None`` image entries.
    """

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        # ProcessorMixin derives its sub-processors from this signature: no video_processor here.
        init_qwen3vl_processor(self, image_processor, tokenizer, chat_template)

    def __call__(self, images=None, text=None, videos=None, **kwargs):
        if videos is not None:
            raise ValueError("lookcloser's Qwen3-VL processor handles images only (no video processor on CPU)")
        images = _drop_empty_images(images)
        out = super().__call__(images=images, text=text, **kwargs)
        for key in ("pixel_values", "image_grid_thw"):
            if key in out and isinstance(out[key], np.ndarray):
                out[key] = torch.from_numpy(out[key])
        return out


def _drop_empty_images(images):
    """Map ``None`` per-sample entries to ``[]`` and return ``None`` when there is no image at all."""
    if images is None:
        return None
    if isinstance(images, (list, tuple)):
        fixed = [[] if entry is None else entry for entry in images]
        flat = [x for entry in fixed for x in (entry if isinstance(entry, (list, tuple)) else [entry])]
        return fixed if flat else None
    return images


# Lets AutoProcessor.from_pretrained find the subclass by the name saved in processor_config.json.
AutoProcessor.register(Qwen3VLConfig, LookcloserQwen3VLProcessor, exist_ok=True)
