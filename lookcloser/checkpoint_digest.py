"""What a checkpoint folder holds right now, as a short digest: "did it change?" for eval resumes
(eval/fingerprint.py) and curriculum reruns (train/curriculum.py). No torch: a dry run stays fast.

A checkpoint is its config-like files and its weights. A file over 64 MiB counts by its size and its
first and last 4 MiB (a retrain or rebuild changes both), so an 8B model's 16 GB are never read whole.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CONFIG_FILES = ("config.json", "adapter_config.json", "generation_config.json", "chat_template.jinja",
                "tokenizer_config.json")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt")
WHOLE_FILE_LIMIT = 64 << 20
EDGE_BYTES = 4 << 20


def update_file_digest(digest, path: Path, name: str) -> None:
    """Add one file (under ``name``) to ``digest``: its size and content, or its edges when large."""
    size = path.stat().st_size
    digest.update(f"{name}:{size}:".encode())
    with open(path, "rb") as fh:
        if size <= WHOLE_FILE_LIMIT:
            digest.update(fh.read())
        else:
            digest.update(fh.read(EDGE_BYTES))
            fh.seek(-EDGE_BYTES, 2)
            digest.update(fh.read())


def checkpoint_digest(folder: str | Path) -> str:
    """A 16-hex digest of a checkpoint folder's config-like files and weights.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); _ = (d / "config.json").write_text("{}")
    >>> before = checkpoint_digest(d); _ = (d / "model.safetensors").write_bytes(b"w")
    >>> before != checkpoint_digest(d), len(before)
    (True, 16)
    """
    folder = Path(folder)
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and (path.suffix in WEIGHT_SUFFIXES or path.name in CONFIG_FILES):
            update_file_digest(digest, path, path.name)
    return digest.hexdigest()[:16]
