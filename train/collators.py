"""The SFT collator for multi-turn tool trajectories (``data_builders/tool_sft.py`` records).

TRL's ``DataCollatorForVisionLanguageModeling`` fills image placeholders of user/assistant
messages only and drops ``tools``; ``ToolTrajectoryCollator`` fills the tool messages' images
too and passes the schemas to the chat template. On plain records it equals TRL's.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling


def attach_images(messages: list[dict], images: list) -> list[dict]:
    """Put ``images`` into the messages' image placeholders in order, tool messages included.

    >>> msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "?"}]},
    ...         {"role": "tool", "name": "crop", "content": [{"type": "image"}]},
    ...         {"role": "assistant", "content": "done"}]
    >>> out = attach_images(msgs, ["img0", "img1"])
    >>> out[0]["content"][0]["image"], out[1]["content"][0]["image"], out[2]["content"]
    ('img0', 'img1', [{'type': 'text', 'text': 'done'}])

    Like TRL, plain-string messages without any placeholder get the images before the first user text:

    >>> attach_images([{"role": "user", "content": "What is it?"}], ["img0"])[0]["content"]
    [{'type': 'image', 'image': 'img0'}, {'type': 'text', 'text': 'What is it?'}]
    """
    has_placeholders = any(isinstance(m.get("content"), list) and any(b.get("type") == "image" for b in m["content"])
                           for m in messages)
    if images and not has_placeholders:
        first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
        if first_user is not None and isinstance(messages[first_user].get("content"), str):
            messages = list(messages)
            text = messages[first_user]["content"]
            messages[first_user] = {**messages[first_user], "content": [*({"type": "image"} for _ in images),
                                                                         {"type": "text", "text": text}]}
    out, index = [], 0
    for message in messages:
        message = copy.copy(message)
        content = message.get("content")
        if isinstance(content, str):
            message["content"] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            blocks = []
            for block in content:
                if block.get("type") == "image" and block.get("image") is None:
                    if index >= len(images):
                        raise ValueError(f"the messages hold more image placeholders than the {len(images)} images")
                    block = {"type": "image", "image": images[index]}
                    index += 1
                elif block.get("type") == "text":
                    block = {"type": "text", "text": block.get("text") or ""}
                blocks.append(block)
            message["content"] = blocks
        out.append(message)
    if index != len(images):
        raise ValueError(f"{len(images)} images but {index} image placeholders in the messages")
    return out


@dataclass
class ToolTrajectoryCollator(DataCollatorForVisionLanguageModeling):
    """TRL's vision collator for multi-turn tool trajectories (images in tool messages, tool schemas).

    ``tools``: schemas for every example; by default each example's ``tools`` column (JSON) is used,
    which needs ``remove_unused_columns=False`` (``train/sft.py`` sets it).
    """

    tools: list[dict] | None = None

    def _collate_language_modeling(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        if "messages" not in examples[0]:
            return super()._collate_language_modeling(examples)
        messages = [attach_images(ex["messages"], list(ex.get("images") or [])) for ex in examples]
        tools = self.tools
        if tools is None and examples[0].get("tools"):
            raw = examples[0]["tools"]
            tools = json.loads(raw) if isinstance(raw, str) else raw
        output = self.processor.apply_chat_template(
            messages,
            tools=tools,
            chat_template=self.chat_template,
            tokenize=True,
            return_dict=True,
            return_tensors=self.return_tensors,
            return_assistant_tokens_mask=self.assistant_only_loss,
            processor_kwargs={"padding": True, "padding_side": "right", "pad_to_multiple_of": self.pad_to_multiple_of,
                              "truncation": self.max_length is not None, "max_length": self.max_length,
                              "add_special_tokens": False},
        )
        labels = output["input_ids"].clone()
        labels[output["attention_mask"] == 0] = -100
        if self.assistant_only_loss:
            labels[output.pop("assistant_masks") == 0] = -100
        output["labels"] = labels
        return output
