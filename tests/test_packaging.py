"""The installed project lives under one import name, ``lookcloser``: a wheel built from this
checkout, installed (not editable) into a fresh venv, puts no generic top-level package (``train``,
``eval``, ``agent``, ``rewards``, ``data_builders``) into site-packages, and its rewards and eval
entry point work from another directory."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("lookcloser", "rewards", "data_builders", "agent", "train", "eval", "looktools")
GENERIC = {"train", "eval", "agent", "rewards", "data_builders"}


def _run(argv: list, cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"{argv}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc


def _top_level(names) -> set[str]:
    return {n.split("/")[0] for n in names if n.split("/")[0] and not n.startswith("..")}


def test_wheel_installs_one_namespace_only(tmp_path):
    # Build from a copy: an in-tree build would leave build/ and *.egg-info in the checkout.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path / "dist"
    # This environment's setuptools builds it (offline, fast); without one pip fetches it as usual.
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *offline, "-q", "-w", dist, src], cwd=tmp_path)
    (wheel,) = dist.glob("lookcloser-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        top_level = next(zf.read(n).decode() for n in names if n.endswith(".dist-info/top_level.txt"))
    assert top_level.split() == ["lookcloser"]
    assert {n for n in _top_level(names) if not n.endswith(".dist-info")} == {"lookcloser"}
    sources = {f"lookcloser/{p.relative_to(REPO).as_posix()}" for folder in FOLDERS[1:]
               for p in (REPO / folder).rglob("*.py")}
    missing = sorted(sources - set(names))  # a subpackage left out of pyproject's list, say
    assert not missing, missing

    # A fresh venv without lookcloser; the dependencies come from this environment's site-packages
    # (a path entry: its .pth files, the editable install among them, are not processed there).
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    purelib = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                        cwd=tmp_path).stdout.strip())
    (purelib / "deps_from_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", "-q", wheel],
         cwd=tmp_path)

    (record,) = purelib.glob("lookcloser-*.dist-info/RECORD")
    installed = _top_level(line.split(",")[0] for line in record.read_text().splitlines())
    assert not installed & GENERIC, installed
    assert {n for n in installed if not n.endswith(".dist-info")} == {"lookcloser"}

    work = tmp_path / "elsewhere"  # not the checkout: nothing importable from the working directory
    work.mkdir()
    code = (
        "import importlib.util, lookcloser.rewards as r\n"
        "from lookcloser.rewards import get_reward_funcs\n"
        "print(r.__file__)\n"
        "print(get_reward_funcs(['format'])[0](['<think>a</think><answer>b</answer>']))\n"
        "print(sorted(n for n in ('train', 'eval', 'agent', 'rewards', 'data_builders') if importlib.util.find_spec(n)))\n"
    )
    out = _run([python, "-c", code], cwd=work).stdout.splitlines()
    assert Path(out[0]).is_relative_to(purelib / "lookcloser" / "rewards"), out[0]
    assert out[1:] == ["[1.0]", "[]"]

    # The installed evaluation entry point (the checkout's `python -m eval`).
    help_text = _run([python, "-m", "lookcloser.eval", "--help"], cwd=work, timeout=300).stdout
    assert help_text.startswith("usage: python -m eval")
