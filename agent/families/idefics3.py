"""Idefics3 (``idefics3``): a SigLIP encoder and a Llama 3 decoder, images split into tiles.

Turns are ``User:`` / ``Assistant:`` + text + ``<end_of_utterance>\n`` after one ``<|begin_of_text|>``. The
published template (TRL's ``idefics3.jinja``) has no tools and fails on a tool message's text, so ours
(``templates/user_assistant_tools.jinja``, SmolVLM2's too) returns tool results in a ``User:`` turn. Each
``<image>`` in the text becomes, per tile, ``<fake_token_around_image><row_i_col_j>`` + ``<image>`` x
``image_seq_len`` (a newline after each row of tiles), then ``\n<fake_token_around_image><global-img>`` +
``<image>`` x ``image_seq_len`` + ``<fake_token_around_image>``; ``pixel_values`` is (batch, tiles, 3, H, W),
padded to the batch's most tiles, with ``pixel_attention_mask`` saying which pixels are real. 1-D RoPE; no
type ids. Like the real checkpoint, the tokenizer's eos is ``<|end_of_text|>`` while a turn ends with
``<end_of_utterance>``; the real one stops on neither in its config (it has no generation config), the tiny
one lists both in ``eos_token_id``.
"""

from __future__ import annotations

from pathlib import Path

from transformers import (
    Idefics3Config,
    Idefics3ForConditionalGeneration,
    Idefics3ImageProcessorPil,
    Idefics3Processor,
    PreTrainedTokenizerFast,
)

from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.tool_calls import tool_call_response_template
from lookcloser.agent.processor import ImagesOnlyProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config, trl_chat_template

# Llama 3's control tokens, then the image tokens Idefics3 adds (its processor looks up each by name).
SPECIAL_TOKENS = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>", "<image>", "<fake_token_around_image>", "<end_of_utterance>",
                  "<global-img>", *(f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7))]
VERSION = 1  # bump on any change to what build_tiny writes (or to agent/tiny_builder.py)
TILE_SIZE = 64
PATCH_SIZE = 16
SCALE_FACTOR = 2  # pixel shuffle: 4x4 patches a tile -> 2x2 LM tokens
TOKENS_PER_TILE = (TILE_SIZE // PATCH_SIZE) ** 2 // SCALE_FACTOR**2
# The longest edge is resized to 128 pixels: a 128x128 image is 2x2 tiles of 64 plus the global view,
# 5 x 4 = 20 image tokens (the row/column and wrapping tokens come on top).
LONGEST_EDGE = 2 * TILE_SIZE
SIZES = {"tiny": (64, 2, 64, 2)}  # (text hidden, text layers, vision hidden, vision depth)


class LookcloserIdefics3Processor(ImagesOnlyProcessor, Idefics3Processor):
    """Idefics3's processor returning torch tensors and taking ``None`` image entries, saved as the stock class
    (it has no video half: ``AutoProcessor`` loads the folder without torchvision)."""

    saved_class = "Idefics3Processor"
    image_tensor_keys = ("pixel_values", "pixel_attention_mask")


def build_tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer(SPECIAL_TOKENS, [], trl_chat_template("idefics3"), bos_token="<|begin_of_text|>",
                         eos_token="<|end_of_text|>", pad_token="<|reserved_special_token_0|>")


def build_config(tokenizer, size: str = "tiny") -> Idefics3Config:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_depth = SIZES[size]
    return Idefics3Config(
        text_config=text_config(
            tokenizer, text_hidden, text_layers, bos="<|begin_of_text|>", eos=["<|end_of_text|>", "<end_of_utterance>"],
            pad="<|reserved_special_token_0|>", model_type="llama", head_dim=16, tie_word_embeddings=False),
        vision_config={
            "hidden_size": vision_hidden, "intermediate_size": 2 * vision_hidden, "num_hidden_layers": vision_depth,
            "num_attention_heads": vision_hidden // 16, "image_size": TILE_SIZE, "patch_size": PATCH_SIZE,
        },
        scale_factor=SCALE_FACTOR,
        image_token_id=ids("<image>"),
        pad_token_id=ids("<|reserved_special_token_0|>"),
        tie_word_embeddings=False,
    )


def build_processor() -> LookcloserIdefics3Processor:
    tokenizer = build_tokenizer()
    image_processor = Idefics3ImageProcessorPil(size={"longest_edge": LONGEST_EDGE},
                                                max_image_size={"longest_edge": TILE_SIZE})
    return LookcloserIdefics3Processor(image_processor=image_processor, tokenizer=tokenizer,
                                       chat_template=tokenizer.chat_template, image_seq_len=TOKENS_PER_TILE)


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the tiny random Idefics3 (``SIZES``) to ``out_dir``, its weights drawn from ``seed``."""
    processor = build_processor()
    config = build_config(processor.tokenizer, size)
    return save_tiny(out_dir, Idefics3ForConditionalGeneration, config, processor, seed, replace)


def _response_schema() -> dict:
    return tool_call_response_template("Assistant:", "<end_of_utterance>")


FAMILY = ModelFamily(
    name="idefics3",
    slug="idefics3",
    model_types=("idefics3",),
    processor_class=LookcloserIdefics3Processor,
    image_token="<image>",
    image_start="<fake_token_around_image>",
    image_keys=("pixel_values", "pixel_attention_mask"),
    token_type_key=None,
    mrope=False,
    turns="user_assistant",
    tool_template="user_assistant_tools.jinja",
    response_schema=_response_schema,
    build_tiny=build_tiny,
    tiny_version=VERSION,
    grpo_tool_images=False,  # pixel_values are (samples, tiles, ...): TRL 1.16's flat tool-picture batch breaks them
)
