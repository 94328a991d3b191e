"""Learning proof on CPU with the tiny model (slow): recipes/tool_curriculum.yaml as it stands, trained on
one seed, judged on another.

One shared run (session fixture): the recipe's own stages (``train.curriculum.plan``) moved under a
temporary folder: visual_search tasks of seed 1 for training and of seed 1001 held out; the look
warm-up (the question on the oracle's crop alone); the cold start (7 in 10 of its trajectories answer
at once, 3 in 10 crop); GRPO with the crop tool from it; every model judged by ``python -m eval``
(the agent loop, the same code GRPO's rollouts are proven equal to in
test_grpo_rollout_equivalence.py).

Each learning assertion sits beside its learning-rate-0 control, which must fail it:
- the cold start learned to crop: the untrained model's calls all fail;
- GRPO learned: GRPO at learning rate 0 leaves the cold start's weights as they are (checked), so
  its held-out figures are the cold start's.
Tool use is judged by successful crops (a tool result holding an image), not by calls, and the
tool must be what makes the model right: the same checkpoint without tools, and with every
image flat gray, stays near chance (1/6).
"""

from __future__ import annotations

import json

import pytest
import torch

pytestmark = pytest.mark.slow

RECIPE = "recipes/tool_curriculum.yaml"
CHANCE = 1 / 6


@pytest.fixture(scope="session")
def tool_run(tmp_path_factory, tiny_model_dir):
    """The recipe's stages, GRPO at learning rate 0 beside them, and the held-out evaluations, once."""
    from testing.curriculum_runs import one_torch_thread, run_training_stages

    root = tmp_path_factory.mktemp("tool_run")
    with one_torch_thread():
        run = run_training_stages(RECIPE, root, str(tiny_model_dir))
        run["data"] = {split: root / "data" / split for split in ("train", "heldout")}
        run["history"] = json.loads((run["grpo"] / "trainer_state.json").read_text())["log_history"]
        run["eval"] = {}
        for name, model, extra in (("untrained", str(tiny_model_dir), ["--tools", "true", "--system_prompt", ""]),
                                   ("sft", str(run["sft"]), []),
                                   ("grpo", str(run["grpo"]), []),
                                   ("grpo_no_tools", str(run["grpo"]), ["--tools", "false"]),
                                   ("grpo_gray", str(run["grpo"]), ["--gray_images", "true"])):
            run["eval"][name] = _evaluate(model, run["data"]["heldout"], root / f"eval_{name}", extra)
    return run


def _evaluate(model: str, data_root, out, extra: list[str]) -> dict:
    from lookcloser.eval.__main__ import main

    metrics = main(["--model", model, "--benchmarks", "tir_bench", "--data_root", str(data_root), "--out", str(out),
                    "--environment", "crop", "--max_new_tokens_per_turn", "96", "--batch_size", "16", *extra])
    return metrics["benchmarks"]["tir_bench"]


def _accuracy(m: dict) -> float:
    return m["overall"]["accuracy"]


def _tool_success(m: dict) -> float:
    """Successful crops: the share of calls whose result held an image."""
    return m.get("agent", {}).get("tool_image_rate") or 0.0


def test_held_out_seed_never_trained_on(tool_run):
    from lookcloser.data_builders.heldout import HELDOUT_SEEDS, pixel_digests

    heldout = json.loads((tool_run["data"]["heldout"] / "tir_bench" / "TIR-Bench.json").read_text())
    settings = {s: json.loads((tool_run["data"][s] / "settings.json").read_text()) for s in ("train", "heldout")}
    assert settings["train"]["seed"] not in HELDOUT_SEEDS and settings["heldout"]["heldout_seed"] in HELDOUT_SEEDS
    assert len(heldout) == 60
    assert not set(pixel_digests(tool_run["data"]["heldout"])) & set(pixel_digests(tool_run["data"]["train"]))


def test_cold_start_learned_to_crop(tool_run):
    """The cold start's calls return crops: GRPO's first rollouts (sampled from the cold start's weights,
    before any update) call and mostly succeed. Control (the untrained model, held out): its calls fail."""
    first = next(e for e in tool_run["history"] if "reward" in e)
    assert first["tools/call_frequency"] > 0 and first["tools/failure_frequency"] < 0.5, first
    assert _tool_success(tool_run["eval"]["untrained"]) < 0.5, tool_run["eval"]["untrained"].get("agent")


def test_cold_start_answers_at_once(tool_run):
    """The cold start's greedy reply mostly answers without a look, near chance: the starting point GRPO
    has to leave (docs/grpo.md, "Tool curriculum")."""
    assert _accuracy(tool_run["eval"]["sft"]) <= 0.35, tool_run["eval"]["sft"]


def test_grpo_has_a_learning_signal(tool_run):
    """Groups are informative (not all dropped), gradients flow and the reward is earned; the learning-rate-0
    run leaves the weights exactly as the cold start left them."""
    from safetensors.torch import load_file

    history = [e for e in tool_run["history"] if "reward" in e]
    assert any(e.get("groups/dropped_ratio", 1) < 1 and e.get("grad_norm", 0) > 0 and e["reward"] > 0
               for e in history)
    start, unchanged = (load_file(str(p / "model.safetensors")) for p in (tool_run["sft"], tool_run["grpo_lr0"]))
    assert all(torch.equal(start[k], unchanged[k]) for k in start)


def test_grpo_learned_from_the_reward(tool_run):
    """GRPO: the reward and the share of rollouts that call rise, and held-out accuracy beats its start by
    the issue's 0.10. Control: GRPO at learning rate 0, whose weights (so figures) are the cold start's."""
    from safetensors.torch import load_file

    history = [e for e in tool_run["history"] if "reward" in e]
    third = max(1, len(history) // 3)
    mean = lambda key, rows: sum(e[key] for e in rows) / len(rows)
    assert mean("reward", history[-third:]) > mean("reward", history[:third]), [e["reward"] for e in history]
    assert mean("tools/call_frequency", history[-third:]) > mean("tools/call_frequency", history[:third])
    start, unchanged = (load_file(str(p / "model.safetensors")) for p in (tool_run["sft"], tool_run["grpo_lr0"]))
    assert all(torch.equal(start[k], unchanged[k]) for k in start)
    sft_acc = _accuracy(tool_run["eval"]["sft"])
    learned = lambda acc: acc >= sft_acc + 0.10
    grpo_acc, control_acc = _accuracy(tool_run["eval"]["grpo"]), sft_acc  # equal weights: equal figures
    print(f"held-out accuracy: GRPO {grpo_acc:.3f}, learning-rate-0 control (= SFT) {control_acc:.3f}")
    assert learned(grpo_acc) and not learned(control_acc)


def test_the_crop_is_what_makes_it_right(tool_run):
    """With tools the GRPO checkpoint is right on most held-out tasks, with successful crops; without tools
    or with gray images it is near chance."""
    ev = tool_run["eval"]
    print({k: (round(_accuracy(v), 3), v.get("agent", {}).get("tool_image_rate")) for k, v in ev.items()})
    assert _accuracy(ev["grpo"]) >= 0.6 and _tool_success(ev["grpo"]) >= 0.5
    for control in ("grpo_no_tools", "grpo_gray"):
        assert _accuracy(ev[control]) <= 0.35, control
        assert not (_accuracy(ev[control]) >= 0.6), control
