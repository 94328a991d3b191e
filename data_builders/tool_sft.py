"""The records of synthetic tool tasks: GRPO prompts, and the messages of oracle trajectories.

An oracle trajectory (``agent/oracle.py`` renders it with the agent's own tools) is what the agent
would produce with the right tool calls, in TRL's conversational tool-calling format::

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
messages only and drops ``tools``; ``train/collators.py``'s ``ToolTrajectoryCollator`` fills the
tool messages' images too and passes the schemas to the chat template. Train these records with it.
"""

from __future__ import annotations

import json

from lookcloser.data_builders.synthetic import SyntheticItem, ToolStep

DATA_SOURCE = "tir_bench"
REWARD_KEYS = ("id", "task", "answer", "prompt", "image_1", "image_2", "meta_data")


def user_message(n_images: int, text: str) -> dict:
    """The question turn: image blocks first (TIR-Bench shows the images, then the prompt).

    >>> user_message(2, "Where do they differ?")["content"][1:]
    [{'type': 'image'}, {'type': 'text', 'text': 'Where do they differ?'}]
    """
    return {"role": "user", "content": [*({"type": "image"} for _ in range(n_images)), {"type": "text", "text": text}]}


def call_message(step: ToolStep) -> dict:
    """An assistant turn that calls tools: its thinking, then the calls in TRL's format.

    >>> call_message(ToolStep("Crop it.", [("crop", {"box": [0, 0, 1, 1]})]))["tool_calls"][0]["function"]["name"]
    'crop'
    """
    calls = [{"type": "function", "function": {"name": name, "arguments": args}} for name, args in step.calls]
    return {"role": "assistant", "content": f"<think>{step.think}</think>", "tool_calls": calls}


def final_message(think: str, answer: str) -> dict:
    """The closing assistant turn.

    >>> final_message("Patch 3 differs.", "3, 7")["content"]
    '<think>Patch 3 differs.</think><answer>3, 7</answer>'
    """
    return {"role": "assistant", "content": f"<think>{think}</think><answer>{answer}</answer>"}


def look_record(item: SyntheticItem, trajectory: dict) -> dict | None:
    """The "look" warm-up record: the item's ``look_prompt`` asked of the oracle's last tool image
    alone, answered as the trajectory's final turn; None for items without one.

    A tiny model that has never read a tool image learns the call but not the reading (the crop's
    colour stays at chance in the trajectory); reading first, then calling, learns both (docs/grpo.md).
    """
    if item.look_prompt is None:
        return None
    return {"messages": [user_message(1, item.look_prompt), trajectory["messages"][-1]],
            "images": [trajectory["images"][-1]], "tools": "", "task": trajectory["task"], "id": trajectory["id"]}


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


def grpo_features(extra_columns: tuple[str, ...] = ()):
    """The GRPO rows' features; ``extra_columns``: more string columns (an environment's reset columns)."""
    from datasets import Features, Image, List, Value

    block = {"type": Value("string"), "text": Value("string")}
    columns = ("data_source", "reward_info", "task", *extra_columns)
    return Features({"prompt": List({"role": Value("string"), "content": List(block)}), "images": List(Image()),
                     **{name: Value("string") for name in columns}})
