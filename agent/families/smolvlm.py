"""SmolVLM2 (``smolvlm``; HuggingFaceTB/SmolVLM2-*; SmolVLM too).

``<|im_start|>`` once, then ``User:``/``Assistant:`` turns closed by ``<end_of_utterance>``. An image is split
into a grid of tiles plus a global view, each ``<fake_token_around_image>`` + a position token
(``<row_i_col_j>`` or ``<global-img>``) + ``<image>`` x ``image_seq_len``. The published template has no tool
calling: ``templates/smolvlm_tools.jinja`` is ours. 1-D positions; the model takes ``pixel_values``
(batch, tiles, 3, H, W) and ``pixel_attention_mask`` (batch, tiles, H, W).
"""

from __future__ import annotations

from pathlib import Path

from transformers import SmolVLMProcessor
from transformers.processing_utils import ProcessorMixin

from lookcloser.agent.families._tiny_common_b import ImagesOnlyProcessorMixin, build_tokenizer, image_settings
from lookcloser.agent.families.base import ModelFamily
from lookcloser.trl_surface import init_smolvlm_processor

TOOL_TEMPLATE = "smolvlm_tools.jinja"
VERSION = 1  # bump on any change to the tiny checkpoint below
IMAGE_TOKENS = {"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
                "end_of_utterance_token": "<end_of_utterance>", "global_image_token": "<global-img>"}
# SmolLM2's tokens, then SmolVLM's: the image markers and the tile positions of grids up to 6x6.
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *IMAGE_TOKENS.values(), "<video>",
                  *(f"<row_{row}_col_{col}>" for row in range(1, 7) for col in range(1, 7))]
# Tiles of 64x64 pixels in 8x8-pixel patches, pixel shuffle by 2: 16 tokens a tile. Images are resized to a
# longest edge of 128, so a 128x128 image is 2x2 tiles + the global view: 5 x (16 + 2) + 2 newlines = 92 tokens.
TILE, PATCH, LONGEST_EDGE, SCALE = 64, 8, 128, 2
IMAGE_SEQ_LEN = (TILE // PATCH) ** 2 // SCALE ** 2
SIZES = {"tiny": (64, 2, 32, 2)}  # text hidden, text layers, vision hidden, vision layers


class LookcloserSmolVLMProcessor(ImagesOnlyProcessorMixin, SmolVLMProcessor):
    """SmolVLM's processor without a video processor or ``num2words`` (saved as ``SmolVLMProcessor``)."""

    saved_processor_class = "SmolVLMProcessor"
    image_output_keys = ("pixel_values", "pixel_attention_mask")
    # SmolVLM's own override only adds its video processor's frame settings: the generic one is used.
    apply_chat_template = ProcessorMixin.apply_chat_template

    def __init__(self, image_processor=None, tokenizer=None, image_seq_len: int = 169, chat_template=None, **kwargs):
        init_smolvlm_processor(self, image_processor, tokenizer, image_seq_len, chat_template)

    @staticmethod
    def saved_video_processor(image_processor) -> dict:
        return {"video_processor_type": "SmolVLMVideoProcessor",
                **image_settings(image_processor, ("size", "max_image_size", "image_mean", "image_std"))}


def _response_schema() -> dict:
    """TRL's Qwen3 response template with SmolVLM's turn markers: the reply follows ``Assistant:`` (and the
    space the template writes there) and ends at ``<end_of_utterance>``."""
    from trl.chat_template_utils import qwen3_template

    fields = dict(qwen3_template["fields"])
    fields["content"] = {**fields["content"], "close_pattern": r"<end_of_utterance>\s*"}
    schema = {key: value for key, value in qwen3_template.items() if key != "start_anchor"}
    return {**schema, "start_anchor_pattern": r"Assistant: ?", "fields": fields}


def _published_template() -> str:
    # TRL ships SmolVLM's template (SmolVLM2's is byte-identical): the tiny checkpoint carries it, as a real
    # one does, so the stack's switch to TOOL_TEMPLATE is exercised.
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "smolvlm.jinja").read_text(encoding="utf-8")


def build_tiny(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write a tiny random SmolVLM2 checkpoint (deterministic from ``seed``) to ``out_dir``."""
    import torch
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMImageProcessorPil

    from lookcloser.checkpoints import save_checkpoint
    from lookcloser.trl_surface import outside_deepspeed_zero3

    template = _published_template()
    tokenizer = build_tokenizer(SPECIAL_TOKENS, bos="<|im_start|>", eos="<end_of_utterance>", pad="<|im_end|>",
                                unk="<|endoftext|>", chat_template=template, extra_special_tokens=IMAGE_TOKENS)
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_layers = SIZES[size]
    config = SmolVLMConfig(
        text_config={"model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": text_hidden,
                     "intermediate_size": 2 * text_hidden, "num_hidden_layers": text_layers,
                     "num_attention_heads": text_hidden // 16, "num_key_value_heads": 2, "head_dim": 16,
                     "max_position_embeddings": 4096, "tie_word_embeddings": False,
                     "bos_token_id": ids("<|im_start|>"), "eos_token_id": ids("<end_of_utterance>"),
                     "pad_token_id": ids("<|im_end|>")},
        vision_config={"hidden_size": vision_hidden, "num_hidden_layers": vision_layers,
                       "num_attention_heads": vision_hidden // 16, "intermediate_size": 2 * vision_hidden,
                       "image_size": TILE, "patch_size": PATCH},
        image_token_id=ids("<image>"), scale_factor=SCALE, tie_word_embeddings=False,
        pad_token_id=ids("<|im_end|>"),
    )
    image_processor = SmolVLMImageProcessorPil(
        size={"longest_edge": LONGEST_EDGE}, max_image_size={"longest_edge": TILE}, do_image_splitting=True)
    torch.manual_seed(seed)
    with outside_deepspeed_zero3():
        model = SmolVLMForConditionalGeneration(config).eval()
    processor = LookcloserSmolVLMProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                           image_seq_len=IMAGE_SEQ_LEN, chat_template=template)
    return save_checkpoint(out_dir, model, processor, replace=replace)


FAMILY = ModelFamily(
    name="smolvlm",
    slug="smolvlm",
    model_types=("smolvlm",),
    processor_class=LookcloserSmolVLMProcessor,
    image_token="<image>",
    image_start="<fake_token_around_image>",
    image_keys=("pixel_values", "pixel_attention_mask"),
    token_type_key=None,
    mrope=False,
    turns="user_assistant",
    tool_template=TOOL_TEMPLATE,
    response_schema=_response_schema,
    build_tiny=build_tiny,
    tiny_version=VERSION,
    prefix_cache=False,
    grpo_tool_images=False,  # pixel_values are (samples, tiles, ...): TRL 1.16's flat tool-picture batch breaks them
    notes={"image_tokens_128px": 5 * IMAGE_SEQ_LEN, "version": VERSION,
           "batch": "pixel_values (samples, tiles padded to the batch's most, 3, 64, 64) and pixel_attention_mask "
                    "(samples, tiles, 64, 64), per sample not per image: batches join along dim 0 after padding "
                    "dim 1 with zeros (the model drops all-zero tiles)"},
)
