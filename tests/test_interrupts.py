"""Ctrl-C in each long command, sent as a real SIGINT to a real process: exit status 130, one
``interrupted:`` line saying what was kept and the command that resumes, and nothing half-made
left (no cut checkpoint, no empty output folder, no orphan images, no stage state that lies)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"
TINY_SFT = ["--dataset_path", str(SAMPLE / "all_data_rel.json"), "--images_root", str(SAMPLE), "--use_cpu", "true",
            "--per_device_train_batch_size", "2", "--max_steps", "1000", "--report_to", "none"]


def _interrupted(argv: list[str], cwd: Path, ready: Callable[[], bool], timeout: float = 300) -> tuple[int, list[str]]:
    """Start ``python argv`` in ``cwd``, send SIGINT once ``ready()``, return (status, stderr lines)."""
    # PYTHONFAULTHANDLER: a child that never ends is sent SIGABRT and prints every thread's stack.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "PYTHONWARNINGS": "ignore",
           "LOOKCLOSER_CACHE": str(cwd / ".cache"), "PYTHONFAULTHANDLER": "1"}
    from testing.sigint import children_take_sigint

    with children_take_sigint():
        proc = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"ended before the interrupt: {proc.communicate()[1][-3000:]}"
        assert time.monotonic() < deadline, "never got ready"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=60)
        raise AssertionError(f"still running 120 s after the interrupt; its stacks then:\n{err[-6000:]}") from None
    return proc.returncode, [line for line in err.splitlines() if line.strip()]


def _one_interrupted_line(status: int, lines: list[str]) -> str:
    assert status == 130, lines[-20:]
    assert [line for line in lines if line.startswith("interrupted: ")] == lines[-1:], lines[-20:]
    assert not any("Traceback" in line for line in lines), lines
    return lines[-1]


def test_sft_keeps_its_whole_checkpoints_and_says_how_to_resume(tmp_path, tiny_model_dir):
    out = tmp_path / "out"
    argv = [str(REPO / "train" / "sft.py"), str(REPO / "recipes" / "mir_stage1.yaml"), *TINY_SFT,
            "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(out), "--save_strategy", "steps",
            "--save_steps", "2"]
    line = _one_interrupted_line(*_interrupted(argv, tmp_path, lambda: (out / "checkpoint-2" / "trainer_state.json")
                                               .is_file()))
    checkpoints = sorted(out.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    assert checkpoints and all((c / "trainer_state.json").is_file() for c in checkpoints)  # none cut short
    last = checkpoints[-1]
    assert line.startswith(f"interrupted: {last} is whole; to resume: python {REPO / 'train' / 'sft.py'} ")
    assert line.endswith(f"--output_dir {out} --save_strategy steps --save_steps 2 --resume_from_checkpoint {last}")


def test_curriculum_interrupted_before_a_checkpoint_leaves_no_stage_state(tmp_path, tiny_model_dir):
    recipe = tmp_path / "curriculum.yaml"
    recipe.write_text(yaml.safe_dump({
        "output_dir": str(tmp_path / "run"),
        "defaults": {"model_name_or_path": str(tiny_model_dir), "dataset_path": str(SAMPLE / "all_data_rel.json"),
                     "images_root": str(SAMPLE), "use_cpu": True, "per_device_train_batch_size": 2, "max_steps": 1000,
                     "save_strategy": "no", "report_to": "none", "dataloader_num_workers": 0},
        "stages": [{"name": "a", "mir_stage": 1}, {"name": "b", "mir_stage": 2}]}))
    stage = tmp_path / "run" / "a"
    status, lines = _interrupted([str(REPO / "train" / "curriculum.py"), str(recipe)], tmp_path,
                                 lambda: (stage / "stage_started.json").is_file())
    line = _one_interrupted_line(status, lines)
    assert line == (f"interrupted: stage 'a' had saved no checkpoint and starts over; to resume: "
                    f"python train/curriculum.py {recipe}")
    assert not (tmp_path / "run").exists()  # no stage_started.json claiming a start, no empty folders


CTRL_C_INSIDE_MULTIPROCESS = """
import signal, sys
from pathlib import Path
from lookcloser.cli import run
from lookcloser.train.entry import removed_when_interrupted


class CtrlCWhileMultiprocessReadsItsVersion:
    # The one spot where multiprocess/__init__.py's bare except catches the KeyboardInterrupt.
    def find_spec(self, name, path=None, target=None):
        if name == "multiprocess.__info__":
            signal.raise_signal(signal.SIGINT)
        return None


def main(out):
    assert "multiprocess" not in sys.modules
    sys.meta_path.insert(0, CtrlCWhileMultiprocessReadsItsVersion())
    with removed_when_interrupted(out):
        Path(out).mkdir()
        import multiprocess  # what `datasets` imports first, as the SFT trainer is built


sys.exit(run(main, lambda: sys.argv[1:]))
"""


def test_ctrl_c_that_a_library_turns_into_another_error_is_still_an_interrupt(tmp_path):
    """CI once sent the curriculum's SIGINT while ``datasets`` imported ``multiprocess``, whose bare
    ``except:`` turned it into ``ModuleNotFoundError: No module named 'version'``: a traceback and
    exit 1. Here the real multiprocess is imported and the real signal lands at that spot."""
    from testing.sigint import children_take_sigint

    script, out = tmp_path / "ctrl_c.py", tmp_path / "out"
    script.write_text(CTRL_C_INSIDE_MULTIPROCESS)
    with children_take_sigint():
        proc = subprocess.run([sys.executable, str(script), str(out)], check=False, cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONWARNINGS": "ignore"}, timeout=120)
    line = _one_interrupted_line(proc.returncode, [ln for ln in proc.stderr.splitlines() if ln.strip()])
    assert line == f"interrupted: no checkpoint was saved yet, nothing is kept; to resume: python {script} {out}"
    assert not out.exists()


def test_synthetic_builder_leaves_no_images_and_a_rebuild_no_orphans(tmp_path):
    out = tmp_path / "out"
    argv = ["-m", "lookcloser.data_builders", "synthetic", str(SAMPLE), "--count", "5000", "--out", str(out),
            "--no_progress"]
    status, lines = _interrupted(argv, tmp_path, lambda: len(list((out / "data").rglob("*.png"))) >= 3)
    line = _one_interrupted_line(status, lines)
    assert line == f"interrupted: no data set was written to {out}; to resume: python -m data_builders {' '.join(argv[2:])}"
    assert not [p for p in tmp_path.iterdir() if p.name != ".cache"]  # no images, no hidden half data sets

    from lookcloser.data_builders.cli import main

    assert main([*argv[2:4], "--count", "6", "--out", str(out), "--no_progress"]) == 0
    assert main([*argv[2:4], "--count", "2", "--out", str(out), "--no_progress"]) == 0
    tasks = json.loads((out / "TIR-Bench.json").read_text())
    named = {record[key] for record in tasks for key in ("image_1", "image_2") if record[key]}
    assert {str(p.relative_to(out)) for p in (out / "data").rglob("*.png")} == named  # the 6-task build left nothing


def test_eval_keeps_the_finished_episodes_whole(tmp_path, tiny_model_dir):
    out = tmp_path / "eval"
    predictions = out / "mir" / "predictions.jsonl"
    argv = ["-m", "lookcloser.eval", "--model", str(tiny_model_dir), "--benchmarks", "mir,tir_bench", "--out", str(out),
            "--batch_size", "1", "--tools", "false", "--max_new_tokens_per_turn", "8"]
    status, lines = _interrupted(argv, tmp_path, lambda: predictions.is_file() and predictions.read_text().count("\n"))
    line = _one_interrupted_line(status, lines)
    records = [json.loads(text) for text in predictions.read_text().splitlines()]  # every line whole
    assert line.startswith(f"interrupted: kept the finished episodes in {out} ({len(records)} mir")
    assert line.endswith(f"a rerun skips them; to resume: python -m eval {' '.join(argv[2:])}")


def test_grpo_interrupted_while_making_its_tasks_leaves_nothing(tmp_path, tiny_model_dir):
    out = tmp_path / "grpo"
    argv = [str(REPO / "train" / "grpo.py"), str(REPO / "recipes" / "grpo_synthetic.yaml"), "--model_name_or_path",
            str(tiny_model_dir), "--synthetic_images", str(SAMPLE), "--synthetic_count", "5000", "--output_dir",
            str(out), "--use_cpu", "true", "--report_to", "none"]
    status, lines = _interrupted(argv, tmp_path, lambda: len(list(out.rglob("*.png"))) >= 3)
    line = _one_interrupted_line(status, lines)
    assert line.startswith(f"interrupted: no checkpoint was saved yet, nothing is kept; to resume: python {argv[0]} ")
    assert not out.exists()
