"""One loader interface over the benchmarks' official on-disk layouts (spec: benchmarks.md).

``load_benchmark(name, root)`` reads a benchmark folder exactly as its authors ship it and returns
``EvalItem``s: what the agent loop gets (``example``: the prompt and the environment's ``reset``
arguments, images as absolute paths), what the scorer gets (``gold``), and the groups an item is
reported under (``tags``). Every problem is a ``RecordError`` naming file, record and field.

| name          | folder holds                                                                  |
|---------------|-------------------------------------------------------------------------------|
| `tir_bench`   | `TIR-Bench.json` + `data/...` images (paths in `image_1`/`image_2`)           |
| `mir`         | `all_data_rel.json` + images (relative to the folder or its `images/`)        |
| `disbench`    | `queries.jsonl`, `metadata/{user}.jsonl`, `images/{user}/{photo}.jpg`         |
| `imagemining` | `data.jsonl` + `images/`                                                      |

Each benchmark's spec (``eval/benchmarks/<name>.py``) names its layout and loader; the four above are here,
a newer benchmark's loader lives in its spec module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from lookcloser.data_builders.records import (
    RecordError,
    check_image,
    iter_jsonl,
    read_json_records,
    record_id,
    resolve_image_path,
)
from lookcloser.data_builders.search_tasks import disbench_question
from lookcloser.errors import UserError


def __getattr__(name: str):
    """``BENCHMARKS`` (every registered name) and ``DATA_FILES``, read from ``eval.benchmarks`` when asked
    (a module-level import would be circular: the specs name this module's loaders)."""
    from lookcloser.eval import benchmarks

    if name == "BENCHMARKS":
        return benchmarks.BENCHMARKS
    if name == "DATA_FILES":
        return {n: s.data_file for n, s in benchmarks.SPECS.items()}
    raise AttributeError(name)


def _data_file(name: str) -> str:
    from lookcloser.eval.benchmarks import SPECS

    return SPECS[name].data_file


# MIR's 12 subtasks in their 3 categories (docs/formats.md §1); keys are normalised subtask names.
MIR_CATEGORIES = {
    **dict.fromkeys(("speed_comparison", "motion_detection", "cooking_process", "image_puzzle"), "Sequential"),
    **dict.fromkeys(("location_relationship", "depth_relationship", "3d_view", "forced_perspective"), "Spatial"),
    **dict.fromkeys(("chart_analysis", "yes_but_satire", "yes_but", "weight_comparison", "scale_blur"),
                    "Analytical"),
}


class EvalError(UserError):
    """A bad setting or output folder: the CLI reports it as one line."""


@dataclass
class EvalItem:
    """One benchmark question, ready for the loop and the scorer.

    Attributes:
        id: Unique within the benchmark (the record's own id, as a string).
        benchmark: A name of ``eval.benchmarks.SPECS``.
        example: The row given to ``agent.loop.run_episodes``: ``question`` or ``prompt``, ``images``
            (absolute paths) and whatever the environment's ``reset`` needs (``user_id``, ``data_root``).
        gold: What ``eval.scoring`` passes to ``rewards/`` (e.g. the official TIR-Bench record).
        tags: Report groups, name -> values (several values: the item counts in each group).
        bad: Why the record could not be loaded (file, record, field, reason); None for a good item.
            A bad item is not run: it scores 0 as failed, so the denominator stays the benchmark's.
    """

    id: str
    benchmark: str
    example: dict
    gold: dict
    tags: dict[str, list[str]] = field(default_factory=dict)
    bad: str | None = None


def _bad_item(name: str, rid: object, err: RecordError) -> EvalItem:
    return EvalItem(id=str(rid), benchmark=name, example={}, gold={}, bad=str(err))


def _each_record(name: str, records, strict: bool):
    """``(record, rid, catch)`` per record; the loader builds the item inside ``with catch:``, which
    turns a ``RecordError`` into a bad item (or lets it stop the load under ``strict``)."""
    for index, record in enumerate(records):
        rid = record_id(record, index) if isinstance(record, dict) else f"#{index}"
        yield record, rid, _Catch(name, rid, strict)


class _Catch:
    """Context manager: a RecordError inside becomes ``self.item`` (a bad item) unless ``strict``."""

    def __init__(self, name: str, rid: object, strict: bool) -> None:
        self.name, self.rid, self.strict, self.item = name, rid, strict, None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, err, tb) -> bool:
        if kind is not None and issubclass(kind, RecordError) and not self.strict:
            self.item = _bad_item(self.name, err.record_id if err.record_id is not None else self.rid, err)
            return True
        return False


def find_benchmark_dir(name: str, data_root: str | Path) -> Path:
    """The folder holding ``name``'s data: ``data_root`` itself or one of its named subfolders.

    >>> find_benchmark_dir("mir", "/nonexistent")
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecordError: /nonexistent, field 'mir': no all_data_rel.json in /nonexistent or its subfolders mir/, MIR/
    """
    from lookcloser.eval.benchmarks import SPECS

    root = Path(data_root)
    folders, data_file = SPECS[name].folders, SPECS[name].data_file
    subs = [root / sub for sub in folders]
    nested = [child for sub in subs if sub.is_dir() for child in sorted(sub.iterdir()) if child.is_dir()]
    for candidate in (root, *subs, *nested):  # nested: a download that unpacked into its own folder
        if (candidate / data_file).exists():  # a file, or a folder (V*'s direct_attributes/)
            return candidate
    subs = ", ".join(f"{s}/" for s in folders)
    raise RecordError(root, None, name, f"no {data_file} in {root} or its subfolders {subs}")


def load_benchmark(name: str, root: str | Path, *, check_images: bool = True, limit: int | None = None,
                   strict: bool = True, **options) -> list[EvalItem]:
    """Read and validate one benchmark folder (see the module table) into ``EvalItem``s.

    ``strict``: the first bad record raises its ``RecordError``. Otherwise every bad record becomes
    an item with ``bad`` set (its id and reason), in its place, and the rest load.

    ``options``: ``mir_prompt_stage`` (0: MIR's benchmark prompt, question and options only; 1-3 add
    the curriculum's reference context), ``search_corpus`` (ImageMining: an offline JSONL corpus
    for ``web_search``).
    """
    from lookcloser.eval.benchmarks import SPECS

    if name not in SPECS:
        raise EvalError(f"unknown benchmark {name!r}; choose from {', '.join(SPECS)}")
    items = SPECS[name].load(Path(root), check_images=check_images, limit=limit, strict=strict, **options)
    seen: set[str] = set()
    for k, item in enumerate(items):
        if item.id in seen:
            err = RecordError(Path(root) / _data_file(name), item.id, "id", "duplicate id")
            if strict:
                raise err
            items[k] = item = _bad_item(name, f"{item.id} (#{k})", err)
        seen.add(item.id)
    return items


def _require(record: dict, key: str, kinds: type | tuple, source: Path, rid: object, *, nonempty: bool = True):
    value = record.get(key)
    if value is None:
        raise RecordError(source, rid, key, "missing required field")
    if not isinstance(value, kinds) or isinstance(value, bool):
        names = "/".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
        raise RecordError(source, rid, key, f"must be {names}, got {type(value).__name__}")
    if nonempty and isinstance(value, (str, list)) and not (value.strip() if isinstance(value, str) else value):
        raise RecordError(source, rid, key, "must not be empty")
    return value


def _image(root: Path, rel: str, source: Path, rid: object, field_name: str, check: bool) -> str:
    path = resolve_image_path(root, rel, source=source, rid=rid, field=field_name)
    if check:
        check_image(path, source=source, rid=rid, field=field_name)
    return str(path)


# -- TIR-Bench --

def load_tir_bench(root: Path, *, check_images: bool = True, limit: int | None = None, strict: bool = True,
                   **_) -> list[EvalItem]:
    source = root / _data_file("tir_bench")
    items = []
    for record, rid, catch in _each_record("tir_bench", read_json_records(source)[:limit], strict):
        with catch:
            items.append(_tir_item(root, source, record, rid, check_images))
        if catch.item:
            items.append(catch.item)
    return items


def _tir_item(root: Path, source: Path, record: object, rid: object, check_images: bool) -> EvalItem:
    if not isinstance(record, dict):
        raise RecordError(source, rid, None, f"expected an object, got {type(record).__name__}")
    if "task" not in record and "category" in record:  # old files say "category"
        record = {**record, "task": record["category"]}
    if "meta_data" not in record and "metadata" in record:
        record = {**record, "meta_data": record["metadata"]}
    _require(record, "id", (int, str), source, rid)
    task = _require(record, "task", str, source, rid)
    prompt = _require(record, "prompt", str, source, rid)
    answer = _require(record, "answer", (str, int, float), source, rid)
    if isinstance(answer, str) and not answer.strip():
        raise RecordError(source, rid, "answer", "must not be empty")
    meta = record.get("meta_data") or {}
    if not isinstance(meta, dict):
        raise RecordError(source, rid, "meta_data", "must be an object")
    # the scorer reads n as upstream does (``metadata`` first; 3.0 works, "3" scores 0): load such
    # items and let them score; only a jigsaw with no difficulty at all is a bad record
    scored_meta = record.get("metadata") if isinstance(record.get("metadata"), dict) else meta
    if task == "jigsaw" and not isinstance(scored_meta.get("difficulty"), (int, float, str)):
        raise RecordError(source, rid, "meta_data", "jigsaw items need a 'difficulty' (n of the n x n grid)")
    images = [_image(root, _require(record, "image_1", str, source, rid), source, rid, "image_1", check_images)]
    if record.get("image_2") not in (None, ""):
        images.append(_image(root, _require(record, "image_2", str, source, rid), source, rid, "image_2",
                             check_images))
    return EvalItem(
        id=str(record["id"]), benchmark="tir_bench",
        example={"id": str(record["id"]), "question": prompt, "images": images},
        gold={"record": record}, tags={"task": [task]})


# -- MIR --

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
    from lookcloser.data_builders.mir import answer_letter, build_stage, prepare_mir_record

    if mir_prompt_stage not in (0, 1, 2, 3):
        raise EvalError(f"mir_prompt_stage must be 0 (benchmark prompt) or 1-3 (with reference context), "
                         f"got {mir_prompt_stage}")
    source = root / _data_file("mir")
    raw = read_json_records(source)[:limit]
    images_root = _mir_images_root(root, raw)
    checked: dict = {}
    items = []
    for index, (record, _rid, catch) in enumerate(_each_record("mir", raw, strict)):
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
                id=str(rid), benchmark="mir",
                example={"id": str(rid), "prompt": [user], "images": list(record["images"])},
                gold={"conclusion": record["conclusion"], "options": record.get("options")},
                tags={"task": [subtask], "category": [mir_category(subtask)]}))
        if catch.item:
            items.append(catch.item)
    return items


# -- DISBench --

def _photo_ids(root: Path, user: str, source: Path, rid: object, cache: dict) -> set[str]:
    if user not in cache:
        meta = resolve_image_path(root, f"metadata/{user}.jsonl", source=source, rid=rid, field="user_id")
        if not meta.is_file():
            raise RecordError(source, rid, "user_id", f"no metadata file {meta}")
        ids = set()
        for lineno, line in enumerate(iter_jsonl(meta), start=1):
            pid = line.get("photo_id") if isinstance(line, dict) else None
            if not isinstance(pid, (str, int)) or isinstance(pid, bool):
                raise RecordError(meta, f"line {lineno}", "photo_id", "missing or not a string")
            ids.add(str(pid))
        cache[user] = ids
    return cache[user]


def load_disbench(root: Path, *, check_images: bool = True, limit: int | None = None, strict: bool = True,
                  **_) -> list[EvalItem]:
    source = root / _data_file("disbench")
    users: dict[str, set[str]] = {}
    items = []
    for record, rid, catch in _each_record("disbench", list(iter_jsonl(source))[:limit], strict):
        with catch:
            if not isinstance(record, dict):
                raise RecordError(source, rid, None, "expected an object")
            qid = str(_require(record, "query_id", (str, int), source, rid))
            user = _require(record, "user_id", str, source, rid)
            query = _require(record, "query", str, source, rid)
            answer = _require(record, "answer", list, source, rid)
            if not all(isinstance(a, (str, int)) and not isinstance(a, bool) for a in answer):
                raise RecordError(source, rid, "answer", "must be a list of photo id strings")
            known = _photo_ids(root, user, source, rid, users)
            missing = [str(a) for a in answer if str(a) not in known]
            if missing:
                raise RecordError(source, rid, "answer", f"photo ids not in metadata/{user}.jsonl: {', '.join(missing[:5])}")
            if check_images:
                for pid in answer:
                    _image(root, f"images/{user}/{pid}.jpg", source, rid, "answer", True)
            event_type = record.get("event_type")
            items.append(EvalItem(
                id=qid, benchmark="disbench",
                example={"query_id": qid, "user_id": user, "data_root": str(root.resolve()),
                         "question": disbench_question(query), "query": query},
                gold={"answer": [str(a) for a in answer]},
                tags={"event_type": [event_type if isinstance(event_type, str) and event_type else "unknown"]}))
        if catch.item:
            items.append(catch.item)
    return items


# -- ImageMining --

def _find_image(images: Path, name: str, source: Path, rid: object, check: bool) -> str:
    """The image file; the extension's case in ``image`` varies (docs/formats.md §5): fall back to a
    case-insensitive match."""
    path = resolve_image_path(images, name, source=source, rid=rid, field="image")
    if not path.exists() and path.parent.is_dir():
        matches = [p for p in path.parent.iterdir() if p.name.lower() == path.name.lower()]
        path = matches[0] if matches else path
    if check:
        check_image(path, source=source, rid=rid, field="image")
    return str(path)


def _yes_no(value: object) -> str:
    text = str(value).strip().lower() if value is not None else ""
    return text if text in ("yes", "no") else "unknown"


def load_imagemining(root: Path, *, check_images: bool = True, limit: int | None = None,
                     search_corpus: str | None = None, strict: bool = True, **_) -> list[EvalItem]:
    source = root / _data_file("imagemining")
    images = root / "images"
    items = []
    for record, rid, catch in _each_record("imagemining", list(iter_jsonl(source))[:limit], strict):
        with catch:
            if not isinstance(record, dict):
                raise RecordError(source, rid, None, "expected an object")
            _require(record, "id", (int, str), source, rid)
            question = _require(record, "question", str, source, rid)
            answer = _require(record, "answer", str, source, rid)
            image = _find_image(images, _require(record, "image", str, source, rid), source, rid, check_images)
            answer_zh = record.get("answer_zh")
            if answer_zh is not None and not isinstance(answer_zh, str):
                raise RecordError(source, rid, "answer_zh", "must be a string when present")
            reasoning_types = record.get("difficulty_tags") or []
            if not isinstance(reasoning_types, list) or not all(isinstance(t, str) for t in reasoning_types):
                raise RecordError(source, rid, "difficulty_tags", "must be a list of strings")
            example = {"id": str(record["id"]), "question": question, "image": image}
            if search_corpus:
                example["search_corpus"] = str(search_corpus)
            items.append(EvalItem(
                id=str(record["id"]), benchmark="imagemining", example=example,
                gold={"answer": answer, "answer_zh": answer_zh, "question": question},
                tags={"category": [str(record.get("category_l1") or "unknown")],
                      "subcategory": [str(record.get("category_l2") or "unknown")],
                      "reasoning_type": reasoning_types or ["unknown"],
                      "need_image_before_search": [_yes_no(record.get("need_image_before_search"))],
                      "need_image_during_search": [_yes_no(record.get("need_image_during_search"))]}))
        if catch.item:
            items.append(catch.item)
    return items
