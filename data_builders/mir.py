"""MIR records -> staged SFT records (TRL conversational format, images interleaved).

The five curriculum stages follow MIR's paper (spec §1): stage 0 is the full chain, stage 1
gives every step as context and asks for the conclusion, stages 2 and 3 give less and less,
stage 4 is autonomous. ``faithful_upstream=True`` reproduces upstream's preprocessing exactly,
including its bug of always putting img2img into the context (so stages 2-3 leak the target).
"""

from __future__ import annotations

from pathlib import Path

from data_builders.records import (
    IMAGE_PLACEHOLDER,
    RecordError,
    check_image,
    read_json_records,
    record_id,
    resolve_image_path,
    validate_mir_record,
)

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
        if len(conclusion.strip()) == 1:
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
    conclusion = record["conclusion"].strip()
    if len(conclusion) == 1 and conclusion.isalpha():
        return conclusion.upper()
    from rewards.mir import extract_option

    return extract_option(conclusion)


def load_mir_records(path: str | Path, images_root: str | Path | None = None, *, check_images: bool = True,
                     max_pixels: int | None = None) -> list[dict]:
    """Read and validate an MIR JSON file; resolve image paths to absolute ones inside the root.

    The first bad record stops with a ``RecordError`` naming file, record and field.
    """
    path = Path(path)
    root = Path(images_root) if images_root is not None else path.parent
    out = []
    for index, raw in enumerate(read_json_records(path)):
        record = dict(validate_mir_record(raw, path, index))
        rid = record_id(record, index)
        resolved = []
        for rel in record["images"]:
            image_path = resolve_image_path(root, rel, source=path, rid=rid)
            if check_images:
                kwargs = {"max_pixels": max_pixels} if max_pixels else {}
                check_image(image_path, source=path, rid=rid, **kwargs)
            resolved.append(str(image_path))
        record["images"] = resolved
        record.setdefault("id", rid)
        out.append(record)
    if not out:
        raise RecordError(path, None, None, "the file holds no records")
    return out


def mir_sft_dataset(path: str | Path, images_root: str | Path | None = None, *, stage: int = 1,
                    faithful_upstream: bool = False):
    """A ``datasets.Dataset`` of staged SFT records with decoded-on-access images."""
    from datasets import Dataset, Image, Sequence

    rows = []
    for record in load_mir_records(path, images_root):
        row = build_stage(record, stage, faithful_upstream=faithful_upstream)
        row["id"] = str(record["id"])
        row["answer"] = answer_letter(record) or ""
        rows.append(row)
    dataset = Dataset.from_list(rows)
    return dataset.cast_column("images", Sequence(Image()))
