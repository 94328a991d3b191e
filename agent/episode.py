"""The state the loop and the policies share: ``Episode``, ``Turn`` and the ``Policy`` protocol; a row's
question text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from PIL import Image

# A row without a ``prompt`` asks its question in the first of these fields.
_QUESTION_KEYS = ("question", "query", "problem", "text")


def row_prompt(example: dict):
    """A row's prompt: its ``prompt`` (messages or a string), or else the first of its question fields that is
    a string; None when it has neither.

    >>> row_prompt({"query": "Where?", "text": 3}), row_prompt({"prompt": []}), row_prompt({})
    ('Where?', [], None)
    """
    prompt = example.get("prompt")
    if prompt is None:
        prompt = next((example[k] for k in _QUESTION_KEYS if isinstance(example.get(k), str)), None)
    return prompt


def question_text(example: dict) -> str:
    """The episode's question as the code reads it (``question``): the text of the row's last user turn (its
    ``prompt``, messages or a string), or else its question field; "" when it has none.

    >>> question_text({"prompt": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which?"}]}]})
    'Which?'
    >>> question_text({"question": "How many?"}), question_text({})
    ('How many?', '')
    """
    prompt = row_prompt(example)
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    users = [m for m in prompt if m.get("role") == "user"]
    content = users[-1].get("content", "") if users else ""
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


@dataclass
class Turn:
    """One generated assistant turn.

    Attributes:
        message: The parsed assistant message (``content``, maybe ``reasoning_content`` and ``tool_calls``).
        truncated: Generation stopped at the token cap instead of an end-of-turn token.
        error: Set when this episode's generation failed (the episode then stops with "error").
    """

    message: dict
    truncated: bool = False
    error: str | None = None


@dataclass
class Episode:
    """A running episode: its environment, conversation and budgets; ``state`` belongs to the policy."""

    index: int
    env: Any
    messages: list[dict]
    tools: list[dict]
    images: list[Image.Image] = field(default_factory=list)
    num_turns: int = 0
    stop_reason: str | None = None
    truncated: bool = False
    error: str | None = None
    state: dict = field(default_factory=dict)


class Policy(Protocol):
    """A model the loop can drive.

    ``batched`` policies (a local model) get all live episodes in one ``generate`` call per turn.
    The others (an endpoint) have ``async def agenerate(episode, max_new_tokens) -> Turn`` and
    ``async def aclose()`` instead, and are played as coroutines on an event loop
    (``agent.loop.play_all``).
    """

    batched: bool

    def start(self, episode: Episode) -> None:
        """Prepare an episode whose ``messages`` hold the prompt."""

    def generate(self, episodes: list[Episode], max_new_tokens: int) -> list[Turn]:
        """One assistant turn for each episode, in order."""

    def extend(self, episode: Episode, tool_messages: list[dict]) -> None:
        """Take note of tool messages appended to an episode after its last turn."""


def image_blocks_in(messages: list[dict]) -> list[Image.Image]:
    """Images of a list of messages, in order of appearance.

    >>> img = Image.new("RGB", (2, 2))
    >>> len(image_blocks_in([{"role": "tool", "content": [{"type": "image", "image": img}, {"type": "text"}]}]))
    1
    """
    found = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            found += [b["image"] for b in content if isinstance(b, dict) and isinstance(b.get("image"), Image.Image)]
    return found


def as_blocks(message: dict) -> dict:
    """The message with string content as a text block (VLM processors want content lists).

    >>> as_blocks({"role": "user", "content": "hi"})
    {'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}
    """
    content = message.get("content")
    if isinstance(content, str) or content is None:
        return {**message, "content": [{"type": "text", "text": content or ""}]}
    return message
