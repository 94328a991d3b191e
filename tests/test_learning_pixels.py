"""The curriculum teaches the embedded default to look: held-out records, gray and learning-rate-0 controls.

The MIR stages of ``recipes/mir_curriculum.yaml`` (its other stages left out) train MIR stages 1 -> 4
on the bundled training records (``data/mir_train``, sample_mir seed 1). They are scored on records
they never saw (``data_builders.heldout``, seed 7007) with MIR's benchmark prompt (question and
options, no reference context), as ``python -m eval ... --mir_prompt_stage 0`` does:

- real images: accuracy >= 0.75;
- the same checkpoint with every image flat gray: <= chance + 0.15 (the images carry the answer);
- the same curriculum at learning rate 0: fails the real-image assertion.

Both curricula train once per session, side by side in subprocesses (one torch thread each).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testing.mir_heldout import mir_accuracy
from tests.conftest import REPO

HELD_OUT_SEED = 7007  # a reserved held-out seed: never trained on, never tuned on
CHANCE = 0.375  # two 4-option and two 2-option families, equally many records
TARGET = 0.75

pytestmark = pytest.mark.slow


def _recipe(tmp: Path, model: Path, name: str, learning_rate: float | None) -> Path:
    recipe = yaml.safe_load((REPO / "recipes" / "mir_curriculum.yaml").read_text(encoding="utf-8"))
    recipe["output_dir"] = str(tmp / name)
    recipe["stages"] = [stage for stage in recipe["stages"] if stage["name"].startswith("mir_stage")]
    recipe["defaults"]["model_name_or_path"] = str(model)
    if learning_rate is not None:
        recipe["defaults"]["learning_rate"] = learning_rate
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def curricula(tiny_model_dir, tmp_path_factory) -> dict[str, Path]:
    """Train the curriculum (as the README runs it) and its learning-rate-0 twin, at the same time."""
    tmp = tmp_path_factory.mktemp("curricula")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled", "PYTHONPATH": str(REPO)}
    runs = {"trained": _recipe(tmp, tiny_model_dir, "trained", None),
            "lr0": _recipe(tmp, tiny_model_dir, "lr0", 0.0)}
    procs = {name: subprocess.Popen([sys.executable, "train/curriculum.py", str(recipe)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
             for name, recipe in runs.items()}
    for proc in procs.values():
        log = proc.communicate()[0]
        assert proc.returncode == 0, log[-3000:]
    return {name: tmp / name / "mir_stage4" for name in runs}


@pytest.fixture(scope="session")
def held_out(tmp_path_factory) -> Path:
    from lookcloser.data_builders.heldout import write_heldout

    return write_heldout(tmp_path_factory.mktemp("held_out"), HELD_OUT_SEED, ("mir",))["mir"]


def test_curriculum_checkpoint_is_a_normal_folder_that_records_its_prompting(curricula):
    from lookcloser.agent.checkpoint_prompting import read_prompting

    folder = curricula["trained"]
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    # Stage 4 trains on MIR's benchmark prompt: eval's default for this checkpoint is stage 0, no tools.
    assert read_prompting(str(folder)) == {"mir_prompt_stage": 0, "system_prompt": "", "tools": False, "max_turns": 1}


def test_curriculum_learns_to_answer_from_the_pixels_on_held_out_records(curricula, held_out, tmp_path):
    accuracy, by_family = mir_accuracy(curricula["trained"], held_out, tmp_path / "real")
    assert accuracy >= TARGET, by_family
    assert all(value > CHANCE for value in by_family.values()), by_family  # no family left at chance


def test_gray_images_control_falls_to_chance(curricula, held_out, tmp_path):
    accuracy, by_family = mir_accuracy(curricula["trained"], held_out, tmp_path / "gray", gray=True)
    assert accuracy <= CHANCE + 0.15, by_family
    assert not accuracy >= TARGET  # the main assertion fails without the pixels


def test_learning_rate_0_control_fails_the_same_assertion(curricula, held_out, tmp_path):
    accuracy, by_family = mir_accuracy(curricula["lr0"], held_out, tmp_path / "lr0")
    assert not accuracy >= TARGET, by_family
