"""Each family spec's own pieces, on its tiny checkpoint (agent/families/<family>.py): the deterministic
build, the torchvision-free processor, a folder plain transformers loads, the tool-calling template TRL
accepts and its response schema (what SFT, GRPO and eval do with a spec is tested where they read it)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import subprocess
import sys

import pytest
import torch
from PIL import Image

from tests.conftest import REPO

FAMILIES = ["qwen2_5_vl", "gemma3", "idefics3", "smolvlm"]
IMAGE = REPO / "data" / "mir_sample" / "which_red" / "003_2.png"
# Image tokens (the spec's image_token) for one 128x128 image: Qwen2.5-VL 8x8 patches merged 2x2; Gemma 3
# 8x8 patches pooled to 4x4; Idefics3 and SmolVLM2 2x2 tiles + the global view, 4 tokens each.
TOKENS_PER_128 = {"qwen2_5_vl": 16, "gemma3": 16, "idefics3": 20, "smolvlm": 20}
# The stock processor needs torchvision for its video half (transformers' AutoProcessor fails without it).
HAS_VIDEO_HALF = {"qwen2_5_vl": True, "gemma3": False, "idefics3": False, "smolvlm": True}
# What plain transformers builds from each folder: the model and the image processor (its PIL or torchvision
# backend, whichever is installed).
PLAIN_CLASSES = {"qwen2_5_vl": ("Qwen2_5_VLForConditionalGeneration", "Qwen2VLImageProcessor"),
                 "gemma3": ("Gemma3ForConditionalGeneration", "Gemma3ImageProcessor"),
                 "idefics3": ("Idefics3ForConditionalGeneration", "Idefics3ImageProcessor"),
                 "smolvlm": ("SmolVLMForConditionalGeneration", "SmolVLMImageProcessor")}
# The end of an assistant turn in each family's turns (the spec's ``turns`` key).
TURN_END = {"chatml": "<|im_end|>", "gemma": "<end_of_turn>", "user_assistant": "<end_of_utterance>"}
CROP = {"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 32, 32]}}}
TOOLS = [{"type": "function", "function": {"name": "crop", "description": "Crop an image.", "parameters": {
    "type": "object", "properties": {"image_index": {"type": "integer"}, "box": {"type": "array"}}}}}]


def _spec(name):
    return importlib.import_module(f"lookcloser.agent.families.{name}")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("families")
    return {name: _spec(name).FAMILY.build_tiny(root / name) for name in FAMILIES}


def _processor(name, folder, tool_template: bool = False):
    processor = _spec(name).FAMILY.processor_class.from_pretrained(folder)
    if tool_template:
        processor.chat_template = _spec(name).FAMILY.tool_template_text()
    return processor


def _image(size=(128, 128), colour=(200, 30, 30)):
    return Image.new("RGB", size, colour)


def _count(ids, processor, token) -> int:
    return int((torch.as_tensor(ids) == processor.tokenizer.convert_tokens_to_ids(token)).sum())


def _digest(folder) -> str:
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


@pytest.mark.parametrize("name", FAMILIES)
def test_tiny_build_is_deterministic_small_and_registered(name, built, tmp_path):
    from lookcloser.agent.families import FAMILIES as REGISTRY
    from lookcloser.agent.families import family_of

    again = _spec(name).FAMILY.build_tiny(tmp_path / "again")
    assert _digest(again) == _digest(built[name])
    assert (again / "tokenizer.json").read_text() == (built[name] / "tokenizer.json").read_text()
    assert _digest(_spec(name).FAMILY.build_tiny(tmp_path / "seed1", seed=1)) != _digest(built[name])
    assert (built[name] / "model.safetensors").stat().st_size < 3_000_000
    assert REGISTRY[name] is _spec(name).FAMILY and family_of(built[name]) is _spec(name).FAMILY


@pytest.mark.parametrize("name", FAMILIES)
def test_processor_takes_images_only_as_tensors_with_empty_entries(name, built):
    spec = _spec(name).FAMILY
    processor = _processor(name, built[name])
    assert "video_processor" not in type(processor).get_attributes()
    if importlib.util.find_spec("torchvision") is None:  # else AutoImageProcessor may pick the torchvision backend
        assert type(processor.image_processor).__name__.endswith("ImageProcessorPil")
    one = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which is red?"}]}]
    two = [{"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Same?"}]}]
    texts = [processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in (one, two)]
    out = processor(text=texts[:1], images=[[_image()]])
    assert isinstance(out["pixel_values"], torch.Tensor)  # TRL's GRPO tool loop needs tensors, not numpy
    assert _count(out["input_ids"], processor, spec.image_token) == TOKENS_PER_128[name]
    assert set(spec.image_keys) <= set(out)
    assert (spec.token_type_key in out) if spec.token_type_key else not any("type_ids" in k for k in out)
    # A batch mixing two images, one, and none (GRPO passes None for a prompt without images).
    batch = processor(text=[texts[1], texts[0], "no image here"], images=[[_image(), _image((96, 160))], [_image()],
                                                                           None], padding=True, return_tensors="pt")
    counts = [_count(row, processor, spec.image_token) for row in batch["input_ids"]]
    assert counts[0] > counts[1] == TOKENS_PER_128[name] and counts[2] == 0
    assert processor(text=["no image here"], images=[[]]).keys() == processor(text=["no image here"]).keys()
    with pytest.raises(ValueError, match="images only"):
        processor(text=texts[:1], videos=[[_image()]])


@pytest.fixture(scope="module")
def plain_results(built, tmp_path_factory) -> dict:
    """Every family's folder loaded in one fresh process that never imports lookcloser."""
    requests = []
    for name in FAMILIES:
        processor = _processor(name, built[name])
        messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is red?"}]}]
        prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        with Image.open(IMAGE) as img:
            ids = processor(text=[prompt], images=[[img.convert("RGB")]])["input_ids"][0]
        requests.append({"checkpoint": str(built[name]), "image": str(IMAGE), "prompt": prompt,
                         "text": processor.tokenizer.decode(ids), "ids": [int(i) for i in ids],
                         "type_key": _spec(name).FAMILY.token_type_key, "image_token": _spec(name).FAMILY.image_token})
    path = tmp_path_factory.mktemp("plain") / "requests.json"
    path.write_text(json.dumps(requests))
    out = subprocess.run([sys.executable, str(REPO / "testing" / "plain_load_family.py"), str(path)], check=False,
                         capture_output=True, text=True, timeout=300, cwd=path.parent)
    assert out.returncode == 0, out.stderr[-3000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    return {name: {**result, "our_ids": request["ids"]} for name, request, result in zip(FAMILIES, requests, results)}


@pytest.mark.parametrize("name", FAMILIES)
def test_saved_folder_loads_with_plain_transformers_and_sees_the_image(name, plain_results):
    result = plain_results[name]
    stock = _spec(name).FAMILY.processor_class.saved_class
    assert not result["lookcloser_imported"]
    assert result["classes"]["processor_config.json:processor_class"] == stock
    assert result["classes"]["tokenizer_config.json:processor_class"] == stock
    assert result["unknown_classes"] == [], "every class a config names is one of transformers' own"
    assert result["model"] == PLAIN_CLASSES[name][0]
    assert result["image_processor"].startswith(PLAIN_CLASSES[name][1])
    assert result["input_ids"] == result["our_ids"], "plain tokenizer, same ids as lookcloser's processor"
    if HAS_VIDEO_HALF[name] and importlib.util.find_spec("torchvision") is None:
        assert result["auto_processor"].startswith("ImportError") and "orchvision" in result["auto_processor"]
    else:  # the stock processor, expanding the image as ours does
        assert result["auto_processor"] == stock and result["stock_input_ids"] == result["our_ids"]
    assert result["real_vs_gray_max_abs_diff"] > 1e-4, "the model must see the image"


def _tool_conversation(image, tool_image):
    return [
        {"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Which is red?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": ""}], "tool_calls": [CROP]},
        {"role": "tool", "name": "crop", "content": [{"type": "text", "text": "Cropped:"},
                                                      {"type": "image", "image": tool_image}]},
        {"role": "assistant", "content": [{"type": "text", "text": "B"}]},
    ]


@pytest.mark.parametrize("name", FAMILIES)
def test_tool_conversation_with_images_goes_through_the_model(name, built):
    """user (image) -> assistant tool call -> tool (text and image) -> answer: the tool's image reaches the
    next turn (its tokens match the model's image features) and only the assistant turns are trained."""
    from transformers import AutoModelForImageTextToText

    spec = _spec(name).FAMILY
    processor = _processor(name, built[name], tool_template=True)
    inputs = processor.apply_chat_template(_tool_conversation(_image(), _image((96, 96), (30, 30, 200))),
                                           tools=TOOLS, tokenize=True, return_dict=True, return_tensors="pt",
                                           return_assistant_tokens_mask=True)
    assert _count(inputs["input_ids"][0], processor, spec.image_token) > TOKENS_PER_128[name]  # both images
    model = AutoModelForImageTextToText.from_pretrained(built[name]).eval()
    masks = inputs.pop("assistant_masks")
    with torch.no_grad():
        logits = model(**inputs).logits
    assert logits.shape[:2] == inputs["input_ids"].shape
    trained = processor.tokenizer.decode(inputs["input_ids"][0][masks[0].bool()])
    turn_end = TURN_END[spec.turns]
    call = '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 32, 32]}}\n</tool_call>'
    assert trained.replace(" ", "") == (call + turn_end + "B" + turn_end).replace(" ", "")


@pytest.mark.parametrize("name", FAMILIES)
def test_positions_and_type_ids_are_what_the_spec_says(name, built):
    """``mrope``: the model has M-RoPE's ``get_rope_index`` (and without the type ids silently runs 1-D
    positions); ``token_type_key``: the model reads that map (Gemma 3: bidirectional attention in an image)."""
    import inspect

    from transformers import AutoModelForImageTextToText

    spec = _spec(name).FAMILY
    processor = _processor(name, built[name])
    model = AutoModelForImageTextToText.from_pretrained(built[name]).eval()
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which is red?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[text], images=[[_image()]], return_tensors="pt")
    assert callable(getattr(model.model, "get_rope_index", None)) == spec.mrope
    if spec.token_type_key is None:
        assert not any("type_ids" in key for key in inputs)
        return
    assert spec.token_type_key in inspect.signature(model.forward).parameters
    with torch.no_grad():
        full = model(**inputs).logits
        inputs.pop(spec.token_type_key)
        without = model(**inputs).logits
    assert not torch.allclose(full, without), "the model must read the type ids"


@pytest.mark.parametrize("name", FAMILIES)
def test_tool_template_is_what_trl_needs(name, built):
    from trl.chat_template_utils import (
        get_training_chat_template,
        is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained,
        supports_tool_calling,
    )

    assert not supports_tool_calling(_processor(name, built[name])), "the published template has no tools"
    processor = _processor(name, built[name], tool_template=True)
    assert supports_tool_calling(processor)
    assert is_chat_template_prefix_preserving(processor)
    assert get_training_chat_template(processor) is None  # generation markers and prefix-preserving: used as is
    assert is_chat_template_stop_token_trained(processor)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("text", ["", "Let me look closer."])
def test_response_schema_parses_a_rendered_call_back(name, text, built):
    from trl.chat_template_utils import parse_response

    processor = _processor(name, built[name], tool_template=True)
    processor.tokenizer.response_template = _spec(name).FAMILY.response_schema()
    asked = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which is red?"}]}]
    prompt = processor.apply_chat_template(asked, tools=TOOLS, add_generation_prompt=True, tokenize=False)
    called = asked + [{"role": "assistant", "content": [{"type": "text", "text": text}], "tool_calls": [CROP]}]
    rendered = processor.apply_chat_template(called, tools=TOOLS, tokenize=False)
    assert rendered.startswith(prompt)
    encode = lambda s: processor.tokenizer(s, add_special_tokens=False)["input_ids"]
    parsed = parse_response(processor.tokenizer, encode(rendered[len(prompt):]), prefix=encode(prompt))
    assert parsed["tool_calls"] == [CROP] and parsed["content"] == text
    answered = asked + [{"role": "assistant", "content": [{"type": "text", "text": "The answer is B."}]}]
    reply = processor.apply_chat_template(answered, tools=TOOLS, tokenize=False)[len(prompt):]
    assert parse_response(processor.tokenizer, encode(reply), prefix=encode(prompt)) == {
        "role": "assistant", "content": "The answer is B."}
