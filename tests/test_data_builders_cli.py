"""``python -m data_builders mir``: outputs, bad records (fail: the error; skip: the reject line), counts."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from lookcloser.data_builders.cli import main
from lookcloser.data_builders.output import load_output

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "mir_sample"


@pytest.fixture()
def mir_dir(tmp_path: Path) -> Path:
    """Four good records of the bundled sample, their images copied under ``tmp/images``."""
    records = json.loads((SAMPLE / "all_data_rel.json").read_text())
    good = [records[0], records[16], records[32], records[48]]  # one per family
    root = tmp_path / "images"
    for record in good:
        for rel in record["images"]:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(SAMPLE / rel, root / rel)
    (root / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n not really")
    Image.new("RGB", (200, 200), (9, 9, 9)).save(root / "huge.png")
    (tmp_path / "secret.png").write_bytes((root / good[0]["images"][0]).read_bytes())
    (tmp_path / "good.json").write_text(json.dumps(good))
    return tmp_path


def _bad_records(good: dict) -> dict[str, dict | str]:
    """One record per kind of problem, keyed by the reject kind it must produce."""
    one_image = {**good, "images": [good["images"][0]], "question": "Which colour is <image>?"}
    missing = {k: v for k, v in one_image.items() if k != "summary"} | {"id": "bad_missing"}
    return {
        "missing field summary": missing,
        "invalid options": dict(one_image, id="bad_options", options=5),
        "placeholder count != image count": dict(one_image, id="bad_placeholders", question="No image here?"),
        "image not found": dict(one_image, id="bad_missing_image", images=["colour/none.png"]),
        "image does not decode": dict(one_image, id="bad_decode", images=["broken.png"]),
        "image outside data root": dict(one_image, id="bad_escape", images=["../secret.png"]),
        "image over pixel limit": dict(one_image, id="bad_bomb", images=["huge.png"]),
        "expected an object, got str": "not an object",
    }


def _mir_args(mir_dir: Path, data: str, out: str, *extra: str) -> list[str]:
    return ["mir", str(mir_dir / data), "--images_root", str(mir_dir / "images"), "--out", str(mir_dir / out),
            "--max_pixels", "20000", "--no_progress", *extra]


def test_mir_writes_one_dataset_per_stage(mir_dir, capsys):
    assert main(_mir_args(mir_dir, "good.json", "out")) == 0
    assert "read 4 records, written 4 (16 rows), skipped 0" in capsys.readouterr().out
    for stage in (1, 2, 3, 4):
        ds = load_output(mir_dir / "out" / f"stage_{stage}")
        assert len(ds) == 4 and ds.column_names == ["messages", "images", "id", "answer", "subtask"]
        row = ds[0]
        assert row["images"][0].size == (64, 64)  # referenced by path, decoded on access
        assert row["answer"] in "ABCD" and row["id"] == "colour_000"


def test_single_stage_parquet(mir_dir, capsys):
    assert main(_mir_args(mir_dir, "good.json", "pq", "--stages", "3", "--format", "parquet")) == 0
    ds = load_output(mir_dir / "pq")
    assert len(ds) == 4 and "Reference Context:" in ds[0]["messages"][0]["content"][-1]["text"]


BAD_KINDS = list(_bad_records({"images": ["a"], "question": "<image>"}))


@pytest.mark.parametrize("kind", BAD_KINDS)
def test_fail_mode_names_file_record_and_field(mir_dir, capsys, kind):
    good = json.loads((mir_dir / "good.json").read_text())
    bad = _bad_records(good[0])[kind]
    (mir_dir / "one_bad.json").write_text(json.dumps([good[1], bad, good[2]]))
    assert main(_mir_args(mir_dir, "one_bad.json", "out")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {mir_dir / 'one_bad.json'}: record ")
    rid = bad["id"] if isinstance(bad, dict) else "#1"
    assert f"record {rid!r}" in err
    field = {"missing field summary": "summary", "invalid options": "options"}.get(kind, "images")
    if not isinstance(bad, dict):
        field = None
    if field:
        assert f"field {field!r}" in err
    assert not (mir_dir / "out").exists()  # nothing half-written


def test_skip_mode_rejects_every_bad_record_and_counts_reconcile(mir_dir, capsys):
    good = json.loads((mir_dir / "good.json").read_text())
    bad = _bad_records(good[0])
    (mir_dir / "mixed.json").write_text(json.dumps([*good[:2], *bad.values(), *good[2:]]))
    assert main(_mir_args(mir_dir, "mixed.json", "out", "--on_error", "skip", "--stages", "1")) == 0
    out = capsys.readouterr().out
    n_bad = len(bad)
    assert f"read {4 + n_bad} records, written 4 (4 rows), skipped {n_bad}" in out
    for kind in bad:
        assert f"  {kind}: 1" in out
    lines = [json.loads(line) for line in (mir_dir / "out.rejects.jsonl").read_text().splitlines()]
    assert sorted(line["kind"] for line in lines) == sorted(bad)
    for line in lines:
        assert line["source"] == str(mir_dir / "mixed.json") and line["reason"] and "record" in line
    assert len(load_output(mir_dir / "out")) == 4


def test_module_entry_point(mir_dir):
    argv = [sys.executable, "-m", "data_builders", *_mir_args(mir_dir, "good.json", "cli", "--stages", "0")]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "read 4 records, written 4 (4 rows), skipped 0" in proc.stdout


def test_every_data_stage_is_a_command_listed_by_help():
    """The curricula's data stages (data_builders/commands/) and heldout are rows of the one command table."""
    from lookcloser.data_builders.cli import COMMANDS

    proc = subprocess.run([sys.executable, "-m", "data_builders", "--help"], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.split("commands:")[1].splitlines() if line.startswith("  ")}
    stages = {p.stem for p in (REPO / "data_builders" / "commands").glob("*.py")} - {"__init__"}
    assert listed == set(COMMANDS) >= {"heldout", "tool-tasks", "search-tasks", "mixed-tasks", "imagenet-think-data"}
    assert len(stages) == 4 and not (REPO / "train" / "grpo_tasks.py").exists()


def test_a_data_stage_runs_as_a_command(tmp_path):
    out = tmp_path / "think"
    argv = [sys.executable, "-m", "data_builders", "imagenet-think-data", "--output_dir", str(out), "--rows", "3"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    from lookcloser.data_builders.output import load_output

    assert len(load_output(out / "sft")) == 6  # two traces per generated picture
    bad = subprocess.run([*argv[:4], "--output_dir", str(tmp_path / "x"), "--rows", "0"], cwd=REPO,
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: rows must be >= 1, got 0"


def test_symlinks_out_of_the_root_are_refused(mir_dir, capsys):
    root = mir_dir / "images"
    good = json.loads((mir_dir / "good.json").read_text())[0]
    (root / "link_out.png").symlink_to(mir_dir / "secret.png")
    (root / "dir_out").symlink_to(mir_dir, target_is_directory=True)
    (root / "link_in.png").symlink_to(root / good["images"][0])
    records = [dict(good, id=f"r{i}", images=[rel], question="Which colour is <image>?")
               for i, rel in enumerate(["link_out.png", "dir_out/secret.png", "link_in.png"])]
    (mir_dir / "links.json").write_text(json.dumps(records))
    assert main(_mir_args(mir_dir, "links.json", "out", "--on_error", "skip", "--stages", "1")) == 0
    assert "written 1 (1 rows), skipped 2\n  image outside data root: 2" in capsys.readouterr().out
    assert load_output(mir_dir / "out")["id"] == ["r2"]
