"""MIR records -> staged SFT records (TRL conversational format, images interleaved).

The five curriculum stages follow MIR's paper (docs/formats.md §1): stage 0 is the full chain, stage 1
gives every step as context and asks for the conclusion, stages 2 and 3 give less and less,
stage 4 is autonomous. ``faithful_upstream=True`` reproduces upstream's preprocessing exactly,
including its bug of always putting img2img into the context (so stages 2-3 leak the target).
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

from lookcloser.data_builders.records import (
    IMAGE_PLACEHOLDER,
    RecordError,
    check_image,
    read_json_records,
    record_id,
    resolve_image_path,
    validate_mir_record,
)
from lookcloser.data_builders.row_formats import RowFormat, resolve_path

NAME = "mir"  # the benchmark (data_source, dataset_kind)
STAGES = (0, 1, 2, 3, 4)
PROMPT_SUFFIX = " Select the correct option from the following options: "
ANALYZE_PREFIX = "Let's analyze these images first:"


def options_text(options: list[str] | dict[str, str]) -> str:
    """Render options as upstream does.

    >>> options_text(["A. red", "B. blue"]), options_text({"A": "red", "B": "blue"})
    ('A. red B. blue', 'A: red B: blue')
    """
    if isinstance(options, dict):
        return " ".join(f"{key}: {value}" for key, value in options.items())
    return " ".join(options)


def captions_text(caption: list[str] | str) -> str:
    """One line per image, 1-based, or the string as is; each line ends with a newline.

    >>> captions_text(["a cat", "a dog"])
    'Image 1: a cat\\nImage 2: a dog\\n'
    """
    if isinstance(caption, list):
        return "".join(f"Image {i}: {text}\n" for i, text in enumerate(caption, start=1))
    return f"{caption}\n"


def _is_letter(conclusion: str) -> bool:
    """A bare option letter (upstream writes these out in stage 4), not a sentence.

    >>> _is_letter(" B "), _is_letter("B."), _is_letter("So B.")
    (True, False, False)
    """
    text = conclusion.strip()
    return len(text) == 1 and text.isalpha()


def _has_reasoning(record: dict) -> bool:
    return bool(record.get("reasoning"))


def _context(record: dict, stage: int, faithful_upstream: bool) -> str:
    """The "Reference Context" block appended to the user text for stages 1-3."""
    if stage not in (1, 2, 3):
        return ""
    lines = ["\nReference Context:\n", record["summary"], "\n", captions_text(record["caption"])]
    if stage in (1, 2):
        lines += [record["text2img"], "\n"]
    if stage == 1 or faithful_upstream:
        lines += [record["img2img"], "\n"]
    if stage == 1 and _has_reasoning(record):
        lines += [record["reasoning"], "\n"]
    return "".join(lines)


def _target(record: dict, stage: int, faithful_upstream: bool) -> str:
    """The assistant text each stage trains on."""
    reasoning = [record["reasoning"], "\n"] if _has_reasoning(record) else []
    if faithful_upstream and stage in (2, 3):
        # Upstream always writes the reasoning slot, an empty line when there is none.
        reasoning = [record.get("reasoning") or "", "\n"]
    conclusion = record["conclusion"]
    if stage == 0:
        parts = [record["summary"], "\n", captions_text(record["caption"]), record["text2img"], "\n",
                 record["img2img"], "\n", *reasoning, conclusion]
    elif stage == 1:
        parts = [conclusion]
    elif stage == 2:
        parts = [record["img2img"], "\n", *reasoning, conclusion]
    elif stage == 3:
        parts = [record["text2img"], "\n", record["img2img"], "\n", *reasoning, conclusion]
    else:
        if _is_letter(conclusion):
            conclusion = f"Based on the above, the correct answer is {conclusion.strip()}"
        parts = [record["summary"], "\n", ANALYZE_PREFIX, "\n", captions_text(record["caption"]),
                 record["text2img"], "\n", record["img2img"], "\n", *reasoning, conclusion]
    return "".join(parts)


def user_content(question: str, tail: str) -> list[dict]:
    """Interleave image blocks where the question's placeholders are, then the tail text.

    >>> [b.get("text", b["type"]) for b in user_content("Is <image> bigger than <image2>?", " Pick.")]
    ['Is ', 'image', ' bigger than ', 'image', '? Pick.']
    """
    pieces = IMAGE_PLACEHOLDER.split(question)
    blocks: list[dict] = []
    for i, piece in enumerate(pieces):
        if i > 0:
            blocks.append({"type": "image"})
        text = piece + (tail if i == len(pieces) - 1 else "")
        if text:
            blocks.append({"type": "text", "text": text})
    return blocks


def build_stage(record: dict, stage: int, *, faithful_upstream: bool = False) -> dict:
    """One MIR record -> one SFT record of the given curriculum stage.

    Images stay as the record's relative paths; callers resolve them against the images root.

    >>> r = {"question": "Which is red, <image> or <image>?", "options": ["A. first", "B. second"],
    ...      "images": ["1.png", "2.png"], "summary": "Compare colours.", "caption": ["blue", "red"],
    ...      "text2img": "t2i", "img2img": "i2i", "conclusion": "B"}
    >>> out = build_stage(r, 1)
    >>> out["messages"][0]["content"][-1]["text"]
    '? Select the correct option from the following options: A. first B. second\\nReference Context:\\nCompare colours.\\nImage 1: blue\\nImage 2: red\\nt2i\\ni2i\\n'
    >>> out["messages"][1]["content"][0]["text"], out["images"]
    ('B', ['1.png', '2.png'])
    >>> build_stage(r, 4)["messages"][1]["content"][0]["text"].splitlines()[-1]
    'Based on the above, the correct answer is B'
    """
    if stage not in STAGES:
        raise ValueError(f"MIR stage must be one of {STAGES}, got {stage!r}")
    tail = PROMPT_SUFFIX + options_text(record["options"]) + _context(record, stage, faithful_upstream)
    return {
        "messages": [
            {"role": "user", "content": user_content(record["question"], tail)},
            {"role": "assistant", "content": [{"type": "text", "text": _target(record, stage, faithful_upstream)}]},
        ],
        "images": list(record["images"]),
    }


def answer_letter(record: dict) -> str | None:
    """The gold option letter: a bare-letter conclusion, else the letter the sentence states."""
    from lookcloser.rewards.mir import gold_letter

    return gold_letter(record["conclusion"])


def prepare_mir_record(raw: object, index: int, source: str | Path, root: str | Path, *,
                       check_images: bool = True, max_pixels: int | None = None,
                       checked: dict[str, tuple[int, int]] | None = None) -> dict:
    """Validate one raw MIR record and resolve its images to absolute paths inside ``root``.

    Raises ``RecordError`` (file, record id, field). ``checked`` caches image checks so an image
    shared by several records (or several stages) is opened once.
    """
    record = dict(validate_mir_record(raw, source, index))
    rid = record_id(record, index)
    kwargs = {"max_pixels": max_pixels} if max_pixels else {}
    resolved = []
    for rel in record["images"]:
        key = str(resolve_image_path(root, rel, source=source, rid=rid))
        if check_images and (checked is None or key not in checked):
            size = check_image(Path(key), source=source, rid=rid, **kwargs)
            if checked is not None:
                checked[key] = size
        resolved.append(key)
    record["images"] = resolved
    record.setdefault("id", rid)
    return record


def load_mir_records(path: str | Path, images_root: str | Path | None = None, *, check_images: bool = True,
                     max_pixels: int | None = None) -> list[dict]:
    """Read and validate an MIR JSON file; resolve image paths to absolute ones inside the root.

    The first bad record stops with a ``RecordError`` naming file, record and field.
    """
    path = Path(path)
    root = images_root if images_root is not None else path.parent
    checked: dict[str, tuple[int, int]] = {}
    out = [prepare_mir_record(raw, index, path, root, check_images=check_images, max_pixels=max_pixels,
                              checked=checked)
           for index, raw in enumerate(read_json_records(path))]
    if not out:
        raise RecordError(path, None, None, "the file holds no records")
    return out


def mir_sft_dataset(path: str | Path, images_root: str | Path | None = None, *, stage: int = 1,
                    faithful_upstream: bool = False):
    """A ``datasets.Dataset`` of staged SFT records with decoded-on-access images."""
    from datasets import Dataset, Image, Sequence  # here: a heavy import only the GRPO rows need

    rows = [build_stage(record, stage, faithful_upstream=faithful_upstream)
            for record in load_mir_records(path, images_root)]
    dataset = Dataset.from_list(rows)
    return dataset.cast_column("images", Sequence(Image()))


def sft_features():
    from datasets import Features, Image, List, Value

    block = {"type": Value("string"), "text": Value("string")}
    return Features({"messages": List({"role": Value("string"), "content": List(block)}), "images": List(Image()),
                     "id": Value("string"), "answer": Value("string"), "subtask": Value("string")})


def stage_dirs(out_dir: str | Path, stages: list[int]) -> dict[int, Path]:
    """One stage writes to ``out_dir``; several write to ``out_dir/stage_{k}``.

    >>> {k: str(v) for k, v in stage_dirs("out", [1]).items()}, sorted(stage_dirs("out", [1, 2]))
    ({1: 'out'}, [1, 2])
    """
    out = Path(out_dir)
    return {stages[0]: out} if len(stages) == 1 else {s: out / f"stage_{s}" for s in stages}


def build_mir(path: str | Path, out_dir: str | Path, report, *, images_root: str | Path | None = None,
              stages: list[int] = (1, 2, 3, 4), faithful_upstream: bool = False, fmt: str = "hf",
              check_images: bool = True, max_pixels: int | None = None, progress: bool = True) -> dict[int, Path]:
    """Validate an MIR file once and write one SFT data set per stage (images referenced by path).

    Each record is read, validated and its images checked once, whatever the number of stages.
    """
    from contextlib import ExitStack

    from tqdm import tqdm

    from lookcloser.data_builders.output import DatasetWriter

    stages = list(stages)
    for stage in stages:
        if stage not in STAGES:
            raise ValueError(f"MIR stage must be one of {STAGES}, got {stage!r}")
    path = Path(path)
    root = images_root if images_root is not None else path.parent
    records = read_json_records(path)
    checked: dict[str, tuple[int, int]] = {}
    features = sft_features()
    # The records and every imported module are long-lived: keep the cyclic GC from rescanning
    # them on each collection (it otherwise costs a third of the run on the full MIR file).
    gc.freeze()
    try:
        with ExitStack() as stack:
            writers = {stage: stack.enter_context(DatasetWriter(out, features, fmt=fmt))
                       for stage, out in stage_dirs(out_dir, stages).items()}
            bar = tqdm(records, desc="mir", unit="record", disable=None if progress else True)
            for index, raw in enumerate(bar):
                report.read += 1
                try:
                    record = prepare_mir_record(raw, index, path, root, check_images=check_images,
                                                max_pixels=max_pixels, checked=checked)
                except RecordError as err:
                    report.reject(err, raw)
                    continue
                meta = {"id": str(record["id"]), "answer": answer_letter(record) or "",
                        "subtask": str(record.get("subtask") or "")}
                for stage, writer in writers.items():
                    writer.add({**build_stage(record, stage, faithful_upstream=faithful_upstream), **meta})
                report.written += 1
    finally:
        gc.unfreeze()
    report.rows = sum(w.rows for w in writers.values())
    return {stage: Path(w.out_dir) for stage, w in writers.items()}


def mir_grpo_dataset(path: str | Path, images_root: str | Path | None = None, stage: int = 4):
    """MIR questions as GRPO prompts (the stage's user turn; 4 = autonomous, no context) + gold letter."""
    from datasets import Dataset, Image, Sequence  # here: a heavy import only the GRPO rows need

    rows = []
    for record in load_mir_records(resolve_path(path), images_root and resolve_path(images_root)):
        staged = build_stage(record, stage)
        rows.append({"prompt": [staged["messages"][0]], "images": staged["images"], "data_source": NAME,
                     "reward_info": json.dumps({"answer": answer_letter(record)}),
                     "task": str(record.get("subtask") or ""), "id": str(record.get("id"))})
    return Dataset.from_list(rows).cast_column("images", Sequence(Image()))


def _read_mir_rows(path: Path, *, images_root: str | None = None, mir_stage: int = 4, **_):
    return mir_grpo_dataset(path, images_root, mir_stage)


# MIR's all_data_rel.json as GRPO rows (hard questions from data_builders difficulty, or MIR itself).
GRPO_ROWS = RowFormat(NAME, recognise=lambda path: path.suffix == ".json", read=_read_mir_rows)
