"""The GRPO additions one by one, on real parts: the tiny processor, the image tools, real tensors."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image

from lookcloser.train.grpo_lib.filtering import (
    concat_batches,
    constant_groups,
    loss_tokens,
    mask_rows,
    select_rows,
)
from lookcloser.train.grpo_lib.tables import contact_sheet, conversation_text, table_rows
from lookcloser.train.grpo_lib.tools import (
    INVALID_TOOL,
    RolloutTools,
    SafeToolDict,
    normalize_tool_calls,
)
from lookcloser.train.grpo_lib.truncation import PromptTruncator, as_placeholders

PAD = 99


# -- group filtering --

def test_constant_groups_ignore_masked_rows():
    nan = float("nan")
    rewards = torch.tensor([0.0, 0.0, 0.0, 1.0, 0.5, 0.5, nan, 1.0, nan, nan, 1.0, 0.0])
    assert constant_groups(rewards, 2).tolist() == [True, False, True, True, True, False]
    assert constant_groups(rewards, 4).tolist() == [False, False, False]


def _batch() -> dict:
    """A scored batch as TRL builds it: left-padded prompts, right-padded completions, Qwen image fields."""
    prompts = [[5, 6, 7], [8], [9, 10, 11, 12, 13], [14, 15]]
    completions = [[20, 21], [22, 23, 24, 25], [26], [27, 28, 29]]
    num_images = [1, 0, 2, 1]
    P, C = 5, 4
    prompt_ids = torch.full((4, P), PAD)
    prompt_mask = torch.zeros(4, P, dtype=torch.long)
    completion_ids = torch.full((4, C), PAD)
    completion_mask = torch.zeros(4, C, dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompts, completions)):
        prompt_ids[i, P - len(p):] = torch.tensor(p)
        prompt_mask[i, P - len(p):] = 1
        completion_ids[i, :len(c)] = torch.tensor(c)
        completion_mask[i, :len(c)] = 1
    grids = torch.tensor([[1, 2, 2], [1, 2, 4], [1, 2, 2], [1, 4, 2]])  # one per image, rows = t*h*w
    pixel_values = torch.arange(int(grids.prod(-1).sum()) * 3, dtype=torch.float32).view(-1, 3)
    mm = torch.cat([prompt_ids == 7, torch.zeros(4, C, dtype=torch.bool)], dim=1).long()  # pretend token 7 is an image
    return {"prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
            "completion_mask": completion_mask, "advantages": torch.tensor([1.0, -1.0, 0.5, -0.5]),
            "pixel_values": pixel_values, "image_grid_thw": grids, "num_images": num_images,
            "mm_token_type_ids": mm, "tool_mask": torch.ones(4, C, dtype=torch.long),
            "old_per_token_logps": completion_ids.float() / 10, "num_items_in_batch": torch.tensor(10)}


def _row(batch: dict, i: int) -> tuple:
    """Everything that belongs to row i, padding stripped (comparable across re-paddings)."""
    p = batch["prompt_ids"][i][batch["prompt_mask"][i].bool()].tolist()
    c = batch["completion_ids"][i][batch["completion_mask"][i].bool()].tolist()
    logps = batch["old_per_token_logps"][i][batch["completion_mask"][i].bool()].tolist()
    width = batch["prompt_ids"].size(1)
    mm_prompt = batch["mm_token_type_ids"][i, :width][batch["prompt_mask"][i].bool()].tolist()
    first = sum(batch["num_images"][:i])
    grids = batch["image_grid_thw"][first:first + batch["num_images"][i]]
    start = int(batch["image_grid_thw"][:first].prod(-1).sum())
    pixels = batch["pixel_values"][start:start + int(grids.prod(-1).sum())]
    return p, c, logps, mm_prompt, grids.tolist(), pixels.tolist(), float(batch["advantages"][i])


def test_select_and_concat_rebuild_every_row_exactly():
    batch = _batch()
    merged = concat_batches([select_rows(batch, [2, 0]), select_rows(batch, [3, 1])], PAD)
    assert [_row(merged, i) for i in range(4)] == [_row(batch, i) for i in (2, 0, 3, 1)]
    assert merged["prompt_ids"].size(1) == 5 and merged["completion_ids"].size(1) == 4
    assert merged["mm_token_type_ids"].shape == (4, 9)


def test_concat_trims_padding_to_the_widest_kept_row():
    batch = _batch()
    merged = concat_batches([select_rows(batch, [0]), select_rows(batch, [2])], PAD)  # no image-less row
    assert merged["prompt_ids"].size(1) == 5 and merged["completion_ids"].size(1) == 2
    assert [_row(merged, i) for i in range(2)] == [_row(batch, i) for i in (0, 2)]
    text_only = {k: v for k, v in batch.items() if k not in ("pixel_values", "image_grid_thw", "num_images",
                                                             "mm_token_type_ids")}
    mixed = concat_batches([select_rows(batch, [0]), select_rows(text_only, [1])], PAD)
    assert mixed["num_images"] == [1, 0] and mixed["image_grid_thw"].tolist() == [[1, 2, 2]]
    assert mixed["mm_token_type_ids"][1].sum() == 0


def test_mask_rows_is_a_loss_mask_only():
    batch = _batch()
    masked = mask_rows(batch, torch.tensor([True, False, True, False]))
    assert torch.equal(masked["completion_mask"], batch["completion_mask"])  # attention unchanged
    assert loss_tokens(masked) == 2 + 1 and loss_tokens(batch) == 10
    assert masked["advantages"].tolist() == [1.0, 0.0, 0.5, 0.0]


# -- tool-call safety and the image budget --

def _tool_dict(max_images=None, images=1):
    from lookcloser.agent.image_env import ImageToolEnv

    env = ImageToolEnv()
    env.reset(images=[Image.new("RGB", (200, 100), (200, 30, 30))])
    tools = {name: getattr(env, name) for name in ("crop", "zoom", "view_image")}
    state = RolloutTools(env, images=images, max_images=max_images)
    return SafeToolDict(tools, state, sorted(tools)), state, env


def test_malformed_calls_become_invalid_tool_calls():
    unparsed = normalize_tool_calls({"role": "assistant", "content": 'x <tool_call>{"name": "crop"</tool_call>'})
    assert unparsed["tool_calls"][0]["function"]["name"] == INVALID_TOOL
    bad_args = normalize_tool_calls({"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "crop", "arguments": "0,0,1,1"}},
        {"type": "function", "function": {"name": "zoom", "arguments": {"image_index": 0}}}]})
    names = [c["function"]["name"] for c in bad_args["tool_calls"]]
    assert names == [INVALID_TOOL, "zoom"]
    plain = {"role": "assistant", "content": "<answer>B</answer>"}
    assert normalize_tool_calls(dict(plain)) == plain


def test_safe_tool_dict_answers_every_name_and_counts():
    tools, state, env = _tool_dict()
    assert "anything" in tools
    ok = tools["crop"](image_index=0, box=[0, 0, 0.5, 1])
    assert ok[0]["type"] == "image" and ok[0]["image"].size[0] > 0
    unknown = tools["segment"](mask=1)
    invalid = tools[INVALID_TOOL](reason="the arguments of crop must be a JSON object")
    wrong = tools["crop"](image_index=7, box=[0, 0, 1, 1])
    assert unknown.startswith("Error: unknown tool 'segment'") and "crop" in unknown
    assert invalid == "Error: the arguments of crop must be a JSON object"
    assert wrong.startswith("Error:") and "image_index 7" in wrong
    assert (state.calls, state.errors, state.images) == (4, 3, 2)
    assert (env.tool_calls, env.tool_errors) == (4, 3)  # the environment's own counters agree
    assert state.by_name == {"crop": 2}


def test_special_tokens_written_by_the_model_never_come_back_as_tokens(processor):
    message = normalize_tool_calls({"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "<|image_pad|>", "arguments": {}}}]})
    assert message["tool_calls"][0]["function"]["name"] == INVALID_TOOL
    _, state, env = _tool_dict()  # the real flip tool echoes a bad direction in its error
    answer = SafeToolDict({"flip": env.flip}, state, ["flip"])["flip"](image_index=0, direction="<|image_pad|>")
    assert answer.startswith("Error:") and "image_pad" in answer
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    assert image_pad not in processor.tokenizer(answer)["input_ids"]


def test_image_budget_refuses_tool_images_past_it():
    tools, state, _ = _tool_dict(max_images=2, images=1)
    assert tools["zoom"](image_index=0, box=[0, 0, 0.5, 0.5])[0]["type"] == "image"
    refused = tools["view_image"](image_index=0)
    assert refused.startswith("Error: the image budget of 2 images") and state.refused == 1
    assert state.images == 2


def test_a_tool_that_raises_becomes_an_error_observation():
    def broken(x: int) -> str:
        raise RuntimeError("disk full")

    state = RolloutTools()
    tools = SafeToolDict({"broken": broken}, state, ["broken"])
    assert tools["broken"](x=1) == "Error: broken failed: RuntimeError: disk full"
    assert (state.calls, state.errors) == (1, 1)


def test_rewards_read_the_reasoning_trls_parser_moved_out():
    from lookcloser.rewards import REGISTRY

    parsed = [{"role": "assistant", "reasoning_content": "zoom in", "content": "<answer>B</answer>"}]
    assert REGISTRY["format"]([parsed]) == [1.0]  # what TRL's Qwen3 parser hands to rewards
    assert parsed[0]["content"] == "<answer>B</answer>"  # the logged completion is left alone
    assert REGISTRY["format"]([[{"role": "assistant", "content": "<answer>B</answer>"}]]) == [0.0]


# -- prompt truncation --

@pytest.fixture(scope="module")
def processor(tiny_model_dir):
    from lookcloser.agent.models import load_processor

    return load_processor(str(tiny_model_dir))


def _prompt(text: str) -> list[dict]:
    red, blue = Image.new("RGB", (64, 64), (255, 0, 0)), Image.new("RGB", (96, 64), (0, 0, 255))
    return [{"role": "system", "content": [{"type": "text", "text": "Answer briefly."}]},
            {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image", "image": red},
                                         {"type": "image", "image": blue},
                                         {"type": "text", "text": " Which image is red? Answer A or B."}]}]


def _real_length(processor, messages, tools) -> int:
    out = processor.apply_chat_template([messages], tools=tools, tokenize=True, add_generation_prompt=True,
                                        return_dict=True)
    return len(out["input_ids"][0])


def test_truncator_measures_exactly_what_trl_tokenizes(processor):
    from lookcloser.agent.environments import ImageToolEnv, tool_schemas

    for tools in (None, tool_schemas(ImageToolEnv)):
        messages = _prompt("Some context. " * 20)
        assert PromptTruncator(processor, 10_000).length(messages, tools) == _real_length(processor, messages, tools)


def test_truncation_cuts_text_from_the_left_and_never_an_image(processor):
    context = " ".join(f"fact{i}" for i in range(200))
    messages = _prompt(context)
    full = _real_length(processor, messages, None)
    result = PromptTruncator(processor, full - 150)(messages, None)
    assert result.truncated and not result.over_budget and result.original_length == full
    assert _real_length(processor, result.messages, None) == result.length <= full - 150
    user = result.messages[1]["content"]
    assert [b["type"] for b in user] == ["text", "image", "image", "text"]
    assert user[1]["image"] is messages[1]["content"][1]["image"]  # the images themselves, untouched
    assert user[0]["text"].endswith("fact199") and "fact0 " not in user[0]["text"]  # the left went first
    assert user[3]["text"] == " Which image is red? Answer A or B."
    assert result.messages[0] == messages[0]  # the system message is kept
    assert messages[1]["content"][0]["text"] == context  # the input is not modified


def test_over_budget_prompts_keep_their_images(processor):
    messages = _prompt("short")
    result = PromptTruncator(processor, 5)(messages, None)
    assert result.over_budget
    assert sum(b["type"] == "image" for b in result.messages[1]["content"]) == 2
    placeholders = as_placeholders(result.messages)
    assert placeholders[1]["content"][1] == {"type": "image"}


# -- the completions table --

def test_table_rows_are_text_and_one_picture():
    img = Image.new("RGB", (300, 100), (0, 255, 0))
    logs = {"prompt": [[{"role": "user", "content": [{"type": "image", "image": img},
                                                      {"type": "text", "text": "What colour?"}]}]],
            "completion": [[{"role": "assistant", "reasoning_content": "look", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0}}}]},
                {"role": "tool", "name": "crop", "content": [{"type": "image", "image": img},
                                                             {"type": "text", "text": "Image 1"}]},
                {"role": "assistant", "content": "<answer>green</answer>"}]],
            "rewards": {"accuracy": [1.0], "format": [float("nan")]}, "advantages": [0.5], "images": [[img, img]]}
    (row,) = table_rows(logs, step=3)
    assert row["prompt"] == "[user] <image>What colour?"
    assert row["completion"].splitlines() == [
        '[assistant] <think>look</think><tool_call>{"name": "crop", "arguments": {"image_index": 0}}</tool_call>',
        "[tool crop] <image>Image 1", "[assistant] <answer>green</answer>"]
    assert row["reward/accuracy"] == 1.0 and row["reward/format"] is None and row["num_images"] == 2
    json.dumps({k: v for k, v in row.items() if k != "_images"})  # every cell serialises
    sheet = contact_sheet(row["_images"])
    assert sheet.size == (256, 128) and sheet.getpixel((10, 10)) == (0, 255, 0)
    assert conversation_text("plain") == "plain"
