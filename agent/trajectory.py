"""``Trajectory``: one finished episode, and its JSON form with images as PNG files beside it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

STOP_REASONS = ("answer", "max_turns", "max_images", "error")


@dataclass
class Trajectory:
    """A finished episode.

    Attributes:
        messages: The conversation: system/user prompt, assistant turns (``content``, optional
            ``reasoning_content`` and ``tool_calls``) and ``tool`` messages (content blocks).
        final_response: The content of the last assistant turn (the answer when
            ``stop_reason == "answer"``).
        stop_reason: "answer" (a turn without a tool call), "max_turns", "max_images" or "error".
        num_turns: Assistant turns generated.
        tool_calls: Tool calls made (counted by the environment, malformed ones included).
        tool_errors: Calls answered with an ``Error:`` observation (``agent.toolkit.call_failed``).
        tool_images: Calls whose result holds an image (a crop that worked): the tool success
            rate is ``tool_images / tool_calls``.
        images: Every image of the conversation in order: inputs first, then tool results.
        truncated: The last turn hit the per-turn token cap.
        error: What went wrong when ``stop_reason == "error"``.
        example_index: Position of the example in the list given to ``run_episodes``.
    """

    messages: list[dict]
    final_response: str
    stop_reason: str
    num_turns: int
    tool_calls: int
    tool_errors: int
    images: list[Image.Image] = field(default_factory=list)
    truncated: bool = False
    error: str | None = None
    example_index: int | None = None
    tool_images: int = 0

    def to_json(self, directory: str | Path, name: str = "trajectory") -> Path:
        """Write ``{name}.json`` into ``directory`` with images as ``{name}-img{k}.png`` next to it."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        files: dict[int, str] = {}

        def ref(image: Image.Image) -> str:
            if id(image) not in files:
                files[id(image)] = f"{name}-img{len(files):03d}.png"
                image.save(directory / files[id(image)])
            return files[id(image)]

        image_files = [ref(img) for img in self.images]
        messages = [_message_to_json(m, ref) for m in self.messages]
        data = {
            "messages": messages, "final_response": self.final_response, "stop_reason": self.stop_reason,
            "num_turns": self.num_turns, "tool_calls": self.tool_calls, "tool_errors": self.tool_errors,
            "images": image_files, "truncated": self.truncated, "error": self.error,
            "example_index": self.example_index,
        }
        path = directory / f"{name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        tmp.replace(path)
        return path


def _message_to_json(message: dict, ref) -> dict:
    out = dict(message)
    if isinstance(message.get("content"), list):
        out["content"] = [
            {**block, "image": ref(block["image"])} if isinstance(block.get("image"), Image.Image) else block
            for block in message["content"]
        ]
    return out
