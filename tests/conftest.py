"""Shared fixtures: the tiny model (built once per session), the bundled sample, the benchmarks' sample
records (generated, and the real ones beside the checkout where they exist)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testing.benchmark_records import REAL_ABSENT, REAL_DATA, SOURCES, SampleRecords, read_records

REPO = Path(__file__).resolve().parents[1]
SAMPLE_MIR = REPO / "data" / "mir_sample" / "all_data_rel.json"

os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing in the tests may reach a hub
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# A scorer bug must fail the tests, not turn into a silent None/0 at the reward boundary (rewards.trl_rewards).
os.environ.setdefault("LOOKCLOSER_REWARD_ERRORS", "raise")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from lookcloser.agent.tiny_qwen3_vl import build_tiny_qwen3_vl

    return build_tiny_qwen3_vl(tmp_path_factory.mktemp("tiny") / "tiny-qwen3-vl")


@pytest.fixture(scope="session")
def sample_mir() -> Path:
    return SAMPLE_MIR


@pytest.fixture(scope="session")
def generated_data(tmp_path_factory) -> Path:
    """The four benchmarks in their official layouts, generated (``eval.fixtures``): a clone has these."""
    from lookcloser.eval.loaders import write_fixtures

    return write_fixtures(tmp_path_factory.mktemp("generated_data"))


@pytest.fixture(scope="session", params=SOURCES)
def sample_records(request, generated_data) -> SampleRecords:
    """Each benchmark's sample records, generated and real (``testing.benchmark_records``): a test on them
    runs twice, and its ``real`` run skips with the reason in a clone, which lacks ../shared/data."""
    if request.param == "real" and not REAL_DATA.is_dir():
        pytest.skip(REAL_ABSENT)
    return read_records(request.param, generated_data)


@pytest.fixture
def repo_cwd(monkeypatch):
    """Run from the repo root, where recipes and sample data are named from."""
    monkeypatch.chdir(REPO)


@pytest.fixture
def one_torch_thread(monkeypatch):
    """GRPO tests on the tiny model: one torch thread (on oversubscribed shared CPUs OpenMP
    spin-waits make tiny-model steps ~20x slower) and TRL's experimental warnings silenced."""
    import torch

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _fresh_wandb_per_test():
    """W&B keeps one service per process; a run left from an earlier test must not swallow the next."""
    yield
    import sys

    wandb = sys.modules.get("wandb")
    if wandb is not None:
        if wandb.run is not None:
            wandb.finish()
        wandb.teardown()


def assert_trained_full_weights(out_dir: Path, initial_dir: Path) -> None:
    """The checkpoint in ``out_dir`` holds trained weights (not the initial ones), every tensor whole."""
    import torch

    from lookcloser.agent.models import load_model

    trained = dict(load_model(str(out_dir)).named_parameters())
    original = load_model(str(initial_dir))
    changed = [name for name, p in original.named_parameters() if not torch.equal(p, trained[name])]
    assert changed, "the saved weights must be the trained ones, not the initial ones"
    assert all(p.numel() > 0 for p in trained.values()), "a ZeRO-3 save must gather full tensors"

