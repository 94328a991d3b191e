"""Reports (markdown, PNG charts, W&B offline) and the `prepare` command's offline parts."""

from __future__ import annotations

import json
import zipfile

import pytest
from PIL import Image

from lookcloser.eval.loaders import EvalError
from lookcloser.eval.prepare import parse_sources, safe_extract
from lookcloser.eval.report import markdown, write_reports
from lookcloser.eval.scoring import aggregate
from lookcloser.plots import COLOURS


def _metrics() -> dict:
    rows = [{"id": str(i), "status": "ok" if i else "failed", "error": None if i else "EndpointError: HTTP 500",
             "scores": {"em": float(i % 2), "f1": 0.5, "precision": 0.5, "recall": 0.5, "iou": 0.25},
             "tags": {"event_type": ["intra-event" if i < 2 else "inter-event"]}, "stop_reason": "answer",
             "num_turns": 3, "tool_calls": 2, "tool_errors": 0} for i in range(4)]
    return {"run": {"model": "outputs/x", "data": "fixtures", "config": {"tools": True}},
            "benchmarks": {"disbench": aggregate("disbench", rows)}}


def test_report_tables_failures_published_numbers_and_chart(tmp_path):
    metrics = _metrics()
    write_reports(metrics, tmp_path)
    report = (tmp_path / "report.md").read_text()
    assert "| disbench | 4 | 1 | em | 50.0 | 28.7 |" in report
    assert "| published | | | 28.7 | 55.0 |" in report
    assert "| event_type | inter-event | 2 | 50.0 | 50.0 | 50.0 | 50.0 | 25.0 |" in report
    assert "- `0` (failed): EndpointError: HTTP 500" in report
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["benchmarks"]["disbench"]["failed"] == [{"id": "0", "status": "failed",
                                                          "error": "EndpointError: HTTP 500"}]
    with Image.open(tmp_path / "disbench.png") as chart:
        pixels = chart.convert("RGB")
        em_colour = tuple(int(COLOURS[0][i:i + 2], 16) for i in (1, 3, 5))
        blue = sum(1 for p in pixels.getdata() if p == em_colour)
    assert blue > 500, "the EM bars are drawn (lookcloser.plots, the metric's colour)"
    assert markdown(saved) == report


def test_wandb_offline_logs_a_run(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    write_reports(_metrics(), tmp_path, use_wandb=True, wandb_project="lookcloser-test")
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1 and any(runs[0].rglob("*.wandb"))


def test_prepare_sources_and_safe_unzip(tmp_path):
    assert parse_sources(["tir_bench=hf:me/TIR"])["tir_bench"] == "hf:me/TIR"
    assert parse_sources([])["disbench"] == "hf:RUC-NLPIR/DISBench"
    with pytest.raises(EvalError):
        parse_sources(["tir_bench=http://x"])
    good = tmp_path / "data.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("data/ocr/1.jpg", b"jpeg")
        zf.writestr("__MACOSX/._1.jpg", b"junk")
    assert safe_extract(good, tmp_path / "out") == 1
    assert (tmp_path / "out" / "data" / "ocr" / "1.jpg").read_bytes() == b"jpeg"
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../../escape.txt", b"x")
    with pytest.raises(ValueError, match="would leave"):
        safe_extract(evil, tmp_path / "out2")
    assert not (tmp_path / "escape.txt").exists()


def _closed_port() -> int:
    """A loopback port nothing listens on: a connection there is refused, as offline."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("source", ["hub", "git"])
def test_prepare_without_a_network_is_one_line_naming_the_source(source, tmp_path, capsys, monkeypatch):
    """No network (the hub, or a git server, on a closed loopback port): one ``error:`` line naming the
    source, exit 2, and no folder left behind, not even the data root it would have made."""
    import sys

    from huggingface_hub import constants

    from lookcloser.eval.__main__ import cli

    url = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite sets it; here the network itself fails
    argv = ["python -m eval", "prepare", "--benchmarks", "tir_bench", "--data_root", str(tmp_path / "data")]
    expected = f"error: could not download tir_bench from hf:Agents-X/TIR-Bench ({url}): ConnectError"
    if source == "git":
        argv += ["--source", f"tir_bench=git:{url}/TIR-Bench.git"]
        expected = f"error: could not download tir_bench from git:{url}/TIR-Bench.git: fatal: unable to access"
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_info:
        cli()
    assert exit_info.value.code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line.lower() or "Traceback" in line]
    assert len(err) == 1 and err[0].startswith(expected), err
    assert list(tmp_path.iterdir()) == []
