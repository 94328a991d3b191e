"""V* Bench (SEAL, craigwu/vstar_bench): 191 questions on high-resolution images, 115
``direct_attributes`` (4 options) and 76 ``relative_position`` (2 options) (../shared/specs/vstar_hrbench.md §1).

Layout read: ``direct_attributes/`` and ``relative_position/``, one ``<stem>.json`` (``question``,
``options``, the correct one first) beside each image, as the hub repo ships them (the other
folders, ``GPT4V-hard/`` and ``OCR/``, are not part of the 191).

Protocol: published V* numbers differ in option order (early DeepEyes never shuffled, so the answer
is always A; a later one shuffled without a seed). Two benchmarks read the same folder, so a report
says which one each row used and how much order moves the score:

- ``vstar``: the options in SEAL's order (the gold is always A; the answer prior is 1.0);
- ``vstar_shuffled``: each item's options shuffled with ``random.Random(f"{SHUFFLE_SEED}:{item id}")``.

Overall is item-weighted (lmms-eval, DeepEyes); the two categories are the ``category`` groups.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from lookcloser.data_builders.records import RecordError
from lookcloser.data_builders.scenes.hires import write_vstar
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report
from lookcloser.eval.items import EvalItem, RecordCatch, image_path, require
from lookcloser.rewards.benchmarks.vstar import SCORER

CATEGORIES = ("direct_attributes", "relative_position")
SHUFFLE_SEED = 0
LETTERS = "ABCDEFGH"
PROMPT = "Question: {question}\nOptions:\n{options}\nAnswer with the option's letter from the given choices."


def options_text(options: list[str]) -> list[str]:
    """``["A. rubber", "B. cotton"]``: the options as the prompt shows them and the scorer reads them."""
    return [f"{LETTERS[k]}. {text}" for k, text in enumerate(options)]


def _item(root: Path, path: Path, category: str, check_images: bool, shuffled: bool) -> EvalItem:
    rid = f"{category}/{path.stem}"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise RecordError(path, rid, None, f"not JSON: {err}") from None
    if not isinstance(record, dict):
        raise RecordError(path, rid, None, "expected an object")
    question = require(record, "question", str, path, rid)
    options = require(record, "options", list, path, rid)
    if not 2 <= len(options) <= len(LETTERS) or not all(isinstance(o, str) and o.strip() for o in options):
        raise RecordError(path, rid, "options", f"must be 2-{len(LETTERS)} non-empty strings")
    image = next((p for p in (path.with_suffix(s) for s in (".jpg", ".jpeg", ".png")) if p.exists()),
                 path.with_suffix(".jpg"))
    order = list(range(len(options)))
    if shuffled:
        random.Random(f"{SHUFFLE_SEED}:{rid}").shuffle(order)
    shown = options_text([options[k] for k in order])
    prompt = PROMPT.format(question=question.strip(), options="\n".join(shown))
    return EvalItem(id=rid, benchmark="vstar_shuffled" if shuffled else "vstar",
                    example={"id": rid, "question": prompt,
                             "images": [image_path(root, str(image.relative_to(root)), path, rid, "image", check_images)]},
                    gold={"answer": LETTERS[order.index(0)], "options": shown}, tags={"category": [category]})


def load_vstar(root: Path, *, check_images: bool = True, limit: int | None = None, strict: bool = True,
               shuffled: bool = False, **_) -> list[EvalItem]:
    paths = []
    for category in CATEGORIES:
        if not (root / category).is_dir():
            raise RecordError(root, None, category, "missing folder (V*: direct_attributes/ and relative_position/, "
                                                    "a .json beside each image)")
        paths += [(category, p) for p in sorted((root / category).glob("*.json"))]
    items = []
    for category, path in paths[:limit]:
        catch = RecordCatch("vstar_shuffled" if shuffled else "vstar", f"{category}/{path.stem}", strict)
        with catch:
            items.append(_item(root, path, category, check_images, shuffled))
        if catch.item:
            items.append(catch.item)
    return items


def write_fixture(folder: Path) -> Path:
    return write_vstar(folder, seed=7, counts=(4, 2), size=(640, 480))


_PUBLISHED = {"note": "V* overall, item-weighted (115 Attr + 76 Spatial): DeepEyes-7B 90.1 (Attr 91.3, Spatial 88.2), "
                      "Qwen2.5-VL-7B 71.2 (DeepEyes Tab.1) to 75.5 (Mini-o3 README), Mini-o3-7B 88.2 (Avg@32), "
                      "GPT-4o 65.2-66.0; early DeepEyes never shuffled the options (gold always A), a later one "
                      "shuffled without a seed: compare with the row of the same order"}
_COMMON = {"scorer": SCORER, "data_file": "direct_attributes", "to_info": lambda gold: gold,
               "answer_text": lambda gold: gold["answer"], "max_turns": 8, "environment": "crop",
               "prepare_source": "hf:craigwu/vstar_bench", "write_fixture": write_fixture,
               "report": Report(published=_PUBLISHED), "in_default_run": False}
SPEC = [
    BenchmarkSpec(name="vstar", order=50, title="V* acc (original order)", folders=("vstar", "vstar_bench", "V-Star"),
                  load=load_vstar, aliases=("vstar_bench", "v_star", "v*"),
                  protocol="options in SEAL's original order (the gold is option A)", **_COMMON),
    BenchmarkSpec(name="vstar_shuffled", order=51, title="V* acc (shuffled)",
                  folders=("vstar_shuffled", "vstar", "vstar_bench", "V-Star"),
                  load=lambda root, **kw: load_vstar(root, shuffled=True, **kw),
                  protocol=f"options shuffled per item with random.Random('{SHUFFLE_SEED}:<item id>')", **_COMMON),
]
