"""The GRPO recipe's own cold start (train/grpo_lib/coldstart.py): cache key and the look warm-up's data check.

The training itself runs in the slow tool-learning test (tests/test_grpo_learning.py, same SFT script)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lookcloser.recipes import RecipeError
from lookcloser.train.grpo_lib.coldstart import cold_start, cold_start_dir


def test_cache_key_names_look_steps_only_when_used(tmp_path):
    plain = cold_start_dir(tmp_path, "m", 125, 3e-3, 42)
    assert cold_start_dir(tmp_path, "m", 125, 3e-3, 42, look_steps=0) == plain  # earlier caches stay valid
    assert cold_start_dir(tmp_path, "m", 125, 3e-3, 42, look_steps=300) != plain
    assert cold_start_dir(tmp_path, "m", 125, 3e-3, 42, look_steps=300) != cold_start_dir(
        tmp_path, "m", 125, 3e-3, 42, look_steps=200)


def test_look_steps_without_look_records_is_a_recipe_error_before_training(tmp_path):
    (tmp_path / "sft").mkdir()  # trajectories only: tasks without a look warm-up (e.g. jigsaw)
    script = SimpleNamespace(cold_start_steps=10, cold_start_learning_rate=3e-3, cold_start_look_steps=300)
    training = SimpleNamespace(seed=42, bf16=False, use_cpu=True)
    model = SimpleNamespace(model_name_or_path="lookcloser/tiny-qwen3-vl", dtype="float32")
    with pytest.raises(RecipeError, match="cold_start_look_steps: .*look is missing"):
        cold_start(script, training, model, tmp_path)
    assert not any(p.name.startswith("coldstart-") for p in tmp_path.iterdir())  # nothing was trained
