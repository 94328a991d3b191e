"""ImageNet-Think-250K parquet shards -> SFT records with a ``<think>`` target (docs/formats.md §2).

Each row holds an image and numbered think/answer pairs (one per generator: GLM-4.1V-Thinking
and Kimi-VL-Thinking). Column names are detected by pattern (``think_1``/``answer_1``,
``thinking_2``, ``reasoning1``...), or given by a column map; residual tags are cleaned; each
chosen pair becomes one record ``user: [image, prompt] -> assistant: <think>{think}</think>{answer}``.

Streaming: shards are read ``batch_rows`` rows at a time (``pyarrow`` ``iter_batches``) and
written in chunks, so memory stays bounded whatever the data set's size.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

from lookcloser.data_builders.records import DEFAULT_MAX_PIXELS, RecordError

DEFAULT_PROMPT = ("Please analyze this image step by step. Explain your reasoning process. Describe this image and "
                  "give as much information as possible")
DEFAULT_TEMPLATE = "<think>{think}</think>{answer}"
PROMPT_COLUMNS = ("prompt", "question", "instruction")
ID_COLUMNS = ("id", "image_id", "uid")
_THINK_COLUMN = re.compile(r"^(?:think|thinking|thought|thoughts|reasoning|cot)[_\-]?(\d+)$", re.IGNORECASE)
_ANSWER_COLUMN = re.compile(r"^(?:answer|response|output|final_answer)[_\-]?(\d+)$", re.IGNORECASE)
# GLM: <think>...</think><answer>...</answer> (and its <|begin_of_box|> answer markers); Kimi: ◁think▷...◁/think▷.
_THINK_BLOCK = re.compile(r"(?:<think>|◁think▷)(.*?)(?:</think>|◁/think▷)", re.DOTALL)
_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_STRAY_TAGS = re.compile(r"</?think>|◁/?think▷|</?answer>|<\|(?:begin|end)_of_box\|>")


def detect_pairs(columns: list[str], column_map: dict | None = None) -> dict[str, tuple[str, str]]:
    """Map generator number -> (think column, answer column).

    ``column_map`` overrides detection: ``{"1": {"think": "a", "answer": "b"}, ...}``.

    >>> detect_pairs(["image", "id", "think_1", "answer_1", "thinking_2", "answer_2"])
    {'1': ('think_1', 'answer_1'), '2': ('thinking_2', 'answer_2')}
    >>> detect_pairs(["image", "text"])
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecordError: <parquet>: no numbered think/answer column pairs (like think_1 + answer_1) among the columns found: ['image', 'text']; pass a column map
    """
    if column_map:
        pairs = {str(k): (v["think"], v["answer"]) for k, v in column_map.items()}
        missing = sorted({c for pair in pairs.values() for c in pair} - set(columns))
        if missing:
            raise RecordError("<parquet>", None, None,
                              f"column map names {missing}, not among the columns found: {sorted(columns)}")
        return pairs
    thinks = {m.group(1): c for c in columns if (m := _THINK_COLUMN.match(c))}
    answers = {m.group(1): c for c in columns if (m := _ANSWER_COLUMN.match(c))}
    pairs = {n: (thinks[n], answers[n]) for n in sorted(set(thinks) & set(answers), key=int)}
    if not pairs:
        raise RecordError("<parquet>", None, None, "no numbered think/answer column pairs (like think_1 + answer_1) "
                          f"among the columns found: {columns}; pass a column map")
    return pairs


def clean_trace(think: str | None, answer: str | None) -> tuple[str, str]:
    """Strip generator tags; recover the parts when a column holds the whole raw output.

    >>> clean_trace("<think>Looks like a cat.</think><answer>A cat.</answer>", "<answer>A cat.</answer>")
    ('Looks like a cat.', 'A cat.')
    >>> clean_trace("◁think▷Fur, whiskers.◁/think▷", "◁think▷Fur.◁/think▷It is a cat.")
    ('Fur, whiskers.', 'It is a cat.')
    >>> clean_trace("<think>Hmm.</think>A <|begin_of_box|>dog<|end_of_box|>.", "")
    ('Hmm.', 'A dog.')
    """
    think, answer = think or "", answer or ""
    tail = ""
    block = _THINK_BLOCK.search(think)
    if block:
        tail = think[block.end():]
        think = block.group(1)
    answer_block = _ANSWER_BLOCK.search(answer)
    if answer_block:
        answer = answer_block.group(1)
    else:
        answer = _THINK_BLOCK.sub("", answer)
    if not _STRAY_TAGS.sub("", answer).strip() and tail:  # answer only present after the think block
        tail_block = _ANSWER_BLOCK.search(tail)
        answer = tail_block.group(1) if tail_block else tail
    return _STRAY_TAGS.sub("", think).strip(), _STRAY_TAGS.sub("", answer).strip()


def format_target(think: str, answer: str, template: str = DEFAULT_TEMPLATE) -> str:
    """The assistant text.

    >>> format_target("Fur.", "A cat.")
    '<think>Fur.</think>A cat.'
    """
    return template.format(think=think, answer=answer)


def parquet_files(paths: list[str | Path]) -> list[Path]:
    """Parquet shards from files and folders (recursive), in a stable order."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.rglob("*.parquet"))
        elif p.is_file():
            files.append(p)
        else:
            raise RecordError(p, None, None, "parquet file or folder not found")
    if not files:
        raise RecordError(", ".join(map(str, paths)), None, None, "no parquet files found")
    return files


def _check_image_bytes(image: object, source: Path, rid: object, max_pixels: int) -> dict:
    """The row's image as ``{"bytes", "path"}``: embedded bytes that decode, under the pixel limit."""
    from PIL import Image

    if not isinstance(image, dict) or not image.get("bytes"):
        raise RecordError(source, rid, "image", "no embedded image bytes")
    try:
        with Image.open(io.BytesIO(image["bytes"])) as img:
            width, height = img.size
            if width * height > max_pixels:
                raise RecordError(source, rid, "image", f"image has {width}x{height} pixels, over {max_pixels}")
            img.verify()
    except RecordError:
        raise
    except Exception as err:
        raise RecordError(source, rid, "image", f"image does not decode ({type(err).__name__}: {err})") from err
    return {"bytes": image["bytes"], "path": image.get("path")}


def sft_features():
    from datasets import Features, Image, List, Value

    block = {"type": Value("string"), "text": Value("string")}
    return Features({"messages": List({"role": Value("string"), "content": List(block)}), "images": List(Image()),
                     "id": Value("string"), "generator": Value("string")})


_UNREADABLE = "not a readable parquet file ({}): truncated or partly downloaded? fetch it again"


def open_shard(source: Path):
    """A parquet shard, or a RecordError naming it (a cut-off download fails here, not in pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as err:
        raise RecordError(source, None, None, _UNREADABLE.format(" ".join(str(err).split()))) from err


def _batches(shard, source: Path, batch_rows: int, columns: list[str]) -> Iterator:
    import pyarrow as pa

    batches = shard.iter_batches(batch_size=batch_rows, columns=columns)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError) as err:  # a damaged data page further in
            raise RecordError(source, None, None, _UNREADABLE.format(" ".join(str(err).split()))) from err
        yield batch


def iter_sft_rows(files: list[Path], report, *, generators: list[str] | None = None, column_map: dict | None = None,
                  template: str = DEFAULT_TEMPLATE, check_images: bool = True, max_pixels: int = DEFAULT_MAX_PIXELS,
                  batch_rows: int = 256, progress=None) -> Iterator[dict]:
    """Stream SFT rows; each (row, generator) trace is one unit of ``report`` (written or rejected)."""
    for source in files:
        shard = open_shard(source)
        columns = shard.schema_arrow.names
        try:
            pairs = detect_pairs(columns, column_map)
        except RecordError as err:
            raise RecordError(source, None, None, err.reason) from err
        chosen = list(pairs) if not generators else [g for g in map(str, generators)]
        unknown = [g for g in chosen if g not in pairs]
        if unknown:
            raise RecordError(source, None, None, f"generator(s) {unknown} not found; pairs found: {pairs}")
        if "image" not in columns:
            raise RecordError(source, None, "image", f"no 'image' column among the columns found: {columns}")
        prompt_col = next((c for c in PROMPT_COLUMNS if c in columns), None)
        id_col = next((c for c in ID_COLUMNS if c in columns), None)
        wanted = ["image", *(c for g in chosen for c in pairs[g]), *(c for c in (prompt_col, id_col) if c)]
        offset = 0
        for batch in _batches(shard, source, batch_rows, wanted):
            for i, row in enumerate(batch.to_pylist()):
                rid = str(row[id_col]) if id_col and row.get(id_col) is not None else f"{source.name}#{offset + i}"
                prompt = row.get(prompt_col) if prompt_col else None
                image = None
                for g in chosen:
                    report.read += 1
                    think_col, answer_col = pairs[g]
                    try:
                        if image is None:
                            image = (_check_image_bytes(row["image"], source, rid, max_pixels) if check_images
                                     else row["image"])
                        think, answer = clean_trace(row.get(think_col), row.get(answer_col))
                        if not think:
                            raise RecordError(source, rid, think_col, "empty thinking after tag clean-up")
                        if not answer:
                            raise RecordError(source, rid, answer_col, "empty answer after tag clean-up")
                    except RecordError as err:
                        report.reject(err, {k: v for k, v in row.items() if k != "image"} | {"generator": g})
                        continue
                    report.written += 1
                    yield {"messages": [
                        {"role": "user", "content": [{"type": "image", "text": None},
                                                     {"type": "text", "text": prompt or DEFAULT_PROMPT}]},
                        {"role": "assistant", "content": [{"type": "text", "text": format_target(think, answer,
                                                                                                   template)}]}],
                        "images": [image], "id": rid, "generator": g}
            offset += batch.num_rows
            if progress is not None:
                progress.update(batch.num_rows)


def build_imagenet_think(paths: list[str | Path], out_dir: str | Path, report, *, fmt: str = "hf",
                         generators: list[str] | None = None, column_map: dict | None = None,
                         template: str = DEFAULT_TEMPLATE, check_images: bool = True,
                         max_pixels: int | None = None, batch_rows: int = 256, progress: bool = True) -> Path:
    """Convert parquet shards into one SFT data set at ``out_dir``."""
    from tqdm import tqdm

    from lookcloser.data_builders.output import DatasetWriter

    files = parquet_files(paths)
    total = sum(open_shard(f).metadata.num_rows for f in files)
    with tqdm(total=total, desc="imagenet-think", unit="row", disable=None if progress else True) as bar, \
            DatasetWriter(out_dir, sft_features(), fmt=fmt, batch_rows=batch_rows) as writer:
        for row in iter_sft_rows(files, report, generators=generators, column_map=column_map, template=template,
                                 check_images=check_images, max_pixels=max_pixels or DEFAULT_MAX_PIXELS,
                                 batch_rows=batch_rows, progress=bar):
            writer.add(row)
    report.rows = writer.rows
    return Path(out_dir)
