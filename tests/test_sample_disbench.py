"""The DISBench-format generator: the eval loader reads its output, the oracle's filter and search run
through the real tools, and every query needs both the filter and the photos' content (checked on the
written pixels)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from lookcloser.agent import embedders
from lookcloser.agent.photo_env import PhotoSearchEnv, listed_ids
from lookcloser.agent.toolkit import call_failed
from lookcloser.data_builders.sample_disbench import SEARCH_TOP_K, metadata_reference, write_disbench
from lookcloser.data_builders.sample_mir import COLOURS
from lookcloser.data_builders.search_tasks import LAST_LISTING
from lookcloser.eval.benchmarks.disbench import load_disbench
from lookcloser.rewards.disbench import set_metrics

COUNT = 40


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("gen") / "DISBench"
    return root, write_disbench(root, seed=1, count=COUNT)


def colour_of(path: Path) -> str:
    """The colour name nearest the picture's most saturated pixels (the shape, not the background)."""
    with Image.open(path) as img:
        pixels = list(img.convert("RGB").getdata())
    shape = [p for p in pixels if max(p) - min(p) > 80]
    mean = tuple(sum(p[c] for p in shape) / len(shape) for c in range(3))
    return min(COLOURS, key=lambda name: sum((a - b) ** 2 for a, b in zip(COLOURS[name], mean)))


def photo_ids(root: Path, user: str) -> list[str]:
    return (root / "photo_ids" / f"{user}.txt").read_text().split()


def test_the_eval_loader_reads_the_output(written):
    root, tasks = written
    items = load_disbench(root)
    assert [item.id for item in items] == [task.id for task in tasks]
    for item, task in zip(items, tasks):
        assert item.gold == task.gold
        assert item.example["question"] == task.question
        assert item.example["data_root"] == task.example["data_root"] == str(root.resolve())
        assert item.tags["event_type"] == [task.task]
    assert {task.task for task in tasks} == {"intra-event", "inter-event"}
    assert sum(task.task == "intra-event" for task in tasks) == COUNT // 2


def test_photo_ids_are_short_and_unique_and_some_metadata_is_missing(written):
    root, _ = written
    for user in ("user1", "user2", "user3", "user4"):
        ids = photo_ids(root, user)  # unique within a collection, two digits each
        assert len(ids) == len(set(ids)) and all(re.fullmatch(r"\d{2}", pid) for pid in ids), user
        lines = [json.loads(line) for line in (root / "metadata" / f"{user}.jsonl").read_text().splitlines()]
        assert [line["photo_id"] for line in lines] == photo_ids(root, user)
        metas = [line["metadata"] for line in lines]
        assert any("latitude" not in meta for meta in metas)  # left out
        assert any("capturedevice" in meta and meta["capturedevice"] is None for meta in metas)  # null


def test_same_seed_same_bytes_another_seed_differs(written, tmp_path):
    root, _ = written
    write_disbench(tmp_path / "again", seed=1, count=COUNT)
    write_disbench(tmp_path / "other", seed=2, count=COUNT)
    files = ["queries.jsonl", *(f"metadata/user{u}.jsonl" for u in range(1, 5))]
    assert all((root / f).read_bytes() == (tmp_path / "again" / f).read_bytes() for f in files)
    assert (root / files[0]).read_bytes() != (tmp_path / "other" / files[0]).read_bytes()
    assert (root / files[1]).read_bytes() != (tmp_path / "other" / files[1]).read_bytes()


def test_every_query_needs_the_filter_and_the_look(written):
    root, tasks = written
    for task in tasks:
        user = task.example["user_id"]
        colour = re.search(r"with a (\w+) shape", task.question).group(1)
        found, gold = json.loads(task.shortcut_answer), task.gold["answer"]
        seen = {pid: colour_of(root / "images" / user / f"{pid}.jpg") for pid in photo_ids(root, user)}
        assert 3 <= len(found) <= 6 and 1 <= len(gold) <= 2, task.id
        assert gold == [pid for pid in found if seen[pid] == colour], task.id  # the pixels decide
        assert any(seen[pid] == colour for pid in seen if pid not in found), task.id  # the colour alone does not
        assert task.answer_text == LAST_LISTING  # the search's ranking is the retriever's
        assert set_metrics(found, gold)["f1"] < 1
    assert 0.2 < metadata_reference(tasks) < 0.7


def test_the_oracle_plan_runs_through_the_real_tools(written, tmp_path):
    """The filter lists what the shortcut answers; the search within it puts every gold photo in its top
    two (the offline retriever reads the colour), so the search path's answer holds the gold."""
    _, tasks = written
    env = PhotoSearchEnv(embedder=embedders.ColorHashEmbedder(), cache_dir=str(tmp_path))
    for task in tasks:
        env.reset(**task.example)
        (name, arguments), = task.steps[0].calls
        assert name == "FilterMetadata" and task.shortcut_steps[0].calls == task.steps[0].calls
        result = env._call_tool(name, arguments)
        assert not call_failed(result), result
        assert listed_ids(result) == json.loads(task.shortcut_answer), (task.id, arguments)
        (name, arguments), = task.steps[1].calls
        assert name == "ImageSearch" and arguments["subset"] == "last_filter"
        found = listed_ids(env._call_tool(name, arguments))
        assert len(found) == SEARCH_TOP_K and set(task.gold["answer"]) <= set(found), task.id
        assert set(found) <= set(json.loads(task.shortcut_answer)), task.id
    assert env.tool_errors == 0


def test_impossible_sizes_fail_clearly(tmp_path):
    with pytest.raises(ValueError, match="count and users"):
        write_disbench(tmp_path, seed=0, count=0)
    with pytest.raises(ValueError, match="more users"):
        write_disbench(tmp_path, seed=0, count=60, users=1)
    assert not (tmp_path / "queries.jsonl").exists()
