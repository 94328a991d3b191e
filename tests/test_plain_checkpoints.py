"""Every checkpoint we write is an ordinary Hugging Face folder: plain transformers loads it (issue 26.1).

Each kind (the embedded default, SFT, GRPO, a LoRA adapter merged) is loaded in a fresh process
that never imports lookcloser (``testing/plain_load.py``): its configs name only transformers'
classes, ``AutoProcessor`` gives the stock processor or fails loudly (torchvision missing, never a
tokenizer alone), the saved template and tokenizer give lookcloser's prompt and ids, and the model
reads the image: a real and a gray image give other logits.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testing import plain_load
from tests.conftest import REPO

IMAGE = REPO / "data" / "mir_sample" / "which_red" / "003_2.png"
TINY_SFT = ["--max_train_samples", "2", "--per_device_train_batch_size", "2", "--max_steps", "1",
            "--logging_steps", "1", "--report_to", "none", "--warmup_steps", "0", "--lr_scheduler_type", "constant"]


pytestmark = pytest.mark.usefixtures("repo_cwd")  # recipes name data relative to the repo root


@pytest.fixture
def reserved_name_cache(tiny_model_dir, tmp_path, monkeypatch):
    """The reserved tiny name resolves to the session's tiny model (no second build)."""
    from lookcloser.agent.tiny_qwen3_vl import VERSION

    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / f"tiny-qwen3-vl-v{VERSION}").symlink_to(tiny_model_dir)
    return tmp_path / "cache"


def assert_loads_with_plain_transformers(checkpoint: Path) -> dict:
    from lookcloser.agent.families import FAMILIES
    from lookcloser.agent.models import load_processor

    family = FAMILIES["qwen3_vl"]
    asked = plain_load.request(checkpoint, load_processor(str(checkpoint)), family, IMAGE)
    result = plain_load.run([asked])[0]
    plain_load.check(result, family)
    return result


def test_embedded_default_is_a_plain_checkpoint(tiny_model_dir):
    assert_loads_with_plain_transformers(tiny_model_dir)


def test_an_older_checkpoint_naming_our_class_still_loads_with_our_loader(tiny_model_dir, tmp_path):
    import shutil

    from lookcloser.agent.models import load_processor

    old = tmp_path / "old"
    shutil.copytree(tiny_model_dir, old)
    for name in ("processor_config.json", "tokenizer_config.json"):
        config = json.loads((old / name).read_text())
        config["processor_class"] = "LookcloserQwen3VLProcessor"
        config.pop("video_processor", None)
        (old / name).write_text(json.dumps(config))
    processor = load_processor(str(old))
    processor.save_pretrained(tmp_path / "resaved")
    saved = json.loads((tmp_path / "resaved" / "processor_config.json").read_text())
    assert saved["processor_class"] == "Qwen3VLProcessor"
    assert saved["video_processor"]["video_processor_type"] == "Qwen3VLVideoProcessor"
    assert saved["video_processor"]["patch_size"] == saved["image_processor"]["patch_size"]


def test_sft_and_merged_lora_checkpoints_are_plain_and_the_adapter_names_its_base_portably(
        reserved_name_cache, tmp_path):
    from lookcloser.agent.checkpoint_prompting import PROMPTING_FILE
    from lookcloser.train import sft

    full = sft.main(*sft.parse_args(["recipes/mir_stage1.yaml", *TINY_SFT, "--output_dir", str(tmp_path / "sft")]))
    assert_loads_with_plain_transformers(Path(full))

    lora = tmp_path / "lora"
    sft.main(*sft.parse_args(["recipes/mir_stage1.yaml", *TINY_SFT, "--use_peft", "true", "--merge_adapter", "true",
                              "--output_dir", str(lora)]))
    adapter = json.loads((lora / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"] == "lookcloser/tiny-qwen3-vl"  # as the recipe names it
    for name in ("adapter_config.json", "README.md"):  # PEFT's model card names the base too
        assert str(reserved_name_cache) not in (lora / name).read_text(), name
    assert assert_loads_with_plain_transformers(lora / "merged")["classes"]
    # The merged folder is evaluated as the adapter was trained: it carries the same prompting record.
    assert (lora / "merged" / PROMPTING_FILE).read_text() == (lora / PROMPTING_FILE).read_text()


@pytest.mark.usefixtures("one_torch_thread")
def test_grpo_checkpoint_is_plain(tiny_model_dir, tmp_path):
    from lookcloser.train import grpo

    out = grpo.main(*grpo.parse_args([
        "recipes/grpo_synthetic.yaml", "--model_name_or_path", str(tiny_model_dir), "--output_dir",
        str(tmp_path / "grpo"), "--synthetic_count", "2", "--max_steps", "1",
        "--per_device_train_batch_size", "2", "--num_generations", "2", "--max_completion_length", "16",
        "--max_turn_tokens", "16", "--bf16", "false", "--use_cpu", "true", "--save_strategy", "no",
        "--logging_steps", "1", "--report_to", "none", "--dataloader_num_workers", "0"]))
    assert_loads_with_plain_transformers(Path(out))
