"""The curriculum runner: two MIR stages chained on the tiny model, markers, resume, recipe errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from lookcloser.train.curriculum import MARKER, main, plan

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"


def _recipe(tmp_path: Path, **extra) -> Path:
    recipe = {
        "output_dir": str(tmp_path / "run"),
        "defaults": {
            "model_name_or_path": "lookcloser/tiny-qwen3-vl", "dtype": "float32", "images_root": str(SAMPLE),
            "dataset_path": str(SAMPLE / "all_data_rel.json"), "max_train_samples": 4, "max_steps": 2,
            "per_device_train_batch_size": 2, "learning_rate": 1.0e-3, "max_length": 1024,
            "train_sampling_strategy": "sequential", "save_strategy": "no", "report_to": "none",
            "logging_steps": 1, "use_cpu": True, "dataloader_num_workers": 0,
        },
        "stages": [{"name": "mir_stage1", "mir_stage": 1}, {"name": "mir_stage2", "mir_stage": 2}],
        **extra,
    }
    path = tmp_path / "curriculum.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def _weights(folder: Path) -> bytes:
    return (folder / "model.safetensors").read_bytes()


def test_two_stages_chain_and_rerun_skips(tmp_path, capsys):
    recipe = _recipe(tmp_path)
    assert main([str(recipe)]) == 0
    run = tmp_path / "run"
    for name in ("mir_stage1", "mir_stage2"):
        assert (run / name / MARKER).is_file() and (run / name / "model.safetensors").is_file()
    stage2 = yaml.safe_load((run / "mir_stage2" / "stage_recipe.yaml").read_text())
    assert stage2["model_name_or_path"] == str(run / "mir_stage1") and stage2["mir_stage"] == 2
    stage1 = yaml.safe_load((run / "mir_stage1" / "stage_recipe.yaml").read_text())
    assert stage1["model_name_or_path"] == "lookcloser/tiny-qwen3-vl"
    assert _weights(run / "mir_stage1") != _weights(run / "mir_stage2")  # stage 2 trained on top of stage 1
    first = {name: _weights(run / name) for name in ("mir_stage1", "mir_stage2")}
    assert capsys.readouterr().out.splitlines()[-1] == f"[curriculum] done: final checkpoint {run.resolve() / 'mir_stage2'}"

    # Rerun: both finished, nothing trains.
    assert main([str(recipe)]) == 0
    out = capsys.readouterr().out
    assert out.count("(done, skipped)") == 2 and "finished in" not in out
    assert {name: _weights(run / name) for name in first} == first

    # Resume: only the stage without a marker trains again.
    (run / "mir_stage2" / MARKER).unlink()
    assert main([str(recipe)]) == 0
    out = capsys.readouterr().out
    assert "mir_stage1: finished" not in out and "mir_stage2: finished" in out
    assert json.loads((run / "mir_stage2" / MARKER).read_text())["name"] == "mir_stage2"


def test_plan_skip_and_errors(tmp_path):
    recipe = _recipe(tmp_path, stages=[{"name": "a", "mir_stage": 1}, {"name": "b", "mir_stage": 2},
                                       {"name": "c", "mir_stage": 3, "script": "train/grpo.py"}])
    stages = plan(recipe, skip=("b",))
    assert [s.name for s in stages] == ["a", "c"] and stages[1].config["model_name_or_path"] == str(stages[0].output_dir)
    assert stages[1].script == "train/grpo.py" and stages[1].config["max_steps"] == 2

    own_keys = _recipe(tmp_path, stages=[{"name": "a"}, {"name": "g", "use_defaults": False, "beta": 0.0}])
    grpo = plan(own_keys)[1]
    assert grpo.config == {"beta": 0.0, "output_dir": str(tmp_path / "run" / "g"),
                           "model_name_or_path": str(tmp_path / "run" / "a")}

    bad = _recipe(tmp_path, stages=[{"name": "a"}, {"name": "b", "model_name_or_path": "x"}])
    with pytest.raises(ValueError, match="starts from the previous stage's checkpoint"):
        plan(bad)
    with pytest.raises(ValueError, match="unique 'name'"):
        plan(_recipe(tmp_path, stages=[{"name": "a"}, {"name": "a"}]))


def test_missing_stage_data_fails_before_training(tmp_path, capsys):
    recipe = _recipe(tmp_path, stages=[{"name": "think", "dataset_path": str(tmp_path / "nope")},
                                       {"name": "mir_stage1", "mir_stage": 1}])
    assert main([str(recipe)]) == 2
    assert f"stage 'think' (train/sft.py): dataset_path: {tmp_path / 'nope'} not found" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_a_data_stage_at_its_old_train_path_names_its_new_home(tmp_path, capsys):
    recipe = _recipe(tmp_path, stages=[{"name": "data", "script": "train/grpo_tasks.py", "use_defaults": False,
                                        "makes_model": False}, {"name": "mir_stage1", "mir_stage": 1}])
    assert main([str(recipe)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [("error: stage 'data': train/grpo_tasks.py moved to data_builders: set "
                   "`script: data_builders/commands/tool_tasks.py` (the same keys; also "
                   "`python -m data_builders tool-tasks`)")]
    assert not (tmp_path / "run").exists()


def test_default_recipe_plans_the_whole_pipeline():
    stages = plan(REPO / "recipes" / "mir_curriculum.yaml")
    names = ["photo_data", "web_data", "photo_warmup", "imagenet_think_data", "imagenet_think", "mir_stage1",
             "mir_stage2", "mir_stage3", "mir_stage4", "tool_data", "look", "cold_start_data", "sft", "grpo_data",
             "grpo", "eval"]
    assert [s.name for s in stages] == names
    by = {s.name: s for s in stages}
    assert [by[f"mir_stage{k}"].config.get("mir_stage") for k in (1, 2, 3, 4)] == [1, 2, 3, 4]
    assert by["imagenet_think"].config["dataset_path"].startswith(str(by["imagenet_think_data"].output_dir))
    # the photo search is learned first, from the untrained model; the MIR stages chain from it
    assert by["photo_warmup"].config["model_name_or_path"] == "lookcloser/tiny-qwen3-vl"
    assert by["imagenet_think"].config["model_name_or_path"] == str(by["photo_warmup"].output_dir)
    # the tool stages chain from stage 4's checkpoint; the data and eval stages are outside the chain
    assert by["look"].config["model_name_or_path"] == str(by["mir_stage4"].output_dir)
    assert by["sft"].config["model_name_or_path"] == str(by["look"].output_dir)
    assert not any(by[n].makes_model for n in ("photo_data", "web_data", "tool_data", "cold_start_data",
                                              "grpo_data", "eval"))
    # the cold start mixes the three tool skills' SFT rows; GRPO mixes all four kinds, each row its own tools
    assert by["sft"].config["dataset_path"] == str(by["cold_start_data"].output_dir)
    assert sorted(s.rsplit("=", 1)[1] for s in by["grpo_data"].config["sources"]) == [
        "crop", "none", "photo_search", "web_search"]
    grpo = by["grpo"]  # GRPO on its own base recipe, no SFT defaults
    assert grpo.script == "train/grpo.py" and grpo.config["model_name_or_path"] == str(by["sft"].output_dir)
    assert "faithful_upstream" not in grpo.config and grpo.config["environment"] == "per_row"
    assert grpo.config["dataset_path"] == str(by["grpo_data"].output_dir)
    assert by["eval"].config["stages"] == ["photo_warmup", *names[4:9], "look", "sft", "grpo"]
    assert "benchmarks" not in by["eval"].config  # the registry's default run: the four (tests/test_compare.py)


def test_set_overrides_a_stage_or_the_defaults_and_is_checked_like_the_recipe(tmp_path, capsys):
    recipe = _recipe(tmp_path)
    stages = plan(recipe, overrides=("mir_stage2.learning_rate=5.0e-4", "max_steps=3", "mir_stage1.dataset_path=x"))
    assert [s.config["max_steps"] for s in stages] == [3, 3]  # the defaults: every stage
    assert [s.config["learning_rate"] for s in stages] == [1.0e-3, 5.0e-4]  # one stage
    assert stages[0].config["dataset_path"] == "x" and stages[1].config["dataset_path"] != "x"

    for override, message in (
            ("mir_stag2.mir_stage=3", "--set mir_stag2.mir_stage=3: no stage named 'mir_stag2'; did you mean mir_stage2?"),
            ("mir_stage2.mir_stage=7", "stage 'mir_stage2' (train/sft.py): mir_stage must be between 0 and 4, got 7"),
            ("mir_stage1.learnin_rate=1", f"{recipe}: unknown recipe key(s) 'learnin_rate': no config field"),
            ("learning_rate=-1", "stage 'mir_stage1' (train/sft.py): learning_rate must be >= 0, got -1"),
            ("mir_stage1", "--set mir_stage1: write STAGE.KEY=VALUE or KEY=VALUE")):
        for dry_run in ([], ["--dry_run"]):  # the dry run runs exactly the checks a run runs first
            assert main([str(recipe), "--set", override, *dry_run]) == 2
            err = capsys.readouterr().err.splitlines()
            assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err
    assert not (tmp_path / "run").exists()  # nothing written
