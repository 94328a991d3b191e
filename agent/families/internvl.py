"""InternVL in transformers' -hf format (``internvl``; InternVL2.5/3 ``*-hf`` checkpoints).

ChatML turns on a Qwen2.5 tokenizer; an image is ``<img>`` + ``<IMG_CONTEXT>`` x (tokens per tile x tiles) +
``</img>``, tiles cut by the GotOCR2 image processor (``crop_to_patches``: a grid of tiles plus a thumbnail).
The published template has no tool calling: ``templates/internvl_tools.jinja`` is ours. 1-D positions;
the model takes ``pixel_values`` (tiles, 3, H, W) and no type ids.
"""

from __future__ import annotations

from pathlib import Path

from transformers import (
    GotOcr2ImageProcessorPil,
    InternVLConfig,
    InternVLForConditionalGeneration,
    InternVLProcessor,
    PreTrainedTokenizerFast,
)

from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.tool_calls import chatml_response_template
from lookcloser.agent.processor import ImagesOnlyProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config

TOOL_TEMPLATE = "internvl_tools.jinja"
VERSION = 2  # bump on any change to what build_tiny writes (or to agent/tiny_builder.py)
# The -hf tokenizer is Qwen2.5-VL's plus InternVL's image tokens (transformers' convert script): Qwen's
# <|image_pad|> is kept, though InternVL never emits it (TRL's GRPO looks it up for type ids).
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|image_pad|>", "<|video_pad|>", "<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>",
                  "<ref>", "</ref>", "<box>", "</box>", "<video>"]
ADDED_TOKENS = ["<tool_call>", "</tool_call>"]
# What InternVLProcessor reads from the tokenizer by name.
NAMED_TOKENS = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                "video_token": "<video>"}
# Tiles of 64x64 pixels, 8x8-pixel patches, pixel shuffle 0.5: 16 tokens a tile; up to 4 tiles + a thumbnail
# (80 tokens a 128x128 image).
TILE, PATCH, MAX_TILES = 64, 8, 4
TOKENS_PER_TILE = (TILE // PATCH) ** 2 // 4
SIZES = {"tiny": (64, 2, 32, 2)}  # text hidden, text layers, vision hidden, vision layers
# The chat template InternVL's -hf checkpoints ship (InternVL3-*-hf; no tools): the tiny checkpoint carries it,
# as a real one does, so the stack's switch to TOOL_TEMPLATE is exercised.
PUBLISHED_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'}}{% if message['content'] is string %}"
    "{{ message['content'] }}{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' %}"
    "{{ '<IMG_CONTEXT>\\n' }}{% elif content['type'] == 'video' %}{{ '<video>\\n' }}{% elif content['type'] == "
    "'text' %}{{ content['text'] }}{% endif %}{% endfor %}{% endif %}{{'<|im_end|>\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{'<|im_start|>assistant\\n' }}{% endif %}"
)


class LookcloserInternVLProcessor(ImagesOnlyProcessor, InternVLProcessor):
    """InternVL's processor without its (torchvision) video processor, saved as the stock class."""

    saved_class = "InternVLProcessor"
    video_processor_type = "InternVLVideoProcessor"
    video_settings = ("size", "image_mean", "image_std")

    def __init__(self, image_processor=None, tokenizer=None, image_seq_length: int = 256, chat_template=None,
                 **kwargs):
        # No video_processor in this signature, so ProcessorMixin expects (and keeps) the two others only.
        super().__init__(image_processor, tokenizer, video_processor=None, image_seq_length=image_seq_length,
                         chat_template=chat_template, **kwargs)


def build_tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer(SPECIAL_TOKENS, ADDED_TOKENS, PUBLISHED_TEMPLATE, extra_special_tokens=NAMED_TOKENS,
                         eos_token="<|im_end|>", pad_token="<|endoftext|>")


def build_config(tokenizer, size: str = "tiny") -> InternVLConfig:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_layers = SIZES[size]
    return InternVLConfig(
        text_config=text_config(tokenizer, text_hidden, text_layers, eos="<|im_end|>", pad="<|endoftext|>",
                                model_type="qwen2", head_dim=16, tie_word_embeddings=False),
        vision_config={"hidden_size": vision_hidden, "num_hidden_layers": vision_layers,
                       "num_attention_heads": vision_hidden // 16, "intermediate_size": 2 * vision_hidden,
                       "image_size": [TILE, TILE], "patch_size": [PATCH, PATCH]},
        image_token_id=ids("<IMG_CONTEXT>"), image_seq_length=TOKENS_PER_TILE, downsample_ratio=0.5,
        tie_word_embeddings=False,
    )


def build_processor() -> LookcloserInternVLProcessor:
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": TILE, "width": TILE}, crop_to_patches=True, min_patches=1, max_patches=MAX_TILES,
        image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    return LookcloserInternVLProcessor(image_processor=image_processor, tokenizer=build_tokenizer(),
                                       image_seq_length=TOKENS_PER_TILE, chat_template=PUBLISHED_TEMPLATE)


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the tiny random InternVL (``SIZES``) to ``out_dir``, its weights drawn from ``seed``."""
    processor = build_processor()
    config = build_config(processor.tokenizer, size)
    return save_tiny(out_dir, InternVLForConditionalGeneration, config, processor, seed, replace)


FAMILY = ModelFamily(
    name="internvl",
    slug="internvl",
    model_types=("internvl",),
    processor_class=LookcloserInternVLProcessor,
    image_token="<IMG_CONTEXT>",
    image_start="<img>",
    image_keys=("pixel_values",),
    token_type_key=None,
    mrope=False,
    turns="chatml",
    tool_template=TOOL_TEMPLATE,
    response_schema=chatml_response_template,
    build_tiny=build_tiny,
    tiny_version=VERSION,
)
