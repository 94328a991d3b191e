"""The packages' imports point one way and form no cycle (parsed with ``ast``, nothing imported).

Layers, bottom to top (docs/architecture.md): looktools (the sandbox's image library, a leaf: numpy, Pillow,
the standard library and itself only, since it is bound alone into the sandbox) -> basics (``lookcloser/*.py``:
parsing, errors, checks, the commands' error path, the TRL fence) -> rewards -> data_builders -> agent -> train
-> eval. A module may import its own layer and the layers below. The command-line entry modules sit above every layer: they wire the layers
together (``python -m data_builders synthetic`` runs the agent's tools), and nothing imports them.
Imports inside functions count too. Discovery is explicit: each registry imports its modules by name (no
``pkgutil`` walk, no module ``__getattr__``), so the edges it adds are in the graph these tests check.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("looktools", "basics", "rewards", "data_builders", "agent", "train", "eval")
FOLDERS = ("lookcloser", *(layer for layer in LAYERS if layer != "basics"))  # basics: lookcloser/*.py
COMMAND_MODULES = {f"lookcloser.data_builders.commands.{p.stem}" for p in (REPO / "data_builders" / "commands").glob("*.py")
                   if p.stem != "__init__"}  # the curricula's data stages, commands of data_builders.cli
ENTRY_POINTS = {
    "lookcloser.data_builders.cli", "lookcloser.data_builders.__main__", "lookcloser.eval.__main__", *COMMAND_MODULES,
}
PRODUCT_ENTRY_IMPORTS_ALLOWED = {"lookcloser.data_builders.__main__": {"lookcloser.data_builders.cli"},
                                 "lookcloser.data_builders.cli": COMMAND_MODULES}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    parts = parts if parts[0] == "lookcloser" else ("lookcloser", *parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for folder in FOLDERS for p in sorted((REPO / folder).rglob("*.py"))}


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else LAYERS.index("basics")


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The lookcloser modules ``module`` imports (``from P import name`` counts as P.name when that is
    a module); its own parent packages are left out (Python has imported them already)."""
    found = set()
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & known
            found |= subs or {node.module}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    return {m for m in found if m in known and m != module and m not in ancestors}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def test_every_package_module_is_in_the_graph(graph):
    assert {"lookcloser.looktools", "lookcloser.looktools.jigsaw", "lookcloser.recipes", "lookcloser.rewards.mir", "lookcloser.data_builders.mir", "lookcloser.agent.loop",
            "lookcloser.train.grpo_lib.trainer", "lookcloser.eval.runner"} <= set(graph)
    assert sum(len(deps) for deps in graph.values()) > 100  # the parser sees the imports


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} ({LAYERS[_layer(m)]}) -> {d} ({LAYERS[_layer(d)]})"
            for m, deps in sorted(graph.items()) if m not in ENTRY_POINTS
            for d in sorted(deps) if _layer(d) > _layer(m)]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_imports_point_down_the_layers(graph):
    upward = _upward(graph)
    assert not upward, "\n".join(upward)


def test_nothing_imports_an_entry_point(graph):
    users = [f"{m} -> {d}" for m, deps in sorted(graph.items()) for d in sorted(deps & ENTRY_POINTS)
             if d not in PRODUCT_ENTRY_IMPORTS_ALLOWED.get(m, set())]
    assert not users, users


def test_no_import_cycles(graph):
    assert not _cycles(graph)


def test_the_checks_catch_an_upward_import_and_a_cycle():
    """Both rules fail on a graph that breaks them (the structure before this test existed)."""
    bad = {"lookcloser.rewards.a": {"lookcloser.agent.b"}, "lookcloser.agent.b": {"lookcloser.rewards.a"},
           "lookcloser.agent.models": {"lookcloser.agent.tiny_qwen3_vl", "lookcloser.recipes"},
           "lookcloser.agent.tiny_qwen3_vl": {"lookcloser.agent.models"}, "lookcloser.recipes": set()}
    assert _upward(bad) == ["lookcloser.rewards.a (rewards) -> lookcloser.agent.b (agent)"]
    assert sorted(_cycles(bad)) == [["lookcloser.agent.b", "lookcloser.rewards.a"],
                                    ["lookcloser.agent.models", "lookcloser.agent.tiny_qwen3_vl"]]


# Each registry package and what each of its modules registers: every module of the folder that defines it is
# imported by the package (a real edge of the graph), so the cycle and layering checks above see discovery.
REGISTRIES = {"lookcloser.rewards.benchmarks": "SCORER", "lookcloser.eval.benchmarks": "SPEC",
              "lookcloser.data_builders.scenes": "HELDOUT"}


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, (ast.Assign, ast.AnnAssign)) and name in
               {t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target]) if isinstance(t, ast.Name)}
               for node in tree.body)


def _registry_gaps(graph: dict[str, set[str]], modules: dict[str, Path]) -> list[str]:
    return [f"{package} does not import {module} (it defines {attribute})"
            for package, attribute in REGISTRIES.items()
            for module, path in sorted(modules.items())
            if module.rpartition(".")[0] == package and _defines(path, attribute) and module not in graph[package]]


def test_each_registry_imports_every_module_it_serves(graph):
    modules = _modules()
    served = {package: [m for m in graph[package] if m.rpartition(".")[0] == package and _defines(modules[m], attribute)]
              for package, attribute in REGISTRIES.items()}
    assert len(served["lookcloser.eval.benchmarks"]) == 6 and len(served["lookcloser.rewards.benchmarks"]) == 6
    assert "lookcloser.data_builders.scenes.hires" in served["lookcloser.data_builders.scenes"]
    assert not _registry_gaps(graph, modules)


def test_the_registry_check_catches_a_module_left_out(graph):
    modules = _modules()
    left_out = {**graph, "lookcloser.eval.benchmarks": graph["lookcloser.eval.benchmarks"] - {"lookcloser.eval.benchmarks.mir"}}
    assert _registry_gaps(left_out, modules) == [
        "lookcloser.eval.benchmarks does not import lookcloser.eval.benchmarks.mir (it defines SPEC)"]


def test_no_hidden_discovery():
    """No folder walk (``pkgutil``) and no module ``__getattr__``: both import what the graph cannot see."""
    found = []
    for name, path in _modules().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{name}: imports pkgutil" for node in ast.walk(tree) if isinstance(node, ast.Import)
                  and any(a.name == "pkgutil" for a in node.names)]
        found += [f"{name}: module __getattr__" for node in tree.body
                  if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"]
    assert not found, found


def _leaf_breaks(source: str) -> list[str]:
    """Imports a looktools module may not make: a relative import above its own folder, or any absolute
    import but numpy, PIL and the standard library (the sandbox sees that folder alone)."""
    allowed = {"numpy", "PIL", *sys.stdlib_module_names}
    breaks = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level > 1:
            breaks.append(f"from {'.' * node.level}{node.module or ''} import ...")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] not in allowed:
            breaks.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Import):
            breaks += [f"import {a.name}" for a in node.names if a.name.split(".")[0] not in allowed]
    return breaks


def test_looktools_is_a_leaf_that_imports_nothing_of_lookcloser(graph):
    modules = {name: path for name, path in _modules().items() if name.startswith("lookcloser.looktools")}
    assert len(modules) >= 5
    breaks = [f"{name}: {b}" for name, path in sorted(modules.items()) for b in _leaf_breaks(path.read_text(encoding="utf-8"))]
    assert not breaks, breaks
    assert not [f"{m} -> {d}" for m in modules for d in graph[m]], "looktools imports lookcloser modules"


def test_the_leaf_check_catches_an_import_of_the_project():
    assert _leaf_breaks("import numpy as np\nfrom PIL import Image\nimport itertools\nfrom .pictures import pixels\n"
                        "from lookcloser.agent import images\nfrom .. import rewards\nimport yaml\n") == [
        "from lookcloser.agent import ...", "from .. import ...", "import yaml"]
