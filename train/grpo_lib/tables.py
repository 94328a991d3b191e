"""The completions table: conversations as text, the trajectory's images as one picture per row.

TRL's own W&B table puts conversations (lists of dicts with PIL images inside) into cells, which
wandb rejects for image prompts (``Data row contained incompatible types``). Here every cell has
one fixed type: text for the prompt and the completion (images shown as ``<image>``, tool calls
as the model wrote them), floats for rewards, and one ``wandb.Image`` per row: a contact sheet of
the prompt's images followed by the images the tools returned. The same rows (without pixels)
are written as JSONL under ``output_dir/completions/`` so runs without W&B keep them too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from PIL import Image

from lookcloser.rewards._text import message_text
from lookcloser.train.grpo_lib.tools import INVALID_TOOL, tool_call_text

THUMB = 128  # pixels per contact-sheet cell


def content_text(content: Any) -> str:
    """Text of a message's content as a reader sees it: image blocks become ``<image>``."""
    return message_text(content, image="<image>", sep="")


def conversation_text(messages: Any) -> str:
    """A conversation as readable text, one ``[role]`` header per message.

    >>> print(conversation_text([{"role": "assistant", "reasoning_content": "crop it", "content": "",
    ...     "tool_calls": [{"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0}}}]},
    ...     {"role": "tool", "name": "crop", "content": [{"type": "image"}, {"type": "text", "text": "Image 1"}]}]))
    [assistant] <think>crop it</think><tool_call>{"name": "crop", "arguments": {"image_index": 0}}</tool_call>
    [tool crop] <image>Image 1
    """
    if isinstance(messages, str):
        return messages
    lines = []
    for message in messages or []:
        if not isinstance(message, dict):
            lines.append(str(message))
            continue
        role = message.get("role", "?")
        header = f"[{role} {message['name']}]" if role == "tool" and message.get("name") else f"[{role}]"
        text = content_text(message.get("content"))
        if message.get("reasoning_content"):
            text = f"<think>{message['reasoning_content']}</think>" + text
        text += "".join(tool_call_text(call) for call in message.get("tool_calls") or []  # malformed: already in text
                        if (call.get("function") or {}).get("name") != INVALID_TOOL)
        lines.append(f"{header} {text}")
    return "\n".join(lines)


def contact_sheet(images: list, thumb: int = THUMB, columns: int = 4) -> Image.Image | None:
    """The images of one trajectory side by side (row-major), each fit into a ``thumb`` square."""
    images = [img for img in images or [] if isinstance(img, Image.Image)]
    if not images:
        return None
    columns = min(columns, len(images))
    rows = math.ceil(len(images) / columns)
    sheet = Image.new("RGB", (columns * thumb, rows * thumb), (255, 255, 255))
    for i, img in enumerate(images):
        cell = img.convert("RGB")
        cell.thumbnail((thumb, thumb))
        sheet.paste(cell, ((i % columns) * thumb, (i // columns) * thumb))
    return sheet


def table_rows(logs: dict, step: int) -> list[dict]:
    """Rows of the completions table from ``GRPOTrainer._logs`` (text, rewards, advantage, images)."""
    prompts, completions = list(logs["prompt"]), list(logs["completion"])
    rewards = {name: list(values) for name, values in logs["rewards"].items()}
    advantages = list(logs["advantages"])
    images = list(logs.get("images") or [])
    rows = []
    for i, (prompt, completion) in enumerate(zip(prompts, completions)):
        row = {"step": step, "prompt": conversation_text(prompt), "completion": conversation_text(completion)}
        for name, values in rewards.items():
            value = values[i] if i < len(values) else None
            row[f"reward/{name}"] = None if value is None or (isinstance(value, float) and math.isnan(value)) \
                else float(value)
        row["advantage"] = float(advantages[i]) if i < len(advantages) else None
        row_images = images[i] if i < len(images) and images[i] else []
        row["num_images"] = len(row_images)
        row["_images"] = row_images
        rows.append(row)
    return rows


def write_jsonl(rows: list[dict], output_dir: str | Path, step: int) -> Path:
    path = Path(output_dir) / "completions" / f"completions_{step:05d}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps({k: v for k, v in row.items() if k != "_images"}, ensure_ascii=False) + "\n")
    return path


def wandb_table(rows: list[dict]):
    """A ``wandb.Table`` with one type per column; the image column holds a contact sheet or None."""
    import wandb

    columns = [k for k in rows[0] if k != "_images"] + ["images"]
    table = wandb.Table(columns=columns)
    for row in rows:
        sheet = contact_sheet(row["_images"])
        table.add_data(*[row[k] for k in columns[:-1]], wandb.Image(sheet) if sheet is not None else None)
    return table
