"""Qwen3-VL (dense; ``qwen3_vl``): the embedded default's family.

ChatML turns; the published template (TRL ships a copy) has tool calling
(``<tool_call>{json}</tool_call>``, answers in ``<tool_response>``) and is prefix-preserving, so no
template of ours is needed; M-RoPE positions from ``get_rope_index`` with ``mm_token_type_ids``.
"""

from __future__ import annotations

from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.tool_calls import chatml_response_template
from lookcloser.agent.processor import LookcloserQwen3VLProcessor
from lookcloser.agent.tiny_qwen3_vl import VERSION


def _build_tiny(out_dir, seed: int = 0, size: str = "tiny", replace: bool = False):
    from lookcloser.agent.tiny_qwen3_vl import build_tiny_qwen3_vl

    return build_tiny_qwen3_vl(out_dir, seed=seed, size=size, replace=replace)


def _fused_kernels(model) -> dict:
    from lookcloser.trl_surface import apply_liger_kernels

    return apply_liger_kernels(model)


FAMILY = ModelFamily(
    name="qwen3_vl",
    slug="qwen3-vl",
    model_types=("qwen3_vl",),
    processor_class=LookcloserQwen3VLProcessor,
    image_token="<|image_pad|>",
    image_start="<|vision_start|>",
    image_keys=("pixel_values", "image_grid_thw"),
    token_type_key="mm_token_type_ids",
    mrope=True,
    turns="chatml",
    tool_template=None,
    trl_template="qwen3_vl.jinja",
    response_schema=chatml_response_template,
    build_tiny=_build_tiny,
    sizes=("tiny", "small"),
    tiny_version=VERSION,
    fused_kernels=_fused_kernels,
    prefix_cache=True,
)
