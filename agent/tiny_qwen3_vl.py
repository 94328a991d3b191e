"""Build a tiny random-weight Qwen3-VL checkpoint offline, deterministically from a seed.

It is an ordinary Hugging Face checkpoint folder (config, safetensors, tokenizer, image
processor, chat template): the same ``from_pretrained`` code that loads Qwen3-VL-8B loads it.
Its weights are random; it exists so that the whole stack runs end to end on a CPU in seconds.

    python -m agent.tiny_qwen3_vl OUT_DIR
"""

from __future__ import annotations

import argparse
from pathlib import Path

from transformers import (
    PreTrainedTokenizerFast,
    Qwen2VLImageProcessorPil,
    Qwen3VLConfig,
    Qwen3VLForConditionalGeneration,
)

from lookcloser.agent.processor import LookcloserQwen3VLProcessor
from lookcloser.agent.tiny_builder import bpe_tokenizer, save_tiny, text_config, trl_chat_template

SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
# Plain added tokens: tool-calling and thinking markers stay single tokens, as in real Qwen.
ADDED_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
VERSION = 3  # bump on any change below (or in agent/tiny_builder.py): the reserved name's cache folder is per version
PATCH_SIZE = 16
MERGE_SIZE = 2
# The embedded sizes: (text hidden, text layers, vision hidden, vision depth). "tiny" is the main job's
# model; "small" (lookcloser/small-qwen3-vl) is for skills the tiny one cannot hold (docs/grpo.md).
SIZES = {"tiny": (64, 2, 64, 2), "small": (192, 4, 64, 2)}
# Every image is resized to about 128x128 pixels: 64 patches of 16x16, merged into 16 LM tokens. Small
# images are upscaled so that a 64x64 sample image is seen at 8x8 pixels a patch (enough to count four
# squares); larger ones are downscaled, so fine detail is lost on purpose (the crop/zoom tools' task).
MIN_PIXELS = MAX_PIXELS = 128 * 128


def build_tokenizer() -> PreTrainedTokenizerFast:
    # TRL ships the exact Qwen3-VL template; TRL recognises it by identity for tool calling
    # and swaps in its generation-tagged training version for assistant-only loss.
    return bpe_tokenizer(SPECIAL_TOKENS, ADDED_TOKENS, trl_chat_template("qwen3_vl"), eos_token="<|im_end|>",
                         pad_token="<|endoftext|>")


def build_config(tokenizer: PreTrainedTokenizerFast, size: str = "tiny") -> Qwen3VLConfig:
    ids = tokenizer.convert_tokens_to_ids
    text_hidden, text_layers, vision_hidden, vision_depth = SIZES[size]
    return Qwen3VLConfig(
        text_config=text_config(
            tokenizer, text_hidden, text_layers, eos="<|im_end|>", pad="<|endoftext|>", head_dim=16,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [4, 2, 2],
                             "mrope_interleaved": True},
            tie_word_embeddings=False),
        vision_config={
            "depth": vision_depth,
            "hidden_size": vision_hidden,
            "intermediate_size": 2 * vision_hidden,
            "num_heads": vision_hidden // 16,
            "patch_size": PATCH_SIZE,
            "spatial_merge_size": MERGE_SIZE,
            "temporal_patch_size": 2,
            "out_hidden_size": text_hidden,
            "num_position_embeddings": 64,
            "deepstack_visual_indexes": [vision_depth - 1],
        },
        image_token_id=ids("<|image_pad|>"),
        video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"),
        vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=False,
    )


def build_image_processor() -> Qwen2VLImageProcessorPil:
    return Qwen2VLImageProcessorPil(
        patch_size=PATCH_SIZE,
        merge_size=MERGE_SIZE,
        temporal_patch_size=2,
        size={"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
    )


def build_tiny_qwen3_vl(out_dir: str | Path, seed: int = 0, size: str = "tiny", replace: bool = False) -> Path:
    """Write the embedded checkpoint of ``size`` (``SIZES``) to ``out_dir`` and return the folder
    (``replace``: over a checkpoint already there). Built as a plain model even inside a ZeRO-3 run.

    >>> import contextlib, io, tempfile
    >>> with contextlib.redirect_stdout(io.StringIO()):  # DeepSpeed's first import prints to stdout
    ...     d = build_tiny_qwen3_vl(tempfile.mkdtemp())
    >>> sorted(p.name for p in d.iterdir())[:3]
    ['chat_template.jinja', 'config.json', 'generation_config.json']
    """
    tokenizer = build_tokenizer()
    processor = LookcloserQwen3VLProcessor(
        image_processor=build_image_processor(), tokenizer=tokenizer, chat_template=tokenizer.chat_template
    )
    return save_tiny(out_dir, Qwen3VLForConditionalGeneration, build_config(tokenizer, size), processor, seed, replace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--size", choices=sorted(SIZES), default="tiny")
    args = parser.parse_args()
    print(build_tiny_qwen3_vl(args.out_dir, seed=args.seed, size=args.size))


if __name__ == "__main__":
    main()
