"""The offline tiny Qwen3-VL: deterministic build, exact save/reload, the reserved name."""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch
from PIL import Image

from lookcloser.agent.models import TINY_MODEL_NAME, load_model, load_processor, resolve_model_path
from lookcloser.agent.tiny_qwen3_vl import VERSION, build_tiny_qwen3_vl


def _inputs(processor):
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What colour is it?"}]}]
    text = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    image = Image.new("RGB", (64, 64), (200, 30, 30))
    return processor(text=[text], images=[[image]], return_tensors="pt")


def _weights_digest(folder) -> str:
    return hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()


def test_build_is_deterministic_and_small(tiny_model_dir, tmp_path):
    again = build_tiny_qwen3_vl(tmp_path / "again")
    assert _weights_digest(again) == _weights_digest(tiny_model_dir)
    assert (again / "tokenizer.json").read_text() == (tiny_model_dir / "tokenizer.json").read_text()
    other_seed = build_tiny_qwen3_vl(tmp_path / "seed1", seed=1)
    assert _weights_digest(other_seed) != _weights_digest(tiny_model_dir)
    assert (tiny_model_dir / "model.safetensors").stat().st_size < 5_000_000


def test_save_reload_gives_identical_logits(tiny_model_dir, tmp_path):
    model = load_model(str(tiny_model_dir)).eval()
    processor = load_processor(str(tiny_model_dir))
    inputs = _inputs(processor)
    assert isinstance(inputs["pixel_values"], torch.Tensor)  # TRL's GRPO loop needs tensors, not numpy
    with torch.no_grad():
        before = model(**inputs).logits
    model.save_pretrained(tmp_path / "copy")
    processor.save_pretrained(tmp_path / "copy")
    reloaded = load_model(str(tmp_path / "copy")).eval()
    reprocessor = load_processor(str(tmp_path / "copy"))
    with torch.no_grad():
        after = reloaded(**_inputs(reprocessor)).logits
    assert before.shape[-1] == len(processor.tokenizer)
    assert torch.equal(before, after)


def test_generation_with_fixed_seed_is_deterministic(tiny_model_dir):
    model = load_model(str(tiny_model_dir)).eval()
    processor = load_processor(str(tiny_model_dir))
    inputs = _inputs(processor)
    outs = []
    for _ in range(2):
        torch.manual_seed(123)
        outs.append(model.generate(**inputs, max_new_tokens=6, do_sample=True, top_k=0))
    assert torch.equal(outs[0], outs[1])


def test_image_costs_few_tokens_and_mixed_batches_work(tiny_model_dir):
    processor = load_processor(str(tiny_model_dir))
    image_pad = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    inputs = _inputs(processor)
    assert int((inputs["input_ids"] == image_pad).sum()) == 16  # 64x64 px -> upscaled to 128x128 -> 16 LM tokens
    big = processor(text=[processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}]}],
                                                       tokenize=False)], images=[[Image.new("RGB", (4000, 3000))]])
    assert int(big["image_grid_thw"].prod()) <= 128 * 128 // 16 ** 2  # never above 128x128 px: detail is lost
    # A batch mixing a prompt with an image and one without (GRPO does this): None -> [].
    texts = ["<|vision_start|><|image_pad|><|vision_end|>hi", "no image here"]
    batch = processor(text=texts, images=[[Image.new("RGB", (64, 64))], None], return_tensors="pt", padding=True)
    assert batch["image_grid_thw"].shape == (1, 3)


def test_reserved_name_builds_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path))
    path = resolve_model_path(TINY_MODEL_NAME)
    assert path.startswith(str(tmp_path)) and (Path(path) / "config.json").exists()
    assert Path(path).name == f"tiny-qwen3-vl-v{VERSION}"  # an older definition's cache is never reused
    assert resolve_model_path("Qwen/Qwen3-VL-8B-Instruct") == "Qwen/Qwen3-VL-8B-Instruct"  # untouched


def test_the_small_reserved_name_is_a_larger_model_that_plain_transformers_loads(tmp_path, monkeypatch):
    from transformers import AutoModelForImageTextToText

    from lookcloser.agent.models import SMALL_MODEL_NAME
    from lookcloser.checks import check_model_name

    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path))
    check_model_name(SMALL_MODEL_NAME)  # reserved: never looked up on a hub
    path = Path(resolve_model_path(SMALL_MODEL_NAME))
    assert path.name == f"small-qwen3-vl-v{VERSION}" and path != Path(resolve_model_path(TINY_MODEL_NAME))
    small = AutoModelForImageTextToText.from_pretrained(path)
    tiny = AutoModelForImageTextToText.from_pretrained(resolve_model_path(TINY_MODEL_NAME))
    assert small.config.text_config.num_hidden_layers > tiny.config.text_config.num_hidden_layers
    assert sum(p.numel() for p in small.parameters()) > 3 * sum(p.numel() for p in tiny.parameters())
    # The same tokenizer and image processing: data built for one trains the other.
    assert (path / "tokenizer.json").read_text() == (Path(resolve_model_path(TINY_MODEL_NAME)) / "tokenizer.json").read_text()
    with torch.no_grad():
        out = small(**_inputs(load_processor(SMALL_MODEL_NAME)))
    assert out.logits.shape[-1] == tiny.config.text_config.vocab_size
