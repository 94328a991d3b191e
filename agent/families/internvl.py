"""InternVL in transformers' -hf format (``internvl``; InternVL2.5/3 ``*-hf`` checkpoints).

ChatML turns on a Qwen2.5 tokenizer; an image is ``<img>`` + ``<IMG_CONTEXT>`` x (tokens per tile x tiles) +
``</img>``, tiles cut by the GotOCR2 image processor (``crop_to_patches``: a grid of tiles plus a thumbnail).
The published template has no tool calling: ``templates/internvl_tools.jinja`` is ours. 1-D positions;
the model takes ``pixel_values`` (tiles, 3, H, W) and no type ids.
"""

from __future__ import annotations

from pathlib import Path

from transformers import InternVLProcessor

from lookcloser.agent.families._tiny_common_b import ImagesOnlyProcessorMixin, build_tokenizer, image_settings
from lookcloser.agent.families.base import ModelFamily

TOOL_TEMPLATE = "internvl_tools.jinja"
VERSION = 1  # bump on any change to the tiny checkpoint below
# The -hf tokenizer is Qwen2.5-VL's plus InternVL's image tokens (transformers' convert script): Qwen's
# <|image_pad|> is kept, though InternVL never emits it (TRL's GRPO looks it up for type ids).
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|image_pad|>", "<|video_pad|>", "<img>", "</img>", "<IMG_CONTEXT>", "<quad>", "</quad>",
                  "<ref>", "</ref>", "<box>", "</box>", "<video>"]
ADDED_TOKENS = ("<tool_call>", "</tool_call>")
IMAGE_TOKENS = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
                "video_token": "<video>"}
# Tiles of 64x64 pixels, 8x8-pixel patches, pixel shuffle 0.5: 16 tokens a tile; up to 4 tiles + a thumbnail.
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


class LookcloserInternVLProcessor(ImagesOnlyProcessorMixin, InternVLProcessor):
    """InternVL's processor without a video processor (saved as ``InternVLProcessor``)."""

    saved_processor_class = "InternVLProcessor"

    def __init__(self, image_processor=None, tokenizer=None, image_seq_length: int = 256, chat_template=None,
                 **kwargs):
        # No video_processor in this signature: InternVLProcessor passes None up, ProcessorMixin ignores it.
        super().__init__(image_processor, tokenizer, None, image_seq_length=image_seq_length,
                         chat_template=chat_template, **kwargs)

    @staticmethod
    def saved_video_processor(image_processor) -> dict:
        return {"video_processor_type": "InternVLVideoProcessor",
                **image_settings(image_processor, ("size", "image_mean", "image_std"))}


def _response_schema() -> dict:
    """TRL's Qwen3 response template: our template's replies are ChatML with ``<tool_call>`` JSON, as Qwen3's."""
    from trl.chat_template_utils import qwen3_template

    return qwen3_template


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write a tiny random InternVL checkpoint (deterministic from ``seed``) to ``out_dir``."""
    import torch
    from transformers import GotOcr2ImageProcessorPil, InternVLConfig, InternVLForConditionalGeneration

    from lookcloser.checkpoints import save_checkpoint
    from lookcloser.trl_surface import outside_deepspeed_zero3

    tokenizer = build_tokenizer(SPECIAL_TOKENS, eos="<|im_end|>", pad="<|endoftext|>", chat_template=PUBLISHED_TEMPLATE,
                                added_tokens=ADDED_TOKENS, extra_special_tokens=IMAGE_TOKENS)
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_layers = SIZES[size]
    config = InternVLConfig(
        text_config={"model_type": "qwen2", "vocab_size": len(tokenizer), "hidden_size": text_hidden,
                     "intermediate_size": 2 * text_hidden, "num_hidden_layers": text_layers,
                     "num_attention_heads": text_hidden // 16, "num_key_value_heads": 2, "head_dim": 16,
                     "max_position_embeddings": 4096, "tie_word_embeddings": False, "bos_token_id": None,
                     "eos_token_id": ids("<|im_end|>"), "pad_token_id": ids("<|endoftext|>")},
        vision_config={"hidden_size": vision_hidden, "num_hidden_layers": vision_layers,
                       "num_attention_heads": vision_hidden // 16, "intermediate_size": 2 * vision_hidden,
                       "image_size": [TILE, TILE], "patch_size": [PATCH, PATCH]},
        image_token_id=ids("<IMG_CONTEXT>"), image_seq_length=TOKENS_PER_TILE, downsample_ratio=0.5,
        tie_word_embeddings=False,
    )
    image_processor = GotOcr2ImageProcessorPil(
        size={"height": TILE, "width": TILE}, crop_to_patches=True, min_patches=1, max_patches=MAX_TILES,
        image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])
    torch.manual_seed(seed)
    with outside_deepspeed_zero3():
        model = InternVLForConditionalGeneration(config).eval()
    processor = LookcloserInternVLProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                            image_seq_length=TOKENS_PER_TILE, chat_template=PUBLISHED_TEMPLATE)
    return save_checkpoint(out_dir, model, processor, replace=replace)


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
    response_schema=_response_schema,
    build_tiny=build_tiny,
    tiny_version=VERSION,
    prefix_cache=False,
    notes={"image_tokens_128px": (MAX_TILES + 1) * TOKENS_PER_TILE, "version": VERSION,
           "batch": "pixel_values (tiles of every image in the batch, 3, 64, 64): batches join along dim 0"},
)
