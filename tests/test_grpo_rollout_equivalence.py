"""The rollout GRPO trains on and the episode eval scores are the same thing (issue 11, point 3).

One scripted policy (the real tiny model, its replies forced inside the real ``generate``) plays one
synthetic visual_search task twice: in TRL's tool loop inside ``LookcloserGRPOTrainer`` (one real
training step) and in ``agent.loop.run_episodes`` with ``HFPolicy`` (what ``python -m eval`` runs).
The script sees the whole conversation as token text before every turn, so comparing those texts
compares the messages, the tool results (text and image token counts) and the rendering; the
rewards and the tool counts (one definition of a failed call) must agree too.
"""

from __future__ import annotations

import functools
import json

import pytest
from transformers import LogitsProcessorList

from lookcloser.train import grpo

FAST = ["--bf16", "false", "--activation_checkpointing", "false", "--use_cpu", "true", "--save_strategy", "no",
        "--logging_steps", "1", "--report_to", "none", "--dataloader_num_workers", "0"]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _call(box) -> str:
    return ('<think>I crop the cell.</think><tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": '
            + json.dumps(box) + "}}\n</tool_call>")


def _script(box, letter: str):
    """Turn 0: a good crop and an inverted box; turn 1: a call that does not parse; then the answer."""
    replies = [_call(box) + "\n" + _call([0.75, 0.75, 0.25, 0.25]).split("</think>")[1],
               '<think>Again.</think><tool_call>{"name": "crop", "arguments": {</tool_call>',
               f"<think>The crop shows it.</think><answer>{letter}</answer>"]
    seen: list[tuple[int, str]] = []

    def script(turn: int, prompt: str) -> str:
        seen.append((turn, prompt))
        return replies[min(turn, 2)]

    return script, seen


def test_grpo_rollout_and_eval_episode_are_the_same(tiny_model_dir, tmp_path):
    from lookcloser.agent.environments import ENVIRONMENTS
    from lookcloser.agent.hf_policy import HFPolicy
    from lookcloser.agent.loop import run_episodes
    from lookcloser.agent.models import load_model, load_processor
    from lookcloser.agent.oracle import build_synthetic
    from lookcloser.data_builders.grpo_rows import BUNDLED_IMAGES
    from lookcloser.data_builders.output import load_output
    from lookcloser.data_builders.synthetic import SyntheticConfig
    from lookcloser.rewards import get_reward_funcs
    from testing.scripted import ScriptedLogitsProcessor

    build_synthetic(BUNDLED_IMAGES, tmp_path / "data", 1, SyntheticConfig(seed=5, tasks=("visual_search",)),
                    progress=False, environment="crop")
    record = json.loads((tmp_path / "data/TIR-Bench.json").read_text())[0]
    box, letter = record["meta_data"]["box"], record["answer"]

    # 1) TRL's loop in one GRPO step (2 generations of the one prompt: the same forced replies)
    script_args, config, model_args = grpo.parse_args([
        "recipes/grpo_synthetic.yaml",
        "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "grpo"),
        "--dataset_path", str(tmp_path / "data/grpo"), "--dataset_kind", "saved", "--environment", "crop",
        "--max_steps", "1", "--per_device_train_batch_size", "2", "--num_generations", "2",
        "--max_tool_calling_iterations", "3", "--max_images", "6", "--max_turn_tokens", "128",
        "--max_completion_length", "1024", "--filter_groups", "false", *FAST])
    trainer = grpo.build_trainer(script_args, config, model_args)
    trl_script, trl_seen = _script(box, letter)
    forcing = ScriptedLogitsProcessor(trainer.processing_class.tokenizer, trl_script)
    trainer.model.generate = functools.partial(trainer.model.generate, logits_processor=LogitsProcessorList([forcing]))
    trainer.train()
    (log,) = [entry for entry in trainer.state.log_history if "tools/call_frequency" in entry]

    # 2) the eval loop on the same row
    row = load_output(tmp_path / "data/grpo")[0]
    model, processor = load_model(str(tiny_model_dir)).eval(), load_processor(str(tiny_model_dir))
    eval_script, eval_seen = _script(box, letter)
    model.generate = functools.partial(model.generate, logits_processor=LogitsProcessorList(
        [ScriptedLogitsProcessor(processor.tokenizer, eval_script)]))
    (trajectory,) = run_episodes(HFPolicy(model, processor), ENVIRONMENTS["crop"],
                                 [{"prompt": row["prompt"], "images": row["images"]}], max_turns=4,
                                 max_new_tokens_per_turn=128, system_prompt="")

    # the conversation as the model read it before each turn: identical, tool results included
    trl_turns = {turn: text for turn, text in trl_seen}
    eval_turns = {turn: text for turn, text in eval_seen}
    assert sorted(trl_turns) == sorted(eval_turns) == [0, 1, 2]
    for turn in (0, 1, 2):
        assert trl_turns[turn] == eval_turns[turn], f"turn {turn} differs"
    last = eval_turns[2]
    assert "Image 1: crop of image 0" in last and "is inverted or empty" in last and "could not be parsed" in last

    # one definition of a failed call: 3 calls, 1 image returned, 2 failed, in both loops
    assert trajectory.tool_calls == 3 and trajectory.tool_errors == 2 and trajectory.tool_images == 1
    assert log["tools/call_frequency"] == 3 and log["tools/failure_frequency"] == pytest.approx(2 / 3)

    # the same rewards on both completions
    completion = trajectory.messages[1:]  # after the user turn
    columns = {"data_source": [row["data_source"]], "reward_info": [row["reward_info"]]}
    for name in ("accuracy", "format", "tool_use"):
        (func,) = get_reward_funcs([name])
        (value,) = func([completion], **columns)
        assert value == pytest.approx(log[f"rewards/{name}/mean"]), name
    assert log["rewards/accuracy/mean"] == 1.0 and log["rewards/tool_use/mean"] == 1.0
