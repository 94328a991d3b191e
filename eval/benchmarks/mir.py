"""MIR (ShellyCoder/MIRBench): `all_data_rel.json` + images; the option letter by ``rewards.mir``; its
subtasks and their 3 categories as report groups."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from lookcloser.data_builders.mir import answer_letter, build_stage, prepare_mir_record
from lookcloser.data_builders.records import RecordError, read_json_records
from lookcloser.eval import fixtures
from lookcloser.eval.benchmarks.benchmark_spec import BenchmarkSpec, Report
from lookcloser.eval.items import EvalError, EvalItem, each_record
from lookcloser.rewards.benchmarks.mir import SCORER
from lookcloser.rewards.mir import gold_letter

logger = logging.getLogger(__name__)
NAME = SCORER.name
DATA_FILE = "all_data_rel.json"
# MIR's 12 subtasks in their 3 categories (docs/formats.md §1); keys are normalised subtask names.
MIR_CATEGORIES = {
    **dict.fromkeys(("speed_comparison", "motion_detection", "cooking_process", "image_puzzle"), "Sequential"),
    **dict.fromkeys(("location_relationship", "depth_relationship", "3d_view", "forced_perspective"), "Spatial"),
    **dict.fromkeys(("chart_analysis", "yes_but_satire", "yes_but", "weight_comparison", "scale_blur"),
                    "Analytical"),
}


def _letter(gold: dict) -> str:
    return str(gold_letter(gold["conclusion"]))


def _mir_subtask(record: dict) -> str:
    for key in ("subtask", "sub_task", "task", "category"):
        if isinstance(record.get(key), str) and record[key].strip():
            return record[key].strip()
    return "unknown"


def mir_category(subtask: str) -> str:
    """MIR's category of a subtask name (docs/formats.md §1), "unknown" for names outside its 12.

    >>> mir_category("Forced Perspective"), mir_category('"YES, BUT" Satire'), mir_category("colour")
    ('Spatial', 'Analytical', 'unknown')
    """
    key = "_".join("".join(c if c.isalnum() else " " for c in subtask.lower()).split())
    return MIR_CATEGORIES.get(key, "unknown")


def _mir_images_root(root: Path, records: list) -> Path:
    """Image paths are relative to the JSON's folder, or to an ``images/`` folder beside it (images.zip)."""
    first = next((r["images"][0] for r in records if isinstance(r, dict) and isinstance(r.get("images"), list)
                  and r["images"] and isinstance(r["images"][0], str)), None)
    if first and not (root / first).exists() and (root / "images" / first).exists():
        return root / "images"
    return root


def load_mir(root: Path, *, check_images: bool = True, limit: int | None = None, mir_prompt_stage: int = 0,
             strict: bool = True, **_) -> list[EvalItem]:
    if mir_prompt_stage not in (0, 1, 2, 3):
        raise EvalError(f"mir_prompt_stage must be 0 (benchmark prompt) or 1-3 (with reference context), "
                         f"got {mir_prompt_stage}")
    source = root / DATA_FILE
    raw = read_json_records(source)[:limit]
    images_root = _mir_images_root(root, raw)
    checked: dict = {}
    items = []
    for index, (record, _rid, catch) in enumerate(each_record(NAME, raw, strict)):
        with catch:
            record = prepare_mir_record(record, index, source, images_root, check_images=check_images,
                                        checked=checked)
            rid = record["id"]
            if answer_letter(record) is None:
                raise RecordError(source, rid, "conclusion", "states no option letter")
            # Stage 0's user turn is MIR's benchmark prompt; stages 1-3 add the reference context.
            user = build_stage(record, mir_prompt_stage)["messages"][0]
            subtask = _mir_subtask(record)
            items.append(EvalItem(
                id=str(rid), benchmark=NAME,
                example={"id": str(rid), "prompt": [user], "images": list(record["images"])},
                gold={"conclusion": record["conclusion"], "options": record.get("options")},
                tags={"task": [subtask], "category": [mir_category(subtask)]}))
        if catch.item:
            items.append(catch.item)
    return items


def _first(paths) -> Path | None:
    return next(iter(sorted(paths, key=lambda p: (len(p.parts), str(p)))), None)


def arrange_mir(target: Path) -> None:
    """Make MIR's image paths resolve from ``all_data_rel.json``'s folder or its ``images/`` (what
    ``load_mir`` reads): a zip that unpacked under another top folder is renamed ``images/``."""
    data = _first(target.rglob(DATA_FILE))
    if data is None:
        return
    folder = data.parent
    records = json.loads(data.read_text(encoding="utf-8"))
    first = next((r["images"][0] for r in records if isinstance(r, dict) and isinstance(r.get("images"), list)
                  and r["images"] and isinstance(r["images"][0], str)), None)
    if first is None or (folder / first).exists() or (folder / "images" / first).exists():
        return
    for candidate in sorted(p for p in folder.rglob("*") if p.is_dir() and not p.name.startswith(".")):
        if (candidate / first).exists():
            if (folder / "images").exists():
                logger.warning("%s: images are under %s but %s exists; move them there", NAME, candidate, folder / "images")
                return
            candidate.rename(folder / "images")
            logger.info("%s: moved %s to %s", NAME, candidate, folder / "images")
            return
    logger.warning("%s: image %s of the first record is not under %s", NAME, first, folder)


SPEC = BenchmarkSpec(
    name=NAME, scorer=SCORER, order=20, title="MIR acc",
    data_file=DATA_FILE, folders=("mir", "MIR"),
    load=load_mir,
    to_info=lambda gold: {"answer": gold["conclusion"], "options": gold.get("options")},
    answer_text=_letter, prior_text=lambda gold: str(gold["conclusion"]),
    max_turns=4, environment="mir", prepare_source="hf:ShellyCoder/MIRBench",
    arrange=arrange_mir, write_fixture=fixtures.write_mir,
    report=Report(published={"note": "MIR publishes per-model accuracies in its paper; none is carried in the spec."}))
