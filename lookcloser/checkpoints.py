"""Writing a checkpoint folder whole or not at all."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def save_checkpoint(out_dir: str | Path, model, processor, extra_files=(), replace: bool = False) -> Path:
    """Save ``model``, ``processor`` and copies of ``extra_files`` as the checkpoint ``out_dir``: written
    in a private folder moved into place with one rename, so nobody (another rank building the same
    folder, a reader, a Ctrl-C) sees it half-written. ``replace``: a checkpoint already there is
    replaced; else the first one written is kept (processes racing to build the same folder)."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.tmp-"))
    try:
        model.save_pretrained(tmp)
        processor.save_pretrained(tmp)
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
