"""The one tool-call format of lookcloser's own chat templates (``agent/families/templates/*_tools.jinja``)
and the response template that parses it back, for families whose published template has no tools.

A call is rendered as Qwen's: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``, so one
parser (TRL's ``qwen3_template``) reads every family's replies once its assistant-turn opening and
end-of-turn marker are the family's own.
"""

from __future__ import annotations

import copy
import re


def tool_call_response_template(start_anchor: str, turn_end: str) -> dict:
    """TRL's ``qwen3_template`` (a transformers >= 5.13 response template) for a family whose assistant
    turn opens with ``start_anchor`` and ends with ``turn_end``.

    >>> t = tool_call_response_template("<start_of_turn>model\\n", "<end_of_turn>")
    >>> t["start_anchor"], t["fields"]["content"]["close_pattern"], t["fields"]["tool_calls"]["open"]
    ('<start_of_turn>model\\n', '<end_of_turn>\\\\s*', '<tool_call>')
    """
    from trl.chat_template_utils import qwen3_template

    template = copy.deepcopy(qwen3_template)
    template["start_anchor"] = start_anchor
    template["fields"]["content"]["close_pattern"] = re.escape(turn_end) + r"\s*"
    return template


def chatml_response_template() -> dict:
    """TRL's ``qwen3_template`` as it is: the families whose replies are ChatML turns with Qwen's ``<tool_call>``
    JSON (Qwen3-VL's published template, and our ChatML tool templates)."""
    from trl.chat_template_utils import qwen3_template

    return qwen3_template
