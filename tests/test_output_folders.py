"""A training run never silently writes over another run's checkpoint (issue 41, item 4).

A folder holding a checkpoint is trained into again only by the same run (the settings its
``lookcloser_run.json`` records equal the new run's), a resume (``--resume_from_checkpoint``) or an
explicit ``--overwrite_output_dir true``; anything else is one ``error:`` line before any work. The
README and docs never send two different training commands into one folder. Real parser, real files;
the finished checkpoint is the real tiny model's folder with the record a run writes.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from lookcloser.errors import RecipeError

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"


def _sft(out: Path, *flags: str):
    from lookcloser.train.sft import parse_args

    return parse_args([str(REPO / "recipes" / "mir_stage1.yaml"), "--dataset_path", str(SAMPLE / "all_data_rel.json"),
                       "--images_root", str(SAMPLE), "--output_dir", str(out), *flags])


def _finished_run(out: Path, tiny_model_dir: Path, settings: dict | None) -> None:
    """What a finished run leaves: an ordinary checkpoint and its run record (train/run_records.py)."""
    shutil.copytree(tiny_model_dir, out)
    (out / "lookcloser_run.json").write_text(json.dumps({"kind": "sft", "settings": settings}))


def test_another_runs_checkpoint_is_one_error_unless_overwritten_or_resumed(tmp_path, tiny_model_dir):
    out = tmp_path / "mir_stage1"
    first = _sft(out)[0].run_settings
    _finished_run(out, tiny_model_dir, first)
    _sft(out)  # the same run again: allowed (it trains the same checkpoint)
    # The README's override example, into the quickstart's folder: another run.
    with pytest.raises(RecipeError) as err:
        _sft(out, "--mir_stage", "2", "--learning_rate", "1e-4")
    message = str(err.value)
    assert message.startswith(f"output_dir: {out} holds another run's checkpoint (trained with other settings "
                              "(learning_rate, mir_stage))"), message
    assert "--overwrite_output_dir true" in message
    _sft(out, "--mir_stage", "2", "--overwrite_output_dir", "true")
    checkpoint = out / "checkpoint-4"
    checkpoint.mkdir()
    (checkpoint / "trainer_state.json").write_text("{}")
    _sft(out, "--mir_stage", "2", "--resume_from_checkpoint", str(checkpoint))
    # A folder no run of ours recorded (a model copied there, an older run): said so too.
    (out / "lookcloser_run.json").unlink()
    with pytest.raises(RecipeError, match="holds another run's checkpoint \\(not written by this command\\)"):
        _sft(out)


def test_an_empty_folder_or_one_without_a_checkpoint_is_free(tmp_path):
    out = tmp_path / "out"
    _sft(out)
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _sft(out, "--learning_rate", "1e-4")


def test_grpo_checks_its_folder_too(tmp_path, tiny_model_dir):
    from lookcloser.train.grpo import parse_args

    out = tmp_path / "grpo"
    _finished_run(out, tiny_model_dir, {"learning_rate": 1.0})
    with pytest.raises(RecipeError, match="holds another run's checkpoint"):
        parse_args([str(REPO / "recipes" / "grpo_synthetic.yaml"), "--output_dir", str(out)])


def test_every_documented_training_command_writes_its_own_folder():
    """Each `train/sft.py` / `train/grpo.py` line of the README and docs/ names a recipe whose output_dir
    (or its own --output_dir) no other documented command with other settings uses."""
    import yaml

    seen: dict[str, str] = {}
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = re.sub(r"\\\n\s*", " ", doc.read_text(encoding="utf-8"))
        for line in text.splitlines():
            match = re.search(r"(?:python|accelerate launch[^#]*?) (train/(?:sft|grpo)\.py) (?:--config )?(recipes/\S+\.yaml)"
                              r"([^#`]*)", line)
            if not match:
                continue
            flags = match.group(3).split()
            out = flags[flags.index("--output_dir") + 1] if "--output_dir" in flags else \
                yaml.safe_load((REPO / match.group(2)).read_text())["output_dir"]
            settings = " ".join(f for f in flags if f not in ("--report_to", "wandb", "--output_dir", out))
            command = f"{match.group(2)} {settings}".strip()
            assert seen.setdefault(out, command) == command, (doc.name, out, seen[out], command)
    assert len(seen) >= 3, seen
