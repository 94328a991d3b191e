"""python -m eval compare: checkpoints side by side, every column with its measured reference."""

from __future__ import annotations

import json
import re

import pytest

from lookcloser.eval.__main__ import main as eval_main
from lookcloser.eval.compare import COLUMNS, collect, markdown, write_comparison
from lookcloser.eval.scoring import answer_prior


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory, tiny_model_dir):
    """The untrained tiny model on small held-out data, with and without gray images: two real eval folders."""
    from lookcloser.data_builders.heldout import write_heldout

    root = tmp_path_factory.mktemp("compare")
    write_heldout(root / "heldout", 8008, mir_per_family=2, tir_count=5)
    runs = []
    for name, extra in (("plain", []), ("gray", ["--gray_images", "true"])):
        out = root / name
        eval_main(["--model", str(tiny_model_dir), "--data_root", str(root / "heldout"), "--out", str(out),
                   "--benchmarks", "tir_bench,mir", "--max_new_tokens_per_turn", "8", "--max_turns", "1",
                   "--save_trajectories", "false", *extra])
        runs.append((name, out))
    return runs


def test_table_has_every_column_its_references_and_both_rows(two_runs, tmp_path):
    table = collect(two_runs)
    # the registry's order, only what was evaluated: a benchmark no row ran gets no column of dashes
    assert table["columns"] == ["tir_bench", "mir"] == [c[0] for c in COLUMNS if c[0] in ("tir_bench", "mir")]
    assert [r["label"] for r in table["rows"]] == ["plain", "gray"]
    metrics = json.loads((two_runs[0][1] / "metrics.json").read_text())
    assert table["references"]["mir"] == metrics["benchmarks"]["mir"]["answer_prior"] == 0.5  # 2 per family: A, B
    assert "disbench" not in table["references"]
    tir = table["rows"][0]["values"]["tir_bench"]
    assert len(tir["per_task"]) == 5 and tir["n"] == 5
    paths = write_comparison(table, tmp_path / "cmp", "Test")
    text = paths["md"].read_text()
    for title in ("TIR-Bench acc", "MIR acc", "| plain |", "| gray |", "*reference*"):
        assert title in text
    assert "DISBench" not in text
    assert paths["png"].stat().st_size > 5000 and json.loads(paths["json"].read_text()) == table
    assert not list((tmp_path / "cmp").glob("*.partial"))


def test_cli_writes_the_table_and_a_missing_run_is_one_error(two_runs, tmp_path, capsys):
    from lookcloser.eval.config import EvalError

    out = tmp_path / "cli"
    eval_main(["compare", f"{two_runs[0][1]}=untrained", f"{two_runs[1][1]}=untrained, gray", "--out", str(out)])
    assert "| untrained, gray |" in (out / "comparison.md").read_text()
    with pytest.raises(EvalError, match="metrics.json: not found"):
        eval_main(["compare", str(tmp_path / "nothing"), "--out", str(tmp_path / "x")])


def test_answer_prior_is_the_best_fixed_answer_per_task(two_runs):
    from lookcloser.eval.loaders import load_benchmark

    items = load_benchmark("mir", two_runs[0][1].parent / "heldout" / "mir")
    assert answer_prior(items) == 0.5
    assert markdown(collect(two_runs)).count("\n| ") >= 4


@pytest.mark.parametrize("settings, message", [
    ({"heldout_seed": 7}, "heldout_seed 7 is not a held-out seed"),
    ({"benchmarks": ["photos"]}, "unknown name 'photos'"),
    ({"benchmarks": []}, "give at least one of tir_bench, mir"),
    ({"stages": ["sft"], "controls_of": "grpo"}, "controls_of 'grpo' is not one of stages ['sft']"),
    ({"tir_tasks": ["spot_diference"]}, "tir_tasks: unknown name 'spot_diference'; did you mean spot_difference?"),
])
def test_the_eval_stage_refuses_bad_settings_when_parsed(tmp_path, settings, message):
    import yaml

    from lookcloser.errors import RecipeError
    from lookcloser.eval.compare import parse_args

    recipe = tmp_path / "eval.yaml"
    recipe.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "eval"), **settings}))
    with pytest.raises(RecipeError, match=re.escape(message)):
        parse_args([str(recipe)])


def test_the_eval_stage_takes_its_benchmarks_from_the_registry(tmp_path):
    """Unset, the columns are the registry's default run; any registered benchmark (V*, HR-Bench) may join."""
    import yaml

    from lookcloser.eval.benchmarks import DEFAULT_BENCHMARKS, SPECS
    from lookcloser.eval.compare import parse_args

    recipe = tmp_path / "eval.yaml"
    recipe.write_text(yaml.safe_dump({"output_dir": str(tmp_path / "eval")}))
    (args,) = parse_args([str(recipe)])
    assert args.benchmarks == list(DEFAULT_BENCHMARKS) == ["tir_bench", "mir", "disbench", "imagemining"]
    (args,) = parse_args([str(recipe), "--benchmarks", *SPECS])
    assert args.benchmarks == list(SPECS) and {"vstar_shuffled", "hrbench_4k", "hrbench_8k"} <= set(SPECS)
