"""SmolVLM2 (``smolvlm``): Idefics3's architecture and image tiling on a SmolLM2 decoder.

Turns are Idefics3's (``User:`` / ``Assistant:`` + text + ``<end_of_utterance>\\n``) after one ``<|im_start|>``
(the tokenizer's bos); tool calls use the same template of ours (``templates/user_assistant_tools.jinja``).
The stock processor needs a (torchvision) video processor and ``num2words`` (video prompts), so ours is built
without either through the fence (``lookcloser.trl_surface.init_smolvlm_processor``). Image expansion, keys
(``pixel_values`` (batch, tiles, 3, H, W), ``pixel_attention_mask``) and 1-D RoPE are Idefics3's.
"""

from __future__ import annotations

from pathlib import Path

from transformers import (
    PreTrainedTokenizerFast,
    SmolVLMConfig,
    SmolVLMForConditionalGeneration,
    SmolVLMImageProcessorPil,
    SmolVLMProcessor,
)

from lookcloser.agent.families import idefics3
from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.processor import ImagesOnlyProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config, trl_chat_template
from lookcloser.trl_surface import init_smolvlm_processor, smolvlm_apply_chat_template

# SmolLM2's control tokens, then the image tokens SmolVLM adds (Idefics3's).
IMAGE_TOKENS = idefics3.SPECIAL_TOKENS[idefics3.SPECIAL_TOKENS.index("<image>"):]
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *IMAGE_TOKENS]
# What SmolVLMProcessor reads from the tokenizer by name.
NAMED_TOKENS = {"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
                "end_of_utterance_token": "<end_of_utterance>", "global_image_token": "<global-img>"}
VERSION = 1  # bump on any change to what build_tiny writes (or to agent/tiny_builder.py)
SIZES = {"tiny": (64, 2, 64, 2)}  # (text hidden, text layers, vision hidden, vision depth)


class LookcloserSmolVLMProcessor(ImagesOnlyProcessor, SmolVLMProcessor):
    """SmolVLM's processor without its (torchvision) video processor, saved as the stock class."""

    saved_class = "SmolVLMProcessor"
    video_processor_type = "SmolVLMVideoProcessor"
    video_settings = ("size", "max_image_size", "image_mean", "image_std", "resample")
    image_tensor_keys = ("pixel_values", "pixel_attention_mask")

    def __init__(self, image_processor=None, tokenizer=None, image_seq_len: int = 169, chat_template=None, **kwargs):
        # ProcessorMixin derives its sub-processors from this signature: no video_processor here.
        init_smolvlm_processor(self, image_processor, tokenizer, image_seq_len, chat_template)

    def apply_chat_template(self, conversation, chat_template=None, **kwargs):
        return smolvlm_apply_chat_template(self, conversation, chat_template, **kwargs)


def build_tokenizer() -> PreTrainedTokenizerFast:
    return bpe_tokenizer(SPECIAL_TOKENS, [], trl_chat_template("smolvlm"), extra_special_tokens=NAMED_TOKENS,
                         bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|im_end|>",
                         unk_token="<|endoftext|>")


def build_config(tokenizer, size: str = "tiny") -> SmolVLMConfig:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_depth = SIZES[size]
    return SmolVLMConfig(
        text_config=text_config(tokenizer, text_hidden, text_layers, bos="<|im_start|>", eos="<end_of_utterance>",
                                pad="<|im_end|>", model_type="llama", head_dim=16, tie_word_embeddings=False),
        vision_config={
            "hidden_size": vision_hidden, "intermediate_size": 2 * vision_hidden, "num_hidden_layers": vision_depth,
            "num_attention_heads": vision_hidden // 16, "image_size": idefics3.TILE_SIZE,
            "patch_size": idefics3.PATCH_SIZE,
        },
        scale_factor=idefics3.SCALE_FACTOR,
        image_token_id=ids("<image>"),
        pad_token_id=ids("<|im_end|>"),
        tie_word_embeddings=False,
    )


def build_processor() -> LookcloserSmolVLMProcessor:
    tokenizer = build_tokenizer()
    # Idefics3's tiling: 128 pixels on the longest edge, tiles of 64, 4 tokens a tile (20 a 128x128 image).
    image_processor = SmolVLMImageProcessorPil(size={"longest_edge": idefics3.LONGEST_EDGE},
                                               max_image_size={"longest_edge": idefics3.TILE_SIZE})
    return LookcloserSmolVLMProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                      image_seq_len=idefics3.TOKENS_PER_TILE, chat_template=tokenizer.chat_template)


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the tiny random SmolVLM2 (``SIZES``) to ``out_dir``, its weights drawn from ``seed``."""
    processor = build_processor()
    config = build_config(processor.tokenizer, size)
    return save_tiny(out_dir, SmolVLMForConditionalGeneration, config, processor, seed, replace)


FAMILY = ModelFamily(
    name="smolvlm",
    slug="smolvlm2",
    model_types=("smolvlm",),
    processor_class=LookcloserSmolVLMProcessor,
    image_token="<image>",
    image_start="<fake_token_around_image>",
    image_keys=("pixel_values", "pixel_attention_mask"),
    token_type_key=None,
    mrope=False,
    turns="user_assistant",
    tool_template="user_assistant_tools.jinja",
    response_schema=idefics3.FAMILY.response_schema,  # Idefics3's turns
    build_tiny=build_tiny,
    tiny_version=VERSION,
    grpo_tool_images=False,  # pixel_values are (samples, tiles, ...): TRL 1.16's flat tool-picture batch breaks them
)
