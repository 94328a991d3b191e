"""The python tool offered to any model with ``tool_set: image+python``: in one GRPO step (TRL's
``environment_factory``), on TIR-Bench through ``python -m eval`` against a scripted OpenAI-compatible endpoint
(a real HTTP server on loopback) and with the real tiny checkpoint (scripted replies through the real
``generate``): the model's next turn holds what its code printed. And the key checked when a command is
parsed: a misspelt set, or a machine without bubblewrap, is one ``error:`` line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image
from transformers import LogitsProcessorList

from lookcloser.agent.environments import environment_class, tool_schemas, with_tool_set
from lookcloser.agent.hf_policy import HFPolicy
from lookcloser.agent.loop import run_episodes
from lookcloser.agent.models import TINY_MODEL_NAME, load_model, load_processor
from lookcloser.eval.config import EvalConfig
from lookcloser.eval.loaders import write_fixtures
from lookcloser.eval.pipeline import evaluate
from testing.fake_endpoint import FakeEndpoint
from testing.scripted import ScriptedLogitsProcessor

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
# What the code sees: its picture, and the question's text (``question``: its first word).
CODE = "import numpy as np\nprint('PRINTED', image_1.size, int(np.asarray(image_1).mean()))\nprint('ASKED', *question.split()[:1])"


def _tool_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content or "")


@needs_bwrap
def test_an_endpoint_model_calling_python_reads_its_output_next_turn(tmp_path):
    fixtures = write_fixtures(tmp_path / "fixtures")
    seen: list[str] = []

    def respond(request, attempt):
        if attempt == 1:
            names = [t["function"]["name"] for t in request.get("tools", [])]
            assert "python" in names and "crop" in names
            return {"content": "Let me measure.", "tool_calls": [{"name": "python", "arguments": {"code": CODE}}]}
        tool_messages = [m for m in request["messages"] if m["role"] == "tool"]
        seen.append(_tool_text(tool_messages[-1]))
        return {"content": "<answer>A</answer>"}

    cfg = EvalConfig(model="http://unused", data_root=str(fixtures), out=str(tmp_path / "out"), benchmarks="tir_bench",
                     limit=2, tool_set="image+python", concurrency=2, request_timeout=30, request_retries=0)
    with FakeEndpoint(respond) as endpoint:
        cfg.model = endpoint.url
        metrics = evaluate(cfg)
    assert len(seen) == 2 and all("Output:\nPRINTED (" in text for text in seen)
    assert all(re.search(r"\nASKED \S+\n", text) for text in seen)  # the benchmark record's question
    bench = metrics["benchmarks"]["tir_bench"]
    assert bench["n_failed"] == 0 and bench["agent"]["tool_errors"] == 0
    assert bench["tools_offered"] == ["adjust", "crop", "flip", "python", "rotate", "view_image", "zoom"]
    on_disk = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert "python" in on_disk["benchmarks"]["tir_bench"]["tools_offered"]
    assert on_disk["run"]["config"]["tool_set"] == "image+python"
    assert "Tools offered: adjust, crop, flip, python, rotate, view_image, zoom." in (tmp_path / "out" / "report.md").read_text()


@needs_bwrap
def test_a_local_checkpoint_calling_python_reads_its_output_next_turn():
    model, processor = load_model(TINY_MODEL_NAME).eval(), load_processor(TINY_MODEL_NAME)
    prompts = []

    def script(turn: int, prompt: str) -> str:
        prompts.append(prompt)
        if turn == 0:
            return "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": CODE}}) + "\n</tool_call>"
        return "<answer>A</answer>"

    forcing = LogitsProcessorList([ScriptedLogitsProcessor(processor.tokenizer, script)])
    policy = HFPolicy(model, processor, generation_kwargs={"logits_processor": forcing})
    image = Image.new("RGB", (96, 64), (100, 100, 100))
    (traj,) = run_episodes(policy, environment_class("tir_bench+python"), [{"question": "Grey?", "images": [image]}],
                           max_turns=3, max_new_tokens_per_turn=200)
    assert traj.stop_reason == "answer" and (traj.tool_calls, traj.tool_errors) == (1, 0)
    assert "PRINTED (96, 64) 100" in prompts[-1]  # the printed output is in the next turn's input
    assert "ASKED Grey?" in prompts[-1]  # the code reads the question's text


def test_tool_sets_and_the_schema_the_model_sees():
    assert with_tool_set("tir_bench", "image") == "tir_bench"
    assert with_tool_set("imagemining", "image+python") == "imagemining"  # keeps its own tools
    (schema,) = [s for s in tool_schemas(environment_class("tir_bench+python")) if s["function"]["name"] == "python"]
    assert schema["function"]["parameters"]["required"] == ["code"]
    assert "image_1" in schema["function"]["description"]
    # crop's image tool plus python (the code curriculum's short tool prompt); every other set as it was
    assert with_tool_set("crop", "image+python") == "crop+python" and with_tool_set("crop", "image") == "crop"
    assert [s["function"]["name"] for s in tool_schemas(environment_class("crop+python"))] == ["crop", "python"]
    assert [s["function"]["name"] for s in tool_schemas(environment_class("synthetic+python"))] == [
        "adjust", "crop", "flip", "python", "rotate", "view_image", "zoom"]


@needs_bwrap
def test_crop_and_python_share_one_episode_of_images():
    """``crop+python``: the picture a crop returned is ``image_3`` for the code, and a reset forgets it."""
    env = environment_class("crop+python")()
    left, right = Image.new("RGB", (128, 96), (200, 0, 0)), Image.new("RGB", (128, 96), (0, 0, 200))
    env.reset(images=[left, right])
    env.crop(image_index=1, box=[0, 0, 64, 48])
    result = env.python(code="print(image_3.size, image_3.getpixel((0, 0)), image_1.getpixel((0, 0)))")
    assert result[0]["text"] == "Output:\n(64, 48) (0, 0, 200) (200, 0, 0)\n"
    env.reset(images=[left])
    assert "image_3" in env.python(code="print(image_3.size)")  # the error names the missing image


@pytest.mark.parametrize("argv, message", [
    (["--tool_set", "image+pyton"], ("error: tool_set: unknown name 'image+pyton'; did you mean image+python? "
                                     "(choose from image, image+python)")),
    (["--tool_set", "image+python"], ("error: tool_set: image+python: the python tool needs bubblewrap (bwrap), "
                                      "which is not installed; install it with: apt-get install -y bubblewrap")),
    (["--environment", "tir_bench+python"], ("error: environment: tir_bench+python: the python tool needs bubblewrap "
                                             "(bwrap), which is not installed; install it with: apt-get install -y "
                                             "bubblewrap")),
])
def test_eval_refuses_a_bad_tool_set_in_one_line(tmp_path, argv, message):
    # A machine without bubblewrap: a PATH without it (the interpreter is called by its full path).
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "eval", "--model", "lookcloser/tiny-qwen3-vl", "--benchmarks",
                           "tir_bench", "--out", str(tmp_path / "out"), *argv],
                          capture_output=True, text=True, env=env, check=False, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [message]
    assert not (tmp_path / "out").exists()


def test_tools_false_needs_no_sandbox(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    code = ("from lookcloser.eval.config import EvalConfig\n"
            "print(EvalConfig(model='m', tool_set='image+python', tools=False).tool_set)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "image+python", done.stderr


def test_grpo_recipe_checks_tool_set_before_any_work(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PATH": str(tmp_path)}  # a machine without bubblewrap
    done = subprocess.run([sys.executable, str(repo / "train" / "grpo.py"), str(repo / "recipes" / "grpo_synthetic.yaml"),
                           "--synthetic_images", str(repo / "data" / "mir_sample"), "--output_dir", str(tmp_path / "run"),
                           "--tool_set", "image+python"], capture_output=True, text=True, env=env, check=False,
                          timeout=300)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: tool_set: image+python: the python tool needs bubblewrap")
    assert not (tmp_path / "run").exists()


@needs_bwrap
@pytest.mark.usefixtures("one_torch_thread")
def test_grpo_rollouts_call_python_through_trls_environment_factory(tiny_model_dir, tmp_path):
    """One real GRPO step (TRL's tool loop, ``environment_factory``) with ``tool_set: image+python``: the
    policy's second turn reads what its code printed, and the call counts as a successful one."""
    import functools

    from lookcloser.agent.oracle import build_synthetic
    from lookcloser.data_builders.grpo_rows import BUNDLED_IMAGES
    from lookcloser.data_builders.synthetic import SyntheticConfig
    from lookcloser.train import grpo

    build_synthetic(BUNDLED_IMAGES, tmp_path / "data", 1, SyntheticConfig(seed=5, tasks=("visual_search",)),
                    progress=False, environment="synthetic")
    (record,) = json.loads((tmp_path / "data/TIR-Bench.json").read_text())
    letter, first_word = record["answer"], record["prompt"].split()[0]
    script_args, config, model_args = grpo.parse_args([
        "recipes/grpo_synthetic.yaml", "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "grpo"),
        "--dataset_path", str(tmp_path / "data/grpo"), "--dataset_kind", "saved", "--environment", "synthetic",
        "--tool_set", "image+python", "--max_steps", "1", "--per_device_train_batch_size", "2", "--num_generations", "2",
        "--max_tool_calling_iterations", "2", "--max_images", "6", "--max_turn_tokens", "128",
        "--max_completion_length", "768", "--filter_groups", "false", "--bf16", "false",
        "--activation_checkpointing", "false", "--use_cpu", "true", "--save_strategy", "no", "--logging_steps", "1",
        "--report_to", "none", "--dataloader_num_workers", "0"])
    trainer = grpo.build_trainer(script_args, config, model_args)
    prompts: list[tuple[int, str]] = []

    def script(turn: int, prompt: str) -> str:
        prompts.append((turn, prompt))
        if turn == 0:
            return "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": CODE}}) + "\n</tool_call>"
        return f"<answer>{letter}</answer>"

    forcing = ScriptedLogitsProcessor(trainer.processing_class.tokenizer, script)
    trainer.model.generate = functools.partial(trainer.model.generate, logits_processor=LogitsProcessorList([forcing]))
    trainer.train()
    (log,) = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]
    assert log["tools/call_frequency"] == 1 and log["tools/failure_frequency"] == 0
    second = [text for turn, text in prompts if turn == 1]
    assert second and all("Output:\nPRINTED (" in text for text in second)
    assert all(f"ASKED {first_word}\n" in text for text in second)  # the row's question, as TRL's reset passed it
    # the checkpoint records the environment its rollouts used, so that eval offers python again
    from lookcloser.agent.checkpoint_prompting import read_prompting

    (tmp_path / "ckpt").mkdir()
    grpo.write_prompting_record(script_args, str(tmp_path / "ckpt"))
    assert read_prompting(str(tmp_path / "ckpt"))["environment"] == "synthetic+python"


def test_a_tool_set_composes_with_an_environment_and_the_old_names_are_aliases():
    """environment x tool set, no extra environment names; `crop+python` & co. (recipes, checkpoints' prompting
    records) name the same composition."""
    from lookcloser.agent.environments import ALIASES, ENVIRONMENT_NAMES, ENVIRONMENTS

    assert not any("+" in name for name in ENVIRONMENTS)
    assert sorted(ALIASES) == ["crop+python", "mir+python", "synthetic+python", "tir_bench+python"]
    for alias, (name, tool_set) in ALIASES.items():
        assert environment_class(alias) is environment_class(name, tool_set) is environment_class(alias, tool_set)
        assert with_tool_set(name, tool_set) == alias and alias in ENVIRONMENT_NAMES
    assert environment_class("web_search", "image+python") is ENVIRONMENTS["web_search"]  # keeps its own tools
