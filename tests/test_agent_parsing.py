"""``parse_assistant_text`` with its response template compiled once gives what TRL's parser gives
with the template as a dict (compiled on every call), on well-formed and malformed replies."""

from __future__ import annotations

import json

import pytest

from lookcloser.agent.environments import ImageToolEnv, tool_schemas
from lookcloser.agent.parsing import ASSISTANT_HEADER, _TextTokenizer, parse_assistant_text


def call(name: str, **arguments) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


REPLIES = [
    "<answer>B</answer>",
    "",
    "   \n",
    "Plain text, no answer.<|im_end|>",
    "Ends with the other special token<|endoftext|>",
    "<think>\nsmall, look closer\n</think>\n\nOK.\n" + call("crop", image_index=0, box=[0, 0, 0.5, 0.5]),
    "Two calls.\n" + call("crop", image_index=0, box=[1, 2, 3, 4]) + "\n" + call("view_image", image_index=1),
    call("zoom", image_index="1", box=["0", "0", "10", "10"], factor="2.5"),  # strings: typed by the schema
    call("rotate", image_index=0, angle="90") + "<|im_end|>",
    call("paint", colour="red"),  # unknown tool: parsed, the env answers it
    '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0}\n</tool_call>',  # bad JSON
    '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0',  # cut off
    "<tool_call>[1, 2, 3]</tool_call>",  # JSON, but not a call
    '<tool_call>{"arguments": {}}</tool_call>',  # no name
    "<think>unclosed reasoning, then nothing",
    "Ünïcödé ✓ <answer>天</answer>",
    "text </tool_call> stray close, then " + call("flip", image_index=0, direction="horizontal"),
]


def straightforward(text: str, tools: list | None) -> dict:
    """TRL's ``parse_response`` on a text tokenizer holding the template as the dict TRL ships."""
    from trl.chat_template_utils import parse_response, qwen3_template

    tokenizer = _TextTokenizer.__new__(_TextTokenizer)
    tokenizer.response_template = qwen3_template  # a dict: transformers compiles it on this call
    message = parse_response(tokenizer, text, prefix=ASSISTANT_HEADER, tools=tools)
    message.setdefault("role", "assistant")
    return message


@pytest.mark.parametrize("with_tools", [False, True])
def test_compiled_template_parses_every_reply_like_the_dict(with_tools):
    tools = tool_schemas(ImageToolEnv) if with_tools else None
    results = [parse_assistant_text(text, tools=tools) for text in REPLIES]
    assert results == [straightforward(text, tools) for text in REPLIES]
    assert sum(bool(r.get("tool_calls")) for r in results) == 6  # the cases exercise both branches
    assert results[7]["tool_calls"][0]["function"]["arguments"]["factor"] == (2.5 if with_tools else "2.5")
    assert results[10]["content"].startswith("<tool_call>")  # malformed: kept as text (TRL's fallback)


def test_parses_share_no_state():
    first = parse_assistant_text(call("crop", image_index=0, box=[0, 0, 1, 1]))
    first["tool_calls"].append("changed")
    first["role"] = "changed"
    assert parse_assistant_text(call("crop", image_index=0, box=[0, 0, 1, 1])) == straightforward(
        call("crop", image_index=0, box=[0, 0, 1, 1]), None)


def test_replies_without_any_mark_skip_trls_parser_with_its_result(monkeypatch):
    """The fast path (no ``<think>``, ``<tool_call>`` or special token: all content) gives TRL's
    own result on random replies built from the pieces that could tell them apart."""
    import random

    import trl.chat_template_utils

    pieces = [" ", "\n", "\t", "\u2003", "\r\n", "a", "Ünï", "天", "<", ">", "/", "|", "think", "</think>",
              "tool_call", "</tool_call>", "<answer>", "</answer>", "im_end", "<|im_start|>assistant\n", "{", "}"]
    rng = random.Random(0)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    fast = [t for t in texts if not any(m in t for m in ("<think>", "<tool_call>", "<|im_start|>", "<|im_end|>",
                                                          "<|endoftext|>"))]
    assert len(fast) > 2000 and any(t != t.strip() for t in fast) and any("</think>" in t for t in fast)
    expected = [straightforward(t, None) for t in fast]
    called = []
    monkeypatch.setattr(trl.chat_template_utils, "parse_response", lambda *a, **k: called.append(a))
    assert [parse_assistant_text(t) for t in fast] == expected
    assert not called  # none of them went through the parser
