"""TRL's GRPOTrainer takes ImageToolEnv as ``environment_factory`` as is, and its tool loop runs our tools.

The tiny model is real and trains for real; only its replies are forced (a crop call, then an
answer), because a random model would never call a tool. The forcing sits inside the real
``generate`` (``ScriptedLogitsProcessor``), the way TRL's own tests fix generations."""

from __future__ import annotations

import functools

import pytest
from PIL import Image
from transformers import LogitsProcessorList

from lookcloser.agent.environments import ImageToolEnv
from lookcloser.agent.models import TINY_MODEL_NAME, load_model, load_processor
from testing.scripted import ScriptedLogitsProcessor

CROP = '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 0.5, 0.5]}}\n</tool_call>'


@pytest.mark.timeout(180)
def test_grpo_trainer_runs_our_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model = load_model(TINY_MODEL_NAME)
    processor = load_processor(TINY_MODEL_NAME)
    prompts = []

    def script(turn: int, prompt: str) -> str:
        prompts.append(prompt)
        return CROP if turn == 0 else "<answer>A</answer>"

    forcing = LogitsProcessorList([ScriptedLogitsProcessor(processor.tokenizer, script)])
    model.generate = functools.partial(model.generate, logits_processor=forcing)

    images = [Image.new("RGB", (96, 64), colour) for colour in ("red", "green")]
    dataset = Dataset.from_list([
        {"prompt": [{"role": "user", "content": "Which colour? A. red B. green"}], "images": [image]} for image in images
    ])

    def reward_answer(completions, environments, **kwargs):
        # The environments TRL used for these rollouts: their counters are what GRPO logs.
        assert all(env.tool_calls == 1 and env.tool_errors == 0 for env in environments)
        return [1.0 if "<answer>A</answer>" in c[-1]["content"] else 0.0 for c in completions]

    args = GRPOConfig(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2, num_generations=2,
        max_completion_length=256, max_tool_calling_iterations=3, learning_rate=1e-4, logging_steps=1,
        report_to="none", bf16=False, use_cpu=True, save_strategy="no", seed=0,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(model=model, processing_class=processor, reward_funcs=reward_answer, args=args,
                          train_dataset=dataset, environment_factory=ImageToolEnv)
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]
    assert logs and all(entry["tools/call_frequency"] == 1.0 for entry in logs)
    assert all(entry["tools/failure_frequency"] == 0.0 for entry in logs)
    assert all(entry["reward"] == 1.0 for entry in logs)
    # The crop TRL sent back reached the second turn's prompt, after our reset() note on sizes.
    second_turns = [p for p in prompts if "Image 1: crop of image 0" in p]
    assert second_turns and "Image sizes: image 0 is 96x64 px." in second_turns[0]
