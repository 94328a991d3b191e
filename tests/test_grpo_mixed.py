"""One GRPO run over several kinds of task (data_builders/commands/mixed_tasks.py, ``environment: per_row``): each row is
played in its own environment and shown its tools only, scored by its own benchmark, and the checkpoint
records every benchmark's environment for eval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookcloser.agent.environments import ENVIRONMENTS
from lookcloser.agent.toolkit import tool_names
from lookcloser.data_builders.commands.mixed_tasks import MixedTaskArguments, mix
from lookcloser.data_builders.commands.mixed_tasks import main as mix_main
from lookcloser.data_builders.commands.mixed_tasks import parse_args as mix_args
from lookcloser.errors import RecipeError
from lookcloser.train import grpo
from testing.wandb_offline import offline_runs
from tests.conftest import REPO

FAST = ["--bf16", "false", "--gradient_checkpointing", "false", "--use_cpu", "true", "--save_strategy", "no",
        "--logging_steps", "1", "--report_to", "none", "--dataloader_num_workers", "0"]
# Each kind of task, the environment its rows are played in (none: MIR, answered without tools).
KINDS = {"imagemining": "web_search", "disbench": "photo_search", "tir_bench": "crop", "mir": "none"}


@pytest.fixture(scope="module")
def sources(tmp_path_factory, tiny_model_dir) -> dict[str, Path]:
    """A saved GRPO data set of each kind, as the curricula's data stages write them."""
    from lookcloser.data_builders.commands.search_benchmark_tasks import SearchTaskArguments
    from lookcloser.data_builders.commands.search_benchmark_tasks import build as build_search_tasks
    from lookcloser.data_builders.commands.tool_tasks import ToolTaskArguments
    from lookcloser.data_builders.commands.tool_tasks import build as build_tool_tasks
    from lookcloser.data_builders.mir import mir_grpo_dataset

    root = tmp_path_factory.mktemp("sources")
    web = build_search_tasks(SearchTaskArguments(benchmark="imagemining", count=8, worlds=2, heldout_count=0,
                                                 environment="web_search", output_dir=str(root / "web")))
    photos = build_search_tasks(SearchTaskArguments(benchmark="disbench", users=4, count=8, heldout_count=0,
                                                    environment="photo_search", output_dir=str(root / "photos")))
    crops = build_tool_tasks(ToolTaskArguments(count=8, heldout_count=0, environment="crop",
                                               model_name_or_path=str(tiny_model_dir), output_dir=str(root / "crop")))
    mir_grpo_dataset(REPO / "data" / "mir_sample" / "all_data_rel.json").save_to_disk(str(root / "mir"))
    return {"imagemining": web["train"] / "grpo", "disbench": photos["train"] / "grpo",
            "tir_bench": crops["train"] / "grpo", "mir": root / "mir"}


@pytest.fixture(scope="module")
def mixed(sources, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("mixed") / "data"
    pairs = [f"{sources[kind]}={environment}" for kind, environment in KINDS.items()]
    mix_main(*mix_args(["--output_dir", str(out), "--sources", *pairs, "--per_source", "1", "--seed", "3"]))
    return out


def _question(prompt: list) -> str:
    return next(block["text"] for block in prompt[-1]["content"] if block.get("type") == "text" and block.get("text"))


def test_mixing_keeps_the_rows_and_names_each_rows_environment(sources, mixed):
    from datasets import load_from_disk

    rows = load_from_disk(str(mixed))
    assert sorted(zip(rows["data_source"], rows["environment"])) == sorted(KINDS.items())
    pixels = lambda r: [image.tobytes() for image in r["images"]]
    for row in rows:
        source = load_from_disk(str(sources[row["data_source"]]))
        # a row of its source, every column as it was there (prompt and images included)
        assert any(all(r[name] == row[name] for name in source.column_names if name != "images")
                   and pixels(r) == pixels(row) for r in source), row["reward_info"]
        # the columns other sources have are filled: text "" (a disbench row has no corpus, a crop row no user)
        added = set(row) - set(source.column_names) - {"environment"}
        assert added and {name: row[name] for name in added} == dict.fromkeys(added, "")
    again = mix(MixedTaskArguments(output_dir="-", sources=[f"{sources['mir']}=none"], per_source=5, seed=3))
    assert again["id"] == mix(MixedTaskArguments(output_dir="-", sources=[f"{sources['mir']}=none"], per_source=5,
                                                 seed=3))["id"] and len(set(again["id"])) == 5  # seeded draw


def test_an_mir_json_source_gives_the_rows_of_its_grpo_conversion(sources):
    """MIR's own .json mixes in directly (no saved conversion first): the same rows, images included."""
    mir_json = REPO / "data" / "mir_sample" / "all_data_rel.json"
    direct = mix(MixedTaskArguments(output_dir="-", sources=[f"{mir_json}=none"], per_source=3, seed=5))
    saved = mix(MixedTaskArguments(output_dir="-", sources=[f"{sources['mir']}=none"], per_source=3, seed=5))
    assert direct["id"] == saved["id"] and direct["prompt"] == saved["prompt"] and set(direct["data_source"]) == {"mir"}
    assert [[im.tobytes() for im in r["images"]] for r in direct] == [[im.tobytes() for im in r["images"]] for r in saved]
    mix_args(["--output_dir", "-", "--sources", f"{mir_json}=none"])  # a .json source is checked as a file


def test_mixing_refuses_an_unknown_environment_or_a_missing_source(sources, tmp_path):
    with pytest.raises(RecipeError, match=r"environment: unknown name 'crpo'; did you mean crop"):
        mix_args(["--output_dir", str(tmp_path / "x"), "--sources", f"{sources['tir_bench']}=crpo"])
    with pytest.raises(RecipeError, match="not PATH=ENVIRONMENT"):
        mix_args(["--output_dir", str(tmp_path / "x"), "--sources", str(sources["tir_bench"])])
    with pytest.raises(RecipeError, match="nowhere not found"):
        mix_args(["--output_dir", str(tmp_path / "x"), "--sources", f"{tmp_path / 'nowhere'}=crop"])


@pytest.mark.usefixtures("one_torch_thread")
def test_a_mixed_cold_start_records_each_benchmarks_tools_for_eval(sources, tiny_model_dir, tmp_path):
    """The SFT rows of three kinds mixed (they carry no data_source: the mix names each row's benchmark), one
    SFT step, and eval prompts each benchmark with the tools its rows were trained with."""
    from datasets import load_from_disk

    from lookcloser.agent.checkpoint_prompting import read_prompting
    from lookcloser.train import sft

    kinds = {kind: environment for kind, environment in KINDS.items() if environment != "none"}
    data = tmp_path / "cold_start"
    pairs = [f"{sources[kind].parent / 'sft'}={environment}" for kind, environment in kinds.items()]
    mix_main(*mix_args(["--output_dir", str(data), "--sources", *pairs, "--per_source", "1", "--seed", "3"]))
    assert sorted(load_from_disk(str(data))["data_source"]) == sorted(kinds)
    out = sft.main(*sft.parse_args(["--model_name_or_path", str(tiny_model_dir), "--dataset_path", str(data),
                                    "--output_dir", str(tmp_path / "sft"), "--max_steps", "1", "--max_length", "null",
                                    "--per_device_train_batch_size", "3", "--assistant_only_loss", "true", *FAST]))
    for kind, environment in kinds.items():
        prompting = read_prompting(out, kind)
        assert prompting["environment"] == environment and prompting["tools"] is True, (kind, prompting)


@pytest.mark.usefixtures("one_torch_thread")
def test_one_grpo_run_plays_each_row_in_its_own_environment(mixed, tiny_model_dir, tmp_path, monkeypatch):
    from datasets import load_from_disk

    from lookcloser.agent.checkpoint_prompting import read_prompting
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.pipeline import apply_checkpoint_prompting
    from lookcloser.recipes import given_fields

    # A spy, not a stand-in: the real trainer is built and trains; we keep it and record what TRL renders.
    built, rendered = [], []
    real_build = grpo.build_trainer

    def build_and_record(*args):
        trainer = real_build(*args)
        template = trainer.processing_class.apply_chat_template

        def recording(*a, **kw):
            conversation = kw.get("conversation", a[0] if a else None)
            conversation = conversation[0] if conversation and isinstance(conversation[0], list) else conversation
            if conversation[-1]["role"] == "user":  # a prompt (not a conversation after a tool call)
                # TRL passes the environment's methods; the W&B samples' agent loop their JSON schemas
                names = [t["function"]["name"] if isinstance(t, dict) else t.__name__ for t in kw.get("tools") or []]
                rendered.append((_question(conversation), sorted(names)))
            return template(*a, **kw)

        trainer.processing_class.apply_chat_template = recording
        built.append(trainer)
        return trainer

    monkeypatch.setattr(grpo, "build_trainer", build_and_record)
    for name, value in {"WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true",
                        "WANDB_DATA_DIR": str(tmp_path / "wandb-data")}.items():
        monkeypatch.setenv(name, value)
    out = Path(grpo.main(*grpo.parse_args([
        "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "run"), "--dataset_path",
        str(mixed), "--environment", "per_row", "--environment_kwargs",
        json.dumps({"photo_search": {"cache_dir": str(tmp_path / "index"), "max_view": 2}}),
        "--max_steps", "1", "--per_device_train_batch_size", "8", "--num_generations", "2",
        "--max_tool_calling_iterations", "1", "--max_turn_tokens", "8", "--max_completion_length", "16",
        "--mask_out_of_length", "false", *FAST, "--report_to", "wandb", "--wandb_samples", "4",
        "--wandb_samples_max_new_tokens", "8"])))
    import wandb

    wandb.finish()

    (trainer,) = built
    expected = {name: sorted(tool_names(ENVIRONMENTS[name])) if name != "none" else [] for name in KINDS.values()}
    assert {name: sorted(t.__name__ for t in tools) for name, tools in trainer._env_tools.items()} == expected
    assert "FilterMetadata" in expected["photo_search"] and "web_search" in expected["web_search"]
    environment_of = {_question(row["prompt"]): row["environment"] for row in load_from_disk(str(mixed))}
    seen = {}
    for question, tools in rendered:  # the user turn may carry the environment's reset text after the question
        (environment,) = [env for text, env in environment_of.items() if question.startswith(text)]
        seen.setdefault(environment, set()).add(tuple(tools))
    assert seen == {name: {tuple(tools)} for name, tools in expected.items()}  # every row, only its own tools

    (log,) = [entry for entry in trainer.state.log_history if "trajectory/turns" in entry]
    assert {f"accuracy/{kind}" for kind in KINDS} <= set(log)  # each row scored by its own benchmark
    # The W&B samples: every row answered in its own environment too (at the start and at the end).
    (run,) = offline_runs(tmp_path)
    samples = run.table("samples")["data"]
    assert len(samples) == 8 and not [row for row in samples if row[5].startswith("error:")]

    for kind, environment in KINDS.items():
        entry = read_prompting(str(out), kind)
        assert entry == {"system_prompt": "", "tools": environment != "none", "max_turns": None,
                         "environment": None if environment == "none" else environment}, kind
    cfg = EvalConfig(model=str(out), benchmarks=",".join(KINDS))
    _, own = apply_checkpoint_prompting(cfg, given_fields(["--model", str(out)]))
    assert cfg.tools is True and {kind: (own.get(kind) or {}).get("environment", cfg.environment)
                                  for kind in ("imagemining", "disbench", "tir_bench")} == {
        "imagemining": "web_search", "disbench": "photo_search", "tir_bench": "crop"}
    assert own["mir"]["tools"] is False

    # A later turn that continues only rows without an image, after another row of the batch got a tool image
    # (TRL then passes has_tool_images=True): generation goes on (TRL's `token_type_ids` for it made Qwen3-VL's
    # generate stop the run at GRPO step 3 of a mixed run).
    ids = trainer.processing_class.tokenizer("Find my photos from Tokyo.")["input_ids"]
    completions, _ = trainer._generate_single_turn([ids], [None], {}, 1, has_tool_images=True)
    assert len(completions) == 1 and completions[0]


def _own_score(source: str, text: str, info: dict) -> float:
    """The benchmark's scorer called directly (rewards/<benchmark>.py), not through the reward registry."""
    from lookcloser.rewards import disbench, imagemining, mir, tir_bench

    return {"imagemining": lambda: imagemining.score(text, info["answer"], info.get("answer_zh")),
            "disbench": lambda: disbench.score(text, info["answer"]),
            "tir_bench": lambda: tir_bench.score(info, text, "strict"),
            "mir": lambda: mir.score(text, info["answer"], info.get("options"))}[source]()


def test_rewards_score_each_row_by_its_own_benchmark(mixed):
    from datasets import load_from_disk

    from lookcloser.train.grpo_lib.configs import LookcloserGRPOConfig

    rows = load_from_disk(str(mixed)).remove_columns("images")
    columns = {name: list(rows[name]) for name in rows.column_names}
    script = grpo.GRPOScriptArguments(environment="per_row", dataset_path=str(mixed))
    accuracy, *_ = grpo.build_reward_funcs(script, LookcloserGRPOConfig(output_dir="-", use_cpu=True, report_to=[]))
    infos = [json.loads(info) for info in columns["reward_info"]]
    gold = {"imagemining": lambda i: i["answer"], "disbench": lambda i: json.dumps(i["answer"]),
            "tir_bench": lambda i: i["answer"], "mir": lambda i: i["answer"]}
    # Every row answered with each row's gold in turn: each scored by its own benchmark; its own gold pays.
    for index, (source, info) in enumerate(zip(columns["data_source"], infos, strict=True)):
        answer = f"<answer>{gold[source](info)}</answer>"
        scores = accuracy([answer] * len(rows), **columns)
        assert scores == [_own_score(s, answer, i) for s, i in zip(columns["data_source"], infos, strict=True)]
        assert scores[index] == 1.0


def test_a_row_with_an_unknown_environment_is_refused_before_training(mixed, sources, tiny_model_dir, tmp_path,
                                                                       capsys):
    from datasets import load_from_disk

    from lookcloser.cli import run

    bad = tmp_path / "bad"
    rows = load_from_disk(str(mixed))
    rows.map(lambda row, i: {"environment": "crpo" if i == 2 else row["environment"]}, with_indices=True) \
        .save_to_disk(str(bad))
    for data, message in ((bad, f"error: {bad}: row 2: column `environment`: unknown environment 'crpo'"),
                          (sources["mir"], f"error: {sources['mir']}: environment: per_row needs an `environment`")):
        argv = ["--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "run"),
                "--dataset_path", str(data), "--environment", "per_row", *FAST]
        assert run(grpo.main, lambda argv=argv: grpo.parse_args(argv)) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err[-1].startswith(message), err
        assert not (tmp_path / "run" / "config.json").exists()  # stopped before any training
    with pytest.raises(RecipeError, match="environment_kwargs: unknown name 'photos'"):
        grpo.parse_args(["--model_name_or_path", str(tiny_model_dir), "--output_dir", str(tmp_path / "run"),
                         "--dataset_path", str(mixed), "--environment", "per_row", "--environment_kwargs",
                         '{"photos": {"max_view": 2}}', *FAST])
