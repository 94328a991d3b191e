"""Learning proof on CPU with the tiny model (slow): the web-search and photo-search curricula
(recipes/web_search_curriculum.yaml, recipes/photo_search_curriculum.yaml) as they stand, trained on one
seed, judged on another.

One shared run per recipe (module fixture): its training stages (``train.curriculum.plan``; the eval stage
is left out) moved under a temporary folder: questions of seed 1 for training (web: spread over 50
worlds; photos: 16 users' collections), held-out ones of seed 1001 (a new world; other users); the cold
start (web: 7 in 10 answer at once, 3 in 10 look, search and read the top result; photos: half return
every photo the metadata filter found, half search the filter's photos by content); GRPO from it; GRPO at
learning rate 0 beside it (the control: its weights, so its figures, are the cold start's); every model
judged by ``python -m eval``.
"""

from __future__ import annotations

import json

import pytest
import torch

pytestmark = pytest.mark.slow

REFERENCE = 0.233  # the most frequent answer on the held-out world (docs/data.md): the best without search or look
PHOTO_REFERENCE = 0.473  # seed 1001's metadata reference (docs/data.md): every photo the filter finds, no content


def evaluate(benchmark: str, model: str, data_root, out, extra: list[str]) -> dict:
    from lookcloser.eval.__main__ import main

    metrics = main(["--model", model, "--benchmarks", benchmark, "--data_root", str(data_root), "--out", str(out),
                    "--max_new_tokens_per_turn", "128", "--batch_size", "16", *extra])
    return metrics["benchmarks"][benchmark]


def trained_and_evaluated(root, recipe: str, model_dir, benchmark: str, controls: dict[str, list[str]]) -> dict:
    """The recipe's training stages under ``root`` (one torch thread), GRPO's logged history, and ``python -m
    eval`` on the held-out split of the SFT and GRPO checkpoints and of GRPO under each control's flags."""
    from testing.curriculum_runs import one_torch_thread, run_training_stages

    with one_torch_thread():
        run = run_training_stages(recipe, root, str(model_dir))
        heldout = root / "data" / "heldout"
        run["history"] = [e for e in json.loads((run["grpo"] / "trainer_state.json").read_text())["log_history"]
                          if "reward" in e]
        evals = {"sft": ("sft", []), "grpo": ("grpo", []), **{name: ("grpo", flags) for name, flags in controls.items()}}
        run["eval"] = {name: evaluate(benchmark, str(run[model]), heldout, root / f"eval_{name}", extra)
                       for name, (model, extra) in evals.items()}
    return run


@pytest.fixture(scope="module")
def web_run(tmp_path_factory, tiny_model_dir):
    return trained_and_evaluated(tmp_path_factory.mktemp("web_run"), "recipes/web_search_curriculum.yaml",
                                 tiny_model_dir, "imagemining",
                                 {"grpo_no_tools": ["--tools", "false"], "grpo_gray": ["--gray_images", "true"]})


def first_and_last_thirds(history: list[dict], key: str) -> tuple[float, float]:
    """The mean of ``key`` over the first and over the last third of GRPO's logged steps."""
    third = max(1, len(history) // 3)
    mean = lambda rows: sum(e[key] for e in rows) / len(rows)
    return mean(history[:third]), mean(history[-third:])


def _accuracy(m: dict) -> float:
    return m["overall"]["accuracy"]


def test_grpo_learned_to_look_then_search(web_run):
    """GRPO: held-out accuracy ≥ 0.6 and ≥ its start + 0.1, with calls that succeed. Control: GRPO at learning
    rate 0, whose weights are the cold start's (checked), so whose figures are the SFT row's: it fails both."""
    from safetensors.torch import load_file

    start, unchanged = (load_file(str(p / "model.safetensors")) for p in (web_run["sft"], web_run["grpo_lr0"]))
    assert all(torch.equal(start[k], unchanged[k]) for k in start)
    ev = web_run["eval"]
    print({k: (round(_accuracy(v), 3), v.get("agent", {}).get("tool_success_rate")) for k, v in ev.items()})
    learned = lambda acc: acc >= 0.6 and acc >= _accuracy(ev["sft"]) + 0.1
    assert learned(_accuracy(ev["grpo"])) and not learned(_accuracy(ev["sft"]))
    assert ev["grpo"]["agent"]["tool_success_rate"] >= 0.5


def test_both_the_search_and_the_look_are_needed(web_run):
    """Without the tool, or with the flag gray, the GRPO checkpoint stays within 0.1 of the reference."""
    for control in ("grpo_no_tools", "grpo_gray"):
        assert _accuracy(web_run["eval"][control]) <= REFERENCE + 0.1, control


def test_grpo_moved_the_policy_to_the_search(web_run):
    """The share of rollouts that search and the reward rise over the run (the cold start mostly answers at once)."""
    first, last = first_and_last_thirds(web_run["history"], "tools/call_frequency")
    assert last > first + 0.2
    first, last = first_and_last_thirds(web_run["history"], "reward")
    assert last > first


@pytest.fixture(scope="module")
def photo_run(tmp_path_factory, tiny_model_dir):
    return trained_and_evaluated(tmp_path_factory.mktemp("photo_run"), "recipes/photo_search_curriculum.yaml",
                                 tiny_model_dir, "disbench", {"grpo_no_tools": ["--tools", "false"]})


def test_grpo_learned_to_search_the_filtered_photos(photo_run):
    """GRPO: held-out F1 ≥ 0.6 and ≥ its start + 0.1, tool success ≥ 0.5. Control: GRPO at learning rate 0
    (the cold start's weights, checked) fails it."""
    from safetensors.torch import load_file

    start, unchanged = (load_file(str(p / "model.safetensors")) for p in (photo_run["sft"], photo_run["grpo_lr0"]))
    assert all(torch.equal(start[k], unchanged[k]) for k in start)
    ev = photo_run["eval"]
    f1 = {k: v["overall"]["f1"] for k, v in ev.items()}
    print(f1, ev["grpo"].get("agent", {}).get("tool_success_rate"))
    learned = lambda score: score >= 0.6 and score >= f1["sft"] + 0.1
    assert learned(f1["grpo"]) and not learned(f1["sft"])
    assert ev["grpo"]["agent"]["tool_success_rate"] >= 0.5


def test_photo_search_needs_the_tools(photo_run):
    """Without the tools the GRPO checkpoint stays within 0.1 of the metadata reference (it cannot even list ids)."""
    assert photo_run["eval"]["grpo_no_tools"]["overall"]["f1"] <= PHOTO_REFERENCE + 0.1


def test_grpo_moved_the_photo_policy_to_the_image_search(photo_run):
    """The share of rollouts that call ImageSearch and the reward rise over the run (the cold start searches
    about half the time)."""
    first, last = first_and_last_thirds(photo_run["history"], "tools/ImageSearch/call_frequency")
    assert last > first + 0.2
    first, last = first_and_last_thirds(photo_run["history"], "reward")
    assert last > first
