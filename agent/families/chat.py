"""A processor's chat template made ready for tool use, whatever bytes the checkpoint ships.

TRL recognises templates by their exact text (``trl/chat_template_utils.py``): a Qwen3-VL checkpoint
whose template differs from the published one only in whitespace or comments is "unrecognised", and
most families' published templates render no tool calls at all. ``prepare_processor`` therefore
recognises a template by what it renders (``renders_like``), gives a recognised one the canonical
bytes, puts the family's tool template in where the checkpoint's has no tool calling, and sets the
family's response template on the tokenizer so replies parse without TRL's lookup.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lookcloser.agent.families.base import ModelFamily
from lookcloser.errors import RecipeError

logger = logging.getLogger(__name__)

_TOOLS = [{"type": "function", "function": {
    "name": "crop", "description": "Crop a box of an image.",
    "parameters": {"type": "object", "properties": {"image_index": {"type": "integer"}}, "required": ["image_index"]}}}]
_CALL = {"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0}}}
# What a template must render the same as a canonical one to be taken as it: system text, an image in the
# prompt, a tool call, a tool result with an image and one without, a plain reply, the generation prompt.
PROBES: tuple[tuple[list[dict], dict], ...] = (
    ([{"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
      {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which one?"}]}],
     {"add_generation_prompt": True, "tools": _TOOLS}),
    ([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which one?"}]},
      {"role": "assistant", "content": [{"type": "text", "text": "Let me look."}], "tool_calls": [_CALL]},
      {"role": "tool", "name": "crop", "content": [{"type": "image"}, {"type": "text", "text": "cropped"}]},
      {"role": "assistant", "content": [{"type": "text", "text": "<answer>B</answer>"}]}],
     {"tools": _TOOLS}),
    ([{"role": "user", "content": [{"type": "text", "text": "Hi"}]},
      {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
      {"role": "user", "content": [{"type": "text", "text": "Again"}]}],
     {"add_generation_prompt": True}),
)


def _render_all(processor, template: str) -> list[str] | None:
    try:
        return [processor.apply_chat_template(messages, chat_template=template, tokenize=False, **kwargs)
                for messages, kwargs in PROBES]
    except Exception:  # noqa: BLE001 - a template that cannot render the probes is simply not that template
        return None


def renders_like(processor, template: str, canonical: str) -> bool:
    """``template`` renders every probe conversation exactly as ``canonical`` does."""
    ours = _render_all(processor, template)
    return ours is not None and ours == _render_all(processor, canonical)


def canonical_templates(family: ModelFamily) -> list[str]:
    """The template texts TRL or this family know by their exact bytes."""
    import trl

    found = []
    if family.trl_template:
        found.append((Path(trl.__file__).parent / "chat_templates" / family.trl_template).read_text(encoding="utf-8"))
    if family.tool_template:
        found.append(family.tool_template_text())
    return found


def _set_template(processor, template: str) -> None:
    processor.chat_template = template
    tokenizer = getattr(processor, "tokenizer", None)
    if tokenizer is not None:
        tokenizer.chat_template = template


def prepare_processor(processor, family: ModelFamily, chat_template: str | None = None):
    """Make ``processor``'s chat template render tool calls and be known by its exact text, and give
    its tokenizer the family's response template. ``chat_template``: a user's template text (recipe or
    eval key ``chat_template_path``), used instead of the checkpoint's. Returns ``processor``."""
    from trl.chat_template_utils import supports_tool_calling

    if chat_template is not None:
        _set_template(processor, chat_template)
    current = processor.chat_template if isinstance(processor.chat_template, str) else None
    for canonical in canonical_templates(family):
        if current is not None and current != canonical and renders_like(processor, current, canonical):
            _set_template(processor, canonical)  # the same template; TRL knows these bytes
            break
    if not supports_tool_calling(processor):
        if family.tool_template is None:
            raise RecipeError(f"the chat template renders no tool calls and {family.name} has no tool template: give "
                              "one with chat_template_path")
        if chat_template is not None:
            raise RecipeError("chat_template_path: the template renders no tool calls (it must keep a tool call's "
                              "name and arguments and a tool message's content)")
        logger.info("%s: the checkpoint's chat template has no tool calling; using %s", family.name,
                    family.tool_template)
        _set_template(processor, family.tool_template_text())
    tokenizer = getattr(processor, "tokenizer", processor)
    tokenizer.response_template = family.response_schema()
    return processor


def tool_call_exchange(tool_name: str) -> list[dict]:
    """A user turn, then an assistant turn calling ``tool_name``: rendered and cut after its last stop token
    (``after_last_stop``), what every generated tool-call turn ends with before the tool results follow (TRL's
    ``_get_tool_suffix_ids`` and ``HFPolicy.extend`` both diff against it)."""
    return [{"role": "user", "content": "dummy"},
            {"role": "assistant", "content": "",
             "tool_calls": [{"type": "function", "function": {"name": tool_name, "arguments": {}}}]}]


def after_last_stop(ids: list[int], stop_ids) -> int:
    """The position just after the last of ``stop_ids`` in ``ids`` (0: none there). Generation stops at a stop
    token (Gemma's ``<end_of_turn>``, not its tokenizer's ``<eos>``), so what a template renders past it belongs
    to the next turn.

    >>> after_last_stop([5, 9, 1, 9, 2], {9}), after_last_stop([5, 1], {9})
    (4, 0)
    """
    positions = [i for i, token in enumerate(ids) if token in stop_ids]
    return positions[-1] + 1 if positions else 0
