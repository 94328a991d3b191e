"""Loading Qwen3-VL checkpoints (real or the offline tiny one) with a CPU-safe processor.

One place answers "give me a model and a processor for this name": a hub id, a local
checkpoint folder, or the reserved name ``lookcloser/tiny-qwen3-vl`` (built offline on first
use, cached on disk, deterministic from its seed).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from transformers import AutoConfig, AutoProcessor, Qwen3VLConfig, Qwen3VLProcessor

TINY_MODEL_NAME = "lookcloser/tiny-qwen3-vl"


class LookcloserQwen3VLProcessor(Qwen3VLProcessor):
    """Qwen3-VL processor without a video processor, returning torch tensors for images.

    Why: the stock processor needs torchvision's video processor (absent on CPU machines), the
    PIL image backend returns numpy (TRL's GRPO tool loop needs tensors), and GRPO batches that
    mix prompts with and without images pass ``None`` image entries.
    """

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        # ProcessorMixin derives its sub-processors from this signature: no video_processor here.
        self.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
        self.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
        self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
        self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
        self.vision_start_token = getattr(tokenizer, "vision_start_token", None) or "<|vision_start|>"
        self.vision_end_token = getattr(tokenizer, "vision_end_token", None) or "<|vision_end|>"
        self.vision_start_token_id = tokenizer.convert_tokens_to_ids(self.vision_start_token)
        self.vision_end_token_id = tokenizer.convert_tokens_to_ids(self.vision_end_token)
        self.video_processor = None
        super(Qwen3VLProcessor, self).__init__(image_processor, tokenizer, chat_template=chat_template)

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


def tiny_model_cache_dir() -> Path:
    root = os.environ.get("LOOKCLOSER_CACHE") or Path.home() / ".cache" / "lookcloser"
    return Path(root) / "tiny-qwen3-vl"


def resolve_model_path(name_or_path: str) -> str:
    """Turn a recipe's ``model_name_or_path`` into something ``from_pretrained`` can load.

    The reserved tiny name is built offline (once, then cached); anything else is returned
    unchanged, so hub ids and local folders behave as they do everywhere in transformers.
    """
    if name_or_path != TINY_MODEL_NAME:
        return name_or_path
    target = tiny_model_cache_dir()
    if not (target / "config.json").exists():
        from agent.tiny_qwen3_vl import build_tiny_qwen3_vl

        build_tiny_qwen3_vl(target)
    return str(target)


def without_truncation(processor):
    """Drop a truncation setting that a training run left in the tokenizer.

    Why: TRL truncates to ``max_length`` while training, and the tokenizer saves that state into
    tokenizer.json; a later load would then cut every longer prompt, image tokens included
    (agent prompts with tool schemas easily pass 2048 tokens). Prompts are never cut silently.
    """
    tokenizer = getattr(processor, "tokenizer", processor)
    for key in ("max_length", "truncation_strategy", "stride"):
        tokenizer.init_kwargs.pop(key, None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.truncation is not None:
        backend.no_truncation()
    return processor


def load_processor(name_or_path: str, **kwargs):
    path = resolve_model_path(name_or_path)
    if AutoConfig.from_pretrained(path).model_type == "qwen3_vl":
        # Real Qwen3-VL checkpoints name the stock processor, which cannot be built without
        # torchvision; ours loads the same tokenizer, image processor and chat template.
        return without_truncation(LookcloserQwen3VLProcessor.from_pretrained(path, **kwargs))
    return without_truncation(AutoProcessor.from_pretrained(path, **kwargs))


def load_model(name_or_path: str, dtype: str | torch.dtype | None = None, **kwargs):
    from transformers import AutoModelForImageTextToText

    path = resolve_model_path(name_or_path)
    if isinstance(dtype, str) and dtype not in ("auto",):
        dtype = getattr(torch, dtype)
    return AutoModelForImageTextToText.from_pretrained(path, dtype=dtype, **kwargs)
