"""Each registered family spec's own pieces, on its tiny checkpoint (agent/families/<family>.py): the deterministic
build; the torchvision-free processor on one and two pictures and on samples without one; a folder plain
transformers loads in a process that never imports lookcloser, where the picture moves the logits; the tool
exchange user(picture) -> assistant tool call -> tool(picture) -> answer through the model's forward with
only the assistant's turns trained; the tool template TRL accepts and the response schema that parses its
calls back (what SFT, GRPO and eval do with a spec is tested where they read it, tests/test_families.py)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
from typing import NamedTuple

import pytest
import torch
import transformers
from PIL import Image

from lookcloser.agent.families import FAMILIES, RESERVED, family_for_model_type, family_of
from testing import plain_load
from tests.conftest import REPO


class Expected(NamedTuple):
    one: int  # image tokens (the spec's image_token) for one 128x128 picture alone
    two: int  # for a 128x128 and a 64x48 picture in one sample
    model: str  # what plain transformers builds: <model>ForConditionalGeneration and the image processor
    image_processor: str  # (its PIL or torchvision backend, whichever is installed)
    reply_lead: str  # what the template puts before an assistant reply, inside the trained span
    reply_end: str  # the end of an assistant turn as trained (the stop token and what follows it)


# Qwen2.5-VL: ~112x112 pixels in 14-pixel patches merged 2x2 (64x48 becomes 140x112: 20). Qwen3-VL: ~128x128 in
# 16-pixel patches merged 2x2 (64x48: 160x128, 20; its training template trains the newline after <|im_end|>).
# Gemma 3: 16 a picture, whatever its size. Idefics3, SmolVLM2: longest edge 128, 64-pixel tiles plus the global
# view, 4 tokens each. InternVL: up to 4 tiles plus a thumbnail, 16 each (64x48: one tile). LLaVA-OneVision:
# alone, anyres (16 base + 8x8 grid + 8 newlines); in a sample of several pictures, 16 + 1 newline each.
EXPECTED = {
    "gemma3": Expected(16, 32, "Gemma3", "Gemma3ImageProcessor", "", "<end_of_turn>"),
    "idefics3": Expected(20, 40, "Idefics3", "Idefics3ImageProcessor", " ", "<end_of_utterance>"),
    "internvl": Expected(80, 96, "InternVL", "GotOcr2ImageProcessor", "", "<|im_end|>"),
    "llava_onevision": Expected(88, 34, "LlavaOnevision", "LlavaOnevisionImageProcessor", "", "<|im_end|>"),
    "qwen2_5_vl": Expected(16, 36, "Qwen2_5_VL", "Qwen2VLImageProcessor", "", "<|im_end|>"),
    "qwen3_vl": Expected(16, 36, "Qwen3VL", "Qwen2VLImageProcessor", "", "<|im_end|>\n"),
    "smolvlm": Expected(20, 40, "SmolVLM", "SmolVLMImageProcessor", " ", "<end_of_utterance>"),
}
NAMES = sorted(FAMILIES)
IMAGE = REPO / "data" / "mir_sample" / "which_red" / "003_2.png"
CALL = {"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 32, 32]}}
TOOLS = [{"type": "function", "function": {"name": "crop", "description": "Crop an image.", "parameters": {
    "type": "object", "properties": {"image_index": {"type": "integer"}, "box": {"type": "array"}},
    "required": ["image_index", "box"]}}}]


def test_the_table_covers_every_registered_family():
    assert sorted(EXPECTED) == NAMES


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    return {name: FAMILIES[name].build_tiny(tmp_path_factory.mktemp(name) / "tiny") for name in NAMES}


def _processor(name, folder, tools: bool = False):
    """The family's processor as lookcloser loads it; ``tools``: with the family's tool template where its
    published one has no tool calling."""
    processor = FAMILIES[name].processor_class.from_pretrained(str(folder))
    if tools and FAMILIES[name].tool_template:
        processor.chat_template = FAMILIES[name].tool_template_text()
    return processor


def _square() -> Image.Image:
    image = Image.new("RGB", (128, 128), (40, 40, 40))
    image.paste((220, 30, 30), (16, 16, 64, 64))
    return image


def _crop() -> Image.Image:
    return Image.new("RGB", (64, 48), (30, 200, 30))


def _count(processor, name, ids) -> int:
    return int((torch.as_tensor(ids) == processor.tokenizer.convert_tokens_to_ids(FAMILIES[name].image_token)).sum())


def _prompt(processor, *content) -> str:
    return processor.apply_chat_template([{"role": "user", "content": list(content)}], add_generation_prompt=True,
                                         tokenize=False)


@pytest.mark.parametrize("name", NAMES)
def test_tiny_build_is_deterministic_small_and_registered(name, built, tmp_path):
    family = FAMILIES[name]
    again = family.build_tiny(tmp_path / "again")
    assert sorted(p.name for p in again.iterdir()) == sorted(p.name for p in built[name].iterdir())
    for file in again.iterdir():
        assert file.read_bytes() == (built[name] / file.name).read_bytes(), file.name
    other = family.build_tiny(tmp_path / "seed1", seed=1)
    assert (other / "model.safetensors").read_bytes() != (again / "model.safetensors").read_bytes()
    assert (built[name] / "model.safetensors").stat().st_size < 3_000_000
    assert importlib.import_module(f"lookcloser.agent.families.{name}").FAMILY is family
    assert family_of(built[name]) is family and all(family_for_model_type(t) is family for t in family.model_types)
    assert RESERVED[f"lookcloser/tiny-{family.slug}"] == (family, "tiny")


@pytest.mark.parametrize("name", NAMES)
def test_processor_takes_images_only_as_tensors_with_empty_entries(name, built):
    family, expected = FAMILIES[name], EXPECTED[name]
    processor = _processor(name, built[name])
    assert isinstance(processor, getattr(transformers, family.processor_class.saved_class))
    assert "video_processor" not in type(processor).get_attributes()
    assert getattr(processor, "video_processor", None) is None
    if importlib.util.find_spec("torchvision") is None:  # what this checks: the video half is never built
        assert type(processor.image_processor).__name__.endswith("ImageProcessorPil")
        if family.processor_class.video_processor_type:
            with pytest.raises(ImportError, match="(?i)torchvision"):
                transformers.AutoVideoProcessor.from_pretrained(str(built[name]))
    one = _prompt(processor, {"type": "image"}, {"type": "text", "text": "Which is red?"})
    two = _prompt(processor, {"type": "image"}, {"type": "image"}, {"type": "text", "text": "Same?"})
    no_image = _prompt(processor, {"type": "text", "text": "Hi"})
    for text, images, count in ((one, [_square()], expected.one), (two, [_square(), _crop()], expected.two)):
        out = processor(text=[text], images=[images])
        assert _count(processor, name, out["input_ids"]) == count
        # TRL's GRPO tool loop needs tensors, not numpy or lists
        assert all(isinstance(out[key], torch.Tensor) for key in family.image_keys), out.keys()
        assert (family.token_type_key in out) if family.token_type_key else not any("type_ids" in k for k in out)
    for missing in (None, []):  # a batch mixing prompts with and without pictures (GRPO passes None)
        batch = processor(text=[two, one, no_image], images=[[_square(), _crop()], [_square()], missing],
                          padding=True, return_tensors="pt")
        assert [_count(processor, name, row) for row in batch["input_ids"]] == [expected.two, expected.one, 0]
    assert processor(text=[no_image], images=[[]]).keys() == processor(text=[no_image]).keys()
    assert "pixel_values" not in processor(text=[no_image], images=[None])
    with pytest.raises(ValueError, match="images only"):
        processor(text=[one], videos=[[_square()]])


@pytest.fixture(scope="module")
def plain_results(built) -> dict:
    """Every family's folder loaded in one fresh process that never imports lookcloser."""
    asked = [plain_load.request(built[name], _processor(name, built[name]), FAMILIES[name], IMAGE) for name in NAMES]
    return dict(zip(NAMES, plain_load.run(asked), strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_saved_folder_loads_with_plain_transformers_and_sees_the_image(name, plain_results):
    result = plain_results[name]
    plain_load.check(result, FAMILIES[name])
    assert result["model"] == f"{EXPECTED[name].model}ForConditionalGeneration"
    assert result["image_processor"].startswith(EXPECTED[name].image_processor)


def _tool_exchange() -> list[dict]:
    return [
        {"role": "user", "content": [{"type": "image", "image": _square()}, {"type": "text", "text": "Which is red?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look closer."}],
         "tool_calls": [{"type": "function", "function": CALL}]},
        {"role": "tool", "name": "crop", "content": [{"type": "text", "text": "The crop:"},
                                                      {"type": "image", "image": _crop()}]},
        {"role": "assistant", "content": [{"type": "text", "text": "<answer>A</answer>"}]},
    ]


@pytest.mark.parametrize("name", NAMES)
def test_tool_exchange_with_pictures_goes_through_the_model(name, built):
    """The tool's picture reaches the next turn (its tokens match the model's image features) and, under the
    template SFT trains with, only the assistant's replies and their end markers are trained."""
    from trl.chat_template_utils import get_training_chat_template

    processor = _processor(name, built[name], tools=True)
    processor.chat_template = get_training_chat_template(processor) or processor.chat_template
    batch = processor.apply_chat_template(_tool_exchange(), tools=TOOLS, tokenize=True, return_dict=True,
                                          return_tensors="pt", return_assistant_tokens_mask=True)
    text = processor.apply_chat_template(_tool_exchange(), tools=TOOLS, tokenize=False)
    assert '"name": "crop"' in text and "<tool_response>" in text and '"image_index": 0' in text
    assert _count(processor, name, batch["input_ids"]) == EXPECTED[name].two  # the user's and the tool's
    lead, end = EXPECTED[name].reply_lead, EXPECTED[name].reply_end
    trained = processor.tokenizer.decode(batch["input_ids"][0][batch.pop("assistant_masks")[0].bool()])
    assert trained == (f"{lead}Let me look closer.\n<tool_call>\n{json.dumps(CALL)}\n</tool_call>{end}"
                       f"{lead}<answer>A</answer>{end}")
    model = transformers.AutoModelForImageTextToText.from_pretrained(str(built[name])).eval()
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape[:2] == batch["input_ids"].shape and torch.isfinite(logits).all()


@pytest.mark.parametrize("name", NAMES)
def test_positions_and_type_ids_are_what_the_spec_says(name, built):
    """``mrope``: the model has M-RoPE's ``get_rope_index``; ``token_type_key``: the model reads that map
    (Qwen2.5-VL: M-RoPE positions, without it silently 1-D; Qwen3-VL: refuses to run without it; Gemma 3:
    bidirectional attention in a picture)."""
    family = FAMILIES[name]
    processor = _processor(name, built[name])
    model = transformers.AutoModelForImageTextToText.from_pretrained(str(built[name])).eval()
    text = _prompt(processor, {"type": "image"}, {"type": "text", "text": "Which is red?"})
    inputs = processor(text=[text], images=[[_square()]], return_tensors="pt")
    assert callable(getattr(model.model, "get_rope_index", None)) == family.mrope
    if family.token_type_key is None:
        assert not any("type_ids" in key for key in inputs)
        return
    assert family.token_type_key in inspect.signature(model.forward).parameters
    with torch.no_grad():
        full = model(**inputs).logits
        inputs.pop(family.token_type_key)
        try:
            without = model(**inputs).logits
        except ValueError as err:  # Qwen3-VL refuses M-RoPE without the map, naming it
            assert family.token_type_key in str(err)
            return
    assert not torch.allclose(full, without), "the model must read the type ids"


@pytest.mark.parametrize("name", NAMES)
def test_tool_template_is_what_trl_needs(name, built):
    from trl.chat_template_utils import (
        get_training_chat_template,
        has_generation_markers,
        is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained,
        supports_tool_calling,
    )

    family = FAMILIES[name]
    # A template of ours exactly where the published one has no tool calling.
    assert supports_tool_calling(_processor(name, built[name])) == (family.tool_template is None)
    if family.tool_template:
        assert family.tool_template_text().startswith("{#- lookcloser's tool-calling chat template")
    processor = _processor(name, built[name], tools=True)
    assert supports_tool_calling(processor)
    assert is_chat_template_prefix_preserving(processor)
    training = get_training_chat_template(processor)
    # Ours has generation markers and is used as is; a published one gets TRL's training variant.
    assert (training is None) == (family.tool_template is not None)
    processor.chat_template = training or processor.chat_template
    assert has_generation_markers(processor.chat_template)
    assert is_chat_template_stop_token_trained(processor)  # the end-of-turn marker is in the loss


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("content", ["", "Let me look closer."])
def test_response_schema_parses_a_rendered_call_back(name, content, built):
    from trl.chat_template_utils import parse_response

    processor = _processor(name, built[name], tools=True)
    tokenizer = processor.tokenizer
    tokenizer.response_template = FAMILIES[name].response_schema()
    exchange = _tool_exchange()
    exchange[1]["content"] = [{"type": "text", "text": content}]

    def parsed(before: list[dict], upto: list[dict]) -> dict:
        prompt = processor.apply_chat_template(before, tools=TOOLS, add_generation_prompt=True, tokenize=False)
        rendered = processor.apply_chat_template(upto, tools=TOOLS, tokenize=False)
        assert rendered.startswith(prompt)
        encode = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]
        return parse_response(tokenizer, encode(rendered[len(prompt):]), prefix=encode(prompt))

    assert parsed(exchange[:1], exchange[:2]) == {"role": "assistant", "content": content,
                                                  "tool_calls": [{"type": "function", "function": CALL}]}
    assert parsed(exchange[:3], exchange) == {"role": "assistant", "content": "<answer>A</answer>"}
    assert parsed(exchange[:1], [exchange[0], exchange[3]]) == {"role": "assistant", "content": "<answer>A</answer>"}
