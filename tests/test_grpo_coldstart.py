"""The GRPO script's built-in cold start is gone (issue 38): a cold start is a curriculum stage.

A recipe or flag that still sets one of its keys (``cold_start_steps``, ``cold_start_learning_rate``,
``cold_start_look_steps``) is one error line naming the curriculum stages to use instead, through the
parser's one path for unknown keys (``lookcloser.recipes``, a config's ``REMOVED``), before any work."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from lookcloser.recipes import RecipeError
from lookcloser.train import grpo
from tests.conftest import REPO

STAGES = "a cold start is a curriculum stage: see recipes/tool_curriculum.yaml (stages look and sft before grpo)"


def test_a_recipe_setting_a_removed_key_names_the_stage_to_use(tmp_path):
    recipe = tmp_path / "old.yaml"
    recipe.write_text((REPO / "recipes/grpo_synthetic.yaml").read_text() + "cold_start_steps: 125\n")
    with pytest.raises(RecipeError) as caught:
        grpo.parse_args([str(recipe)])
    assert str(caught.value).startswith(f"{recipe}: cold_start_steps: removed; {STAGES}")
    assert "--model_name_or_path outputs/tool_curriculum/sft" in str(caught.value)


@pytest.mark.parametrize(("flags", "key"), [
    (["--cold_start_steps", "0"], "cold_start_steps"),
    (["--cold-start-look-steps=3"], "cold_start_look_steps"),  # the dashed alias and the = form
    (["--max_steps", "2", "--cold_start_learning_rate", "3e-3"], "cold_start_learning_rate")])
def test_a_removed_flag_names_the_stage_to_use(flags, key):
    with pytest.raises(RecipeError, match="^" + re.escape(f"{key}: removed; {STAGES}")):
        grpo.parse_args(["recipes/grpo_synthetic.yaml", *flags])


def test_the_recipe_parses_without_the_removed_keys():
    script, _, model = grpo.parse_args(["recipes/grpo_synthetic.yaml"])
    assert not any(name.startswith("cold_start") for name in vars(script))
    assert model.model_name_or_path == "lookcloser/tiny-qwen3-vl"


def test_the_command_prints_one_error_line_and_exits_2_before_any_work(tmp_path):
    recipe = tmp_path / "old.yaml"
    recipe.write_text((REPO / "recipes/grpo_synthetic.yaml").read_text() + "cold_start_look_steps: 300\n")
    cwd, caches = tmp_path / "cwd", tmp_path / "caches"
    cwd.mkdir()
    caches.mkdir()
    env = {**os.environ, "LOOKCLOSER_CACHE": str(caches / "lookcloser"), "HF_HOME": str(caches / "hf"),
           "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    done = subprocess.run([sys.executable, str(REPO / "train" / "grpo.py"), str(recipe), "--output_dir", "out"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    tail = ", then start GRPO from its checkpoint (--model_name_or_path outputs/tool_curriculum/sft)"
    assert lines == [f"error: {recipe}: cold_start_look_steps: removed; {STAGES}{tail}"], done.stderr
    assert not any(cwd.iterdir()) and not any(caches.iterdir())  # no model built, no data generated
