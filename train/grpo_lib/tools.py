"""Making TRL's GRPO tool loop safe for any model output, and bounded by an image budget.

TRL 1.16 runs a tool call as ``tool_dict[name](**arguments)`` and turns exceptions into
``str({"error": ...})``; a tool-call block that does not parse ends the rollout silently, and a
call whose ``arguments`` is not an object raises inside TRL. Here:

- ``normalize_tool_calls`` turns every malformed call (unparsable block, missing name, arguments
  that are not a JSON object) into a call of ``invalid_tool_call``, so the model gets an
  ``Error:`` observation and another turn, as ``agent.loop`` does in evaluation.
- ``SafeToolDict`` answers every name: known tools run through a wrapper that never raises,
  unknown names and ``invalid_tool_call`` get an ``Error:`` observation, and tool results past the
  rollout's image budget are refused with one. Calls and errors are counted per rollout, which
  is what ``tools/failure_frequency`` reports (TRL counts raised exceptions only, and the agent's
  tools never raise).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

INVALID_TOOL = "invalid_tool_call"
TOOL_CALL_OPEN = "<tool_call>"
ERROR_PREFIX = "Error:"
TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
UNPARSED = ('the tool call could not be parsed; write <tool_call>{"name": ..., "arguments": {...}}</tool_call> '
            "with valid JSON")


def _invalid(reason: str) -> dict:
    return {"type": "function", "function": {"name": INVALID_TOOL, "arguments": {"reason": reason}}}


def normalize_tool_calls(message: dict) -> dict:
    """Route malformed tool calls of a parsed assistant message to ``invalid_tool_call`` (in place).

    >>> normalize_tool_calls({"role": "assistant", "content": '<tool_call>{"name": "crop"</tool_call>'})["tool_calls"]
    [{'type': 'function', 'function': {'name': 'invalid_tool_call', 'arguments': {'reason': 'the tool call could not be parsed; write <tool_call>{"name": ..., "arguments": {...}}</tool_call> with valid JSON'}}}]
    >>> m = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "crop", "arguments": [1]}}]}
    >>> normalize_tool_calls(m)["tool_calls"][0]["function"]["arguments"]["reason"]
    'the arguments of crop must be a JSON object, got [1]'
    """
    if not isinstance(message, dict):
        return message
    calls = message.get("tool_calls")
    if calls:
        fixed = []
        for call in calls if isinstance(calls, list) else [calls]:
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or (isinstance(call, dict) and call.get("type", "function") != "function"):
                fixed.append(_invalid(f"malformed tool call {str(call)[:200]}"))
            elif not TOOL_NAME.fullmatch(name):  # the name is echoed into the next prompt: keep it plain
                fixed.append(_invalid(f"{name[:64]!r} is not a tool name"))
            elif not isinstance(function.get("arguments"), dict):
                fixed.append(_invalid(f"the arguments of {name} must be a JSON object, got "
                                      f"{str(function.get('arguments'))[:200]}"))
            else:
                fixed.append(call)
        message["tool_calls"] = fixed
    elif TOOL_CALL_OPEN in str(message.get("content") or ""):
        message["tool_calls"] = [_invalid(UNPARSED)]
    return message


def safe_parser(parse: Callable) -> Callable:
    """Wrap TRL's ``parse_response`` so that every parsed reply goes through ``normalize_tool_calls``."""

    def parse_response(tokenizer, ids, prefix=None, tools=None):
        try:
            message = parse(tokenizer, ids, prefix=prefix, tools=tools)
        except Exception:  # noqa: BLE001 - TRL falls back on ValueError/TypeError only; any reply must parse
            message = {"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}
        return normalize_tool_calls(message)

    parse_response.__wrapped__ = parse
    return parse_response


def is_error(result: Any) -> bool:
    """A failed call: ``rewards.format_and_tools.tool_call_failed`` (one definition for training, eval, rewards).

    >>> is_error("Error: no"), is_error([{"type": "text", "text": "Error: x"}]), is_error([{"type": "image"}])
    (True, True, False)
    """
    from lookcloser.rewards.format_and_tools import tool_call_failed

    return tool_call_failed(result)


def defuse(text: str) -> str:
    """Break special-token spellings in text that goes back to the model (an echoed ``<|image_pad|>``
    would become an image token without pixels).

    >>> defuse("unknown tool '<|image_pad|>'")
    "unknown tool '<\u200b|image_pad|\u200b>'"
    """
    return text.replace("<|", "<\u200b|").replace("|>", "|\u200b>")


def _defuse_result(result: Any) -> Any:
    if isinstance(result, str):
        return defuse(result)
    if isinstance(result, list):
        return [{**b, "text": defuse(b["text"])} if isinstance(b, dict) and isinstance(b.get("text"), str) else b
                for b in result]
    return result


def count_images(result: Any) -> int:
    return sum(1 for b in result if isinstance(b, dict) and b.get("type") == "image") if isinstance(result, list) else 0


class RolloutTools:
    """Per-rollout bookkeeping shared by the wrappers: calls, errors, images seen, the budget."""

    def __init__(self, env: Any = None, images: int = 0, max_images: int | None = None):
        self.env, self.images, self.max_images = env, images, max_images
        self.calls = self.errors = self.refused = 0
        self.by_name: dict[str, int] = {}  # calls that reached a known tool, by name

    def error(self, message: str) -> str:
        message = defuse(message)
        self.errors += 1
        # Keep the environment's own counters right for calls that never reached one of its tools.
        if self.env is not None and hasattr(self.env, "tool_calls"):
            self.env.tool_calls = getattr(self.env, "tool_calls", 0) + 1
            self.env.tool_errors = getattr(self.env, "tool_errors", 0) + 1
        return f"{ERROR_PREFIX} {message}"

    def run(self, name: str, tool: Callable, kwargs: dict) -> Any:
        self.calls += 1
        self.by_name[name] = self.by_name.get(name, 0) + 1
        if self.max_images is not None and self.images >= self.max_images:
            self.refused += 1
            return self.error(f"the image budget of {self.max_images} images per trajectory is spent; "
                              "answer with what you have seen")
        try:
            result = tool(**kwargs)
        except Exception as err:  # noqa: BLE001 - a tool bug must not end the rollout; the model reads why
            logger.warning("tool %s raised: %r", name, err)
            return self.error(f"{name} failed: {type(err).__name__}: {err}")
        new = count_images(result)
        if self.max_images is not None and self.images + new > self.max_images:
            self.refused += 1
            return self.error(f"{name} would exceed the image budget of {self.max_images} images per trajectory")
        self.images += new
        if is_error(result):
            self.errors += 1
        return _defuse_result(result)  # tools echo arguments the model wrote


class SafeToolDict(dict):
    """A rollout's ``{name: tool}`` for TRL's loop that answers every name and never raises.

    ``async_names``: TRL looks a name up here before its async dict, so async tools are reported as
    absent (the catch-all then answers only names that are in neither).
    """

    def __init__(self, tools: dict[str, Callable], state: RolloutTools, available: list[str],
                 async_names: frozenset = frozenset()):
        super().__init__()
        self.state, self.available, self.async_names = state, available, async_names
        for name, tool in tools.items():
            self[name] = self._wrap(name, tool)

    def _wrap(self, name: str, tool: Callable) -> Callable:
        def call(**kwargs):
            return self.state.run(name, tool, kwargs)

        call.__name__ = name
        return call

    def __contains__(self, name: object) -> bool:
        return name not in self.async_names

    def __missing__(self, name: str) -> Callable:
        def answer(**kwargs):
            self.state.calls += 1
            if name == INVALID_TOOL:
                return self.state.error(str(kwargs.get("reason") or UNPARSED))
            return self.state.error(f"unknown tool {name!r}; available tools: {', '.join(self.available)}")

        return answer


def tool_call_text(call: dict) -> str:
    """A tool call as the model wrote it (for logs).

    >>> tool_call_text({"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0}}})
    '<tool_call>{"name": "crop", "arguments": {"image_index": 0}}</tool_call>'
    """
    function = call.get("function", call) if isinstance(call, dict) else {}
    body = {"name": function.get("name"), "arguments": function.get("arguments")}
    return f"<tool_call>{json.dumps(body, ensure_ascii=False, default=str)}</tool_call>"
