"""A checkpoint records how it was prompted; eval takes that by default, flags win; the gray-image control."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from lookcloser.agent.checkpoint_prompting import (
    PROMPTING_FILE,
    prompting_of,
    read_prompting,
    write_prompting,
)
from lookcloser.eval.config import EvalConfig, EvalError
from lookcloser.eval.loaders import EvalItem
from lookcloser.eval.pipeline import (
    apply_checkpoint_prompting,
    gray_out_images,
    prompting_line,
    prompting_summary,
)
from lookcloser.recipes import given_fields


def _checkpoint(tmp_path, stage=1):
    write_prompting(tmp_path, prompting_of({"messages": [{"role": "user", "content": []}]}, stage))
    return tmp_path


def test_stage_4_and_0_record_the_benchmark_prompt_and_system_prompts_are_kept(tmp_path):
    assert read_prompting(str(_checkpoint(tmp_path, 4)))["mir_prompt_stage"] == 0
    row = {"messages": [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}], "tools": ["x"]}
    assert prompting_of(row, None) == {"system_prompt": "Be brief.", "tools": True}
    assert read_prompting(str(tmp_path / "no_such_folder")) == {}


def test_eval_takes_the_checkpoint_prompting_unless_a_flag_or_recipe_key_sets_it(tmp_path):
    ckpt = str(_checkpoint(tmp_path))
    cfg = EvalConfig(model=ckpt)
    sources, _ = apply_checkpoint_prompting(cfg, given_fields(["--model", ckpt]))
    assert (cfg.mir_prompt_stage, cfg.system_prompt, cfg.tools, cfg.max_turns) == (1, "", False, 1)
    assert sources == {"mir_prompt_stage": "checkpoint", "system_prompt": "checkpoint", "tools": "checkpoint",
                       "max_turns": "checkpoint", "environment": "default"}
    assert PROMPTING_FILE in prompting_line(sources)
    assert f"tools=False (from the checkpoint's {PROMPTING_FILE})" in prompting_summary(cfg, sources)
    cfg = EvalConfig(model=ckpt, mir_prompt_stage=0, tools=True)
    sources, _ = apply_checkpoint_prompting(cfg, given_fields(["--model", ckpt, "--mir-prompt-stage", "0", "--tools=true"]))
    assert (cfg.mir_prompt_stage, cfg.tools, cfg.max_turns) == (0, True, 1)
    assert (sources["mir_prompt_stage"], sources["tools"], sources["max_turns"]) == ("given", "given", "checkpoint")
    recipe = tmp_path / "eval.yaml"
    recipe.write_text("mir_prompt_stage: 2\nsystem_prompt: null\n")
    assert {"mir_prompt_stage", "system_prompt", "model"} <= given_fields([str(recipe), "--model", ckpt])


def test_each_benchmark_keeps_the_prompting_of_the_stage_that_trained_it(tmp_path):
    """MIR stage 4 (benchmark prompt, no tools), then a GRPO stage with the crop tool: eval prompts MIR as
    stage 4 did and TIR-Bench with the crop tool; a flag still wins for every benchmark."""
    stage4, grpo = tmp_path / "stage4", tmp_path / "grpo"
    stage4.mkdir(), grpo.mkdir()
    write_prompting(stage4, prompting_of({"messages": []}, 4), benchmark="mir")
    write_prompting(grpo, {"system_prompt": "Use tools.", "tools": True, "environment": "crop"}, base_model=str(stage4))
    assert read_prompting(str(grpo), "tir_bench") == {"system_prompt": "Use tools.", "tools": True,
                                                      "environment": "crop"}
    assert read_prompting(str(grpo), "mir") == {"mir_prompt_stage": 0, "system_prompt": "", "tools": False,
                                                "max_turns": 1, "environment": None}
    cfg = EvalConfig(model=str(grpo), benchmarks="tir_bench,mir")
    sources, own = apply_checkpoint_prompting(cfg, given_fields(["--model", str(grpo)]))
    assert (cfg.tools, cfg.environment) == (True, "crop")
    # what differs from the rest (mir_prompt_stage 0 is already eval's default)
    assert own == {"mir": {"system_prompt": "", "tools": False, "max_turns": 1, "environment": None}}
    assert sources["tools"] == "checkpoint"
    cfg = EvalConfig(model=str(grpo), benchmarks="tir_bench,mir", tools=False)
    _, own = apply_checkpoint_prompting(cfg, given_fields(["--model", str(grpo), "--tools", "false"]))
    assert cfg.tools is False and all("tools" not in entry for entry in own.values())


def test_the_shipped_eval_recipe_leaves_prompting_to_the_checkpoint(tmp_path):
    from lookcloser.recipes import load_recipe_mapping
    from tests.conftest import REPO

    ckpt = str(_checkpoint(tmp_path))
    recipe = str(REPO / "recipes" / "eval.yaml")
    assert not set(load_recipe_mapping(REPO / "recipes" / "eval.yaml")) & {
        "tools", "max_turns", "mir_prompt_stage", "system_prompt", "environment"}
    cfg = EvalConfig(model=ckpt)
    sources, _ = apply_checkpoint_prompting(cfg, given_fields([recipe, "--model", ckpt]))
    assert (cfg.mir_prompt_stage, cfg.tools, cfg.max_turns) == (1, False, 1)
    assert sources["tools"] == "checkpoint"


def test_a_broken_prompting_file_is_one_clear_error(tmp_path):
    (tmp_path / PROMPTING_FILE).write_text("[1, 2")
    with pytest.raises(EvalError, match=PROMPTING_FILE + ": not valid JSON"):
        apply_checkpoint_prompting(EvalConfig(model=str(tmp_path)), set())


def test_gray_control_replaces_every_image_with_flat_gray_of_the_same_size(tmp_path):
    paths = []
    for k, size in enumerate([(64, 48), (20, 30)]):
        paths.append(str(tmp_path / f"{k}.png"))
        Image.new("RGB", size, (220, 30, 30)).save(paths[-1])
    items = {"mir": [EvalItem(id="a", benchmark="mir", example={"images": list(paths)}, gold={}, tags={}),
                     EvalItem(id="b", benchmark="mir", example={"images": [paths[0]]}, gold={}, tags={})],
             # ImageMining's loader names its one picture `image`
             "imagemining": [EvalItem(id="c", benchmark="imagemining", example={"image": paths[1]}, gold={}, tags={})]}
    gray_out_images(items, tmp_path / "gray")
    first, second = items["mir"][0].example["images"], items["mir"][1].example["images"]
    assert second == first[:1] and not set(first) & set(paths)  # one gray copy per source image
    assert items["imagemining"][0].example["image"] == first[1]
    for path, original in zip(first, paths):
        with Image.open(path) as gray, Image.open(original) as real:
            assert gray.size == real.size and gray.convert("RGB").getcolors() == [(gray.width * gray.height,
                                                                                     (128, 128, 128))]
    assert json.dumps(items["mir"][0].example)  # still plain paths


def test_a_recorded_environment_is_offered_only_to_its_own_benchmark(tmp_path, tiny_model_dir):
    """A photo-search checkpoint (the tools of DISBench's users, nothing per benchmark) evaluated on TIR-Bench
    too: TIR-Bench gets its own environment, not the photo tools whose every episode needs a DISBench user
    (before, all its items failed); a flag still wins for every benchmark."""
    import shutil

    from lookcloser.eval.__main__ import main

    ckpt = tmp_path / "photo_search"
    shutil.copytree(tiny_model_dir, ckpt)
    write_prompting(ckpt, {"system_prompt": "", "tools": True, "environment": "photo_search"})
    assert read_prompting(str(ckpt), "disbench")["environment"] == "photo_search"
    assert read_prompting(str(ckpt), "tir_bench") == {"system_prompt": "", "tools": True, "environment": None}
    assert read_prompting(str(ckpt))["environment"] == "photo_search"  # no benchmark named: as recorded
    cfg = EvalConfig(model=str(ckpt), benchmarks="tir_bench,disbench", environment="crop")
    _, own = apply_checkpoint_prompting(cfg, given_fields(["--model", str(ckpt), "--environment", "crop"]))
    assert cfg.environment == "crop" and own == {}

    metrics = main(["--model", str(ckpt), "--benchmarks", "tir_bench,disbench", "--limit", "2",
                    "--max_new_tokens_per_turn", "8", "--max_turns", "2", "--out", str(tmp_path / "eval")])
    failed = {name: m["failed"] for name, m in metrics["benchmarks"].items()}
    assert set(failed) >= {"tir_bench", "disbench"} and not any(failed.values()), failed
