"""A user's own chat template (``chat_template_path``), for GRPO recipes and ``python -m eval``; SFT has TRL's
key of the same name. Light on purpose (no model code): configs declare and check it before anything loads.
"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any

from lookcloser.errors import RecipeError

HELP = ("A Jinja chat template file used instead of the checkpoint's own (it must render tool calls for tool use). "
        "Default: the checkpoint's, or its family's tool template where that one has no tool calling "
        "(agent/families/templates).")


def chat_template_path_field() -> Any:
    """The ``chat_template_path`` setting, declared once for the GRPO recipes and ``python -m eval``."""
    return field(default=None, metadata={"help": HELP})


def read_template(path: str | Path | None, what: str = "chat_template_path") -> str | None:
    """The template text of ``path`` (None: none given), or one error naming the file.

    >>> read_template(None) is None
    True
    >>> read_template("/nonexistent.jinja")
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecipeError: chat_template_path: /nonexistent.jinja not found
    """
    if path is None or path == "":
        return None
    file = Path(path).expanduser()
    if not file.is_file():
        raise RecipeError(f"{what}: {path} not found")
    text = file.read_text(encoding="utf-8")
    if "{%" not in text and "{{" not in text:
        raise RecipeError(f"{what}: {path} is not a Jinja chat template (no {{% or {{{{ in it)")
    return text
