"""The search curricula's data: ImageMining-format flags with their offline corpus, the DISBench and
ImageMining training splits (data_builders/commands/search_benchmark_tasks.py) and their held-out folders, read by eval's loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lookcloser.data_builders.commands.search_benchmark_tasks import SearchTaskArguments, build
from lookcloser.data_builders.sample_imagemining import world_flags, write_imagemining


def _built(tmp_path_factory, **settings) -> dict:
    out = tmp_path_factory.mktemp(settings["benchmark"])
    return build(SearchTaskArguments(output_dir=str(out), heldout_seed=1001, shortcut_ratio=0.5, **settings))


@pytest.fixture(scope="module")
def imagemining(tmp_path_factory) -> dict:
    return _built(tmp_path_factory, benchmark="imagemining", count=40, worlds=5, heldout_count=24,
                  environment="web_search")


@pytest.fixture(scope="module")
def disbench(tmp_path_factory) -> dict:
    return _built(tmp_path_factory, benchmark="disbench", count=24, users=6, heldout_count=12,
                  environment="photo_search")


def test_only_the_search_tells_which_city_flies_a_flag():
    worlds = [world_flags(1, k) for k in range(20)]
    # Every colour's city changes between worlds: no fixed colour -> city answer is right in most of them.
    for colour in worlds[0]:
        cities = [w[colour] for w in worlds]
        assert max(cities.count(c) for c in cities) <= 8, colour
    assert world_flags(1001, 0) != world_flags(1, 0)


def test_the_oracle_search_finds_the_answer_through_the_real_tool(tmp_path):
    from lookcloser.agent.environments import ENVIRONMENTS
    from lookcloser.eval.loaders import load_benchmark
    from lookcloser.eval.scoring import answer_prior

    tasks = write_imagemining(tmp_path, seed=3, count=12, worlds=1)
    env = ENVIRONMENTS["web_search"]()
    for task in tasks:
        assert env.reset(**task.example, images=task.images) is None
        (name, arguments), = task.steps[0].calls
        result = env._call_tool(name, arguments)
        first = result.split("\n2.")[0]
        assert f"{task.gold['answer']} flies the" in first, result  # the top result says it
        assert task.gold["answer"] not in task.question  # the question does not
    assert 0 < answer_prior(load_benchmark("imagemining", tmp_path)) < 0.5  # the most frequent answer


def test_eval_reads_the_held_out_folders_and_finds_the_corpus_from_the_data_root(imagemining, disbench):
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.pipeline import load_items

    for built, name in ((imagemining, "imagemining"), (disbench, "disbench")):
        items, _ = load_items(EvalConfig(data_root=str(built["heldout"]), benchmarks=name))
        assert len(items[name]) == (24 if name == "imagemining" else 12)
        if name == "imagemining":
            corpus = Path(items[name][0].example["search_corpus"])
            assert corpus == built["heldout"] / "imagemining" / "search_corpus.jsonl" and corpus.is_file()


def test_training_rows_read_as_eval_builds_them(imagemining, disbench):
    from datasets import load_from_disk

    from lookcloser.agent.environments import ENVIRONMENTS, tool_schemas
    from lookcloser.eval.loaders import load_benchmark

    for built, name, env in ((imagemining, "imagemining", "web_search"), (disbench, "disbench", "photo_search")):
        train = built["train"]
        grpo, sft = load_from_disk(str(train / "grpo")), load_from_disk(str(train / "sft"))
        assert len(grpo) == len(sft) == (40 if name == "imagemining" else 24)
        questions = {item.id: item.example["question"] for item in load_benchmark(name, train)}
        for row in grpo:
            assert row["data_source"] == name
            assert row["prompt"][0]["content"][-1]["text"] == questions[row["id"]]  # the user turn eval shows
            assert json.loads(row["reward_info"])["answer"]
        assert {"search_corpus"} <= set(grpo.column_names) if name == "imagemining" else \
            {"user_id", "data_root"} <= set(grpo.column_names)
        assert json.loads(sft[0]["tools"]) == tool_schemas(ENVIRONMENTS[env])
        # Both ways to answer are in the cold start: the oracle's tool turns, and the shortcut.
        tool_turns = [sum(m["role"] == "tool" for m in row["messages"]) for row in sft]
        full = 1 if name == "imagemining" else 2
        assert 0 < tool_turns.count(full) < len(sft), tool_turns


def test_disbench_oracle_searches_what_the_filter_found(disbench):
    """The oracle's search runs in the filter's subset, and its answer is the search's listing, verbatim."""
    from datasets import load_from_disk

    from lookcloser.agent.photo_env import listed_ids

    sft = load_from_disk(str(disbench["train"] / "sft"))
    searched = [row for row in sft if sum(m["role"] == "tool" for m in row["messages"]) == 2]
    assert searched
    for row in searched:
        search, listing, final = row["messages"][3], row["messages"][4]["content"], row["messages"][-1]["content"]
        call = search["tool_calls"][0]["function"]
        assert call["name"] == "ImageSearch" and call["arguments"]["subset"] == "last_filter"
        ids = listed_ids(listing)
        assert all(f'"{pid}"' in row["messages"][2]["content"] for pid in ids)  # photos the filter listed
        assert final.endswith(f"<answer>{json.dumps(ids)}</answer>") and not row["images"]
