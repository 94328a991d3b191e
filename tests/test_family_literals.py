"""A model family lives in its spec (agent/families/<family>.py): the rest of the product names no family. Counted
with ``ast`` as tests/test_benchmark_literals.py counts benchmarks: string literals outside docstrings that equal a
registered family's name or ``model_type``, or hold one of its image tokens (Qwen's ``<|image_pad|>``, ...).

Outside the count: the family folder itself, each family's own builder (``agent/tiny_qwen3_vl.py``, the embedded
default's) and processor module (``agent/processor.py``), and the fence for upstream private names
(``lookcloser/trl_surface.py``), which must name the classes it reaches into."""

from __future__ import annotations

from pathlib import Path

from lookcloser.agent.families import FAMILIES
from tests.test_benchmark_literals import benchmark_literals

REPO = Path(__file__).resolve().parents[1]
OWN = {"agent/families", "agent/tiny_qwen3_vl.py", "agent/processor.py", "lookcloser/trl_surface.py"}
NAMES = frozenset({*FAMILIES, *(t for f in FAMILIES.values() for t in f.model_types)})
# `<image>` (LLaVA-OneVision's, Idefics3's) is also the readable placeholder the GRPO tables print: not counted.
TOKENS = frozenset({f.image_token for f in FAMILIES.values()} | {f.image_start for f in FAMILIES.values()
                                                                    if f.image_start}) - {"<image>"}


def family_literals(source: str) -> list[tuple[int, str]]:
    return benchmark_literals(source, NAMES | TOKENS)


def _product_files() -> list[Path]:
    files = [p for folder in ("agent", "train", "eval", "data_builders", "rewards", "lookcloser")
             for p in sorted((REPO / folder).rglob("*.py"))]
    return [p for p in files if not any(str(p.relative_to(REPO)).startswith(own) for own in OWN)]


def test_the_count_sees_a_family_literal():
    source = '"""About gemma3."""\nif model_type == "qwen3_vl" or token == "<|image_pad|>":\n    pass\n'
    assert family_literals(source) == [(2, "qwen3_vl"), (2, "<|image_pad|>")]


def test_no_family_is_named_outside_its_spec():
    files = _product_files()
    assert len(files) > 100 and REPO / "agent" / "hf_policy.py" in files
    found = [f"{path.relative_to(REPO)}:{line}: {text!r}" for path in files
             for line, text in family_literals(path.read_text(encoding="utf-8"))]
    assert not found, "\n".join(found)
