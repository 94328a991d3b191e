"""Every docstring example in the package runs, under its installed name (``lookcloser.rewards.mir``).

pytest's ``--doctest-modules`` would import ``rewards/mir.py`` a second time as a top-level ``rewards``
module (it names modules by their folder), so two copies of each class would exist side by side; running
the examples here keeps one copy. Modules without examples are skipped at collection.
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("lookcloser", "rewards", "data_builders", "agent", "train", "eval", "looktools")


def _modules_with_examples() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if path.name == "__main__.py" or ">>> " not in path.read_text(encoding="utf-8"):
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            names.append(".".join(parts if parts[0] == "lookcloser" else ("lookcloser", *parts)))
    return names


@pytest.mark.parametrize("module_name", _modules_with_examples())
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, f"{module_name} has '>>> ' in its text but no docstring example was found"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report: list[str] = []  # which example failed and what it printed
    for test in tests:
        runner.run(test, out=report.append)
    if runner.failures:
        pytest.fail("".join(report), pytrace=False)
