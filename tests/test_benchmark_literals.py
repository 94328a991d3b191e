"""A benchmark lives in its spec (rewards/benchmarks/<name>.py, eval/benchmarks/<name>.py; its held-out
writer in data_builders/scenes/, its row format beside its data builder, its environment in agent/): the
shared code reads the registries and names no benchmark. Counted with ``ast``: string literals outside
docstrings that equal a registered benchmark's name or alias (or name an environment ``<name>+python``)."""

from __future__ import annotations

import ast
from pathlib import Path

from lookcloser.eval.benchmarks import SPECS
from lookcloser.rewards.benchmarks import SCORERS

REPO = Path(__file__).resolve().parents[1]
# The shared code: the training scripts, eval's and the rewards' top level, the environment registry, the held-out
# writer and the GRPO rows (issue 50).
SHARED = ("train/**/*.py", "eval/*.py", "rewards/*.py", "agent/environments.py", "data_builders/heldout.py",
          "data_builders/grpo_rows.py")
NAMES = frozenset({*SPECS, *SCORERS, *(a for s in SCORERS.values() for a in s.aliases),
                   *(a for s in SPECS.values() for a in s.aliases)})


def _docstrings(tree: ast.AST) -> set[int]:
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, kinds) and node.body and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)}


def benchmark_literals(source: str, names: frozenset[str] = NAMES) -> list[tuple[int, str]]:
    """``(line, text)`` of each string literal outside docstrings that names a benchmark."""
    tree = ast.parse(source)
    docs = _docstrings(tree)
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            and (node.value in names or node.value.partition("+")[0] in names)]


def test_the_count_sees_a_literal_and_skips_docstrings():
    source = '"""About mir."""\n\ndef f(x):\n    """mir"""\n    return x == "mir" or x == "tir_bench+python"\n'
    assert benchmark_literals(source) == [(5, "mir"), (5, "tir_bench+python")]


def test_no_benchmark_name_is_a_literal_in_the_shared_code():
    files = sorted({p for pattern in SHARED for p in REPO.glob(pattern)})
    assert len(files) > 30 and REPO / "train" / "grpo.py" in files
    found = [f"{path.relative_to(REPO)}:{line}: {text!r}" for path in files
             for line, text in benchmark_literals(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
