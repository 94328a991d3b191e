"""What differs between VLM families, in one record per family (``ModelFamily``).

A family is one module in this folder (``agent/families/<family>.py``) that defines ``FAMILY``, and one
line in ``agent/families/__init__.py``'s registry. Everything that depends on the family (building its
processor without torchvision, the tokens that stand for an image, the batch keys its model takes,
M-RoPE positions, the tool-call format, the turn markers, fused kernels, the offline tiny checkpoint)
is read from here; no family name is written anywhere else (shared/specs/model_families.md has the facts).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class ModelFamily:
    """One VLM family as the stack uses it.

    Args:
        name: The family's name in docs and errors (transformers' model-type spelling, e.g. ``qwen2_5_vl``).
        slug: Its reserved tiny checkpoints' name part (``lookcloser/tiny-<slug>``).
        model_types: The ``config.json`` ``model_type`` values it serves.
        processor_class: The processor lookcloser loads its checkpoints with: the family's own, made
            to work without torchvision (no video half) and to return torch tensors; it saves itself
            as the stock class so plain transformers loads the folder.
        image_token: The placeholder token repeated once per image feature in the text.
        image_start: The token that opens an image's block (the shared prompt prefix ends before it).
        image_keys: Per-image tensors the processor returns and the model takes, concatenated along dim 0.
        token_type_key: Where the processor puts its 1-on-image-token map (``mm_token_type_ids``,
            ``token_type_ids``), or None when the model takes none.
        mrope: Positions are the model's 3-D ``get_rope_index`` (Qwen's M-RoPE), not 1-D.
        turns: The key of its turn markers in ``rewards.turn_markers.TURN_MARKERS`` (torch-free, for scorers).
        tool_template: File in ``agent/families/templates/`` used when a checkpoint's own chat template
            renders no tool calls (None: the published one has tool calling).
        response_schema: Returns the response template (a dict, TRL's ``qwen3_template`` shape) that
            ``parse_response`` uses to read this family's tool calls from a reply; set on the tokenizer as
            ``response_template`` by ``agent.families.chat.prepare_processor``.
        trl_template: File name of TRL's stored copy of the family's published template when that one
            has tool calling (a checkpoint's template that renders the same is given these exact bytes, which
            TRL's exact-match lookups need).
        build_tiny: ``build_tiny(out_dir, seed, size) -> Path`` writes the family's tiny random checkpoint.
        sizes: The tiny sizes ``build_tiny`` knows (``lookcloser/<size>-<slug>``).
        tiny_version: Bumped on any change to the tiny builder: its cache folder is per version.
        fused_kernels: ``apply(model) -> dict`` patching Liger's kernels in, or None (plain).
        prefix_cache: ``HFPolicy`` may share the prompt prefix's key/value cache (tested per family).
        grpo_tool_images: TRL's GRPO can train on rollouts whose tools return images. False where the
            family batches pictures per sample (TRL 1.16 processes a batch's tool pictures as one flat list,
            ``GRPOTrainer._generate_and_score_completions``): such a run stops before training, naming it.
    """

    name: str
    slug: str
    model_types: tuple[str, ...]
    processor_class: type
    image_token: str
    image_start: str | None
    image_keys: tuple[str, ...]
    token_type_key: str | None
    mrope: bool
    turns: str
    tool_template: str | None
    response_schema: Callable[[], dict]
    build_tiny: Callable[..., Path]
    trl_template: str | None = None
    sizes: tuple[str, ...] = ("tiny",)
    tiny_version: int = 1
    fused_kernels: Callable | None = None
    prefix_cache: bool = False
    grpo_tool_images: bool = True
    notes: dict = field(default_factory=dict)

    @property
    def tiny_names(self) -> dict[str, str]:
        """Reserved model names -> size, e.g. ``{"lookcloser/tiny-qwen3-vl": "tiny"}``."""
        return {f"lookcloser/{size}-{self.slug}": size for size in self.sizes}

    def tool_template_text(self) -> str | None:
        return None if self.tool_template is None else (TEMPLATES / self.tool_template).read_text(encoding="utf-8")
