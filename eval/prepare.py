"""``python -m eval prepare``: download the benchmarks' official files (needs internet).

Sources are the Hugging Face dataset repos that hold the data (see docs/eval.md for what each
holds), overridable with ``--source NAME=hf:OWNER/REPO`` (fetched with
``huggingface_hub.snapshot_download``) or ``NAME=git:URL`` (a shallow ``git clone``). Zip archives
in the download (TIR-Bench's ``data.zip``, MIR's ``images.zip``) are extracted in place, refusing
entries that would leave the folder; then each download is put in the layout its loader reads:
MIR's images folder is found and named ``images/`` if the zip used another top folder, and an
ImageMining download in parquet form (rows with an image column) is written out as
``data.jsonl`` + ``images/``. Each benchmark lands in ``DATA_ROOT/{name}``, which
``python -m eval --data_root DATA_ROOT`` reads. Tests run this against local fakes of each hub
layout (only the hub call is replaced).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

from lookcloser.eval.benchmarks import BENCHMARKS, SPECS
from lookcloser.eval.items import EvalError

logger = logging.getLogger(__name__)

# Where the data is (override with --source): each spec's ``prepare_source``. MIR's git repository
# (Shelly-coder239/MIRBench) holds only code; its README names the hub dataset. ImageMining's git
# repository has data.jsonl but no images; the hub dataset has both.
SOURCES = {name: spec.prepare_source for name, spec in SPECS.items()}


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
    """Fetch ``source`` into ``target`` and arrange it. A download that fails (no network, an
    unknown repository) or is interrupted removes the folders it created and, failing, raises
    ``EvalError`` naming the source."""
    kind, _, where = source.partition(":")
    made = [p for p in (target, *target.parents) if not p.exists()]  # nearest first
    shown = source
    try:
        if kind == "hf":
            from huggingface_hub import constants, snapshot_download  # lazy: only this command needs them

            shown = f"{source} ({constants.ENDPOINT})"
            snapshot_download(repo_id=where, repo_type="dataset", local_dir=str(target))
        elif not (target / ".git").exists():
            subprocess.run(["git", "clone", "--depth", "1", where, str(target)], check=True, capture_output=True,
                           text=True, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except BaseException as err:
        if made:
            shutil.rmtree(made[-1], ignore_errors=True)
        if isinstance(err, (OSError, subprocess.CalledProcessError)):
            raise EvalError(f"could not download {name} from {shown}: {_reason(err)}") from err
        raise
    for archive in sorted(target.rglob("*.zip")):
        marker = archive.with_suffix(".extracted")
        if not marker.exists():
            logger.info("extracting %s", archive)
            safe_extract(archive, archive.parent)
            marker.write_text("ok\n")
    if SPECS[name].arrange is not None:  # the spec's own step from the download to its loader's layout
        SPECS[name].arrange(target)
    if not any(target.rglob(SPECS[name].data_file)):
        logger.warning("%s: no %s under %s; the layout may have changed (see docs/eval.md)", name, SPECS[name].data_file,
                       target)
    return target


def _reason(err: Exception) -> str:
    """One line on why a download failed: git's last message, or the hub's underlying error."""
    if isinstance(err, subprocess.CalledProcessError):
        lines = (err.stderr or "").strip().splitlines()
        return lines[-1] if lines else f"git exited with status {err.returncode}"
    cause = err.__cause__ or err
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0]}" if lines else type(cause).__name__


def prepare(benchmarks: list[str], data_root: str | Path, sources: dict[str, str] | None = None) -> dict[str, Path]:
    sources = sources or SOURCES
    done = {}
    for name in benchmarks:
        logger.debug("downloading %s from %s", name, sources[name])  # a failure is then its one error line
        done[name] = download(name, sources[name], Path(data_root) / name)
    return done
