"""Oracle tool-use trajectories (multi-turn SFT) and GRPO prompts from synthetic items.

The trajectory is what the agent would produce with the right tool calls, in TRL's
conversational tool-calling format::

    user       [image, (image,) question]
    assistant  "<think>...</think>" + tool_calls [{"type": "function", "function": {"name", "arguments"}}]
    tool       [image, "Image 1: crop of image 0 at [...] ..."]        (one message per call)
    ...
    assistant  "<think>...</think><answer>X</answer>"

Tool results are rendered by the agent's own ``ImageToolEnv`` (the tools GRPO trains with), so
the cold start sees exactly the pictures and texts it will see later. ``images`` lists the input
images, then the tool-result images in order of appearance; ``tools`` holds the JSON schemas of
the environment's tools, as TRL renders them into the system prompt.

TRL's ``DataCollatorForVisionLanguageModeling`` fills image placeholders of user/assistant
messages only and drops ``tools``; ``ToolTrajectoryCollator`` fills the tool messages' images
too and passes the schemas to the chat template. Train these records with it.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling

from lookcloser.data_builders.synthetic import SyntheticItem

DATA_SOURCE = "tir_bench"
REWARD_KEYS = ("id", "task", "answer", "prompt", "image_1", "image_2", "meta_data")


def tool_schemas(environment: str = "tir_bench") -> list[dict]:
    """JSON schemas of an environment's tools (``agent.environments.ENVIRONMENTS``), exactly as TRL's
    GRPO and ``agent.loop`` show them to the model."""
    from lookcloser.agent.environments import ENVIRONMENTS
    from lookcloser.agent.environments import tool_schemas as env_tool_schemas

    return env_tool_schemas(ENVIRONMENTS[environment])


def user_message(n_images: int, text: str) -> dict:
    """The question turn: image blocks first (TIR-Bench shows the images, then the prompt).

    >>> user_message(2, "Where do they differ?")["content"][1:]
    [{'type': 'image'}, {'type': 'text', 'text': 'Where do they differ?'}]
    """
    return {"role": "user", "content": [*({"type": "image"} for _ in range(n_images)), {"type": "text", "text": text}]}


def final_message(think: str, answer: str) -> dict:
    """The closing assistant turn.

    >>> final_message("Patch 3 differs.", "3, 7")["content"]
    '<think>Patch 3 differs.</think><answer>3, 7</answer>'
    """
    return {"role": "assistant", "content": f"<think>{think}</think><answer>{answer}</answer>"}


def oracle_trajectory(item: SyntheticItem, out_dir: str | Path, environment: str = "tir_bench") -> dict:
    """Run the oracle's tool calls through the tool environment; return one SFT record.

    Tool-result images are saved as ``oracle/{id:06d}_{k}.png`` under ``out_dir``.
    """
    from lookcloser.agent.environments import ENVIRONMENTS
    from lookcloser.agent.toolkit import call_failed

    out_dir = Path(out_dir)
    env = ENVIRONMENTS[environment]()
    observation = env.reset(images=[str(p) for p in item.image_paths])
    messages = [user_message(len(item.image_paths), item.record["prompt"])]
    if observation:
        # TRL's GRPO appends the environment's reset observation (the image sizes) to the prompt as
        # a text block; the cold-start SFT prompt must read exactly the same.
        messages[0]["content"].append({"type": "text", "text": observation})
    images = [str(p) for p in item.image_paths]
    for step in item.steps:
        calls = [{"type": "function", "function": {"name": name, "arguments": args}} for name, args in step.calls]
        messages.append({"role": "assistant", "content": f"<think>{step.think}</think>", "tool_calls": calls})
        for name, args in step.calls:
            result = env._call_tool(name, args)
            if call_failed(result):  # the oracle itself is wrong
                raise RuntimeError(
                    f"oracle call {name}({args}) failed on item {item.record['id']}: {result}")
            path = out_dir / "oracle" / f"{item.record['id']:06d}_{len(images) - len(item.image_paths) + 1}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            blocks = []
            for block in result:
                if block["type"] == "image":
                    block["image"].save(path)
                    images.append(str(path))
                    blocks.append({"type": "image"})
                else:
                    blocks.append({"type": "text", "text": block["text"]})
            messages.append({"role": "tool", "name": name, "content": blocks})
    messages.append(final_message(item.final_think, item.answer_text))
    return {"messages": messages, "images": images, "task": item.record["task"], "id": str(item.record["id"])}


def reward_info(record: dict) -> str:
    """The TIR-Bench item the reward scores against, as a JSON string.

    >>> json.loads(reward_info({"id": 1, "task": "ocr", "answer": "AB3", "prompt": "?", "image_1": "a.png",
    ...                         "image_2": None, "meta_data": {}}))["answer"]
    'AB3'
    """
    return json.dumps({key: record.get(key) for key in REWARD_KEYS}, ensure_ascii=False)


def grpo_prompt(item: SyntheticItem) -> dict:
    """One GRPO row: conversational prompt, images, and what ``rewards.tir_bench`` needs to score it."""
    record = item.record
    return {"prompt": [user_message(len(item.image_paths), record["prompt"])],
            "images": [str(p) for p in item.image_paths], "data_source": DATA_SOURCE,
            "reward_info": reward_info(record), "task": record["task"]}


def sft_features():
    from datasets import Features, Image, Json, List, Value

    # Json keeps each message exactly as written: tool-call arguments differ per tool, which an
    # Arrow struct would pad with nulls (and the chat template would then render them).
    return Features({"messages": List(Json()), "images": List(Image()), "tools": Value("string"),
                     "task": Value("string"), "id": Value("string")})


def grpo_features():
    from datasets import Features, Image, List, Value

    block = {"type": Value("string"), "text": Value("string")}
    return Features({"prompt": List({"role": Value("string"), "content": List(block)}), "images": List(Image()),
                     "data_source": Value("string"), "reward_info": Value("string"), "task": Value("string")})


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
