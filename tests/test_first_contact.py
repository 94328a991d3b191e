"""A new user's first mistakes and first Ctrl-C, through the launch line the README writes (issue 41).

The README's quickstart line is read from the README itself (its launcher: the words before
``train/sft.py``), so this table follows it if it changes. Each mistake runs in a fresh process from
the checkout, as the README is used: exit status 2, stderr's last line the one ``error:`` line, no
traceback, nothing written. Ctrl-C is SIGINT to the command's whole process group, as a terminal
sends it: exit 130, one ``interrupted:`` line, no traceback, no process of the group left behind.
``accelerate launch -q`` (the README's way to run several processes) gets the mistake row it
documents: our line last, no traceback, accelerate's own exit status 1.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _readme_launcher() -> list[str]:
    """What the README's quickstart types before ``train/sft.py`` (e.g. ``python``)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"&& (.*?)train/sft\.py recipes/mir_stage1\.yaml\n", text)
    assert match, "README.md has no quickstart line `... && LAUNCHER train/sft.py recipes/mir_stage1.yaml`"
    return shlex.split(match.group(1))


LAUNCH = _readme_launcher()
SFT = ["train/sft.py", "recipes/mir_stage1.yaml"]
# (the arguments after the launcher, a phrase of the one error line)
MISTAKES = [
    (["train/grpo.py", "recipes/grpo_synthetic.yaml", "--reward_funcs", "accuracy", "fromat"],
     "reward_funcs: unknown name 'fromat'; did you mean format?"),
    ([*SFT, "--learning_rate", "-1e-4"], "learning_rate must be >= 0, got -0.0001"),
    (["train/sft.py", "recipes/mir_stage_1.yaml"], "recipes/mir_stage_1.yaml: recipe file not found"),
    (["train/sft.py", "{typo}"], "learnig_rate"),  # a recipe key typo: named, with its closest key
    ([*SFT, "--mir_stage", "7"], "mir_stage must be between 0 and 4, got 7"),
    ([*SFT, "--model_name_or_path", "README.md"], "README.md is a file, not a model folder"),
]


def _env(tmp: Path) -> dict:
    return {**os.environ, "OMP_NUM_THREADS": "1", "LOOKCLOSER_CACHE": str(tmp / "cache"), "HF_HUB_OFFLINE": "1",
            "WANDB_MODE": "disabled"}


def _outputs() -> list[str]:
    return sorted(str(p) for p in (REPO / "outputs").rglob("*")) if (REPO / "outputs").is_dir() else []


def _run(launch: list[str], args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    typo = tmp / "typo.yaml"
    typo.write_text((REPO / "recipes" / "mir_stage1.yaml").read_text().replace("learning_rate:", "learnig_rate:"))
    args = [str(typo) if a == "{typo}" else a for a in args]
    return subprocess.run([*launch, *args], cwd=REPO, env=_env(tmp), capture_output=True, text=True, timeout=300,
                          check=False)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    before = _outputs()
    tmp = tmp_path_factory.mktemp("first_contact")
    with ThreadPoolExecutor(3) as pool:
        done = list(pool.map(lambda case: _run(LAUNCH, case[0], tmp), MISTAKES))
    assert _outputs() == before  # nothing trained, nothing written
    assert not (tmp / "cache").exists()  # no model built
    return done


def test_the_readme_launches_with_python():
    assert LAUNCH == ["python"]  # the line the table below runs; accelerate launch decides its own exit


@pytest.mark.parametrize("case", range(len(MISTAKES)), ids=[" ".join(a[1:])[-40:] for a, _ in MISTAKES])
def test_a_first_mistake_is_one_error_line_and_exit_2(outcomes, case):
    done, phrase = outcomes[case], MISTAKES[case][1]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert lines and lines[-1].startswith("error: ") and phrase in lines[-1], done.stderr
    assert [line for line in lines if line.startswith("error:")] == lines[-1:], done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.slow  # about 10 s: accelerate's start-up and the script's
def test_a_mistake_under_accelerate_launch_q_is_our_line_last(tmp_path):
    done = _run(["accelerate", "launch", "-q", "--config_file", "accelerate_configs/cpu_1proc.yaml"],
                MISTAKES[1][0], tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1] == "error: learning_rate must be >= 0, got -0.0001", done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr  # no notice, no traceback
    assert done.returncode == 1  # accelerate's status for any failed child (commands/launch.py, simple_launcher)


@pytest.mark.slow  # about 17 s: one training start
def test_ctrl_c_to_the_process_group_is_one_line_exit_130_and_nothing_left(tmp_path):
    from testing.sigint import children_take_sigint

    out = tmp_path / "run"
    with children_take_sigint():  # as a terminal's foreground command, even when CI runs pytest in the background
        proc = subprocess.Popen([*LAUNCH, *SFT, "--output_dir", str(out), "--max_steps", "5000", "--save_strategy",
                                 "steps", "--save_steps", "2"], cwd=REPO, env={**_env(tmp_path), "PYTHONWARNINGS": "ignore"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not any(out.glob("checkpoint-*/trainer_state.json")):  # training, with a whole checkpoint kept
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "never saved a checkpoint"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C on a terminal does: the whole foreground group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True, check=False).stdout.split()
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == 130, lines[-20:]
    assert [line for line in lines if line.startswith("interrupted: ")] == lines[-1:], lines[-20:]
    assert "--resume_from_checkpoint" in lines[-1] and "Traceback" not in err, lines[-20:]
    assert left == [], left


def test_plain_python_takes_the_threads_accelerate_would_give():
    """OMP_NUM_THREADS when set, else 1 (torch's one per core oversubscribes a shared CPU); a launcher's
    process and an in-process call (the tests, a curriculum's stage) are left as they are."""
    probe = ("import atexit, runpy, sys, torch; atexit.register(lambda: print('threads', torch.get_num_threads())); "
             "sys.argv = ['train/sft.py', '--help']; runpy.run_path('train/sft.py', run_name='__main__')")

    def threads(omp: str | None) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "LOCAL_RANK")}
        env.update({"OMP_NUM_THREADS": omp} if omp else {})
        done = subprocess.run([LAUNCH[0], "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=300, check=False)
        return done.stdout.splitlines()[-1]

    with ThreadPoolExecutor(2) as pool:
        assert list(pool.map(threads, [None, "2"])) == ["threads 1", "threads 2"]
