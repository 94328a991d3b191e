"""The program-solvable TIR kinds (maze, color, refcoco) and the procedural pictures' variations.

Each kind's gold is recovered from the saved PNGs by plain numpy written here as ``looktools``' agreed API
computes it (docs: the library's functions ``changed``, ``grid``, ``binarise``, ``pitch``, ``shrink``, ``find``,
``bfs``, ``mask_of``, ``components``, ``share``, ``nearest``): the data are exactly solvable by the programs the
oracle will write, and the official scorer gives the gold full credit and a wrong answer none.
"""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest
from PIL import Image

from lookcloser.data_builders.synthetic import (
    ALL_TASKS,
    COLOURS,
    LETTERS,
    TASKS,
    SyntheticConfig,
    config_settings,
    generate_items,
)
from lookcloser.rewards.tir_bench import score

COUNT = 40  # items of each kind


def _pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _mask_of(img: np.ndarray, rgb, tolerance: int = 60) -> np.ndarray:
    return np.abs(img - np.array(rgb)).sum(axis=-1) <= tolerance


def _components(mask: np.ndarray, min_pixels: int = 20) -> list[int]:
    """Pixel counts of the 4-connected True regions with >= min_pixels (largest first)."""
    seen = np.zeros_like(mask)
    sizes = []
    for start in zip(*np.nonzero(mask)):
        if seen[start]:
            continue
        seen[start] = True
        queue, size = deque([start]), 0
        while queue:
            r, c = queue.popleft()
            size += 1
            for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= nr < mask.shape[0] and 0 <= nc < mask.shape[1] and mask[nr, nc] and not seen[nr, nc]:
                    seen[nr, nc] = True
                    queue.append((nr, nc))
        if size >= min_pixels:
            sizes.append(size)
    return sorted(sizes, reverse=True)


def _bfs(free: np.ndarray, start, goal) -> int:
    dist = {start: 0}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            return dist[cell]
        r, c = cell
        for nxt in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nxt[0] < free.shape[0] and 0 <= nxt[1] < free.shape[1] and free[nxt] and nxt not in dist:
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    return -1


def _pitch(mask: np.ndarray) -> int:
    """The shortest run of equal values along rows and columns, runs touching the border ignored."""
    best = None
    for line in [*mask, *mask.T]:
        edges = np.flatnonzero(np.diff(line.astype(np.int8))) + 1
        runs = np.diff(edges)  # interior runs only: between two changes
        if runs.size:
            best = int(runs.min()) if best is None else min(best, int(runs.min()))
    return best


def _grid(img: np.ndarray) -> tuple[int, int]:
    """Interior lines + 1 along each axis: pixel rows / columns >= 95% black (within 60), grouped."""
    black = _mask_of(img, (0, 0, 0))

    def lines(full: np.ndarray) -> int:
        idx = np.flatnonzero(full)
        groups = [g for g in np.split(idx, np.flatnonzero(np.diff(idx) > 1) + 1) if g.size]
        return sum(1 for g in groups if g[0] != 0 and g[-1] != len(full) - 1)

    return lines(black.mean(axis=1) >= 0.95) + 1, lines(black.mean(axis=0) >= 0.95) + 1


def _changed(a: np.ndarray, b: np.ndarray, rows: int, cols: int, share: float = 0.01,
             threshold: int = 60) -> list[int]:
    differ = np.abs(a - b).sum(axis=-1) > threshold
    h, w = differ.shape
    return [r * cols + c + 1 for r in range(rows) for c in range(cols)
            if differ[r * h // rows:(r + 1) * h // rows, c * w // cols:(c + 1) * w // cols].mean() > share]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("program_tasks")
    cfg = SyntheticConfig(seed=7, tasks=("maze", "color", "refcoco", "spot_difference"), pictures="procedural")
    items = list(generate_items(None, out, 4 * COUNT, cfg))
    return out, {task: [i for i in items if i.record["task"] == task] for task in cfg.tasks}


def _wrong(record: dict) -> str:
    answer = str(record["answer"])
    return LETTERS[(LETTERS.index(answer) + 1) % 6] if answer.isalpha() else str(int(answer) + 1)


@pytest.mark.parametrize("task", ["maze", "color", "refcoco"])
def test_the_official_scorer_gives_the_gold_full_credit_and_a_wrong_answer_none(built, task):
    for item in built[1][task]:
        record = item.record
        assert score(record, f"<answer>{record['answer']}</answer>", "official") == 1.0
        assert score(record, f"<answer>{record['answer']}</answer>", "strict") == 1.0
        assert score(record, f"<answer>{_wrong(record)}</answer>", "official") == 0.0


def test_the_maze_answer_is_the_shortest_path_on_the_pictures_grid(built):
    out, items = built
    answers = set()
    for item in items["maze"]:
        img, meta = _pixels(out / item.record["image_1"]), item.record["meta_data"]
        green, red = _mask_of(img, COLOURS["green"]), _mask_of(img, COLOURS["red"])
        free = (img.mean(axis=-1) >= 128) | green | red  # binarise (dark = wall), the coloured cells are paths
        p = _pitch(free)
        assert p == meta["pitch"], item.record["id"]
        cells = free[p // 2::p, p // 2::p]  # shrink: each cell's centre
        assert cells.shape == (meta["rows"], meta["cols"]) and not cells[0].any() and not cells[:, 0].any()
        start = tuple(int(v) // p for v in np.argwhere(green).mean(axis=0))  # find(img, colour, p)
        goal = tuple(int(v) // p for v in np.argwhere(red).mean(axis=0))
        assert _bfs(cells, start, goal) == int(item.record["answer"]), item.record["id"]
        assert img.shape[0] == meta["rows"] * p and img.shape[1] == meta["cols"] * p
        answers.add(int(item.record["answer"]))
    assert len(answers) >= 15  # spread: no fixed answer scores well


def test_the_color_answer_is_the_number_of_regions_of_that_colour(built):
    out, items = built
    for item in items["color"]:
        img = _pixels(out / item.record["image_1"])
        colour = item.record["meta_data"]["colour"]
        assert len(_components(_mask_of(img, COLOURS[colour]))) == int(item.record["answer"]), item.record["id"]
        # The pale ground matches no named colour: every masked pixel is a shape's.
        ground = ~np.any([_mask_of(img, rgb, 0) for rgb in COLOURS.values()], axis=0)
        assert not np.any([_mask_of(img, rgb)[ground].any() for rgb in COLOURS.values()])
    assert {int(i.record["answer"]) for i in items["color"]} == set(range(1, 7))


def test_the_refcoco_answer_is_the_option_nearest_the_colours_share(built):
    out, items = built
    letters = set()
    for item in items["refcoco"]:
        img, meta = _pixels(out / item.record["image_1"]), item.record["meta_data"]
        covered = 100 * _mask_of(img, COLOURS[meta["colour"]]).mean()
        distances = sorted(abs(covered - v) for v in meta["options"])
        assert distances[0] <= 3 and distances[1] >= 5, item.record["id"]  # unambiguous
        nearest = min(range(6), key=lambda i: abs(covered - meta["options"][i]))
        assert LETTERS[nearest] == item.record["answer"], item.record["id"]
        assert round(covered / 100, 4) == meta["share"]
        assert all(f"{LETTERS[i]}: {v}%" in item.record["prompt"] for i, v in enumerate(meta["options"]))
        letters.add(item.record["answer"])
    assert letters == set("ABCDEF")


def test_procedural_spot_difference_is_exact_for_the_default_change_rule(built):
    out, items = built
    kinds = {"shift": 0, "grid_shown": 0, "square": 0}
    for item in items["spot_difference"]:
        record, meta = item.record, item.record["meta_data"]
        a, b = _pixels(out / record["image_1"]), _pixels(out / record["image_2"])
        rows, cols = (_grid(a) if meta["grid_shown"] else (meta["rows"], meta["cols"]))
        assert (rows, cols) == (meta["rows"], meta["cols"]), record["id"]
        gold = [int(v) for v in record["answer"].split(", ")]
        assert _changed(a, b, rows, cols) == gold, record["id"]
        assert (f"n is {rows}" in record["prompt"]) != meta["grid_shown"]  # a shown grid is not stated
        kinds["shift"] += meta["shift"] is not None
        kinds["grid_shown"] += meta["grid_shown"]
        kinds["square"] += a.shape[0] == a.shape[1]
    assert kinds["shift"] >= 5 and 10 <= kinds["grid_shown"] <= 30 and kinds["square"] < 5


def test_procedural_items_are_the_same_from_the_same_seed_and_vary_in_shape(tmp_path):
    cfg = SyntheticConfig(seed=3, tasks=TASKS, pictures="procedural")
    first = [i.record for i in generate_items(None, tmp_path / "a", 10, cfg)]
    again = [i.record for i in generate_items(None, tmp_path / "b", 10, cfg)]
    assert first == again
    for rec in first:
        assert (tmp_path / "a" / rec["image_1"]).read_bytes() == (tmp_path / "b" / rec["image_1"]).read_bytes()
    rotation = [r for r in first if r["task"] == "rotation_game"]
    fill = tuple(rotation[0]["meta_data"]["fill"])
    assert tuple(_pixels(tmp_path / "a" / rotation[0]["image_1"])[0, 0]) == fill
    jigsaw = [r for r in first if r["task"] == "jigsaw"]
    img = _pixels(tmp_path / "a" / jigsaw[0]["image_1"])
    n = jigsaw[0]["meta_data"]["difficulty"]
    h, w = img.shape[0] // n, img.shape[1] // n
    pieces = [img[r * h:(r + 1) * h - 2, c * w:(c + 1) * w - 2].tobytes() for r in range(n) for c in range(n)]
    assert len(set(pieces)) == n * n  # every piece unique


def test_the_folder_default_records_no_new_setting():
    assert "pictures" not in config_settings(SyntheticConfig())
    assert config_settings(SyntheticConfig(pictures="procedural"))["pictures"] == "procedural"
    assert SyntheticConfig().tasks == TASKS and set(TASKS) < set(ALL_TASKS)
    with pytest.raises(ValueError, match="unknown pictures 'photos'"):
        next(generate_items(None, "unused", 1, SyntheticConfig(pictures="photos")))


def test_json_round_trip_keeps_the_answer_types(built):
    for task in ("maze", "color", "refcoco"):
        record = built[1][task][0].record
        assert json.loads(json.dumps(record)) == record and isinstance(record["answer"], str)


def test_the_heldout_writer_makes_program_task_folders(tmp_path):
    from lookcloser.data_builders.heldout import main

    argv = ["--out", str(tmp_path), "--seed", "9009", "--benchmarks", "tir_bench", "--tir_tasks", "maze", "color",
            "refcoco", "spot_difference", "--tir_pictures", "procedural", "--tir_count", "8"]
    assert main(argv) == 0
    records = json.loads((tmp_path / "tir_bench" / "TIR-Bench.json").read_text(encoding="utf-8"))
    assert [r["task"] for r in records] == ["maze", "color", "refcoco", "spot_difference"] * 2
    assert all((tmp_path / "tir_bench" / r["image_1"]).is_file() for r in records)
    assert all("grid_shown" in r["meta_data"] for r in records if r["task"] == "spot_difference")


def test_program_kinds_need_an_environment_with_python():
    from lookcloser.agent.oracle import check_program_tasks
    from lookcloser.errors import RecipeError

    check_program_tasks(ALL_TASKS, "crop+python")
    check_program_tasks(TASKS, "crop")
    with pytest.raises(RecipeError, match="refcoco are solved with the python tool, which environment 'tir_bench'"):
        check_program_tasks(("jigsaw", "refcoco"), "tir_bench")
