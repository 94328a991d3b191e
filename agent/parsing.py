"""Tool-call parsing of Qwen-style assistant text with TRL's own parser, also when there are no token ids.

``HFPolicy`` calls ``trl.chat_template_utils.parse_response`` on token ids, as TRL's GRPO loop
does. For text from an OpenAI-compatible endpoint, ``parse_assistant_text`` runs the very same
function through a small text-only stand-in for the tokenizer, with the response template TRL
attaches to Qwen3-VL (``qwen3_template``) and the assistant header as prefix. So both paths
share TRL's behaviour, including its fallback: a reply whose tool call does not parse becomes
plain content, which the loop then answers with an ``Error:`` observation.
"""

from __future__ import annotations

import functools

from lookcloser.trl_surface import compiled_response_template

TOOL_CALL_OPEN = "<tool_call>"
ASSISTANT_HEADER = "<|im_start|>assistant\n"
_SPECIAL = ("<|im_end|>", "<|endoftext|>")
# A reply holding none of these is all content for TRL's parser (tests/test_agent_parsing.py holds the two equal).
_MARKS = ("<think>", TOOL_CALL_OPEN, "<|im_start|>", *_SPECIAL)


class _TextTokenizer:
    """Just enough of a tokenizer for TRL's ``parse_response``: the "ids" are the text itself."""

    eos_token = "<|im_end|>"

    def __init__(self, template: dict) -> None:
        # Compiled once: transformers rebuilds a dict template's regexes on every call (~0.1 ms a reply).
        self.response_template = compiled_response_template(template)

    def parse_response(self, text: str, prefix: str, tools: list | None = None) -> dict:
        from transformers.utils.chat_parsing import parse_response

        return parse_response(text, self.response_template, prefix=prefix, tools=tools)

    def decode(self, text: str, skip_special_tokens: bool = False) -> str:
        if skip_special_tokens:
            for token in _SPECIAL:
                text = text.replace(token, "")
        return text


@functools.lru_cache(maxsize=1)
def _text_tokenizer() -> _TextTokenizer:
    from trl.chat_template_utils import qwen3_template

    return _TextTokenizer(qwen3_template)


def parse_assistant_text(text: str, tools: list | None = None) -> dict:
    """Split an assistant reply into content, reasoning and tool calls exactly as TRL does.

    >>> parse_assistant_text('Look.\\n<tool_call>\\n{"name": "crop", "arguments": {"image_index": 0}}\\n</tool_call>')
    {'role': 'assistant', 'content': 'Look.', 'tool_calls': [{'type': 'function', 'function': {'name': 'crop', 'arguments': {'image_index': 0}}}]}
    >>> parse_assistant_text('<tool_call>{"name": "crop", "arguments": {</tool_call>')["content"]
    '<tool_call>{"name": "crop", "arguments": {</tool_call>'
    """
    if not any(mark in text for mark in _MARKS):  # most final answers: TRL's result without its ~0.1 ms
        return {"role": "assistant", "content": text.strip()}
    from trl.chat_template_utils import parse_response

    message = parse_response(_text_tokenizer(), text, prefix=ASSISTANT_HEADER, tools=tools)
    message.setdefault("role", "assistant")
    return message


def has_unparsed_tool_call(message: dict) -> bool:
    """True when a reply tried to call a tool but nothing parsed (bad JSON, no closing tag, ...).

    >>> has_unparsed_tool_call({"role": "assistant", "content": "<tool_call>{oops</tool_call>"})
    True
    """
    return not message.get("tool_calls") and TOOL_CALL_OPEN in str(message.get("content") or "")
