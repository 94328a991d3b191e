"""Gemma 3 (``gemma3``): what people fine-tune on one or two GPUs.

Turns are ``<start_of_turn>user|model\\n ... <end_of_turn>\\n`` and must alternate; the system text opens the
first user turn. The published template (TRL's ``gemma3.jinja``) has no tools and refuses a tool role, so
ours (``templates/gemma3_tools.jinja``) returns tool results in a user turn. ``<start_of_image>`` in the
text becomes ``\\n\\n<start_of_image>`` + ``<image_soft_token>`` x ``image_seq_length`` + ``<end_of_image>\\n\\n``
(a fixed count per image); the processor marks the soft tokens in ``token_type_ids`` (bidirectional
attention inside an image; the model runs causal without them). 1-D RoPE. Like the real checkpoints, the
tokenizer's eos is ``<eos>`` while a model turn ends with ``<end_of_turn>``: both are in the generation
config's ``eos_token_id``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import (
    Gemma3Config,
    Gemma3ForConditionalGeneration,
    Gemma3ImageProcessorPil,
    Gemma3Processor,
    PreTrainedTokenizerFast,
)

from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.tool_calls import tool_call_response_template
from lookcloser.agent.processor import ImagesOnlyProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config, trl_chat_template

# The real checkpoints' control tokens (ids 0-4, the turn markers, the image markers).
SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>",
                  "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
# What Gemma3Processor reads from the tokenizer by name.
NAMED_TOKENS = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>", "image_token": "<image_soft_token>"}
VERSION = 1  # bump on any change to what build_tiny writes (or to agent/tiny_builder.py)
IMAGE_SIZE = 128
PATCH_SIZE = 16
# 8x8 patches average-pooled to 4x4: 16 LM tokens a 128x128 image, as the embedded Qwen3-VL's.
TOKENS_PER_IMAGE = 16
SIZES = {"tiny": (64, 2, 64, 2)}  # (text hidden, text layers, vision hidden, vision depth)


class LookcloserGemma3Processor(ImagesOnlyProcessor, Gemma3Processor):
    """Gemma 3's processor returning torch tensors and taking ``None`` image entries, saved as the stock class
    (it has no video half: ``AutoProcessor`` loads the folder without torchvision)."""

    saved_class = "Gemma3Processor"


def build_tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer(SPECIAL_TOKENS, [], trl_chat_template("gemma3"), extra_special_tokens=NAMED_TOKENS,
                         bos_token="<bos>", eos_token="<eos>", pad_token="<pad>", unk_token="<unk>")


def build_config(tokenizer, size: str = "tiny") -> Gemma3Config:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_depth = SIZES[size]
    return Gemma3Config(
        text_config=text_config(
            tokenizer, text_hidden, text_layers, bos="<bos>", eos=["<eos>", "<end_of_turn>"], pad="<pad>",
            head_dim=16, query_pre_attn_scalar=16, sliding_window=512,
            layer_types=["sliding_attention"] * (text_layers - 1) + ["full_attention"]),
        vision_config={
            "hidden_size": vision_hidden, "intermediate_size": 2 * vision_hidden, "num_hidden_layers": vision_depth,
            "num_attention_heads": vision_hidden // 16, "image_size": IMAGE_SIZE, "patch_size": PATCH_SIZE,
            "vision_use_head": False,
        },
        mm_tokens_per_image=TOKENS_PER_IMAGE,
        boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"),
        image_token_index=ids("<image_soft_token>"),
        eos_token_id=[ids("<eos>"), ids("<end_of_turn>")],
    )


def build_processor() -> LookcloserGemma3Processor:
    tokenizer = build_tokenizer()
    image_processor = Gemma3ImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    return LookcloserGemma3Processor(image_processor=image_processor, tokenizer=tokenizer,
                                     chat_template=tokenizer.chat_template, image_seq_length=TOKENS_PER_IMAGE)


def _draw_projection(model) -> None:
    # transformers initialises the vision-to-text projection to zeros: a random model would not see images.
    torch.nn.init.normal_(model.model.multi_modal_projector.mm_input_projection_weight, std=0.02)


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the tiny random Gemma 3 (``SIZES``) to ``out_dir``, its weights drawn from ``seed``."""
    processor = build_processor()
    config = build_config(processor.tokenizer, size)
    return save_tiny(out_dir, Gemma3ForConditionalGeneration, config, processor, seed, replace,
                     redraw=_draw_projection)


def _response_schema() -> dict:
    return tool_call_response_template("<start_of_turn>model\n", "<end_of_turn>")


FAMILY = ModelFamily(
    name="gemma3",
    slug="gemma3",
    model_types=("gemma3",),
    processor_class=LookcloserGemma3Processor,
    image_token="<image_soft_token>",
    image_start="<start_of_image>",
    image_keys=("pixel_values",),
    token_type_key="token_type_ids",
    mrope=False,
    turns="gemma",
    tool_template="gemma3_tools.jinja",
    response_schema=_response_schema,
    build_tiny=build_tiny,
    tiny_version=VERSION,
)
