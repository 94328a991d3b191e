"""SFT batches without per-step preprocessing: records featurized once, then padded or packed.

TRL's vision collator templates, tokenizes and image-processes every record again at every step
of every epoch, on the training process. ``featurize`` runs our collator
(``ToolTrajectoryCollator``, so the tokens, labels and pixel patches are exactly what it makes)
once per record; ``FeatureCollator`` then only concatenates tensors:

- padded (default): right-padded rows, byte-identical to the on-the-fly collator's batch, plus
  the M-RoPE ``position_ids`` the model would otherwise recompute at every step;
- packed (padding-free): every example of the batch in one row with no padding. Qwen3-VL's 3-D
  M-RoPE positions are computed per example (the model's own ``get_rope_index``) and
  concatenated; a fourth, leading row holds the text positions, restarting at 0 for each example,
  from which transformers finds the example boundaries. With ``flash_attention_2``/``3`` those
  become ``cu_seqlens`` (varlen kernels, no padded FLOPs); with ``sdpa``/``eager`` (CPU) they become
  a dense block-diagonal mask over the packed row: exact, but the mask and the attention cost grow
  with the square of the whole row, so on CPU padded batches are faster (``pack_sequences: auto``).
  transformers looks for packing only without a KV cache: forward with ``use_cache=False`` (TRL does).

Examples keep their ``length`` (tokens) for transformers' ``group_by_length`` sampler, which vision
data sets otherwise lack. Featurized examples hold their pixel patches in memory
(``temporal_patch_size x 3 x 4`` = 24 bytes per resized image pixel for Qwen3-VL): right for data
sets that fit in RAM; for larger ones turn ``preprocess_once`` off and collate in
``dataloader_num_workers`` worker processes instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lookcloser.agent.families.batching import join_along_batch

logger = logging.getLogger(__name__)

# Per-token keys (1-D after featurizing) and per-example keys concatenated along dim 0: the video keys
# and, per family, its per-image tensors (``ModelFamily.image_keys``, passed in as ``image_keys``).
TOKEN_KEYS = ("input_ids", "attention_mask", "labels", "mm_token_type_ids", "token_type_ids")
VIDEO_KEYS = ("pixel_values_videos", "video_grid_thw")
# Raw-record fields kept beside the tensors (cheap references): code that inspects
# ``trainer.train_dataset[0]`` (e.g. the saved prompting settings) still sees the record's prompt.
RECORD_KEYS = ("messages", "tools", "id", "task", "data_source")


class FeaturizedDataset(torch.utils.data.Dataset):
    """Featurized examples in memory (a list of dicts of tensors), with their token ``lengths``."""

    def __init__(self, examples: list[dict]) -> None:
        self.examples = examples
        self.lengths = [int(ex["input_ids"].shape[0]) for ex in examples]
        self.seconds = 0.0  # how long featurizing took

    def __len__(self) -> int:
        return len(self.examples)

    def __getitem__(self, index: int) -> dict:
        return self.examples[index]


def rope_index_fn(model) -> Callable | None:
    """The model's M-RoPE position function (``get_rope_index``), looked up through wrappers; None if it has none."""
    for module in model.modules():
        if callable(getattr(module, "get_rope_index", None)):
            return module.get_rope_index
    return None


def featurize(dataset, collator, image_keys: tuple[str, ...], rope_index: Callable | None = None) -> FeaturizedDataset:
    """Run ``collator`` on each record alone; keep its tensors without the batch dimension or padding.

    ``rope_index`` (from ``rope_index_fn``) adds each example's M-RoPE ``position_ids`` (3, length):
    packed batches need them, and padded ones pass them so that the model does not recompute them
    (a Python loop over the rows) at every step. ``image_keys``: the family's per-image tensors
    (``ModelFamily.image_keys``).
    """
    concat_keys = (*image_keys, *VIDEO_KEYS)
    start = time.perf_counter()
    examples = []
    for index in range(len(dataset)):
        record = dataset[index]
        batch = collator([record])
        keep = batch["attention_mask"][0].bool() if "attention_mask" in batch else None
        example = {}
        for key, value in batch.items():
            if key in TOKEN_KEYS:
                example[key] = value[0][keep] if keep is not None else value[0]
            elif key in concat_keys:
                example[key] = value
            else:
                raise ValueError(f"featurize: the collator returned {key!r}, which it cannot batch yet")
        if rope_index is not None:
            with torch.no_grad():
                positions, _ = rope_index(example["input_ids"][None], mm_token_type_ids=example["mm_token_type_ids"][None],
                                          image_grid_thw=example.get("image_grid_thw"),
                                          video_grid_thw=example.get("video_grid_thw"))
            example["position_ids"] = positions[:, 0]
        example.update({key: record[key] for key in RECORD_KEYS if key in record})
        examples.append(example)
    featurized = FeaturizedDataset(examples)
    featurized.seconds = time.perf_counter() - start
    logger.info("featurized %d records (%d tokens) once, in %.1f s", len(featurized), sum(featurized.lengths),
                featurized.seconds)
    return featurized


@dataclass
class FeatureCollator:
    """Batches ``featurize``'s examples: right-padded rows, or one packed row (``pack=True``).

    Args:
        pad_token_id: Fills ``input_ids`` of padded rows.
        image_keys: The family's per-image tensors (``ModelFamily.image_keys``), joined in the batch's image order.
        pack: One row per batch, no padding; needs ``position_ids`` in the examples.
        pad_to_multiple_of: Padded rows' length is rounded up to it (as the processor does).
    """

    pad_token_id: int
    image_keys: tuple[str, ...]
    pack: bool = False
    pad_to_multiple_of: int | None = None

    def __call__(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        batch = self._pack(examples) if self.pack else self._pad(examples)
        for key in (*self.image_keys, *VIDEO_KEYS):  # per-image tensors, in the batch's image order; a record may have no image
            parts = [ex[key] for ex in examples if key in ex]
            if parts:
                batch[key] = join_along_batch(parts)
        return batch

    def _pad(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        length = max(ex["input_ids"].shape[0] for ex in examples)
        if self.pad_to_multiple_of:
            length = -(-length // self.pad_to_multiple_of) * self.pad_to_multiple_of
        fill = {"input_ids": self.pad_token_id, "labels": -100}
        batch = {}
        for key in TOKEN_KEYS:
            if key not in examples[0]:
                continue
            first = examples[0][key]
            out = torch.full((len(examples), length), fill.get(key, 0), dtype=first.dtype)
            for row, ex in enumerate(examples):
                out[row, : ex[key].shape[0]] = ex[key]
            batch[key] = out
        if "position_ids" in examples[0]:  # M-RoPE positions, 0 on padding (as the model fills them itself)
            out = torch.zeros((3, len(examples), length), dtype=examples[0]["position_ids"].dtype)
            for row, ex in enumerate(examples):
                out[:, row, : ex["position_ids"].shape[1]] = ex["position_ids"]
            batch["position_ids"] = out
        return batch

    def _pack(self, examples: list[dict]) -> dict[str, torch.Tensor]:
        if "position_ids" not in examples[0]:
            raise ValueError("packed batches need per-example position_ids: featurize with rope_index")
        batch = {key: torch.cat([ex[key] for ex in examples])[None]
                 for key in TOKEN_KEYS if key in examples[0] and key != "attention_mask"}
        labels = batch["labels"][0]
        offset = 0
        for ex in examples:  # the first token of an example is never a target (as in its own row)
            labels[offset] = -100
            offset += ex["input_ids"].shape[0]
        # Row 0: text positions restarting per example (transformers finds the boundaries from them);
        # rows 1-3: M-RoPE temporal/height/width positions.
        text = torch.cat([torch.arange(ex["input_ids"].shape[0]) for ex in examples])
        rope = torch.cat([ex["position_ids"] for ex in examples], dim=1)
        batch["position_ids"] = torch.cat([text[None].to(rope.dtype), rope])[:, None, :]
        return batch


def group_by_token_length(trainer) -> None:
    """Let ``train_sampling_strategy: group_by_length`` group featurized examples by their token count.

    transformers infers lengths from ``processing_class.model_input_names[0]``, which for a
    Qwen3-VL processor is ``pixel_values`` (image patches, not tokens).
    """
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from lookcloser.trl_surface import replace_train_sampler

    def make(inferred):
        def _get_train_sampler(train_dataset=None):
            dataset = trainer.train_dataset if train_dataset is None else train_dataset
            if trainer.args.train_sampling_strategy == "group_by_length" and isinstance(dataset, FeaturizedDataset):
                return LengthGroupedSampler(trainer.args.train_batch_size * trainer.args.gradient_accumulation_steps,
                                            lengths=dataset.lengths)
            return inferred(train_dataset)

        return _get_train_sampler

    replace_train_sampler(trainer, make)


def pack_supported(attn_implementation: str | None) -> bool:
    """Whether packed rows run as varlen attention (no padded FLOPs): flash-attention kernels only.

    >>> pack_supported("flash_attention_2"), pack_supported("sdpa"), pack_supported(None)
    (True, False, False)
    """
    return bool(attn_implementation) and attn_implementation.startswith(("flash_attention", "kernels-community/flash"))
