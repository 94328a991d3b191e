"""The model families lookcloser trains and evaluates: an explicit registry of ``ModelFamily`` specs.

To add a family: write ``agent/families/<family>.py`` defining ``FAMILY`` (see ``base.ModelFamily``),
add it to ``_SPECS`` below and a row to ``EXPECTED`` in ``tests/test_families_specs.py``; ``tests/test_families.py``
runs it through SFT, GRPO and eval (docs/architecture.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from lookcloser.agent.families import (
    gemma3,
    idefics3,
    internvl,
    llava_onevision,
    qwen2_5_vl,
    qwen3_vl,
    smolvlm,
)
from lookcloser.agent.families.base import ModelFamily
from lookcloser.errors import ModelPathError

_SPECS: tuple[ModelFamily, ...] = (
    qwen3_vl.FAMILY,
    qwen2_5_vl.FAMILY,
    gemma3.FAMILY,
    internvl.FAMILY,
    idefics3.FAMILY,
    smolvlm.FAMILY,
    llava_onevision.FAMILY,
)
FAMILIES: dict[str, ModelFamily] = {spec.name: spec for spec in _SPECS}
RESERVED: dict[str, tuple[ModelFamily, str]] = {
    name: (spec, size) for spec in _SPECS for name, size in spec.tiny_names.items()
}
ADD_A_FAMILY = "agent/families/<family>.py (docs/architecture.md, 'Adding a model family')"


class UnsupportedFamilyError(ModelPathError):
    """A checkpoint whose architecture no family spec serves."""


def supported() -> str:
    return ", ".join(f"{spec.name} ({'/'.join(spec.model_types)})" for spec in _SPECS)


def family_for_model_type(model_type: str, where: str = "the model") -> ModelFamily:
    """The family serving a ``config.json`` ``model_type``.

    >>> family_for_model_type("qwen3_vl").name
    'qwen3_vl'
    >>> family_for_model_type("mllama", "m/config.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lookcloser.agent.families.UnsupportedFamilyError: m/config.json: model_type 'mllama' is not a supported family ...
    """
    for spec in _SPECS:
        if model_type in spec.model_types:
            return spec
    raise UnsupportedFamilyError(f"{where}: model_type {model_type!r} is not a supported family (supported: "
                                 f"{supported()}); to add one, write {ADD_A_FAMILY}")


def model_type_at(folder: str | Path) -> str | None:
    """``model_type`` from a checkpoint folder's ``config.json`` (read as a file, nothing loaded)."""
    config = Path(folder) / "config.json"
    if not config.is_file():
        return None
    return json.loads(config.read_text(encoding="utf-8")).get("model_type")


def family_of(name_or_path: str | Path) -> ModelFamily | None:
    """The family of a reserved tiny name or a local checkpoint folder; None for a hub id (unknown
    until it is loaded) or a LoRA adapter folder (its base's family)."""
    if str(name_or_path) in RESERVED:
        return RESERVED[str(name_or_path)][0]
    model_type = model_type_at(Path(name_or_path).expanduser())
    if model_type is None:
        return None
    return family_for_model_type(model_type, str(Path(name_or_path) / "config.json"))


def check_supported(name_or_path: str | None, what: str = "model_name_or_path") -> None:
    """At parse time: a reserved name that no family has, or a local checkpoint of an unsupported
    architecture, is one error naming the supported families (never a traceback after loading)."""
    if not name_or_path:
        return
    name = str(name_or_path)
    if name.startswith("lookcloser/") and name not in RESERVED and not Path(name).is_dir():
        raise UnsupportedFamilyError(f"{what}: {name} is not a reserved model (reserved: {', '.join(sorted(RESERVED))})")
    try:
        family_of(name)
    except UnsupportedFamilyError as err:
        raise UnsupportedFamilyError(f"{what}: {err}") from None
