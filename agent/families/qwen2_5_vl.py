"""Qwen2.5-VL (``qwen2_5_vl``): what DeepEyes, Mini-o3, Thyme and PyVision train.

ChatML turns with a default system prompt; the published template (TRL's ``qwen2_5_vl.jinja``, Qwen2-VL's)
has no tool calling, so ours (``templates/qwen2_5_vl_tools.jinja``) supplies it in Qwen's own format.
Images are ``<|vision_start|>`` + ``<|image_pad|>`` x (grid / merge^2) + ``<|vision_end|>``; M-RoPE
positions from ``get_rope_index``, which needs ``mm_token_type_ids`` (without it the model silently
falls back to 1-D positions).
"""

from __future__ import annotations

from pathlib import Path

from transformers import (
    PreTrainedTokenizerFast,
    Qwen2_5_VLConfig,
    Qwen2_5_VLForConditionalGeneration,
    Qwen2_5_VLProcessor,
    Qwen2VLImageProcessorPil,
)

from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.tool_calls import chatml_response_template
from lookcloser.agent.processor import ImagesOnlyProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config, trl_chat_template

# The real checkpoints' special tokens (Qwen2-VL's tokenizer) and their plain tool-call tokens.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
                  "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
                  "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>"]
VERSION = 1  # bump on any change to what build_tiny writes (or to agent/tiny_builder.py)
PATCH_SIZE = 14
MERGE_SIZE = 2
# Every image is resized to about 112x112 pixels (multiples of patch x merge = 28): 8x8 patches of 14x14,
# merged into 16 LM tokens, as the embedded Qwen3-VL's 128x128 at patch 16.
IMAGE_PIXELS = 112 * 112
SIZES = {"tiny": (64, 2, 64, 2)}  # (text hidden, text layers, vision hidden, vision depth)


class LookcloserQwen2_5_VLProcessor(ImagesOnlyProcessor, Qwen2_5_VLProcessor):
    """Qwen2.5-VL's processor without its (torchvision) video processor, saved as the stock class."""

    saved_class = "Qwen2_5_VLProcessor"
    video_processor_type = "Qwen2VLVideoProcessor"
    image_tensor_keys = ("pixel_values", "image_grid_thw")

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        # No video_processor in this signature, so ProcessorMixin expects (and keeps) the two others only.
        super().__init__(image_processor, tokenizer, video_processor=None, chat_template=chat_template, **kwargs)


def build_tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer(SPECIAL_TOKENS, ADDED_TOKENS, trl_chat_template("qwen2_5_vl"),
                         eos_token="<|im_end|>", pad_token="<|endoftext|>")


def build_config(tokenizer, size: str = "tiny") -> Qwen2_5_VLConfig:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_depth = SIZES[size]
    return Qwen2_5_VLConfig(
        text_config=text_config(
            tokenizer, text_hidden, text_layers, eos="<|im_end|>", pad="<|endoftext|>", tie_word_embeddings=False,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2]}),
        vision_config={
            "depth": vision_depth, "hidden_size": vision_hidden, "intermediate_size": 2 * vision_hidden,
            "num_heads": vision_hidden // 16, "patch_size": PATCH_SIZE, "spatial_merge_size": MERGE_SIZE,
            "temporal_patch_size": 2, "out_hidden_size": text_hidden,
            # one window of 4x4 merged patches covers the whole 112x112 image; the last block attends fully
            "window_size": 112, "fullatt_block_indexes": [vision_depth - 1],
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )


def build_processor() -> LookcloserQwen2_5_VLProcessor:
    tokenizer = build_tokenizer()
    image_processor = Qwen2VLImageProcessorPil(patch_size=PATCH_SIZE, merge_size=MERGE_SIZE, temporal_patch_size=2,
                                               size={"shortest_edge": IMAGE_PIXELS, "longest_edge": IMAGE_PIXELS})
    return LookcloserQwen2_5_VLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                         chat_template=tokenizer.chat_template)


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the tiny random Qwen2.5-VL (``SIZES``) to ``out_dir``, its weights drawn from ``seed``."""
    processor = build_processor()
    config = build_config(processor.tokenizer, size)
    return save_tiny(out_dir, Qwen2_5_VLForConditionalGeneration, config, processor, seed, replace)


FAMILY = ModelFamily(
    name="qwen2_5_vl",
    slug="qwen2.5-vl",
    model_types=("qwen2_5_vl",),
    processor_class=LookcloserQwen2_5_VLProcessor,
    image_token="<|image_pad|>",
    image_start="<|vision_start|>",
    image_keys=("pixel_values", "image_grid_thw"),
    token_type_key="mm_token_type_ids",
    mrope=True,
    turns="chatml",
    tool_template="qwen2_5_vl_tools.jinja",
    response_schema=chatml_response_template,
    build_tiny=build_tiny,
    tiny_version=VERSION,
)
