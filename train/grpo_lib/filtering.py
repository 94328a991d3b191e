"""Dynamic group filtering (DAPO's dynamic sampling) on TRL's scored generation batches.

A group whose completions all got the same reward has zero advantage everywhere: it teaches
nothing, yet its tokens still count in the loss normaliser (DAPO's token mean), diluting the
groups that do teach. These helpers find such groups, mask them out of the loss, and rebuild a
full batch from several scored batches (rows selected, then padded and concatenated), which is
what resampling needs. A "batch" is the dict ``GRPOTrainer._generate_and_score_completions``
returns; rows are completions, consecutive ``num_generations`` rows form a group.
"""

from __future__ import annotations

import torch
from trl.trainer.utils import split_pixel_values_by_grid, unsplit_pixel_values_by_grid

# Keys of a scored batch this module knows how to select and concatenate (Qwen-style VLM or text).
PROMPT_KEYS = {"prompt_ids": "pad", "prompt_mask": 0}  # left-padded, (B, P)
COMPLETION_KEYS = {"completion_ids": "pad", "completion_mask": 0, "tool_mask": 0, "old_per_token_logps": 0.0,
                   "ref_per_token_logps": 0.0, "sampling_per_token_logps": 0.0,
                   "importance_sampling_ratio": 1.0}  # right-padded, (B, C)
FULL_KEYS = ("mm_token_type_ids", "token_type_ids")  # (B, P + C): prompt part left-, completion part right-padded
ROW_KEYS = ("advantages",)
LIST_KEYS = ("num_images", "pixel_values", "image_grid_thw")  # per-row lists once split by grid
SUPPORTED = set(PROMPT_KEYS) | set(COMPLETION_KEYS) | set(FULL_KEYS) | set(ROW_KEYS) | set(LIST_KEYS) | {
    "num_items_in_batch"}


def constant_groups(rewards: torch.Tensor, num_generations: int, atol: float = 1e-6) -> torch.Tensor:
    """One flag per group: True when its scored rewards are all equal (NaN rows, i.e. masked or
    unscorable completions, are ignored; a group with fewer than two scored rows is constant too).

    >>> constant_groups(torch.tensor([1., 1., 0., 1., float("nan"), 0., float("nan"), float("nan")]), 2)
    tensor([ True, False,  True,  True])
    """
    grouped = rewards.float().view(-1, num_generations)
    valid = ~torch.isnan(grouped)
    high = torch.where(valid, grouped, torch.full_like(grouped, -torch.inf)).max(dim=1).values
    low = torch.where(valid, grouped, torch.full_like(grouped, torch.inf)).min(dim=1).values
    return (valid.sum(dim=1) < 2) | ((high - low) <= atol)


def unsupported_keys(batch: dict) -> list[str]:
    return sorted(key for key in batch if key not in SUPPORTED)


def mask_rows(batch: dict, keep: torch.Tensor) -> dict:
    """Take rows out of the loss only (``tool_mask`` is a loss mask; attention is unchanged)."""
    keep = keep.to(batch["completion_mask"].device).unsqueeze(1).to(batch["completion_mask"].dtype)
    tool_mask = batch.get("tool_mask")
    tool_mask = torch.ones_like(batch["completion_mask"]) if tool_mask is None else tool_mask
    return {**batch, "tool_mask": tool_mask * keep, "advantages": batch["advantages"] * keep.squeeze(1)}


def loss_tokens(batch: dict) -> torch.Tensor:
    mask = batch["completion_mask"]
    return (mask * batch["tool_mask"]).sum() if "tool_mask" in batch else mask.sum()


def select_rows(batch: dict, rows: list[int]) -> dict:
    """The given rows of a scored batch (image tensors split per row, so a later concat can merge them)."""
    split = split_pixel_values_by_grid(batch)
    index = torch.tensor(rows, dtype=torch.long)
    out = {}
    for key, value in split.items():
        if isinstance(value, torch.Tensor) and value.ndim > 0:
            out[key] = value[index.to(value.device)]
        elif isinstance(value, list):
            out[key] = [value[i] for i in rows]
        else:
            out[key] = value
    if "prompt_ids" in out:  # remember each part's padded width for the full-length keys
        out["_prompt_width"] = split["prompt_ids"].size(1)
    return out


def _pad(tensors: list[torch.Tensor], width: int, value, left: bool) -> torch.Tensor:
    out = []
    for t in tensors:
        t = t[:, -width:] if left else t[:, :width]  # only padding columns are ever dropped
        fill = t.new_full((t.size(0), width - t.size(1)), value)
        out.append(torch.cat([fill, t] if left else [t, fill], dim=1))
    return torch.cat(out, dim=0)


def concat_batches(parts: list[dict], pad_token_id: int) -> dict:
    """Concatenate ``select_rows`` outputs into one scored batch, re-padded to the widest real row.

    ``num_items_in_batch`` is left to the caller (it is a global count across processes).
    """
    parts = [p for p in parts if p["prompt_ids"].size(0) > 0]
    prompt_width = max(int(p["prompt_mask"].sum(dim=1).max()) for p in parts)
    completion_width = max(int(p["completion_mask"].sum(dim=1).max()) for p in parts)
    completion_width = max(completion_width, 1)
    out: dict = {}
    for key, fill in PROMPT_KEYS.items():
        if key in parts[0]:
            out[key] = _pad([p[key] for p in parts], prompt_width, pad_token_id if fill == "pad" else fill, True)
    for key, fill in COMPLETION_KEYS.items():
        present = [p for p in parts if key in p]
        if not present:
            continue
        if len(present) != len(parts):
            if key != "tool_mask":
                raise ValueError(f"cannot concatenate batches where only some have {key!r}")
            for p in parts:
                p.setdefault("tool_mask", torch.ones_like(p["completion_mask"]))
        if parts[0][key].size(1) == 1 and key == "importance_sampling_ratio":  # sequence-level ratio
            out[key] = torch.cat([p[key] for p in parts])
            continue
        out[key] = _pad([p[key] for p in parts], completion_width, pad_token_id if fill == "pad" else fill, False)
    for key in FULL_KEYS:
        if any(key in p for p in parts):
            prompts, completions = [], []
            for p in parts:
                full = p.get(key)
                if full is None:
                    full = torch.zeros(p["prompt_ids"].size(0), p["_prompt_width"] + p["completion_ids"].size(1),
                                       dtype=torch.long, device=p["prompt_ids"].device)
                prompts.append(full[:, : p["_prompt_width"]])
                completions.append(full[:, p["_prompt_width"]:])
            out[key] = torch.cat([_pad(prompts, prompt_width, 0, True), _pad(completions, completion_width, 0, False)],
                                 dim=1)
    for key in ROW_KEYS:
        out[key] = torch.cat([p[key] for p in parts])
    if any("num_images" in p for p in parts):
        template = next(p for p in parts if "pixel_values" in p)
        feature_dim = template["pixel_values"][0].shape[1:] if template["pixel_values"] else ()
        pixel_dtype = template["pixel_values"][0].dtype if template["pixel_values"] else torch.float32
        for p in parts:
            if "num_images" not in p:  # a text-only batch next to one with images
                n = p["prompt_ids"].size(0)
                p["num_images"] = [0] * n
                p["pixel_values"] = [torch.zeros((0, *feature_dim), dtype=pixel_dtype) for _ in range(n)]
                p["image_grid_thw"] = [torch.zeros((0, 3), dtype=torch.long) for _ in range(n)]
        for key in LIST_KEYS:
            out[key] = [v for p in parts for v in p[key]]
        out = unsplit_pixel_values_by_grid(out)
        if out["pixel_values"].numel() == 0:  # images announced but none kept
            for key in LIST_KEYS:
                out.pop(key, None)
    return out
