"""A user's command-line mistake is one ``error:`` line and exit 2 at every entry point (issue 13).

Flags are never abbreviated and an unknown one names the closest valid flag; ``--help`` is short
and starts with the recipe form; our recipes parse without deprecation warnings; a truncated
parquet shard and a missing model folder are one line each. All in-process (no subprocess).
"""

from __future__ import annotations

import dataclasses
import sys
import time
import warnings
from pathlib import Path

import pytest

from lookcloser.recipes import RecipeError

REPO = Path(__file__).resolve().parents[1]
RECIPE = str(REPO / "recipes" / "mir_stage1.yaml")


def _sft_args(*extra: str):
    from lookcloser.train.sft import parse_args

    return parse_args([RECIPE, *extra])


def test_misspelt_flag_names_the_closest_valid_one():
    with pytest.raises(RecipeError, match=r"^unknown flag --learnin_rate; did you mean --learning_rate\?"):
        _sft_args("--learnin_rate", "1e-3")
    assert _sft_args("--learning_rate", "1e-3")[1].learning_rate == 1e-3


def test_flags_are_never_abbreviated():
    # argparse would take --learning_rat as --learning_rate: the typo silently "works".
    with pytest.raises(RecipeError, match=r"unknown flag --learning_rat; did you mean --learning_rate\?"):
        _sft_args("--learning_rat", "1e-3")


def test_bad_value_and_bad_recipe_key_are_one_line():
    with pytest.raises(RecipeError, match=r"--learning_rate.*invalid float value: 'fast'"):
        _sft_args("--learning_rate", "fast")


def test_deprecated_checkpointing_flag_overrides_the_recipe():
    # The recipe sets activation_checkpointing: false; transformers would let that silently win
    # over the deprecated alias given on the command line (a GPU run then ran out of memory).
    for flag in (["--gradient_checkpointing", "true"], ["--gradient_checkpointing=true"]):
        args = _sft_args(*flag)[1]
        assert args.activation_checkpointing is True and args.gradient_checkpointing is True


def _one_error_line(capsys, call) -> str:
    with pytest.raises(SystemExit) as exit_info:
        sys.exit(call())
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_the_train_script_entry_prints_one_line_and_exits_2(capsys):
    from lookcloser.cli import run
    from lookcloser.train.sft import main, parse_args

    line = _one_error_line(capsys, lambda: run(main, lambda: parse_args([RECIPE, "--learnin_rate", "1e-3"])))
    assert "--learnin_rate" in line and "--learning_rate" in line


def test_missing_model_folder_is_one_line_without_a_hub_call(capsys, tmp_path, monkeypatch):
    import huggingface_hub

    from lookcloser.cli import run
    from lookcloser.train.sft import main, parse_args

    # The hub cannot exist here: any call to it fails the test (a stand-in for the real network).
    def no_hub(*args, **kwargs):
        raise AssertionError("a missing local folder must not become a hub lookup")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_hub)
    monkeypatch.setattr("transformers.utils.hub.hf_hub_download", no_hub, raising=False)
    start = time.monotonic()
    line = _one_error_line(capsys, lambda: run(main, lambda: parse_args(
        [RECIPE, "--model_name_or_path", "outputs/nope", "--output_dir", str(tmp_path / "o")])))
    assert "outputs/nope: model folder not found" in line
    assert time.monotonic() - start < 20


def test_eval_cli_errors_are_one_line(capsys, monkeypatch):
    import sys

    from lookcloser.eval.__main__ import cli

    monkeypatch.setattr(sys, "argv", ["python -m eval", "--modle", "x"])
    assert "unknown flag --modle; did you mean --model?" in _one_error_line(capsys, cli)
    monkeypatch.setattr(sys, "argv", ["python -m eval", "--model", "outputs/nope"])
    assert "outputs/nope: model folder not found" in _one_error_line(capsys, cli)
    monkeypatch.setattr(sys, "argv", ["python -m eval", "prepare", "--benchmark", "mir", "--data_root", "/tmp"])
    assert "unknown flag --benchmark; did you mean --benchmarks?" in _one_error_line(capsys, cli)


def test_eval_unknown_environment_is_one_line(capsys, monkeypatch, tiny_model_dir, tmp_path):
    import sys

    from lookcloser.eval.__main__ import cli

    monkeypatch.setattr(sys, "argv", ["python -m eval", "--model", str(tiny_model_dir), "--benchmarks", "tir_bench",
                                      "--environment", "nope", "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as exit_info:
        cli()
    assert exit_info.value.code == 2
    # checked as the config is parsed: one line, before the model loads or the output folder is made
    assert capsys.readouterr().err.splitlines() == [
        ("error: environment: unknown name 'nope' (choose from tir_bench, mir, synthetic, crop, disbench, photo_search, "
         "imagemining, web_search, tir_bench+python, mir+python, synthetic+python, crop+python)")]
    assert not (tmp_path / "out").exists()


def test_eval_prepare_unknown_benchmark_is_one_line(capsys, monkeypatch, tmp_path):
    import sys

    from lookcloser.eval.__main__ import cli

    monkeypatch.setattr(sys, "argv", ["python -m eval", "prepare", "--benchmarks", "tir_bench,nope",
                                      "--data-root", str(tmp_path)])  # the dashed alias still parses
    with pytest.raises(SystemExit) as exit_info:
        cli()
    assert exit_info.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    from lookcloser.eval.benchmarks import BENCHMARKS

    assert err == [f"error: --benchmarks: unknown benchmark 'nope' (choose from {', '.join(BENCHMARKS)})"]
    assert not list(tmp_path.iterdir())  # checked before the first download


def test_data_builders_flag_typo_is_one_line(capsys, tmp_path):
    from lookcloser.data_builders.cli import main

    assert main(["synthetic", "data/mir_sample", "--count", "2", "--out", str(tmp_path / "o"), "--sed", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "did you mean --seed?" in err[0], err


_SAMPLE = str(REPO / "data" / "mir_sample")
_BUILDER_BASES = {"mir": [f"{_SAMPLE}/all_data_rel.json", "--out", "o"],
                  "synthetic": [_SAMPLE, "--count", "2", "--out", "o"],
                  "difficulty": [f"{_SAMPLE}/all_data_rel.json", "--model", "lookcloser/tiny-qwen3-vl", "--out", "o"],
                  "imagenet-think": [_SAMPLE, "--out", "o"]}


@pytest.mark.parametrize("command, flag, values, dest, expected", [
    ("synthetic", "--canvas_size", ["640"], "canvas_size", 640),
    ("synthetic", "--jigsaw_sizes", ["3", "4"], "jigsaw_sizes", [3, 4]),
    ("mir", "--on_error", ["skip"], "on_error", "skip"),
    ("mir", "--no_check_images", [], "no_check_images", True),
    ("difficulty", "--hard_share=0.25", [], "hard_share", 0.25),
    ("imagenet-think", "--batch_rows", ["8"], "batch_rows", 8),
])
def test_data_builders_flags_take_both_spellings(command, flag, values, dest, expected):
    """Underscores are the spelling (like TRL's); the dashed form (transformers' alias) parses the same."""
    from lookcloser.data_builders.cli import parse_command

    base = [command, *_BUILDER_BASES[command]]
    name, sep, value = flag.partition("=")
    dashed = "--" + name[2:].replace("_", "-") + sep + value
    _, underscored = parse_command([*base, flag, *values])
    assert getattr(underscored, dest) == expected != getattr(parse_command(base)[1], dest)
    assert parse_command([*base, dashed, *values])[1] == underscored
    # the positional argument may also come after flags (not after one that takes a list or an optional
    # value: argparse gives it to that flag), or as its own flag
    first, *rest = _BUILDER_BASES[command]
    positional = {"mir": "path", "synthetic": "image_dir", "difficulty": "path", "imagenet-think": "paths"}[command]
    assert parse_command([command, *rest, first, flag, *values])[1] == underscored
    assert parse_command([command, f"--{positional}", first, *rest, flag, *values])[1] == underscored


def test_data_builders_help_lists_every_flag_and_no_abbreviation(capsys):
    from lookcloser.data_builders.cli import COMMANDS, main

    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    overview = capsys.readouterr().out
    assert exit_info.value.code == 0 and all(name in overview for name in COMMANDS)
    for command, spec in COMMANDS.items():
        with pytest.raises(SystemExit) as exit_info:
            main([command, "--help"])
        text = capsys.readouterr().out
        builds = spec.main is None  # a builder of records (heldout generates, with a main of its own)
        assert exit_info.value.code == 0 and (not builds or "--on_error {fail,skip}" in text and "--max_pixels" in text)
        assert all(f"--{f.name}" in text for f in dataclasses.fields(spec.arguments) if f.init)
    canvas = ["synthetic", _SAMPLE, "--count", "2", "--out", "o"]
    for typo, near in (("--canvas", "--canvas_size"), ("--canvas-siz", "--canvas-size"), ("--on-eror", "--on-error")):
        assert main([*canvas, typo, "640"]) == 2  # a prefix or a misspelling is never taken for the flag
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: unknown flag {typo}; did you mean {near}?"], err
    assert main([*canvas, "--on-error", "maybe"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: argument --on_error/--on-error: invalid choice: 'maybe'"), line
    assert main(["synthetc"]) == 2
    assert capsys.readouterr().err.startswith("error: unknown command 'synthetc'; did you mean synthetic?")


def test_sample_mir_takes_both_spellings(tmp_path, capsys):
    import json

    from lookcloser.data_builders.sample_mir import main

    for spelling in ("--per_family", "--per-family"):
        assert main([str(tmp_path / spelling), spelling, "1"]) == 0
        records = json.loads((tmp_path / spelling / "all_data_rel.json").read_text())
        assert len(records) == 4  # one per family
    assert main([str(tmp_path / "x"), "--per_famly", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("error: unknown flag --per_famly; did you mean --per_family?")


def test_truncated_parquet_shard_is_one_line_exit_2(capsys, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lookcloser.data_builders.cli import main

    shard = tmp_path / "train-00000.parquet"
    pq.write_table(pa.Table.from_pylist([{"image": {"bytes": b"x" * 64, "path": f"{i}.jpg"}, "think_1": "t",
                                          "answer_1": "a"} for i in range(50)]), shard)
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])  # a download cut short
    assert main(["imagenet-think", str(shard), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {shard}: not a readable parquet file"), err


def test_short_help_starts_with_the_recipe_form_and_lists_our_arguments_first(capsys):
    from lookcloser.train.grpo import parse_args as grpo_args
    from lookcloser.train.sft import parse_args as sft_args

    for parse, ours in ((sft_args, "--dataset_path"), (grpo_args, "--reward_funcs")):
        with pytest.raises(SystemExit) as exit_info:
            parse(["--help"])
        assert exit_info.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith("usage: ") and "RECIPE.yaml" in text.splitlines()[0]
        assert "accelerate launch" in text.splitlines()[1]
        assert text.index(ours) < text.index("--learning_rate") and "--help-all" in text
        assert len(text.splitlines()) < 150, len(text.splitlines())  # TRL + transformers: 900-1,500


def test_eval_help_is_short_starts_with_the_recipe_form_and_mentions_prepare(capsys):
    from lookcloser.eval.__main__ import main

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    assert text.startswith("usage: python -m eval RECIPE.yaml")
    assert "python -m eval prepare" in text and "__main__.py" not in text
    assert len(text.splitlines()) < 120


@pytest.mark.parametrize("recipe", sorted(p.name for p in (REPO / "recipes").glob("*.yaml")))
def test_our_recipes_parse_without_deprecation_warnings(recipe, tmp_path):
    import yaml

    from lookcloser.eval.config import EvalConfig
    from lookcloser.recipes import load_recipe_mapping, parse_recipe
    from lookcloser.train.curriculum import _module_name, plan

    path = REPO / "recipes" / recipe
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        if "stages" in load_recipe_mapping(path):
            stages = plan(path)
            for k, stage in enumerate(stages):
                module = __import__(_module_name(stage.script), fromlist=["parse_args"])
                config = tmp_path / f"{stage.name}.yaml"
                config.write_text(yaml.safe_dump(stage.config))
                _parsed_unless_data_is_elsewhere(module.parse_args, [str(config)], [s.output_dir for s in stages[:k]])
        elif recipe.startswith("eval"):
            parse_recipe((EvalConfig,), [str(path)])
        else:
            module = __import__("lookcloser.train.grpo" if "grpo" in recipe else "lookcloser.train.sft",
                                fromlist=["parse_args"])
            # a base recipe (a curriculum stage's `recipe:`) leaves the model to the stage
            model = [] if "model_name_or_path" in load_recipe_mapping(path) else [
                "--model_name_or_path", "lookcloser/tiny-qwen3-vl"]
            _parsed_unless_data_is_elsewhere(module.parse_args, [str(path), *model])


def _parsed_unless_data_is_elsewhere(parse_args, argv, planned=()):
    """Parse (warnings come from parsing); the checks after it may only miss data that lives elsewhere
    (a recipe for /data/..., a data set built by a command the recipe names)."""
    from lookcloser.errors import UserError

    try:
        parse_args(argv, planned=planned)
    except UserError as err:
        assert " not found" in str(err), err


def test_no_debug_line_from_the_search_index(caplog, tmp_path):
    import logging

    from lookcloser.agent.search import CorpusBackend

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"url": "https://a.example", "title": "cats", "text": "a cat on a mat"}\n')
    with caplog.at_level(logging.DEBUG):
        CorpusBackend(corpus).search("cat", 1)
    assert not [r for r in caplog.records if r.levelno < logging.INFO and r.name.startswith("bm25s")]


def test_curriculum_flag_typo_and_missing_data_are_one_line(capsys, tmp_path):
    import yaml

    from lookcloser.train.curriculum import main

    recipe = tmp_path / "c.yaml"
    recipe.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "run"), "stages": [
        {"name": "a", "model_name_or_path": "lookcloser/tiny-qwen3-vl", "dataset_path": str(tmp_path / "nope"),
         "use_cpu": True}]}))
    assert main([str(recipe), "--skp", "a"]) == 2
    assert "unknown flag --skp; did you mean --skip?" in capsys.readouterr().err
    assert main([str(recipe), "--dry_run"]) == 2  # the dry run checks the data too
    captured = capsys.readouterr()
    assert "1/1 a:" in captured.out and f"dataset_path: {tmp_path / 'nope'} not found" in captured.err
