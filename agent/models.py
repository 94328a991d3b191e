"""Loading checkpoints of every supported family (real or the offline tiny ones) with a CPU-safe processor.

One place answers "give me a model and a processor for this name": a hub id, a local
checkpoint folder, or a reserved name, ``lookcloser/tiny-<family>`` (e.g. the embedded default
``lookcloser/tiny-qwen3-vl``, or the larger ``lookcloser/small-qwen3-vl``), built offline on first use,
cached on disk, deterministic from its seed. The family (``agent/families``) decides the processor.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch
from transformers import AutoConfig

from lookcloser.agent.families import RESERVED, family_for_model_type
from lookcloser.agent.families.base import ModelFamily
from lookcloser.agent.families.chat import prepare_processor
from lookcloser.checks import SMALL_MODEL_NAME, TINY_MODEL_NAME, check_model_name  # noqa: F401 - the names, re-exported
from lookcloser.errors import ModelPathError

logger = logging.getLogger(__name__)


def embedded_model_cache_dir(name: str = TINY_MODEL_NAME) -> Path:
    """The cache folder of the reserved model ``name`` (e.g. ``~/.cache/lookcloser/tiny-qwen3-vl-v3``)."""
    family, size = RESERVED[name]
    root = os.environ.get("LOOKCLOSER_CACHE") or Path.home() / ".cache" / "lookcloser"
    # Versioned: a cache built by an older definition of the embedded models is never picked up.
    return Path(root) / f"{size}-{family.slug}-v{family.tiny_version}"


def adapter_base(path: str | Path) -> str | None:
    """The base model a LoRA adapter folder names (``adapter_config.json``), else None."""
    config = Path(path) / "adapter_config.json"
    if not config.is_file() or (Path(path) / "config.json").is_file():
        return None
    import json

    base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        raise ModelPathError(f"{config}: names no base_model_name_or_path, so the adapter cannot be loaded")
    return str(base)


def merge_adapter(adapter_dir: str | Path, out_dir: str | Path) -> Path:
    """Write base + LoRA adapter as one full checkpoint (weights merged, processor and the adapter's
    recorded prompting beside them)."""
    from peft import PeftModel

    from lookcloser.agent.checkpoint_prompting import PROMPTING_FILE
    from lookcloser.checkpoints import save_checkpoint

    adapter_dir, out_dir = Path(adapter_dir), Path(out_dir)
    base = resolve_model_path(adapter_base(adapter_dir) or "")
    model = PeftModel.from_pretrained(load_model(base), str(adapter_dir)).merge_and_unload()
    has_processor = (adapter_dir / "tokenizer_config.json").is_file()
    processor = _processor_at(str(adapter_dir) if has_processor else base, config_path=base)
    extra = [adapter_dir / PROMPTING_FILE] if (adapter_dir / PROMPTING_FILE).is_file() else []  # evaluated as trained
    return save_checkpoint(out_dir, model, processor, extra, replace=True)


def name_adapter_base(folder: str | Path, name: str) -> None:
    """Make a saved LoRA adapter name its base as the user named it (a hub id, the reserved tiny name
    or the path given), not the folder that name resolved to (the user's cache): in
    ``adapter_config.json`` and in the model card PEFT writes beside it.

    Why after saving: PEFT checks while saving whether the base it names has a config.json, and
    for a name that is not a folder it asks the hub (here: never).
    """
    config_path = Path(folder) / "adapter_config.json"
    if not config_path.is_file():
        return
    import json

    config = json.loads(config_path.read_text(encoding="utf-8"))
    resolved, config["base_model_name_or_path"] = config.get("base_model_name_or_path"), str(name)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    card_path = Path(folder) / "README.md"
    if card_path.is_file() and resolved:
        from huggingface_hub import ModelCard

        card = ModelCard.load(card_path)
        card.data.base_model = str(name)
        card.data.tags = [tag.replace(resolved, str(name)) for tag in card.data.tags or []]
        card.save(card_path)


def _merged_adapter_path(adapter_dir: Path) -> str:
    """A LoRA folder as a full checkpoint: merged once per adapter content, cached.

    Why merge instead of loading base + adapter everywhere: every consumer (TRL trainers given a
    path, eval, vLLM, the processor loader) then sees an ordinary checkpoint.
    """
    from lookcloser.checkpoint_digest import checkpoint_digest

    target = embedded_model_cache_dir().parent / "merged" / checkpoint_digest(adapter_dir)
    if not (target / "config.json").exists():
        merge_adapter(adapter_dir, target)
    return str(target)


def resolve_model_path(name_or_path: str) -> str:
    """Turn a recipe's ``model_name_or_path`` into something ``from_pretrained`` can load.

    A reserved name is built offline (once, then cached); a LoRA adapter folder becomes
    its base + adapter merged (cached); a local path that does not exist is a ``ModelPathError``
    (never a hub lookup); hub ids are returned unchanged.
    """
    from lookcloser.checkpoints import check_whole_checkpoint

    check_model_name(name_or_path, what="model_name_or_path / --model")
    if name_or_path not in RESERVED:
        path = Path(name_or_path).expanduser()
        if path.is_dir() and adapter_base(path) is not None:
            return _merged_adapter_path(path)
        if path.is_dir():
            check_whole_checkpoint(path)  # e.g. saved with ZeRO-3's empty shards: refused, never loaded
        return name_or_path
    return str(embedded_checkpoint(name_or_path))


def embedded_checkpoint(name: str = TINY_MODEL_NAME, wait_s: float = 600.0) -> Path:
    """The cached checkpoint of the reserved model ``name`` (its family and size: ``agent.families.RESERVED``),
    built when missing and rebuilt when not whole.

    One process builds it under a file lock (other launches on the machine wait on the lock); in a
    distributed run that is rank 0, since transformers' ``save_pretrained`` writes on rank 0 only, and the
    other ranks poll for the whole folder. It is built as a plain model even inside a ZeRO-3 run
    (``outside_deepspeed_zero3``), whose ``zero.Init`` would otherwise save it with empty tensors and poison
    every later run on the machine.
    """
    import time

    import torch.distributed as dist
    from filelock import FileLock

    from lookcloser.checkpoints import weights_problem
    from lookcloser.trl_surface import outside_deepspeed_zero3

    family, size = RESERVED[name]
    target = embedded_model_cache_dir(name)
    target.parent.mkdir(parents=True, exist_ok=True)
    builder = not (dist.is_available() and dist.is_initialized()) or dist.get_rank() == 0
    deadline = time.monotonic() + wait_s
    while True:
        with FileLock(str(target.parent / f".{target.name}.lock")):
            problem = weights_problem(target) if (target / "config.json").exists() else "missing"
            if not problem:
                return target
            if builder:
                if problem != "missing":
                    logger.warning("%s: not a whole checkpoint (%s): rebuilding it", target, problem)
                with outside_deepspeed_zero3():
                    family.build_tiny(target, size=size, replace=True)
                continue  # checked like any other copy
        if time.monotonic() > deadline:
            raise ModelPathError(f"{target}: rank 0 did not build the embedded model within {wait_s:.0f} s")
        time.sleep(0.5)


def without_truncation(processor):
    """Drop a truncation setting that a training run left in the tokenizer.

    Why: TRL truncates to ``max_length`` while training, and the tokenizer saves that state into
    tokenizer.json; a later load would then cut every longer prompt, image tokens included
    (agent prompts with tool schemas easily pass 2048 tokens). Prompts are never cut silently.
    """
    tokenizer = getattr(processor, "tokenizer", processor)
    for key in ("max_length", "truncation_strategy", "stride"):
        tokenizer.init_kwargs.pop(key, None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and backend.truncation is not None:
        backend.no_truncation()
    return processor


def load_processor(name_or_path: str, chat_template: str | None = None, **kwargs):
    """The processor of a model name (``resolve_model_path``), its chat template ready for tool calls
    (``agent.families.chat.prepare_processor``); ``chat_template``: a user's template text instead."""
    return _processor_at(resolve_model_path(name_or_path), chat_template=chat_template, **kwargs)


def family_at(path: str) -> ModelFamily:
    """The family of the checkpoint at ``path`` (a folder or a hub id), from its config; an
    architecture no family serves is ``UnsupportedFamilyError`` naming the supported ones."""
    return family_for_model_type(AutoConfig.from_pretrained(path).model_type, str(path))


def _processor_at(path: str, config_path: str | None = None, chat_template: str | None = None, **kwargs):
    """The processor saved in ``path``, for the model whose config is in ``config_path`` (default: path).

    Real checkpoints name their stock processor, which most families cannot build without
    torchvision; the family's own class loads the same tokenizer, image processor and chat template.
    """
    family = family_at(config_path or path)
    processor = family.processor_class.from_pretrained(path, **kwargs)
    return without_truncation(prepare_processor(processor, family, chat_template))


def load_model(name_or_path: str, dtype: str | torch.dtype | None = None, **kwargs):
    from transformers import AutoModelForImageTextToText

    path = resolve_model_path(name_or_path)
    if isinstance(dtype, str) and dtype not in ("auto",):
        dtype = getattr(torch, dtype)
    return AutoModelForImageTextToText.from_pretrained(path, dtype=dtype, **kwargs)
