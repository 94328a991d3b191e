"""Shaping rewards: think/answer format, tool-use bonus, DAPO overlong penalty.

- ``format_score``: 1.0 for ``<think>…</think>`` followed by one final answer block, else 0.0.
- ``count_tool_results`` / ``tool_use_bonus``: tool RESULTS actually returned (``role: "tool"``
  messages that are not error observations), never tool-call text, and paid only when the
  answer is right (DeepEyes: this avoids both tool collapse and tool spam), capped.
- ``overlong_penalty``: 0 up to ``max_length - buffer``, then linear down to -1 at
  ``max_length``, -1 beyond (DAPO's soft overlong punishment).
"""

from __future__ import annotations

from typing import Any

from lookcloser.rewards._text import last_boxed, message_text

_FORMAT_MAX_CHARS = 200_000


def format_score(text: str) -> float:
    """1.0 when the text is ``<think>reasoning</think>`` then exactly one final answer: an
    ``<answer>…</answer>`` block ending the text, or a ``\\boxed{…}`` and no ``<answer>`` tag.

    >>> format_score("<think>zoom in</think><answer>B</answer>")
    1.0
    >>> format_score("<think>a</think>So \\\\boxed{72}."), format_score("<answer>B</answer>")
    (1.0, 0.0)
    >>> format_score("<think>a</think><answer>B</answer><answer>C</answer>")
    0.0
    """
    if not isinstance(text, str) or len(text) > _FORMAT_MAX_CHARS:
        return 0.0
    body = text.lstrip()
    if not body.startswith("<think>") or body.count("<think>") != 1 or body.count("</think>") != 1:
        return 0.0
    close = body.find("</think>")
    if not body[7:close].strip():
        return 0.0
    rest = body[close + 8:].rstrip()
    opens, closes = rest.count("<answer>"), rest.count("</answer>")
    if opens or closes:
        if opens != 1 or closes != 1 or not rest.endswith("</answer>"):
            return 0.0
        return 1.0 if rest[rest.find("<answer>") + 8:-9].strip() else 0.0
    boxed = last_boxed(rest)
    return 1.0 if boxed is not None and boxed[0].strip() else 0.0


ERROR_MARKERS = ("Error:", '{"error"', "{'error'")


def tool_call_failed(result: Any) -> bool:
    """THE definition of a failed tool call, used by the agent's tools, GRPO's rollouts, eval and
    the rewards: the result's text (a str, or the text blocks of content) starts with ``Error:``,
    ``{"error"`` or ``{'error'`` (leading blanks ignored). TRL writes a raising tool's result as
    ``str({"error": ...})``, hence the single quotes. A result holding an image never failed.

    >>> tool_call_failed("Error: bad box"), tool_call_failed(str({"error": "ValueError: x"}))
    (True, True)
    >>> tool_call_failed([{"type": "text", "text": "  Error: x"}]), tool_call_failed([{"type": "image"}])
    (True, False)
    >>> tool_call_failed([{"type": "image"}, {"type": "text", "text": "Error: never with an image"}])
    False
    """
    return not returned_image(result) and message_text(result).lstrip().startswith(ERROR_MARKERS)


def returned_image(result: Any) -> bool:
    """A tool result that holds an image (what the tool success rate counts).

    >>> returned_image([{"type": "image"}, {"type": "text", "text": "crop"}]), returned_image("Error: x")
    (True, False)
    """
    return isinstance(result, list) and any(isinstance(b, dict) and b.get("type") == "image" for b in result)


def is_error_observation(message: dict) -> bool:
    """A tool message whose result failed (``tool_call_failed``).

    >>> is_error_observation({"role": "tool", "content": '{"error": "bad box"}'})
    True
    >>> is_error_observation({"role": "tool", "content": [{"type": "image"}]})
    False
    """
    return tool_call_failed(message.get("content"))


def count_tool_results(completion: Any) -> int:
    """Successful tool results in a conversational completion (0 for a plain string).

    >>> count_tool_results([
    ...     {"role": "assistant", "content": "<tool_call>crop</tool_call>"},
    ...     {"role": "tool", "content": [{"type": "image"}, {"type": "text", "text": "cropped"}]},
    ...     {"role": "tool", "content": "Error: box outside image"},
    ...     {"role": "assistant", "content": "<answer>B</answer>"}])
    1
    """
    if not isinstance(completion, (list, tuple)):
        return 0
    return sum(1 for m in completion
               if isinstance(m, dict) and m.get("role") == "tool" and not is_error_observation(m))


def tool_use_bonus(completion: Any, correct: bool, cap: int = 1) -> float:
    """``min(results, cap) / cap`` when the answer is correct, else 0.0; in [0, 1].

    >>> msgs = [{"role": "tool", "content": "ok"}, {"role": "tool", "content": "ok"}]
    >>> tool_use_bonus(msgs, True), tool_use_bonus(msgs, False), tool_use_bonus(msgs, True, cap=4)
    (1.0, 0.0, 0.5)
    """
    if not correct:
        return 0.0
    cap = max(1, int(cap))
    return min(count_tool_results(completion), cap) / cap


def overlong_penalty(length: int, max_length: int = 4096, buffer: int = 1024) -> float:
    """DAPO soft overlong penalty in [-1, 0].

    >>> overlong_penalty(3000), overlong_penalty(3584), overlong_penalty(5000)
    (0.0, -0.5, -1.0)
    """
    buffer = max(1, min(int(buffer), int(max_length)))
    start = max_length - buffer
    if length <= start:
        return 0.0
    if length > max_length:
        return -1.0
    return (start - length) / buffer
