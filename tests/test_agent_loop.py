"""The loop with the real tiny Qwen3-VL (scripted replies through the real ``generate``), TRL parity,
stop reasons, robustness, and trajectories on disk. Only the model's choice of tokens is scripted:
the model cannot be trained here to call tools, so ``ScriptedLogitsProcessor`` forces its replies."""

from __future__ import annotations

import json

import pytest
import torch
from PIL import Image
from transformers import LogitsProcessorList

from lookcloser.agent.environments import ImageToolEnv, PhotoCollectionEnv, tool_schemas
from lookcloser.agent.hf_policy import HFPolicy
from lookcloser.agent.loop import DEFAULT_SYSTEM_PROMPT, run_episodes
from lookcloser.agent.models import TINY_MODEL_NAME, load_model, load_processor
from lookcloser.agent.parsing import parse_assistant_text
from lookcloser.eval.fixtures import write_disbench
from testing.scripted import ScriptedLogitsProcessor


def call(name: str, **arguments) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@pytest.fixture(scope="module")
def tiny():
    return load_model(TINY_MODEL_NAME).eval(), load_processor(TINY_MODEL_NAME)


class GenerateSpy:
    """Records what each real ``generate`` call received (calls through unchanged)."""

    def __init__(self, model):
        self.model, self.original, self.calls = model, model.generate, []

    def __enter__(self):
        def spy(**kwargs):
            self.calls.append(kwargs)
            return self.original(**kwargs)

        self.model.generate = spy
        return self

    def __exit__(self, *exc):
        del self.model.generate


def scripted(tiny, script, **kwargs) -> HFPolicy:
    model, processor = tiny
    forcing = LogitsProcessorList([ScriptedLogitsProcessor(processor.tokenizer, script)])
    return HFPolicy(model, processor, generation_kwargs={"logits_processor": forcing}, **kwargs)


def red_square() -> Image.Image:
    image = Image.new("RGB", (256, 192), (240, 240, 240))
    image.paste((220, 20, 20), (160, 96, 224, 160))
    return image


def test_text_parsing_is_trls(tiny):
    """The endpoint path (text) parses exactly like TRL's GRPO loop parses token ids after a prompt."""
    from trl.chat_template_utils import add_response_schema, parse_response

    processor = add_response_schema(tiny[1])
    tools = tool_schemas(ImageToolEnv)
    prompt = processor.apply_chat_template([{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                                           tools=tools, add_generation_prompt=True, tokenize=True)[0]
    for text in [
        "<answer>B</answer>",
        "Let me look.\n" + call("crop", image_index=0, box=[1, 2, 3, 4]),
        call("crop", image_index=0, box=[0, 0, 1, 1]) + "\n" + call("view_image", image_index="1"),
        "<think>hmm</think>\nok\n\n" + call("rotate", image_index=0, angle=90),
        '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0}\n</tool_call>',  # bad JSON
        '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0',  # cut off
    ]:
        ids = processor.tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)
        expected = parse_response(processor.tokenizer, ids, prefix=list(prompt), tools=tools)
        assert parse_assistant_text(text + "<|im_end|>", tools=tools) == expected, text
        assert parse_assistant_text(text, tools=tools) == expected, text


def test_three_turn_trajectory_feeds_the_crop_back(tiny, tmp_path):
    def script(turn: int, prompt: str) -> str:
        if turn == 0:
            return "The square is small.\n" + call("crop", image_index=0, box=[128, 64, 256, 192])
        if turn == 1:
            assert "Image 1: crop of image 0" in prompt  # the tool result is in the next turn's input
            return call("zoom", image_index=1, box=[0.25, 0.25, 0.75, 0.75], factor=2)
        return "<think>It is red.</think>\nThe square is red. <answer>A</answer>"

    policy = scripted(tiny, script)
    examples = [{"question": "What colour is the square? A. red B. blue", "images": [red_square()], "id": 7}]
    with GenerateSpy(tiny[0]) as spy:
        (traj,) = run_episodes(policy, ImageToolEnv, examples, max_turns=5, max_new_tokens_per_turn=96)
    assert traj.stop_reason == "answer" and traj.num_turns == 3
    assert traj.final_response == "The square is red. <answer>A</answer>"
    assert (traj.tool_calls, traj.tool_errors) == (2, 0)
    assert [img.size for img in traj.images] == [(256, 192), (128, 128), (128, 128)]
    # Each turn's model input carries one more image: the crop went back into the model.
    grids = [c["image_grid_thw"].tolist() for c in spy.calls]
    assert [len(g) for g in grids] == [1, 2, 3]
    crop_inputs = tiny[1].image_processor(images=[traj.images[1]], return_tensors="pt")
    assert grids[1][1] == crop_inputs["image_grid_thw"][0].tolist()
    assert torch.equal(spy.calls[1]["pixel_values"][-len(crop_inputs["pixel_values"]):], crop_inputs["pixel_values"])
    image_token = tiny[1].tokenizer.convert_tokens_to_ids("<|image_pad|>")
    counts = [int((c["input_ids"] == image_token).sum()) for c in spy.calls]
    assert counts[1] > counts[0] and counts[2] > counts[1]
    roles = [m["role"] for m in traj.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert traj.messages[0]["content"] == DEFAULT_SYSTEM_PROMPT
    assert traj.messages[-1]["reasoning_content"] == "It is red."
    # On disk: JSON with images as PNG files beside it (the file holds what the episode saw).
    path = traj.to_json(tmp_path, name="ep7")
    data = json.loads(path.read_text())
    assert data["images"] == ["ep7-img000.png", "ep7-img001.png", "ep7-img002.png"]
    assert data["messages"][3]["content"][0] == {"type": "image", "image": "ep7-img001.png"}
    assert data["final_response"] == traj.final_response and data["stop_reason"] == "answer"
    with Image.open(tmp_path / "ep7-img001.png") as saved:
        assert saved.convert("RGB").tobytes() == traj.images[1].convert("RGB").tobytes()


def test_batched_generation_matches_one_at_a_time(tiny):
    """Greedy, unscripted: padding and the shared prefix cache do not change what the model writes."""
    model, processor = tiny
    examples = [{"question": q, "images": [red_square().resize(size)]}
                for q, size in [("What is it?", (64, 64)), ("Describe the colours in detail.", (128, 96)),
                                ("Count.", (96, 160))]]
    kwargs = {"max_turns": 1, "max_new_tokens_per_turn": 12}
    batched = run_episodes(HFPolicy(model, processor), ImageToolEnv, examples, **kwargs)
    plain = run_episodes(HFPolicy(model, processor, prefix_cache=False), ImageToolEnv, examples, **kwargs)
    single = [run_episodes(HFPolicy(model, processor), ImageToolEnv, [ex], **kwargs)[0] for ex in examples]
    for a, b, c in zip(batched, plain, single):
        assert a.messages[-1] == b.messages[-1] == c.messages[-1]
    policy = HFPolicy(model, processor)
    run_episodes(policy, ImageToolEnv, examples[:1], **kwargs)
    cached = policy._prefix
    run_episodes(policy, ImageToolEnv, examples[1:2], **kwargs)
    assert policy._prefix is cached  # shared across runs while the weights stay the same
    with torch.no_grad():
        model.lm_head.weight.mul_(1.0)  # an in-place update, as an optimizer step makes
    run_episodes(policy, ImageToolEnv, examples[:1], **kwargs)
    assert policy._prefix is not cached


def test_stop_reasons_and_robustness(tiny, tmp_path):
    def script(turn: int, prompt: str) -> str:
        if "bad json" in prompt and turn == 0:
            return '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0,}\n</tool_call>'
        if "unknown tool" in prompt and turn == 0:
            return call("paint", colour="red") + "\n" + call("crop", image_index=5, box=[0, 0, 1, 1])
        if "long" in prompt:
            return "word " * 60
        if ("bad json" in prompt or "unknown tool" in prompt) and turn == 1:
            return "<answer>A</answer>"
        return call("crop", image_index=0, box=[0, 0, 0.5, 0.5])

    policy = scripted(tiny, script)
    image = red_square()
    examples = [
        {"question": "loop forever", "images": [image]},
        {"question": "bad json", "images": [image]},
        {"question": "unknown tool", "images": [image]},
        {"question": "long answer", "images": [image]},
        {"question": "missing file", "images": ["nope.png"], "data_root": str(tmp_path)},
        {"question": "too many images", "images": [image] * 4},
    ]
    trajs = run_episodes(policy, ImageToolEnv, examples, max_turns=3, max_new_tokens_per_turn=160, max_images=3)
    forever, bad_json, unknown, long, missing, many = trajs
    assert (forever.stop_reason, forever.num_turns, forever.tool_calls) == ("max_turns", 3, 2)
    assert forever.messages[-1]["role"] == "assistant" and len(forever.images) == 3  # last turn's call not run
    assert bad_json.stop_reason == "answer" and (bad_json.tool_calls, bad_json.tool_errors) == (1, 1)
    assert bad_json.messages[3]["role"] == "tool" and bad_json.messages[3]["content"].startswith("Error:")
    assert unknown.stop_reason == "answer" and (unknown.tool_calls, unknown.tool_errors) == (2, 2)
    assert "unknown tool 'paint'" in unknown.messages[3]["content"]
    assert "does not exist" in unknown.messages[4]["content"]
    assert long.stop_reason == "answer" and long.truncated and long.num_turns == 1
    assert missing.stop_reason == "error" and "not found" in missing.error and missing.num_turns == 0
    assert many.stop_reason == "max_images" and many.num_turns == 0
    capped = run_episodes(policy, ImageToolEnv, examples[:1], max_turns=5, max_images=2)[0]
    assert capped.stop_reason == "max_images" and len(capped.images) == 2 and capped.tool_calls == 2


def test_generation_failure_ends_episodes_with_error(tiny):
    model, processor = tiny

    class Broken:
        def __getattr__(self, name):
            return getattr(model, name)

        def generate(self, **kwargs):
            raise RuntimeError("device on fire")

    trajs = run_episodes(HFPolicy(Broken(), processor, prefix_cache=False), ImageToolEnv, [{"question": "q", "images": [red_square()]}])
    assert trajs[0].stop_reason == "error" and "device on fire" in trajs[0].error
    small = HFPolicy(model, processor, max_context=64)
    (too_long,) = run_episodes(small, ImageToolEnv, [{"question": "q", "images": [red_square()]}])
    assert too_long.stop_reason == "error" and "exceeds" in too_long.error


def test_disbench_query_answered_by_a_scripted_agent(tiny, tmp_path):
    """The DISBench fixture end to end: filter through the tools, answer with the ids the tool returned."""
    import re

    from lookcloser.agent.embedders import ColorHashEmbedder

    fixture = write_disbench(tmp_path / "DISBench")
    query = json.loads((fixture["root"] / "queries.jsonl").read_text().splitlines()[0])

    def script(turn: int, prompt: str) -> str:
        if turn == 0:
            return call("filter_metadata", start_time="2020-06-01", end_time="2020-06-30", place="Paris")
        response = prompt.rsplit("<tool_response>", 1)[1]
        return "<answer>" + ", ".join(re.findall(r"\b\d{10}\b", response)) + "</answer>"

    import functools

    factory = functools.partial(PhotoCollectionEnv, embedder=ColorHashEmbedder(), cache_dir=str(tmp_path / "idx"))
    row = {**query, "data_root": str(fixture["root"])}
    (traj,) = run_episodes(scripted(tiny, script), factory, [row], max_new_tokens_per_turn=160)
    assert traj.stop_reason == "answer" and traj.tool_calls == 1 and traj.tool_errors == 0
    predicted = re.search(r"<answer>(.*)</answer>", traj.final_response).group(1).split(", ")
    assert set(predicted) == set(query["answer"])
    assert f"Photo collection of user {fixture['users'][0]}: 36 photos" in traj.messages[1]["content"][-1]["text"]
