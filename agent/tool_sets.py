"""Tool sets: what a recipe's or ``python -m eval``'s ``tool_set`` adds to an environment's own tools. An
environment with a tool set is composed (``agent.environments.environment_class(name, tool_set)``), never a
name of its own; the names from before (``crop+python``...) stay as aliases (``agent.environments.ALIASES``).

Light on purpose (no environment class): configs declare ``tool_set`` from here before any tool loads.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

IMAGE = "image"  # each environment's own tools
IMAGE_PYTHON = "image+python"  # and the sandboxed python tool (agent.code_env) wherever the image tools are offered
TOOL_SETS = (IMAGE, IMAGE_PYTHON)
HELP = ("image: each environment's own tools; image+python: also the sandboxed python tool in every environment with "
        "the image tools alone (agent.environments.IMAGE_TOOL_ENVIRONMENTS; needs bubblewrap, docs/agent.md); the "
        "others keep their own.")


def tool_set_field() -> Any:
    """The ``tool_set`` setting, declared once for the GRPO recipes and ``python -m eval``
    (``tool_set: str = tool_set_field()``); ``agent.environments.check_tool_set`` checks a value."""
    return field(default=IMAGE, metadata={"help": HELP})
