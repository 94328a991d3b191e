"""Dashboards (issue 26.6): W&B offline runs read back from the files wandb writes, and the chart and
run record every training run leaves beside its checkpoint. Real tiny model, real runs, no mocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from PIL import Image

from lookcloser.train import sft
from testing.wandb_offline import offline_runs
from tests.conftest import REPO

TINY_SFT = ["--max_train_samples", "4", "--per_device_train_batch_size", "2", "--logging_steps", "1",
            "--warmup_steps", "0", "--lr_scheduler_type", "constant"]


@pytest.fixture(autouse=True)
def _offline_wandb(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)  # recipes name data relative to the repo root
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_DATA_DIR", str(tmp_path / "wandb-data"))  # where logged tables are staged
    monkeypatch.setenv("WANDB_SILENT", "true")
    for name in ("WANDB_RUN_GROUP", "WANDB_NAME"):
        monkeypatch.delenv(name, raising=False)


def _finish_wandb():
    import wandb

    wandb.finish()  # what the end of a script does (atexit): flushes the offline run file


def test_sft_logs_config_and_held_out_samples_then_eval_logs_predictions_and_the_training_run(
        tiny_model_dir, tmp_path):
    from lookcloser.checkpoint_digest import checkpoint_digest
    from lookcloser.data_builders.sample_mir import generate_sample
    from lookcloser.eval.__main__ import main as eval_main
    from lookcloser.train.curves import CHART_FILE
    from lookcloser.train.run_records import RUN_FILE

    held_out = generate_sample(tmp_path / "held_out", per_family=1, seed=7)
    out = Path(sft.main(*sft.parse_args([
        "recipes/mir_stage1.yaml", *TINY_SFT, "--model_name_or_path", str(tiny_model_dir), "--max_steps", "3",
        "--output_dir", str(tmp_path / "sft"), "--report_to", "wandb", "--wandb_samples", "2",
        "--wandb_samples_steps", "2", "--wandb_samples_max_new_tokens", "4", "--wandb_samples_path", str(held_out)])))
    _finish_wandb()
    (run,) = offline_runs(tmp_path)
    config = run.config
    assert config["recipe_text"] == (REPO / "recipes" / "mir_stage1.yaml").read_text()
    assert config["base_model"] == config["start_model"] == str(tiny_model_dir)
    assert config["wandb_samples"] == 2 and config["mir_stage"] == 1 and config["learning_rate"] == pytest.approx(3e-3)
    # The samples table: at the start, at step 2 and at the end, from the held-out file, images included.
    table = run.table("samples")
    assert len(run.tables["samples"]) == 3
    columns = table["columns"]
    assert columns == ["step", "id", "split", "images", "question", "prediction", "trajectory", "gold"]
    assert [row[0] for row in table["data"]] == [0, 0, 2, 2, 3, 3]
    assert {row[2] for row in table["data"]} == {"held-out"}
    held_out_records = json.loads(held_out.read_text())
    first_question = held_out_records[0]["question"].split("<image>")[0].strip()
    for row in table["data"]:
        assert row[4].startswith("[user] ") and isinstance(row[5], str) and row[7] in "ABCDE"
        assert row[3]["_type"] == "image-file"
        with Image.open(table["files"][row[3]["path"]]) as img:
            assert img.size == (row[3]["width"], row[3]["height"])
    assert first_question[:20] in table["data"][0][4]

    # Beside the checkpoint, with or without W&B: the chart and the record naming the run.
    record = json.loads((out / RUN_FILE).read_text())
    assert record["wandb"]["id"] == run.run_id and record["base_model"] == str(tiny_model_dir)
    with Image.open(out / CHART_FILE) as chart:
        assert chart.format == "PNG"

    # Eval: a per-item predictions table, the checkpoint's digest and the training run's id.
    eval_main(["--model", str(out), "--benchmarks", "mir", "--limit", "2", "--out", str(tmp_path / "eval"),
               "--max_new_tokens_per_turn", "4", "--wandb", "true", "--wandb_project", "lookcloser-test",
               "--save_trajectories", "false"])
    evaluation = next(r for r in offline_runs(tmp_path) if r.run_id != run.run_id)
    assert evaluation.config["checkpoint_digest"] == checkpoint_digest(out)
    assert evaluation.config["training_run_id"] == run.run_id
    predictions = evaluation.table("mir/predictions")
    assert predictions["columns"] == ["id", "images", "question", "prediction", "gold", "score", "status"]
    assert len(predictions["data"]) == 2
    for row in predictions["data"]:
        assert row[1]["_type"] == "image-file" and row[4].startswith("<answer>") and row[5] in (0.0, 1.0)
    report = (tmp_path / "eval" / "report.md").read_text()
    assert f"digest `{checkpoint_digest(out)}`" in report and f"W&B run `{run.run_id}`" in report


@pytest.mark.usefixtures("one_torch_thread")
def test_grpo_names_the_base_model_not_the_cold_start_and_samples_with_its_tools(tiny_model_dir, tmp_path):
    from lookcloser.train import grpo

    # The cold start is an earlier run (a curriculum's sft stage): one SFT step from the tiny model.
    cold_start = sft.main(*sft.parse_args([
        "recipes/mir_stage1.yaml", *TINY_SFT, "--model_name_or_path", str(tiny_model_dir), "--max_steps", "1",
        "--output_dir", str(tmp_path / "sft"), "--report_to", "none", "--save_strategy", "no"]))
    grpo.main(*grpo.parse_args([
        "recipes/grpo_synthetic.yaml", "--model_name_or_path", str(cold_start), "--output_dir",
        str(tmp_path / "grpo"), "--synthetic_count", "2", "--synthetic_tasks", "visual_search", "--max_steps", "1",
        "--per_device_train_batch_size", "2", "--num_generations", "2", "--max_completion_length", "32",
        "--max_turn_tokens", "16", "--bf16", "false", "--use_cpu", "true", "--save_strategy", "no",
        "--logging_steps", "1", "--dataloader_num_workers", "0", "--report_to", "wandb",
        "--wandb_samples", "1", "--wandb_samples_max_new_tokens", "16"]))
    _finish_wandb()
    (run,) = offline_runs(tmp_path)
    assert run.config["ModelConfig"]["model_name_or_path"] == run.config["start_model"] == str(cold_start)
    assert run.config["base_model"] == str(tiny_model_dir)  # what the chain started from
    assert "recipe_text" in run.config and run.config["reward_funcs"] == ["accuracy", "format", "tool_use"]
    table = run.table("samples")
    assert [row[0] for row in table["data"]] == [0, 1] and table["data"][0][2] == "train"
    assert "[tool" in table["data"][0][6] or table["data"][0][6].startswith("[assistant]")


def test_curriculum_stages_share_one_group_with_their_name_and_order(tiny_model_dir, tmp_path):
    from lookcloser.train import curriculum
    from lookcloser.train.run_records import RUN_FILE

    recipe = {
        "output_dir": str(tmp_path / "cur"),
        "defaults": {"model_name_or_path": str(tiny_model_dir), "dataset_path": "data/mir_sample/all_data_rel.json",
                     "max_train_samples": 2, "per_device_train_batch_size": 2, "max_steps": 1, "logging_steps": 1,
                     "report_to": "wandb", "save_strategy": "no", "wandb_samples": 0, "bf16": False,
                     "dataloader_num_workers": 0},
        "stages": [{"name": "first", "mir_stage": 1}, {"name": "second", "mir_stage": 2}],
    }
    path = tmp_path / "curriculum.yaml"
    path.write_text(yaml.safe_dump(recipe))
    assert curriculum.main([str(path)]) == 0
    runs = offline_runs(tmp_path)
    assert len(runs) == 2, "one W&B run per stage"
    group = str(tmp_path / "cur")
    assert {r.group for r in runs} == {group}
    by_stage = {r.config["curriculum_stage"]: r for r in runs}
    assert by_stage["first"].config["curriculum_stage_order"] == 1
    assert by_stage["second"].config["curriculum_stage_order"] == 2
    assert by_stage["second"].config["curriculum_stages"] == 2 and by_stage["second"].name == f"{group}/second"
    # The second stage started from the first's checkpoint; both name the chain's base model.
    assert by_stage["second"].config["start_model"] == str(tmp_path / "cur" / "first")
    assert by_stage["second"].config["base_model"] == str(tiny_model_dir)
    record = json.loads((tmp_path / "cur" / "second" / RUN_FILE).read_text())
    assert record["curriculum"] == {"group": group, "stage": "second", "order": 2, "stages": 2}
