"""A table of users' mistakes, each through the real command in a fresh process: every one stops with
exit status 2 and one ``error:`` line, before any model is loaded or any data is generated.

Each command runs in an empty working folder with an empty model cache (``LOOKCLOSER_CACHE``, where
the reserved tiny model would be built on its first load) and an empty hub cache; afterwards
neither holds a file, so nothing was loaded, built, generated or written. The processes run a few
at a time (each is one interpreter start-up plus parsing: most of the time is importing TRL).
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"
MIR_JSON = SAMPLE / "all_data_rel.json"
SFT = [str(REPO / "train" / "sft.py"), str(REPO / "recipes" / "mir_stage1.yaml"), "--dataset_path", str(MIR_JSON),
       "--images_root", str(SAMPLE)]
GRPO = [str(REPO / "train" / "grpo.py"), str(REPO / "recipes" / "grpo_synthetic.yaml"),
        "--synthetic_images", str(SAMPLE)]
TOOL_TASKS = ["-m", "lookcloser.data_builders", "tool-tasks", "--images", str(SAMPLE)]
CURRICULUM = [str(REPO / "train" / "curriculum.py"), str(REPO / "recipes" / "tool_curriculum.yaml")]
EVAL = ["-m", "lookcloser.eval"]
BUILD = ["-m", "lookcloser.data_builders"]
UNSUPPORTED = REPO / "tests" / "fixtures" / "unsupported_checkpoint"  # a config.json of a family we do not serve

# (what the user typed after `python`, a phrase the one error line must hold). A training command
# imports TRL (~5 s of CPU), so those rows are few: tests/test_reliability_cli.py, test_curriculum.py and
# test_grpo_train.py walk more of their mistakes in-process.
MISTAKES = [
    ([*SFT, "--learning_rate", "-1e-3"], "learning_rate must be >= 0, got -0.001"),
    ([*SFT, "--mir_stage", "7"], "mir_stage must be between 0 and 4, got 7"),
    ([*SFT, "--model_name_or_path", str(REPO / "README.md")], "README.md is a file, not a model folder"),
    # An architecture no family spec serves (agent/families): named with the supported ones, before loading.
    ([*SFT, "--model_name_or_path", str(UNSUPPORTED)], "model_type 'mllama' is not a supported family (supported: "),
    ([*GRPO, "--model_name_or_path", "lookcloser/tiny-nosuch"], "lookcloser/tiny-nosuch is not a reserved model"),
    ([*GRPO, "--reward_funcs", "accuracy", "fromat"], "reward_funcs: unknown name 'fromat'; did you mean format?"),
    ([*GRPO, "--environment", "cropp"], "environment: unknown name 'cropp'; did you mean crop?"),
    ([*TOOL_TASKS, "--direct_ratio", "1.5"], "direct_ratio must be between 0 and 1, got 1.5"),
    ([*TOOL_TASKS, "--copy_drills", "2"], "copy_drills: environment 'crop' has no python tool"),
    ([*TOOL_TASKS, "--sft_share", "visual_serch=0.5"], "sft_share: unknown name 'visual_serch'; did you mean visual_search?"),
    ([*TOOL_TASKS, "--sft_share", "visual_search=2"], "sft_share visual_search must be between 0 and 1, got 2.0"),
    # A kind no image tool solves: refused for an environment without python, before anything is built.
    ([*TOOL_TASKS, "--tasks", "maze", "color"], "tasks: maze, color are solved with the python tool"),
    ([*BUILD, "heldout", "--out", "o", "--seed", "9009", "--tir_pictures", "photo"], "tir_pictures: unknown name 'photo'"),
    # Not a dry run: the checks of every stage run before the first stage (the data stage) starts.
    ([*CURRICULUM, "--set", "data.direct_ratio=1.5"], "stage 'data' (data_builders/commands/tool_tasks.py): direct_ratio must be"),
    ([*CURRICULUM, "--skip", "looks"], "--skip names no stage: ['looks']"),
    ([*EVAL, "--model", str(REPO / "README.md")], "README.md is a file, not a model folder"),
    ([*EVAL, "--model", "outputs/nope"], "outputs/nope: model folder not found"),
    ([*EVAL, "--model", str(UNSUPPORTED)], "to add one, write agent/families/<family>.py"),
    ([*EVAL, "--model", "lookcloser/tiny-qwen3-vl", "--chat_template_path", str(REPO / "README.md")],
     "README.md is not a Jinja chat template"),
    ([*EVAL, "--model", "lookcloser/tiny-qwen3-vl", "--benchmarks", "mir,tir-bench"], "did you mean tir_bench?"),
    ([*EVAL, "--model", "lookcloser/tiny-qwen3-vl", "--mir_prompt_stage", "5"], "mir_prompt_stage must be between"),
    ([*EVAL, "--model", "lookcloser/tiny-qwen3-vl", "--temperature", "-1"], "temperature must be >= 0, got -1.0"),
    ([*EVAL, "--model", "lookcloser/tiny-qwen3-vl", "--data_root", "nope"], "data_root: nope not found"),
    ([*EVAL, "prepare", "--benchmarks", "mir,nope", "--data_root", "data"], "unknown benchmark 'nope'"),
    ([*EVAL, "--model", "http://127.0.0.1:9/v1", "--concurrency", "0"], "concurrency must be >= 1, got 0"),
    ([*BUILD, "synthetic", str(SAMPLE), "--count", "0", "--out", "o"], "count must be >= 1, got 0"),
    ([*BUILD, "synthetic", str(SAMPLE), "--count", "2", "--tasks", "jigsw", "--out", "o"], "did you mean jigsaw?"),
    ([*BUILD, "mir", "missing.json", "--out", "o"], "path: missing.json not found"),
    ([*BUILD, "mir", str(MIR_JSON), "--stages", "1", "5", "--out", "o"], "stages must be between 0 and 4, got 5"),
    ([*BUILD, "difficulty", str(MIR_JSON), "--model", "lookcloser/tiny-qwen3-vl", "--hard_threshold", "0.9",
      "--out", "o"], "need 0 <= hard_threshold < easy_threshold <= 1"),
    ([*BUILD, "imagenet-think", str(SAMPLE), "--column_map", "{bad", "--out", "o"], "column_map: not"),
    ([*BUILD, "mirr", str(MIR_JSON), "--out", "o"], "unknown command 'mirr'; did you mean mir?"),
    ([*BUILD, "synthetic", str(SAMPLE), "--count", "2", "--out", str(SAMPLE / "synthetic")],
     "must not hold one another"),  # its rebuild would clear a folder inside the source images
    (["-m", "lookcloser.data_builders.sample_mir", "out", "--per_family", "0"], "per_family must be >= 1, got 0"),
    (["-m", "lookcloser.agent.tiny_models", "out", "--family", "gema3"], "unknown name 'gema3'; did you mean gemma3?"),
]


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _run(case: int, root: Path) -> dict:
    argv, _ = MISTAKES[case]
    home = root / f"case{case}"
    cwd, caches = home / "cwd", home / "caches"
    cwd.mkdir(parents=True)
    caches.mkdir()
    env = {**os.environ, "LOOKCLOSER_CACHE": str(caches / "lookcloser"), "HF_HOME": str(caches / "hf"),
           "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    done = subprocess.run([sys.executable, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    return {"status": done.returncode, "stderr": done.stderr, "stdout": done.stdout, "files": _files(home)}


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> list[dict]:
    root = tmp_path_factory.mktemp("mistakes")
    with ThreadPoolExecutor(3) as pool:
        return list(pool.map(lambda case: _run(case, root), range(len(MISTAKES))))


def test_the_table_is_long_enough():
    assert len(MISTAKES) >= 20


@pytest.mark.parametrize("case", range(len(MISTAKES)), ids=[" ".join(a[-3:])[-40:] for a, _ in MISTAKES])
def test_a_mistake_is_one_line_exit_2_and_nothing_made(outcomes, case):
    outcome, (_, phrase) = outcomes[case], MISTAKES[case]
    lines = outcome["stderr"].splitlines()
    assert outcome["status"] == 2, outcome
    assert len(lines) == 1 and lines[0].startswith("error: ") and phrase in lines[0], outcome["stderr"]
    assert "Traceback" not in outcome["stdout"] + outcome["stderr"]
    # no model built or loaded into the caches, no data generated, nothing written where it ran
    assert outcome["files"] == ["caches", "cwd"], outcome["files"]
