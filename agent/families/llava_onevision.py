"""LLaVA-OneVision (``llava_onevision``; transformers' llava-onevision-qwen2-*-hf checkpoints).

ChatML turns on a Qwen2 tokenizer plus ``<image>``/``<video>``; each image is ``<image>`` x N. N depends on
the sample: a sample with one image is "anyres" (a base view plus a grid of tiles chosen from
``image_grid_pinpoints``, unpadded, one newline feature per row), a sample with several images gives each
the base view plus one newline. The published template has no tool calling:
``templates/llava_onevision_tools.jinja`` is ours. 1-D positions; the model takes ``pixel_values``
(images, tiles, 3, H, W), ``image_sizes`` and ``batch_num_images`` (batches join along dim 0 after padding the
tiles to the batch's most).
"""

from __future__ import annotations

from pathlib import Path

from transformers import (
    LlavaOnevisionConfig,
    LlavaOnevisionForConditionalGeneration,
    LlavaOnevisionImageProcessorPil,
    LlavaOnevisionProcessor,
    PreTrainedTokenizerFast,
)

from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.tool_calls import chatml_response_template
from lookcloser.agent.processor import ImagesOnlyProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config

TOOL_TEMPLATE = "llava_onevision_tools.jinja"
VERSION = 2  # bump on any change to what build_tiny writes (or to agent/tiny_builder.py)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]
# Views of 64x64 pixels in 16x16-pixel patches: 16 features a view. Anyres grids up to 2x2 views, so a
# single 128x128 image is 16 (base) + 8x8 (grid) + 8 (newlines) = 88 tokens; in a multi-image sample, 17.
VIEW, PATCH = 64, 16
BASE_TOKENS = (VIEW // PATCH) ** 2
PINPOINTS = [[VIEW * rows, VIEW * cols] for rows in (1, 2) for cols in (1, 2)]
SIZES = {"tiny": (64, 2, 32, 2)}  # text hidden, text layers, vision hidden, vision layers
# The chat template LLaVA-OneVision's -hf checkpoints ship (transformers' convert script; no tools): the tiny
# checkpoint carries it, as a real one does, so the stack's switch to TOOL_TEMPLATE is exercised.
PUBLISHED_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'}}{# Render all images first #}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'image') %}{{ '<image>\\n' }}{% endfor %}"
    "{# Render all video then #}{% for content in message['content'] | selectattr('type', 'equalto', 'video') %}"
    "{{ '<video>\\n' }}{% endfor %}{# Render all text next #}{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{{ content['text'] }}{% endfor %}"
    "{% else %}{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}{% generation %}"
    "{{ content['text'] }}{% endgeneration %}{% endfor %}{% endif %}{{'<|im_end|>' + '\\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


class LookcloserLlavaOnevisionProcessor(ImagesOnlyProcessor, LlavaOnevisionProcessor):
    """LLaVA-OneVision's processor without its (torchvision) video processor, saved as the stock class."""

    saved_class = "LlavaOnevisionProcessor"
    video_processor_type = "LlavaOnevisionVideoProcessor"
    video_settings = ("size", "image_mean", "image_std")
    image_tensor_keys = ("pixel_values", "image_sizes", "batch_num_images")

    def __init__(self, image_processor=None, tokenizer=None, num_image_tokens=None,
                 vision_feature_select_strategy=None, chat_template=None, image_token="<image>",
                 video_token="<video>", vision_aspect_ratio="anyres_max_9", **kwargs):
        # No video_processor in this signature, so ProcessorMixin expects (and keeps) the two others only.
        super().__init__(image_processor, tokenizer, video_processor=None, num_image_tokens=num_image_tokens,
                         vision_feature_select_strategy=vision_feature_select_strategy, chat_template=chat_template,
                         image_token=image_token, video_token=video_token, vision_aspect_ratio=vision_aspect_ratio,
                         **kwargs)


def build_tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer(SPECIAL_TOKENS, [], PUBLISHED_TEMPLATE, eos_token="<|im_end|>", pad_token="<|endoftext|>")


def build_config(tokenizer, size: str = "tiny") -> LlavaOnevisionConfig:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_layers = SIZES[size]
    return LlavaOnevisionConfig(
        text_config=text_config(tokenizer, text_hidden, text_layers, eos="<|im_end|>", pad="<|endoftext|>",
                                model_type="qwen2", head_dim=16, tie_word_embeddings=False),
        vision_config={"model_type": "siglip_vision_model", "hidden_size": vision_hidden,
                       "num_hidden_layers": vision_layers, "num_attention_heads": vision_hidden // 16,
                       "intermediate_size": 2 * vision_hidden, "image_size": VIEW, "patch_size": PATCH,
                       "vision_use_head": False},
        image_token_index=ids("<image>"), video_token_index=ids("<video>"), vision_feature_select_strategy="full",
        vision_feature_layer=-1, image_grid_pinpoints=PINPOINTS, vision_aspect_ratio="anyres_max_9",
        tie_word_embeddings=False,
    )


def build_processor() -> LookcloserLlavaOnevisionProcessor:
    image_processor = LlavaOnevisionImageProcessorPil(
        size={"height": VIEW, "width": VIEW}, image_grid_pinpoints=PINPOINTS, image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5])
    return LookcloserLlavaOnevisionProcessor(
        image_processor=image_processor, tokenizer=build_tokenizer(), num_image_tokens=BASE_TOKENS,
        vision_feature_select_strategy="full", chat_template=PUBLISHED_TEMPLATE)


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the tiny random LLaVA-OneVision (``SIZES``) to ``out_dir``, its weights drawn from ``seed``."""
    processor = build_processor()
    config = build_config(processor.tokenizer, size)
    return save_tiny(out_dir, LlavaOnevisionForConditionalGeneration, config, processor, seed, replace)


FAMILY = ModelFamily(
    name="llava_onevision",
    slug="llava-onevision",
    model_types=("llava_onevision",),
    processor_class=LookcloserLlavaOnevisionProcessor,
    image_token="<image>",
    image_start=None,  # an image is its <image> run alone, no opening token
    image_keys=("pixel_values", "image_sizes", "batch_num_images"),
    token_type_key=None,
    mrope=False,
    turns="chatml",
    tool_template=TOOL_TEMPLATE,
    response_schema=chatml_response_template,
    build_tiny=build_tiny,
    tiny_version=VERSION,
)
