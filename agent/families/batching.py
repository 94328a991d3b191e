"""Joining per-image tensors of examples processed one at a time into one batch."""

from __future__ import annotations

import torch


def join_along_batch(parts: list[torch.Tensor]) -> torch.Tensor:
    """Concatenate along dim 0, zero-padding every other dim to the largest.

    Why: a processor pads per call, so tensors of examples processed apart differ past dim 0 when a
    family batches tiles or views per sample (SmolVLM's ``pixel_values`` (samples, tiles, 3, H, W) and
    ``pixel_attention_mask``, LLaVA-OneVision's (images, views, 3, H, W)); zeros are what the processor
    itself pads with, and what those models drop. Equal shapes concatenate as they are (Qwen, InternVL).

    >>> join_along_batch([torch.ones(1, 2, 3), torch.ones(1, 1, 3)]).shape
    torch.Size([2, 2, 3])
    >>> join_along_batch([torch.ones(1, 2, 3), torch.ones(1, 1, 3)])[1, 1].sum().item()
    0.0
    """
    shapes = {tuple(p.shape[1:]) for p in parts}
    if len(shapes) == 1:
        return torch.cat(parts)
    if len({len(s) for s in shapes}) != 1:
        raise ValueError(f"cannot join per-image tensors of different ranks: {sorted(shapes)}")
    target = [max(dims) for dims in zip(*shapes)]
    padded = []
    for part in parts:
        out = part.new_zeros((part.shape[0], *target))
        out[(slice(None), *(slice(0, n) for n in part.shape[1:]))] = part
        padded.append(out)
    return torch.cat(padded)
