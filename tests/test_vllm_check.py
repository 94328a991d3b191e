"""``use_vllm: true`` with a vLLM that cannot load here is one ``error:`` line at parse time, naming the
conflict (issue 40, item 5). vLLM cannot be installed on this machine (CUDA packages, torchvision), so
the "installed" cases put a ``vllm-X.dist-info`` with that release's real Requires-Dist lines (read from
PyPI's metadata, 2026-11-27) on ``sys.path``: the check reads installed metadata only, never imports vLLM."""

from __future__ import annotations

import pytest

from lookcloser.cli import run
from lookcloser.train import grpo

ARGV = ["recipes/grpo_synthetic.yaml", "--use_vllm", "true", "--vllm_mode", "server", "--report_to", "none"]
REQUIRES = {  # from PyPI's wheel metadata (pip install --dry-run --report), the lines the check reads
    "0.33.0": ["transformers<5.21.0,>=5.16.1", "torch==2.14.0", "torchvision==0.29.0"],
    "0.30.0": ["transformers>=5.10.4", "torch==2.13.0", "torchvision==0.28.0"],
}


def _installed_metadata(root, version: str) -> None:
    info = root / f"vllm-{version}.dist-info"
    info.mkdir()
    lines = [f"Requires-Dist: {req}" for req in REQUIRES[version]] + ['Requires-Dist: pytest; extra == "test"']
    (info / "METADATA").write_text("\n".join(["Metadata-Version: 2.1", "Name: vllm", f"Version: {version}", *lines]) + "\n")


def _error_line(capsys) -> str:
    status = run(lambda *parsed: pytest.fail("use_vllm with no loadable vLLM must stop at parse time"),
                 lambda: grpo.parse_args(ARGV))
    assert status == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: use_vllm: true, but vllm ")
    return lines[0]


def test_without_vllm_installed(repo_cwd, capsys):
    assert "vllm is not installed in this environment" in _error_line(capsys)


def test_a_release_pinning_other_torch_and_transformers(repo_cwd, capsys, tmp_path, monkeypatch):
    _installed_metadata(tmp_path, "0.33.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    line = _error_line(capsys)
    assert "vllm 0.33.0 cannot load here" in line and "TRL drives vllm 0.22.0 to 0.31.0 only" in line
    assert "it needs torch==2.14.0, this environment has torch 2.13.0" in line
    assert "it needs transformers<5.21.0,>=5.16.1, this environment has transformers 5.23" in line


def test_a_release_that_meets_our_pins_still_needs_torchvision(repo_cwd, capsys, tmp_path, monkeypatch):
    """vLLM 0.30 accepts torch 2.13 and transformers 5.23; this CPU machine lacks its torchvision (which
    GPU machines have): named, and nothing else is (extras' requirements are not counted)."""
    _installed_metadata(tmp_path, "0.30.0")
    monkeypatch.syspath_prepend(str(tmp_path))
    line = _error_line(capsys)
    assert line.endswith("it needs torchvision==0.28.0, which is not installed (see docs/grpo.md, \"vLLM\", for "
                         "the releases that meet this project's pins)")
    assert "torch==" not in line and "transformers" not in line and "pytest" not in line


def test_use_vllm_false_is_not_checked(repo_cwd):
    parsed = grpo.parse_args(["recipes/grpo_synthetic.yaml", "--report_to", "none"])
    assert parsed[1].use_vllm is False
