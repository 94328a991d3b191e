"""One loader interface over the benchmarks' official on-disk layouts (spec: benchmarks.md).

``load_benchmark(name, root)`` reads a benchmark folder exactly as its authors ship it and returns
``EvalItem``s: what the agent loop gets (``example``: the prompt and the environment's ``reset``
arguments, images as absolute paths), what the scorer gets (``gold``), and the groups an item is
reported under (``tags``). Every problem is a ``RecordError`` naming file, record and field.

Each benchmark's spec (``eval/benchmarks/<name>.py``) holds its layout and loader (built on ``eval.items``);
this module reads the registry: which folder holds a benchmark, its items, and the embedded default's
fixtures (each spec's ``write_fixture``), cached once per ``VERSION``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from lookcloser.data_builders.records import RecordError
from lookcloser.eval.benchmarks import BENCHMARKS, SPECS
from lookcloser.eval.items import EvalError, EvalItem, bad_item

__all__ = ["BENCHMARKS", "DATA_FILES", "VERSION", "EvalError", "EvalItem", "ensure_fixtures", "find_benchmark_dir",
           "fixtures_dir", "load_benchmark", "write_fixtures"]
DATA_FILES = {name: spec.data_file for name, spec in SPECS.items()}
VERSION = "v3"  # bump when any fixture changes: cached copies are keyed by it


def find_benchmark_dir(name: str, data_root: str | Path) -> Path:
    """The folder holding ``name``'s data: ``data_root`` itself or one of its named subfolders.

    >>> find_benchmark_dir("mir", "/nonexistent")
    Traceback (most recent call last):
    ...
    lookcloser.errors.RecordError: /nonexistent, field 'mir': no all_data_rel.json in /nonexistent or its subfolders mir/, MIR/
    """
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
    if name not in SPECS:
        raise EvalError(f"unknown benchmark {name!r}; choose from {', '.join(SPECS)}")
    items = SPECS[name].load(Path(root), check_images=check_images, limit=limit, strict=strict, **options)
    seen: set[str] = set()
    for k, item in enumerate(items):
        if item.id in seen:
            err = RecordError(Path(root) / SPECS[name].data_file, item.id, "id", "duplicate id")
            if strict:
                raise err
            items[k] = item = bad_item(name, f"{item.id} (#{k})", err)
        seen.add(item.id)
    return items


def fixtures_dir() -> Path:
    root = os.environ.get("LOOKCLOSER_CACHE") or Path.home() / ".cache" / "lookcloser"
    return Path(root) / "eval_fixtures" / VERSION


def ensure_fixtures(root: str | Path | None = None) -> Path:
    """The fixture root, written on first use (a marker file says it is complete)."""
    root = Path(root) if root else fixtures_dir()
    if not (root / ".complete").exists():
        # Written beside, then renamed: a concurrent run never reads a half-written folder.
        tmp = root.with_name(f"{root.name}.{os.getpid()}.tmp")
        write_fixtures(tmp)
        try:
            tmp.rename(root)
        except OSError:  # another process finished first (or a stale incomplete folder is there)
            if not (root / ".complete").exists():
                shutil.rmtree(root, ignore_errors=True)
                tmp.rename(root)
        shutil.rmtree(tmp, ignore_errors=True)
    _add_missing(root)
    return root


def write_fixtures(root: str | Path) -> Path:
    """Every registered benchmark's fixture (its spec's ``write_fixture``) under ``root/<name>``."""
    root = Path(root)
    for name, spec in SPECS.items():
        spec.write_fixture(root / name)
    (root / ".complete").write_text(VERSION + "\n")
    return root


def _add_missing(root: Path) -> None:
    """A benchmark registered after the cached copy was written gets its fixture beside the others."""
    for name, spec in SPECS.items():
        if not (root / name).exists():
            tmp = root / f".{name}.{os.getpid()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            spec.write_fixture(tmp)
            try:
                tmp.rename(root / name)
            except OSError:  # another process wrote it first
                shutil.rmtree(tmp, ignore_errors=True)
