"""Writing a checkpoint folder whole or not at all, and refusing one that is not whole."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from lookcloser.errors import ModelPathError

WEIGHTS_INDEX = "model.safetensors.index.json"


def save_checkpoint(out_dir: str | Path, model, processor, extra_files=(), replace: bool = False) -> Path:
    """Save ``model``, ``processor`` and copies of ``extra_files`` as the checkpoint ``out_dir``: written
    in a private folder moved into place with one rename, so nobody (another rank building the same
    folder, a reader, a Ctrl-C) sees it half-written. ``replace``: a checkpoint already there is
    replaced; else the first one written is kept (processes racing to build the same folder).
    A model with empty parameters (ZeRO-3 shards of a model built inside ``zero.Init``) is refused."""
    out_dir = Path(out_dir)
    empty = [name for name, p in model.state_dict().items() if p.numel() == 0]
    if empty:
        raise ModelPathError(f"{out_dir}: not saved, {len(empty)} of the model's tensors are empty "
                             f"(e.g. {empty[0]}; partitioned by DeepSpeed ZeRO-3?)")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.tmp-"))
    try:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
        if not (tmp / "config.json").is_file():  # save_pretrained writes on distributed rank 0 only
            raise ModelPathError(f"{out_dir}: not saved: the model wrote nothing here (a distributed rank other "
                                 "than 0?)")
        for path in extra_files:
            shutil.copyfile(path, tmp / Path(path).name)
        if replace and (out_dir / "config.json").exists():
            shutil.rmtree(out_dir, ignore_errors=True)
        try:
            os.rename(tmp, out_dir)  # atomic; replaces out_dir only when it is missing or empty
        except OSError:
            if not (out_dir / "config.json").exists():  # a folder with other files: fill it file by file
                for item in tmp.iterdir():
                    item.replace(out_dir / item.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def weights_problem(folder: str | Path) -> str | None:
    """Why the safetensors weights in ``folder`` are not whole (a shard the index names is missing, a
    tensor the index names is in no shard, a tensor with no elements), or None when they are whole or
    the folder holds no safetensors weights (an adapter, a hub-format folder we do not judge).
    Reads the files' headers only.

    >>> import tempfile, torch
    >>> from safetensors.torch import save_file
    >>> d = Path(tempfile.mkdtemp())
    >>> save_file({"a": torch.ones(2), "b": torch.ones(0)}, d / "model.safetensors")
    >>> weights_problem(d)
    "1 of 2 tensors are empty (e.g. 'b' in model.safetensors)"
    """
    from safetensors import safe_open

    folder = Path(folder)
    index = folder / WEIGHTS_INDEX
    if index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
        shards = sorted(set(weight_map.values()))
    elif (folder / "model.safetensors").is_file():
        weight_map, shards = {}, ["model.safetensors"]
    else:
        return None
    missing_files = [shard for shard in shards if not (folder / shard).is_file()]
    if missing_files:
        return f"{WEIGHTS_INDEX} names {len(missing_files)} missing shard(s), e.g. {missing_files[0]}"
    empty, seen = [], set()
    for shard in shards:
        with safe_open(str(folder / shard), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 - safe_open is no mapping
                seen.add(name)
                shape = f.get_slice(name).get_shape()
                if any(dim == 0 for dim in shape):
                    empty.append((name, shard))
    if empty:
        return f"{len(empty)} of {len(seen)} tensors are empty (e.g. {empty[0][0]!r} in {empty[0][1]})"
    absent = sorted(set(weight_map) - seen)
    if absent:
        return f"{len(absent)} tensor(s) the index names are in no shard, e.g. {absent[0]!r}"
    return None


def check_whole_checkpoint(folder: str | Path) -> None:
    """Refuse (one line naming the folder) a checkpoint whose weights are not whole (``weights_problem``)."""
    problem = weights_problem(folder)
    if problem:
        raise ModelPathError(f"{folder}: not a whole checkpoint: {problem}; rebuild or re-save it")
