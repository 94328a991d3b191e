"""The ``fused_kernels`` recipe key of train/sft.py and train/grpo.py: Liger's Triton kernels for RMSNorm,
rotary embeddings and SwiGLU in the model being trained (CUDA, ``pip install 'lookcloser[gpu]'``).

The loss needs no key: TRL's trainers always score through their own fused LM head (chunked
log-probabilities, Triton kernels on CUDA; the logits are never materialised). TRL 1.16 refuses Liger's
fused linear cross-entropy, which would replace the forward that head patches. docs/benchmarks.md
("GPU") says what is measured and what remains.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from lookcloser.recipes import RecipeError

logger = logging.getLogger(__name__)

LIGER_MIN_VERSION = "0.8.5"  # the version measured (docs/benchmarks.md) and tested (tests/test_trl_surface.py)


def liger_unavailable() -> str | None:
    """Why Liger's kernels cannot run in this process (no package, too old, no CUDA GPU), or None."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        installed = version("liger-kernel")
    except PackageNotFoundError:
        return "needs the liger-kernel package: pip install 'lookcloser[gpu]' (on a CUDA machine)"
    if Version(installed) < Version(LIGER_MIN_VERSION):
        return f"needs liger-kernel >= {LIGER_MIN_VERSION} (installed: {installed})"
    import torch

    if not torch.cuda.is_available():
        return "runs Triton kernels on a CUDA GPU, and torch sees none (torch.cuda.is_available() is False)"
    return None


@dataclass
class FusedKernelsArguments:
    """Mixed into the scripts' argument dataclasses: one definition of the key and its check."""

    fused_kernels: str = field(default="none", metadata={
        "help": "'liger': Liger's Triton kernels for the text RMSNorm, the text and vision rotary embeddings and "
                "SwiGLU (CUDA; pip install 'lookcloser[gpu]'). The loss always goes through TRL's fused LM head. "
                "'none': the model's own layers.", "choices": ["none", "liger"]})

    def __post_init__(self):
        # Checked while the recipe is parsed: a machine that cannot run the kernels stops before any model loads.
        if self.fused_kernels == "liger" and (reason := liger_unavailable()):
            raise RecipeError(f"fused_kernels: liger {reason}")
        parent = super()
        if hasattr(parent, "__post_init__"):
            parent.__post_init__()


def apply_fused_kernels(trainer, fused_kernels: str) -> dict | None:
    """Patch the trainer's model as ``fused_kernels`` says, before training starts (and before
    ``accelerator.prepare``, so that ZeRO-3 hooks the new modules). Returns what was patched."""
    from lookcloser.agent.families import family_for_model_type

    family = family_for_model_type(str(getattr(getattr(trainer.model, "config", None), "model_type", None)))
    if trainer.args.use_liger_kernel and family.fused_kernels is not None:
        raise RecipeError(f"use_liger_kernel: Liger's own {family.name} patch fails with transformers 5.23 (liger-kernel "
                          "0.8.5 imports a class 5.23 no longer has); set fused_kernels: liger instead")
    if fused_kernels != "liger":
        return None
    if reason := liger_unavailable():  # parsing checked it already; a script built without the parser had not
        raise RecipeError(f"fused_kernels: liger {reason}")
    if trainer.args.device.type != "cuda":
        raise RecipeError(f"fused_kernels: liger runs on CUDA, and this run trains on {trainer.args.device.type} "
                          "(use_cpu?)")
    if family.fused_kernels is None:
        raise RecipeError(f"fused_kernels: liger is wired for no layer of {family.name} yet (agent/families/"
                          f"{family.name}.py, fused_kernels); set fused_kernels: none")
    try:
        patched = family.fused_kernels(trainer.model)
    except ValueError as err:
        raise RecipeError(f"fused_kernels: liger: {err}") from err
    logger.info("fused kernels: %s", patched)
    return patched
