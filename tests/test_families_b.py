"""The InternVL, LLaVA-OneVision and SmolVLM2 family specs, each on its real tiny checkpoint (built here).

Per family: the tiny checkpoint is the same for the same seed; its processor works without torchvision on
one and two images (and on samples without one); the folder loads with plain transformers in a process that
never imports lookcloser, and the image moves the logits; our tool-calling template renders a scripted
user(image) -> assistant tool call -> tool(image) exchange that goes through the model's forward, passes
TRL's checks (tool calling, prefix-preserving, generation markers) and its reply parses back with the
family's response schema.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from PIL import Image

from lookcloser.agent.families import FAMILIES, RESERVED, family_for_model_type
from tests.conftest import REPO

NAMES = ("internvl", "llava_onevision")
IMAGE = REPO / "data" / "mir_sample" / "which_red" / "003_2.png"
STOCK = {"internvl": "InternVLProcessor", "llava_onevision": "LlavaOnevisionProcessor", "smolvlm": "SmolVLMProcessor"}
# Image tokens for one 128x128 image alone, and for a 128x128 and a 64x48 image in one sample. LLaVA-OneVision
# counts by sample: one image is anyres (16 base + 8x8 grid + 8 newlines), several get 16 + 1 each.
IMAGE_TOKENS = {"internvl": (80, 80 + 16), "llava_onevision": (88, 17 + 17), "smolvlm": (80, 80 + 80)}
TOOLS = [{"type": "function", "function": {"name": "crop", "description": "Crop an image.", "parameters": {
    "type": "object", "properties": {"image_index": {"type": "integer"}, "box": {"type": "array"}},
    "required": ["image_index", "box"]}}}]
CALL = {"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 32, 32]}}


def _square() -> Image.Image:
    image = Image.new("RGB", (128, 128), (40, 40, 40))
    image.paste((220, 30, 30), (16, 16, 64, 64))
    return image


def _crop() -> Image.Image:
    return Image.new("RGB", (64, 48), (30, 200, 30))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    return {name: FAMILIES[name].build_tiny(tmp_path_factory.mktemp(name) / "tiny") for name in NAMES}


def _processor(name: str, folder: Path, tool_template: bool = False):
    family = FAMILIES[name]
    processor = family.processor_class.from_pretrained(str(folder))
    if tool_template:
        processor.chat_template = family.tool_template_text()
    return processor


def _image_tokens(processor, ids) -> int:
    return int((torch.as_tensor(ids) == processor.image_token_id).sum())


@pytest.mark.parametrize("name", NAMES)
def test_registered_with_its_fields(name):
    family = FAMILIES[name]
    assert family_for_model_type(name) is family and RESERVED[f"lookcloser/tiny-{family.slug}"] == (family, "tiny")
    assert not family.mrope and not family.prefix_cache and family.token_type_key is None
    assert family.turns == ("user_assistant" if name == "smolvlm" else "chatml")
    assert family.tool_template_text().startswith("{#- lookcloser's tool-calling chat template")


@pytest.mark.parametrize("name", NAMES)
def test_tiny_checkpoint_is_the_same_for_the_same_seed(name, tmp_path, built):
    again = FAMILIES[name].build_tiny(tmp_path / "again", seed=0)
    other = FAMILIES[name].build_tiny(tmp_path / "other", seed=1)
    for file in ("model.safetensors", "tokenizer.json", "tokenizer_config.json", "processor_config.json",
                 "config.json", "chat_template.jinja"):
        assert (again / file).read_bytes() == (built[name] / file).read_bytes(), file
    assert (other / "model.safetensors").read_bytes() != (again / "model.safetensors").read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_processor_works_without_torchvision_on_one_and_two_images(name, built):
    if importlib.util.find_spec("torchvision") is None:  # what this checks: the video half is never built
        with pytest.raises(ImportError, match="(?i)torchvision"):
            from transformers import AutoVideoProcessor

            AutoVideoProcessor.from_pretrained(str(built[name]))
    processor = _processor(name, built[name])
    assert type(processor).__mro__[2].__name__ == STOCK[name] and not hasattr(processor, "video_processor")
    one_alone, two_together = IMAGE_TOKENS[name]
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which is red?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True)
    text_two = processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "image"}, {"type": "text", "text": "Same?"}]}],
        add_generation_prompt=True)
    no_image = processor.apply_chat_template([{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                                             add_generation_prompt=True)

    one = processor(text=[text], images=[[_square()]])
    two = processor(text=[text_two], images=[[_square(), _crop()]])
    assert _image_tokens(processor, one["input_ids"]) == one_alone
    assert _image_tokens(processor, two["input_ids"]) == two_together
    for out in (one, two):
        assert all(isinstance(out[key], torch.Tensor) for key in FAMILIES[name].image_keys), out.keys()
    for missing in (None, []):  # a batch mixing prompts with and without images (GRPO)
        mixed = processor(text=[text, no_image], images=[[_square()], missing], padding=True, return_tensors="pt")
        assert _image_tokens(processor, mixed["input_ids"][0]) == one_alone
        assert _image_tokens(processor, mixed["input_ids"][1]) == 0
    assert "pixel_values" not in processor(text=[no_image], images=[None])


@pytest.fixture(scope="module")
def plain_loads(built, tmp_path_factory) -> dict[str, dict]:
    """Each family's folder loaded by plain transformers, all in one fresh process."""
    args, ours = [], {}
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the image?"}]}]
    for name in NAMES:
        processor = _processor(name, built[name])
        text = processor.apply_chat_template(messages, add_generation_prompt=True)
        with Image.open(IMAGE) as img:
            out = processor(text=[text], images=[[img.convert("RGB")]], return_tensors="pt")
        request = tmp_path_factory.mktemp("plain") / f"{name}.json"
        request.write_text(json.dumps({"input_ids": out["input_ids"][0].tolist(), "image": str(IMAGE),
                                       "messages": messages}))
        args += [str(built[name]), str(request)]
        ours[name] = {"text": text, "shapes": {k: list(out[k].shape) for k in FAMILIES[name].image_keys if k in out}}
    run = subprocess.run([sys.executable, str(REPO / "testing" / "plain_load_images.py"), *args], check=False,
                         capture_output=True, text=True, timeout=300, cwd=built[NAMES[0]])
    assert run.returncode == 0, run.stderr[-3000:]
    results = [json.loads(line) for line in run.stdout.strip().splitlines()[-len(NAMES):]]
    return {name: {**result, "ours": ours[name]} for name, result in zip(NAMES, results, strict=True)}


@pytest.mark.parametrize("name", NAMES)
def test_plain_transformers_loads_the_folder_and_sees_the_image(name, plain_loads):
    result = plain_loads[name]
    assert not result["lookcloser_imported"]
    assert result["classes"]["processor_config.json:processor_class"] == STOCK[name]
    assert result["classes"]["tokenizer_config.json:processor_class"] == STOCK[name]
    assert result["unknown_classes"] == [], "every class a config names is one of transformers' own"
    if importlib.util.find_spec("torchvision") is not None:
        assert result["auto_processor"] == STOCK[name]
    else:  # loudly, naming what is missing; never a tokenizer that drops the image
        assert result["auto_processor"].startswith("ImportError") and "orchvision" in result["auto_processor"]
    assert result["text"] == result["ours"]["text"], "the saved chat template renders as ours"
    # The image processor alone gives what our processor gives (LLaVA-OV's batch_num_images is the model's default).
    assert {k: v for k, v in result["image_shapes"].items() if k != "batch_num_images"} == \
        {k: v for k, v in result["ours"]["shapes"].items() if k != "batch_num_images"}
    assert result["real_vs_gray_max_abs_diff"] > 1e-4, "the model must see the image"


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
def test_tool_template_passes_trl_checks(name, built):
    from trl.chat_template_utils import (
        get_training_chat_template,
        has_generation_markers,
        is_chat_template_prefix_preserving,
        is_chat_template_stop_token_trained,
        supports_tool_calling,
    )

    published = _processor(name, built[name])
    assert not supports_tool_calling(published), "the published template has no tools (why ours exists)"
    processor = _processor(name, built[name], tool_template=True)
    assert supports_tool_calling(processor)
    assert is_chat_template_prefix_preserving(processor)
    assert has_generation_markers(processor.chat_template)
    assert get_training_chat_template(processor) is None
    assert is_chat_template_stop_token_trained(processor)  # the end-of-turn marker is in the loss


@pytest.mark.parametrize("name", NAMES)
def test_scripted_tool_call_with_images_goes_through_the_model(name, built):
    from transformers import AutoModelForImageTextToText

    processor = _processor(name, built[name], tool_template=True)
    batch = processor.apply_chat_template(_tool_exchange(), tools=TOOLS, tokenize=True, return_dict=True,
                                          return_tensors="pt", return_assistant_tokens_mask=True)
    text = processor.apply_chat_template(_tool_exchange(), tools=TOOLS)
    assert '"name": "crop"' in text and "<tool_response>" in text and '"image_index": 0' in text
    # Both images reach the input: the user's and the tool's (as in a second turn of GRPO).
    assert _image_tokens(processor, batch["input_ids"]) == IMAGE_TOKENS[name][1]
    end = "<end_of_utterance>\n" if name == "smolvlm" else "<|im_end|>"
    lead = " " if name == "smolvlm" else ""
    trained = processor.tokenizer.decode(batch["input_ids"][0][batch.pop("assistant_masks")[0].bool()])
    assert trained == (f'{lead}Let me look closer.\n<tool_call>\n{json.dumps(CALL)}\n</tool_call>{end}'
                       f'{lead}<answer>A</answer>{end}'), "assistant-only loss: the replies and their end marker"
    model = AutoModelForImageTextToText.from_pretrained(str(built[name])).eval()
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape[:2] == batch["input_ids"].shape and torch.isfinite(logits).all()


@pytest.mark.parametrize("name", NAMES)
def test_response_schema_parses_the_rendered_tool_call(name, built):
    from trl.chat_template_utils import parse_response

    processor = _processor(name, built[name], tool_template=True)
    tokenizer = processor.tokenizer
    tokenizer.response_template = FAMILIES[name].response_schema()
    exchange = _tool_exchange()
    prompt = processor.apply_chat_template(exchange[:1], tools=TOOLS, add_generation_prompt=True)
    rendered = processor.apply_chat_template(exchange[:2], tools=TOOLS)
    assert rendered.startswith(prompt)
    reply = tokenizer(rendered[len(prompt):])["input_ids"]
    parsed = parse_response(tokenizer, reply, prefix=tokenizer(prompt)["input_ids"], tools=TOOLS)
    assert parsed == {"role": "assistant", "content": "Let me look closer.",
                      "tool_calls": [{"type": "function", "function": CALL}]}
    before_answer = processor.apply_chat_template(exchange[:3], tools=TOOLS, add_generation_prompt=True)
    answer = processor.apply_chat_template(exchange, tools=TOOLS)[len(before_answer):]
    parsed = parse_response(tokenizer, tokenizer(answer)["input_ids"], prefix=tokenizer(before_answer)["input_ids"])
    assert parsed == {"role": "assistant", "content": "<answer>A</answer>"}
