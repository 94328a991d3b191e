"""Qwen3-VL-2B's dimensions, the FLOP count behind MFU, synthetic SFT batches and device facts for bench_gpu.py.

MFU = model FLOPs per step / step time / the device's dense bf16 peak. Model FLOPs = 3 x forward
(backward = 2 x forward; checkpointing's recompute is not counted), forward = 2 x (text linear
weights incl. lm_head x sequence tokens + vision block weights x patches + merger weights x merged
tokens) + causal text attention 4 x heads x head_dim x S(S+1)/2 per layer + bidirectional vision
attention 4 x hidden x P^2 per block and image.
"""

from __future__ import annotations

import statistics
import time

# Dense bf16 tensor-core peaks (datasheet, without sparsity), matched on torch's device name.
PEAK_BF16_TFLOPS = (("H100 PCIe", 756.0), ("H100 NVL", 835.0), ("H100", 989.4), ("H200", 989.4), ("H20", 148.0),
                    ("GH200", 989.4), ("B200", 2250.0), ("A100", 312.0), ("A10G", 70.0), ("L40S", 362.0),
                    ("L4", 121.0), ("RTX 4090", 165.2))


def peak_tflops(name: str) -> float | None:
    """Dense bf16 peak of a device, from its name; None when unknown.

    >>> peak_tflops("NVIDIA H100 80GB HBM3"), peak_tflops("NVIDIA H100 PCIe"), peak_tflops("Some GPU")
    (989.4, 756.0, None)
    """
    for key, value in PEAK_BF16_TFLOPS:
        if key in name:
            return value
    return None


def qwen3_vl_2b_config(tokenizer, vocab_size: int = 151936):
    """Qwen3-VL-2B's dimensions with the given tokenizer's special-token ids."""
    from transformers import Qwen3VLConfig

    ids = tokenizer.convert_tokens_to_ids
    if len(tokenizer) > vocab_size:
        raise ValueError(f"tokenizer has {len(tokenizer)} tokens, more than the vocabulary {vocab_size}")
    return Qwen3VLConfig(
        text_config={"vocab_size": vocab_size, "hidden_size": 2048, "intermediate_size": 6144,
                     "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
                     "hidden_act": "silu", "rms_norm_eps": 1e-6, "max_position_embeddings": 262144,
                     "rope_parameters": {"rope_type": "default", "rope_theta": 5_000_000.0,
                                         "mrope_section": [24, 20, 20], "mrope_interleaved": True},
                     "tie_word_embeddings": True, "bos_token_id": None, "eos_token_id": ids("<|im_end|>"),
                     "pad_token_id": ids("<|endoftext|>")},
        vision_config={"depth": 24, "hidden_size": 1024, "intermediate_size": 4096, "num_heads": 16,
                       "hidden_act": "gelu_pytorch_tanh", "patch_size": 16, "spatial_merge_size": 2,
                       "temporal_patch_size": 2, "out_hidden_size": 2048, "num_position_embeddings": 2304,
                       "deepstack_visual_indexes": [5, 11, 17]},
        image_token_id=ids("<|image_pad|>"), video_token_id=ids("<|video_pad|>"),
        vision_start_token_id=ids("<|vision_start|>"), vision_end_token_id=ids("<|vision_end|>"),
        tie_word_embeddings=True,
    )


def linear_weights(model) -> dict[str, int]:
    """Weights of every matrix product, by what they multiply: text tokens, vision patches, merged tokens."""
    from torch import nn

    counts = {"text": 0, "patch": 0, "merged": 0}
    for name, module in model.named_modules():
        if not isinstance(module, (nn.Linear, nn.Conv3d)):
            continue
        if ".visual." in f".{name}":
            role = "merged" if ("merger" in name) else "patch"
        else:  # the language model and lm_head (a tied lm_head is still a matrix product)
            role = "text"
        counts[role] += module.weight.numel()
    return counts


def train_flops(weights: dict[str, int], config, seq_lens: list[int], grids: list[tuple[int, int, int]]) -> int:
    """Model FLOPs of one training step (3 x forward; the formula is in the module docstring).

    >>> from types import SimpleNamespace as NS
    >>> cfg = NS(text_config=NS(num_hidden_layers=1, num_attention_heads=1, head_dim=1),
    ...          vision_config=NS(depth=1, hidden_size=1, spatial_merge_size=2))
    >>> train_flops({"text": 10, "patch": 0, "merged": 0}, cfg, [2], [])  # 3 * (2*10*2 + 4*1*1*3)
    156
    """
    text, vision = config.text_config, config.vision_config
    patches = [t * h * w for t, h, w in grids]
    merged = sum(p // vision.spatial_merge_size ** 2 for p in patches)
    forward = 2 * (weights["text"] * sum(seq_lens) + weights["patch"] * sum(patches) + weights["merged"] * merged)
    forward += text.num_hidden_layers * sum(4 * text.num_attention_heads * text.head_dim * s * (s + 1) // 2
                                            for s in seq_lens)
    forward += vision.depth * sum(4 * vision.hidden_size * p * p for p in patches)
    return 3 * forward


def sft_batch(config, tokenizer, batch: int, seq_len: int, images: int, image_px: int, device, dtype, seed: int):
    """A synthetic, unpadded batch: per row ``images`` images of image_px x image_px, then random text."""
    import torch

    vision = config.vision_config
    side = image_px // vision.patch_size
    if side % vision.spatial_merge_size:
        raise ValueError(f"--image_px must be a multiple of {vision.patch_size * vision.spatial_merge_size}")
    per_image = side * side // vision.spatial_merge_size ** 2
    gen = torch.Generator().manual_seed(seed)
    special = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    text_ids = torch.tensor([i for i in range(len(tokenizer)) if i not in special])
    rows = []
    for _ in range(batch):
        prefix = [config.vision_start_token_id, *([config.image_token_id] * per_image), config.vision_end_token_id]
        ids = prefix * images
        if len(ids) >= seq_len:
            raise ValueError(f"{images} images of {per_image} tokens do not fit in --seq_len {seq_len}")
        text = text_ids[torch.randint(len(text_ids), (seq_len - len(ids),), generator=gen)].tolist()
        rows.append(ids + text)
    input_ids = torch.tensor(rows)
    labels = input_ids.clone()
    labels[torch.isin(input_ids, torch.tensor([config.image_token_id, config.vision_start_token_id,
                                               config.vision_end_token_id]))] = -100
    n_images = batch * images
    patch_dim = 3 * vision.temporal_patch_size * vision.patch_size ** 2
    inputs = {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
              "mm_token_type_ids": (input_ids == config.image_token_id).long(),
              "pixel_values": torch.randn(n_images * side * side, patch_dim, generator=gen).to(dtype),
              "image_grid_thw": torch.tensor([[1, side, side]] * n_images)}
    if not n_images:
        del inputs["pixel_values"], inputs["image_grid_thw"]
    inputs = {k: v.to(device) for k, v in inputs.items()}
    return inputs, labels.to(device), [seq_len] * batch, [(1, side, side)] * n_images


def _ce_sum(hidden, labels, weight):
    import torch.nn.functional as F

    return F.cross_entropy((hidden @ weight.T).float(), labels, ignore_index=-100, reduction="sum")


def chunked_loss(model, inputs, labels, chunk: int):
    """Causal LM loss without materialising the (tokens x 151,936) logits: the lm_head and the
    cross-entropy run per chunk of tokens and are recomputed in the backward (Liger-style)."""
    from torch.utils.checkpoint import checkpoint

    hidden = model.model(**inputs).last_hidden_state[:, :-1]
    hidden = hidden.reshape(-1, hidden.size(-1))
    target = labels[:, 1:].reshape(-1)
    total = 0.0
    for start in range(0, hidden.size(0), chunk):
        total = total + checkpoint(_ce_sum, hidden[start:start + chunk], target[start:start + chunk],
                                   model.lm_head.weight, use_reentrant=False)
    return total / (target != -100).sum().clamp(min=1)


def fused_loss(model, inputs, labels):
    """Causal LM loss through Liger's fused linear cross-entropy: lm_head and cross-entropy chunked in
    one Triton kernel family, the logits never materialised."""
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    hidden = model.model(**inputs).last_hidden_state[:, :-1]
    return LigerFusedLinearCrossEntropyLoss()(model.lm_head.weight, hidden.reshape(-1, hidden.size(-1)),
                                              labels[:, 1:].reshape(-1))


def trl_head_loss(model, inputs, labels):
    """Causal LM loss through TRL's fused LM head, as train/sft.py and train/grpo.py score: log-probabilities
    of the labelled positions in chunks of the vocabulary (Triton kernels on CUDA), the logits never
    materialised. The head is added to the model on first use; without ``fused_lm_head`` its forward is
    the model's own."""
    from trl.trainer.utils import add_fused_lm_head

    if not getattr(model, "has_trl_fused_head", False):
        add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))  # what SFTTrainer asks of it
        model.has_trl_fused_head = True
    return model(**inputs, labels=labels, fused_lm_head=True).loss


def kernel_profile(step) -> dict:
    """GPU time of one step by kernel family (matrix products, attention, optimizer, the rest) and the top kernels."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    families, kernels = {}, []
    for event in prof.key_averages():
        ms = getattr(event, "self_device_time_total", 0) / 1000
        if ms <= 0:
            continue
        name = event.key.lower()
        family = ("matmul" if any(k in name for k in ("gemm", "xmma", "cutlass", "nvjet", "cublas")) else
                  "attention" if any(k in name for k in ("flash", "fmha", "attention", "efficient")) else
                  "optimizer" if any(k in name for k in ("adam", "multi_tensor")) else "other")
        families[family] = families.get(family, 0) + ms
        kernels.append((round(ms, 2), family, event.key[:90]))
    return {"ms_by_family": {k: round(v, 1) for k, v in sorted(families.items())},
            "top_kernels_ms": [(ms, key) for ms, _, key in sorted(kernels, reverse=True)[:10]],
            "top_other_kernels_ms": [(ms, key) for ms, fam, key in sorted(kernels, reverse=True) if fam == "other"][:15]}


def matmul_tflops(device, dtype) -> float | None:
    """The device's measured bf16 matrix-product rate (8192^3, median of 10 after warm-up)."""
    import torch

    if device.type != "cuda":
        return None
    a, b = (torch.randn(8192, 8192, device=device, dtype=dtype) for _ in range(2))
    times = []
    for i in range(13):
        torch.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        torch.cuda.synchronize()
        if i >= 3:
            times.append(time.perf_counter() - start)
    return round(2 * 8192 ** 3 / statistics.median(times) / 1e12, 1)


def nvidia_driver() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             check=False, capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
