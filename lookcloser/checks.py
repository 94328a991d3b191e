"""Checks of the values a user gives, run when a command's config is parsed (before any work).

Every config of every command (training scripts, curriculum stages, eval, data builders) checks
its values with these, so a mistake is one line naming the setting, whatever the command:
``learning_rate must be > 0, got -0.001``. ``planned``: folders a curriculum's earlier stages
will write; a path inside one is not there yet and is not looked for.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from pathlib import Path

from lookcloser.errors import ModelPathError, RecipeError

TINY_MODEL_NAME = "lookcloser/tiny-qwen3-vl"  # reserved: the embedded default, a tiny random model built offline
SMALL_MODEL_NAME = "lookcloser/small-qwen3-vl"  # reserved: the same, wider and deeper (agent.tiny_qwen3_vl.SIZES)
# Reserved names (lookcloser/<size>-<family>) are each family's tiny checkpoints (agent/families): which
# exist is checked there (agent.families.check_supported), above this layer.
RESERVED_PREFIX = "lookcloser/"
LOCAL_ROOTS = ("outputs", "output", "checkpoints", "data", "runs", "models", "tmp")


def closest(name: str, choices: Iterable[str]) -> str | None:
    """The valid name nearest a misspelt one.

    >>> closest("--learnin_rate", ["--learning_rate", "--output_dir"])
    '--learning_rate'
    >>> closest("--zzz", ["--learning_rate"]) is None
    True
    """
    match = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    near = closest(name, choices)
    return f"; did you mean {near}?" if near else ""


def check_range(name: str, value: float | None, low: float | None = None, high: float | None = None, *,
                above: bool = False) -> None:
    """``low <= value <= high`` (``above``: ``low < value``); None passes (an unset optional).

    >>> check_range("learning_rate", -1e-3, 0, above=True)
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: learning_rate must be > 0, got -0.001
    >>> check_range("direct_ratio", 1.5, 0, 1)
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: direct_ratio must be between 0 and 1, got 1.5
    """
    if value is None:
        return
    if low is not None and high is not None and not above:
        if not low <= value <= high:
            raise RecipeError(f"{name} must be between {low} and {high}, got {value}")
        return
    if low is not None and (value <= low if above else value < low):
        raise RecipeError(f"{name} must be {'>' if above else '>='} {low}, got {value}")
    if high is not None and value > high:
        raise RecipeError(f"{name} must be <= {high}, got {value}")


def check_names(name: str, values: Iterable[str] | None, choices: Sequence[str]) -> None:
    """Every one of ``values`` is one of ``choices`` (a misspelt one is named with its closest match).

    >>> check_names("reward_funcs", ["accuracy", "fromat"], ["accuracy", "format"])
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: reward_funcs: unknown name 'fromat'; did you mean format? (choose from accuracy, format)
    """
    for value in values or ():
        if value not in choices:
            raise RecipeError(f"{name}: unknown name {value!r}{did_you_mean(value, choices)} "
                              f"(choose from {', '.join(choices)})")


def _planned(path: Path, planned: Iterable[str | Path]) -> bool:
    resolved = path.resolve()
    return any(resolved.is_relative_to(Path(p).resolve()) for p in planned)


def check_path(name: str, value: str | Path | None, kind: str = "any", planned: Iterable[str | Path] = ()) -> None:
    """A path the user gave exists and is a ``kind`` ("file", "folder" or "any"); None passes.

    >>> check_path("dataset_path", "/nonexistent/x.json")
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: dataset_path: /nonexistent/x.json not found
    """
    if value is None or value == "":
        return
    path = Path(value).expanduser()
    if not path.exists():
        if _planned(path, planned):
            return
        raise RecipeError(f"{name}: {value} not found")
    if kind == "file" and not path.is_file():
        raise RecipeError(f"{name}: {value} is a folder, not a file")
    if kind == "folder" and not path.is_dir():
        raise RecipeError(f"{name}: {value} is a file, not a folder")


def check_output_folder(name: str, value: str | Path | None) -> None:
    """Where a command writes: anything but an existing file."""
    if value and Path(value).expanduser().is_file():
        raise RecipeError(f"{name}: {value} is a file; give a folder to write into")


def looks_like_path(name: str) -> bool:
    """A name meant as a local folder rather than a hub id (``owner/name``).

    >>> looks_like_path("outputs/sft"), looks_like_path("./sft"), looks_like_path("Qwen/Qwen3-VL-2B-Instruct")
    (True, True, False)
    """
    if name.startswith(("/", ".", "~")) or name.endswith("/") or name.count("/") > 1 or "\\" in name:
        return True
    head = name.split("/")[0]
    # `outputs/x` when ./outputs exists, or under a folder name no hub owner goes by in our docs.
    return "/" in name and (Path(head).is_dir() or head in LOCAL_ROOTS)


def check_model_name(name: str | None, planned: Iterable[str | Path] = (), what: str = "model_name_or_path") -> None:
    """A model name is the reserved tiny name, a hub id (``owner/name``, not looked up here) or a
    local checkpoint folder (with ``config.json`` or ``adapter_config.json``).

    >>> check_model_name("setup.cfg" if Path("setup.cfg").is_file() else __file__)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    lookcloser.errors.ModelPathError: model_name_or_path: ... is a file, not a model folder (give the checkpoint's folder)
    """
    if not name:
        raise ModelPathError(f"no model given (set {what})")
    path = Path(name).expanduser()
    if name.startswith(RESERVED_PREFIX) and not path.exists():
        return
    if path.is_file():
        raise ModelPathError(f"{what}: {name} is a file, not a model folder (give the checkpoint's folder)")
    if path.is_dir():
        if not (path / "config.json").is_file() and not (path / "adapter_config.json").is_file():
            raise ModelPathError(f"{what}: {name}: folder has no config.json or adapter_config.json (not a checkpoint)")
        return
    if (looks_like_path(name) or path.exists()) and not _planned(path, planned):
        raise ModelPathError(f"{what}: {name}: model folder not found (a local path; hub ids look like owner/name)")
