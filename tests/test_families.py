"""Every model family the registry serves (agent/families) through the stack, on its tiny offline checkpoint:
SFT with assistant-only loss on multi-image MIR records, then a plain-transformers reload (a process that
never imports lookcloser) where a real image moves the logits against a gray one; one GRPO step with the
crop tool, its replies scripted (a random model never calls a tool) so the tool's image reaches the second
turn's input and the loss's batch; eval on held-out MIR with tools on and off. Adding a family to the
registry adds its rows here.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from PIL import Image
from transformers import LogitsProcessorList

from lookcloser.agent.families import FAMILIES
from lookcloser.agent.families.chat import prepare_processor, renders_like
from lookcloser.agent.models import load_model, load_processor
from lookcloser.errors import RecipeError
from testing.scripted import ScriptedLogitsProcessor, generation_header
from tests.conftest import REPO

NAMES = sorted(FAMILIES)
CROP = '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}\n</tool_call>'


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Each family's tiny checkpoint, built once for the module."""
    built = {}

    def get(name):
        if name not in built:
            built[name] = FAMILIES[name].build_tiny(tmp_path_factory.mktemp(name) / f"tiny-{name}")
        return built[name]

    return get


@pytest.fixture(scope="module")
def sft_checkpoints(tiny, tmp_path_factory):
    """Each family's tiny checkpoint after 2 SFT steps of the README's main job (assistant-only loss,
    multi-image MIR records), trained once for the module."""
    from lookcloser.train.sft import main as sft_main
    from lookcloser.train.sft import parse_args as sft_args

    made = {}

    def get(name):
        if name not in made:
            out = tmp_path_factory.mktemp(f"sft-{name}") / "sft"
            cwd = os.getcwd()
            os.chdir(REPO)  # the recipe names its data relative to the repo root
            try:
                made[name] = sft_main(*sft_args([
                    "recipes/mir_stage1.yaml", "--model_name_or_path", str(tiny(name)), "--output_dir", str(out),
                    "--report_to", "none", "--max_steps", "2", "--per_device_train_batch_size", "2",
                    "--gradient_accumulation_steps", "1", "--save_strategy", "no", "--bf16", "false",
                    "--use_cpu", "true"]))
            finally:
                os.chdir(cwd)
        return made[name]

    return get


# Run in a process that never imports lookcloser: plain transformers loads the model, tokenizer and
# image processor; the prompt's ids (image tokens expanded) come from the parent, the pixels from the
# plain image processor; a real image and a flat gray one must give different logits.
PLAIN_RELOAD = textwrap.dedent("""
    import json, sys
    import numpy as np, torch
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoTokenizer
    path, spec = sys.argv[1], json.loads(sys.argv[2])
    model = AutoModelForImageTextToText.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    image_processor = AutoImageProcessor.from_pretrained(path)
    ids = torch.tensor([spec["input_ids"]])
    real = Image.fromarray(np.random.default_rng(0).integers(0, 255, (112, 112, 3), dtype=np.uint8))
    gray = Image.new("RGB", (112, 112), (128, 128, 128))
    last = []
    for image in (real, gray):
        inputs = {k: torch.as_tensor(v) for k, v in image_processor(images=[image], return_tensors="pt").items()}
        inputs.update(input_ids=ids, attention_mask=torch.ones_like(ids))
        if spec["token_type_key"]:
            inputs[spec["token_type_key"]] = (ids == spec["image_token_id"]).long()
        with torch.no_grad():
            last.append(model(**inputs).logits[0, -1])
    print(json.dumps({"model": type(model).__name__, "tokenizer": type(tokenizer).__name__,
                      "image_processor": type(image_processor).__name__,
                      "moved": float((last[0] - last[1]).abs().max()),
                      "lookcloser": any(m.startswith("lookcloser") for m in sys.modules)}))
""")


@pytest.mark.parametrize("name", NAMES)
def test_sft_checkpoint_is_plain_and_sees_the_image(name, sft_checkpoints):
    """The SFT output loads in a process that never imports lookcloser (model, tokenizer, image
    processor), and there a real image moves the logits against a flat gray one."""
    checkpoint, family = sft_checkpoints(name), FAMILIES[name]
    processor = load_processor(str(checkpoint))
    messages = [{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (112, 112))},
                                             {"type": "text", "text": "Which one?"}]}]
    rendered = processor.apply_chat_template(messages, tokenize=True, return_dict=True, add_generation_prompt=True,
                                             return_tensors="pt")
    spec = {"input_ids": rendered["input_ids"][0].tolist(), "token_type_key": family.token_type_key,
            "image_token_id": processor.tokenizer.convert_tokens_to_ids(family.image_token)}
    assert spec["input_ids"].count(spec["image_token_id"]) > 0
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", PLAIN_RELOAD, str(checkpoint), json.dumps(spec)],
                          capture_output=True, text=True, timeout=300, cwd="/", env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded["lookcloser"] is False and loaded["model"].endswith("ForConditionalGeneration"), loaded
    assert loaded["moved"] > 1e-4, loaded


@pytest.mark.parametrize("name", NAMES)
def test_grpo_step_with_the_crop_tool_puts_its_image_in_turn_two_and_the_loss(name, tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    from datasets import Dataset

    from lookcloser.agent.environments import ImageToolEnv
    from lookcloser.train.grpo_lib.configs import LookcloserGRPOConfig
    from lookcloser.train.grpo_lib.trainer import LookcloserGRPOTrainer

    family = FAMILIES[name]
    model, processor = load_model(str(tiny(name))), load_processor(str(tiny(name)))
    image_id = processor.tokenizer.convert_tokens_to_ids(family.image_token)
    prompts: list[str] = []
    forcing = LogitsProcessorList([ScriptedLogitsProcessor(
        processor.tokenizer, lambda turn, prompt: prompts.append(prompt) or (CROP if turn == 0 else "<answer>A</answer>"),
        header=generation_header(processor))])
    model.generate = functools.partial(model.generate, logits_processor=forcing)
    seen: list[tuple[int, int]] = []  # (rows, image tokens) of each training forward pass

    def record(module, args, kwargs):
        if torch.is_grad_enabled() and kwargs.get("pixel_values") is not None:
            seen.append((int(kwargs["input_ids"].shape[0]), int((kwargs["input_ids"] == image_id).sum())))

    model.register_forward_pre_hook(record, with_kwargs=True)
    images = [Image.new("RGB", (96, 64), colour) for colour in ("red", "green")]
    dataset = Dataset.from_list([
        {"prompt": [{"role": "user", "content": "Which colour? A. red B. green"}], "images": [image]} for image in images])
    args = LookcloserGRPOConfig(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=512, max_tool_calling_iterations=3, learning_rate=1e-4, logging_steps=1,
        report_to="none", bf16=False, use_cpu=True, save_strategy="no", seed=0, dataloader_num_workers=0)
    make = functools.partial(LookcloserGRPOTrainer, model=model, processing_class=processor, args=args,
                             train_dataset=dataset, reward_funcs=lambda completions, **kw: [1.0 for _ in completions],
                             environment_factory=ImageToolEnv)
    if not family.grpo_tool_images:  # refused before any rollout, naming why (agent/families/base.py)
        with pytest.raises(RecipeError, match=f"{name}: GRPO with tools cannot train on this family yet"):
            make()
        return
    trainer = make()
    # A generated tool-call turn (it stops at a stop token) + the tool-result ids TRL appends = the template's
    # rendering of the whole exchange, for every family's turn end.
    tool = [{"role": "tool", "name": "crop", "content": [{"type": "text", "text": "cropped"}]}]
    call = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": ""}], "tool_calls": [
                {"type": "function", "function": {"name": "crop", "arguments": {}}}]}]
    turn = processor.apply_chat_template(call, tokenize=True, return_dict=False)[0]
    turn = turn[: max(i for i, t in enumerate(turn) if t in trainer.eos_token_ids) + 1]
    whole = processor.apply_chat_template(call + tool, tokenize=True, return_dict=False, add_generation_prompt=True)[0]
    assert list(turn) + list(trainer._get_tool_suffix_ids(tool)) == list(whole)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]
    assert logs and logs[0]["tools/call_frequency"] == 1.0 and logs[0]["tools/failure_frequency"] == 0.0
    second = [p for p in prompts if "crop of image 0" in p]
    assert second, prompts[-1][-500:]
    assert second[0].count(family.image_token) > prompts[0].count(family.image_token)  # the crop is in turn two
    # The loss pass holds both pictures of each rollout (the input and the crop): more image tokens than
    # its rows' input pictures alone.
    rows, tokens = seen[0]
    assert tokens > rows * prompts[0].count(family.image_token), (seen, prompts[0].count(family.image_token))


@pytest.mark.parametrize("name", NAMES)
def test_eval_on_held_out_mir_with_tools_on_and_off(name, sft_checkpoints, tmp_path, monkeypatch):
    from lookcloser.eval.__main__ import main as eval_main

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path / "cache"))
    for tools in ("true", "false"):
        metrics = eval_main(["--model", str(sft_checkpoints(name)), "--benchmarks", "mir", "--limit", "2",
                             "--max_new_tokens_per_turn", "8", "--tools", tools, "--out", str(tmp_path / tools)])
        mir = metrics["benchmarks"]["mir"]
        assert mir["n"] == 2 and mir["n_failed"] == 0, mir["failed"]


def test_a_template_that_renders_the_same_is_taken_as_the_published_one(tiny):
    """A Qwen3-VL checkpoint whose template differs from the published one in whitespace and comments only:
    recognised by what it renders, so TRL's exact-text lookups (tool calling, response parsing) find it."""
    import trl.chat_template_utils as trl_templates

    family = FAMILIES["qwen3_vl"]
    processor = load_processor(str(tiny("qwen3_vl")))
    published = processor.chat_template
    edited = published.replace("{%- if tools %}", "{#- ours -#}\n{%- if tools   %}", 1)
    assert edited != published and renders_like(processor, edited, published)
    prepare_processor(processor, family, chat_template=edited)
    assert processor.chat_template == trl_templates.qwen3_vl_chat_template
    # Another template (a different system line) is not taken for it.
    other = published.replace("# Tools", "# Functions", 1)
    assert not renders_like(processor, other, published)


@pytest.mark.parametrize("name", NAMES)
def test_scorers_find_the_final_turn_in_each_familys_rendering(name, tiny):
    """verl and OpenRLHF score decoded rollouts: the torch-free turn markers (rewards.turn_markers, named by
    the spec) cut each family's rendered conversation to its last assistant turn, tool output left out."""
    from lookcloser.rewards._text import final_turn_text
    from lookcloser.rewards.turn_markers import TURN_MARKERS

    family = FAMILIES[name]
    assert family.turns in TURN_MARKERS
    processor = load_processor(str(tiny(name)))
    call = {"type": "function", "function": {"name": "crop", "arguments": {"image_index": 0}}}
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Which one?"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "Look."}], "tool_calls": [call]},
                {"role": "tool", "name": "crop", "content": [{"type": "text", "text": "Answer: A (a trap)"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "<answer>B</answer>"}]}]
    text = processor.apply_chat_template(messages, tokenize=False)
    assert "Answer: A" in text
    assert final_turn_text(text).strip() == "<answer>B</answer>", text[-300:]


def test_a_users_chat_template_reaches_grpo_and_eval(tiny, tmp_path, monkeypatch):
    """``chat_template_path`` (GRPO recipe key, eval flag; SFT has TRL's) replaces the checkpoint's template; one
    that renders no tool calls is refused with one line naming the key."""
    from lookcloser.eval.__main__ import main as eval_main
    from lookcloser.train import grpo

    monkeypatch.chdir(REPO)
    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path / "cache"))
    family = FAMILIES["gemma3"]
    ours = tmp_path / "ours.jinja"
    # A user's own wording of the tool instructions (renders differently, so it is not taken for the family's).
    ours.write_text(family.tool_template_text().replace("You can call the functions below", "Use these functions"),
                    encoding="utf-8")
    assert ours.read_text(encoding="utf-8") != family.tool_template_text()
    fast = ["--bf16", "false", "--use_cpu", "true", "--save_strategy", "no", "--report_to", "none",
            "--output_dir", str(tmp_path / "grpo")]
    trainer = grpo.build_trainer(*grpo.parse_args(["recipes/grpo_synthetic.yaml", "--model_name_or_path",
                                                   str(tiny("gemma3")), "--chat_template_path", str(ours), *fast]))
    assert trainer.processing_class.chat_template == ours.read_text(encoding="utf-8")
    no_tools = tmp_path / "no_tools.jinja"
    no_tools.write_text("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}", encoding="utf-8")
    with pytest.raises(RecipeError, match="chat_template_path: the template renders no tool calls"):
        eval_main(["--model", str(tiny("gemma3")), "--benchmarks", "mir", "--limit", "1", "--chat_template_path",
                   str(no_tools), "--out", str(tmp_path / "eval")])
