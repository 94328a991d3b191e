"""``python -m eval prepare``: download the benchmarks' official files (needs internet; not run in tests).

Sources are best-known locations, overridable with ``--source NAME=hf:OWNER/REPO`` (a Hugging
Face dataset repo, fetched with ``huggingface_hub.snapshot_download``) or ``NAME=git:URL`` (a
shallow ``git clone``). Zip archives found in the download (TIR-Bench's ``data.zip``, MIR's
``images.zip``) are extracted in place, refusing entries that would leave the folder. Each
benchmark lands in ``DATA_ROOT/{name}``, which ``python -m eval --data-root DATA_ROOT`` reads.
"""

from __future__ import annotations

import logging
import subprocess
import zipfile
from pathlib import Path

from eval.loaders import BENCHMARKS, DATA_FILES, EvalError

logger = logging.getLogger(__name__)

# Best-known official locations (check them against each paper's page; override with --source).
SOURCES = {
    "tir_bench": "hf:Agents-X/TIR-Bench",
    "disbench": "hf:RUC-NLPIR/DISBench",
    "imagemining": "git:https://github.com/zai-org/ImageMining",
    # MIR's paper points to this repository for code and data; if the data moved to a hub repo,
    # pass --source mir=hf:OWNER/REPO.
    "mir": "git:https://github.com/Shelly-coder239/MIRBench",
}


def parse_sources(pairs: list[str]) -> dict[str, str]:
    """``["mir=hf:a/b"]`` -> the default sources with that one replaced.

    >>> parse_sources(["mir=hf:someone/MIR"])["mir"]
    'hf:someone/MIR'
    """
    sources = dict(SOURCES)
    for pair in pairs:
        name, _, source = pair.partition("=")
        if name not in BENCHMARKS or not source.startswith(("hf:", "git:")):
            raise EvalError(f"--source wants NAME=hf:OWNER/REPO or NAME=git:URL with NAME in {BENCHMARKS}, got {pair!r}")
        sources[name] = source
    return sources


def safe_extract(archive: Path, target: Path) -> int:
    """Extract a zip inside ``target`` only (no absolute paths, no ``..``); returns the file count."""
    target = target.resolve()
    count = 0
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            dest = (target / member.filename).resolve()
            if dest != target and target not in dest.parents:
                raise ValueError(f"{archive}: entry {member.filename!r} would leave {target}")
            if member.filename.startswith("__MACOSX/"):
                continue
            zf.extract(member, target)
            count += not member.is_dir()
    return count


def download(name: str, source: str, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    kind, _, where = source.partition(":")
    if kind == "hf":
        from huggingface_hub import snapshot_download  # lazy: only this command needs it

        snapshot_download(repo_id=where, repo_type="dataset", local_dir=str(target))
    else:
        if not (target / ".git").exists():
            subprocess.run(["git", "clone", "--depth", "1", where, str(target)], check=True)
    for archive in sorted(target.rglob("*.zip")):
        marker = archive.with_suffix(".extracted")
        if not marker.exists():
            logger.info("extracting %s", archive)
            safe_extract(archive, archive.parent)
            marker.write_text("ok\n")
    if not any(target.rglob(DATA_FILES[name])):
        logger.warning("%s: no %s under %s; the layout may have changed (see docs/eval.md)", name, DATA_FILES[name],
                       target)
    return target


def prepare(benchmarks: list[str], data_root: str | Path, sources: dict[str, str] | None = None) -> dict[str, Path]:
    sources = sources or SOURCES
    done = {}
    for name in benchmarks:
        logger.info("downloading %s from %s", name, sources[name])
        done[name] = download(name, sources[name], Path(data_root) / name)
    return done
