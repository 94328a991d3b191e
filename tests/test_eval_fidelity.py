"""Issue 12 on the eval side: bad records listed not fatal (point 5), jigsaw difficulty as upstream
reads it (point 2), ``prepare`` against local fakes of each hub layout (point 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lookcloser.data_builders.records import RecordError
from lookcloser.eval.config import EvalConfig
from lookcloser.eval.loaders import load_benchmark, write_fixtures
from lookcloser.eval.pipeline import evaluate
from lookcloser.eval.scoring import gold_response
from testing.fake_endpoint import FakeEndpoint
from tests.test_eval_endpoint import Oracle


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return write_fixtures(tmp_path_factory.mktemp("fixtures"))


def _edit_json(path, edit):
    records = json.loads(path.read_text(encoding="utf-8"))
    edit(records)
    path.write_text(json.dumps(records), encoding="utf-8")
    return records


# ---- 5. one bad record must not stop an eval ----------------------------------------------------------

def _break_mir(fixtures, tmp_path):
    folder = shutil.copytree(fixtures / "mir", tmp_path / "data" / "mir")

    def edit(recs):
        recs[5]["conclusion"] = "no letter here"
        recs[9]["question"] = recs[9]["question"].replace("<image>", "", 1)  # one placeholder short
    return folder, _edit_json(folder / "all_data_rel.json", edit)


def test_bad_records_are_listed_and_count_as_failed(fixtures, tmp_path):
    folder, records = _break_mir(fixtures, tmp_path)
    items = load_benchmark("mir", folder, strict=False)
    assert len(items) == len(records) == 64
    bad = {it.id: it.bad for it in items if it.bad}
    assert set(bad) == {str(records[5]["id"]), str(records[9]["id"])}
    assert "conclusion" in bad[str(records[5]["id"])] and "images" in bad[str(records[9]["id"])]
    oracle = Oracle([it for it in items if not it.bad])

    def respond(request, attempt):
        return {"content": gold_response(oracle.item(request))}

    cfg = EvalConfig(model="http://unused", data_root=str(tmp_path / "data"), benchmarks="mir",
                     out=str(tmp_path / "out"), concurrency=4, request_retries=0)
    with FakeEndpoint(respond) as endpoint:
        cfg.model = endpoint.url
        metrics = evaluate(cfg)["benchmarks"]["mir"]
    assert endpoint.requests == 62  # bad records are not run
    assert metrics["n"] == 64 and metrics["n_failed"] == 2
    assert metrics["overall"]["accuracy"] == pytest.approx(62 / 64)  # the benchmark's denominator
    on_disk = json.loads((tmp_path / "out" / "metrics.json").read_text())["benchmarks"]["mir"]
    assert {b["id"] for b in on_disk["bad_records"]} == set(bad)
    assert all("all_data_rel.json" in b["reason"] for b in on_disk["bad_records"])
    report = (tmp_path / "out" / "report.md").read_text()
    assert all(f"`{rid}` (bad_record)" in report for rid in bad)


def test_strict_stops_at_the_first_bad_record(fixtures, tmp_path):
    folder, records = _break_mir(fixtures, tmp_path)
    with pytest.raises(RecordError) as err:
        load_benchmark("mir", folder, strict=True)
    assert err.value.record_id == records[5]["id"] and err.value.field == "conclusion"
    with FakeEndpoint(lambda request, attempt: {"content": "Answer: A"}) as endpoint:
        cfg = EvalConfig(model=endpoint.url, data_root=str(tmp_path / "data"), benchmarks="mir",
                         out=str(tmp_path / "out"), strict=True)
        with pytest.raises(RecordError, match="conclusion"):
            evaluate(cfg)
    assert endpoint.requests <= 1  # at most the model listing: no episode ran


@pytest.mark.parametrize("name, data", [("tir_bench", "TIR-Bench.json"), ("imagemining", "data.jsonl"),
                                        ("disbench", "queries.jsonl")])
def test_every_loader_keeps_going_past_a_bad_record(fixtures, tmp_path, name, data):
    folder = shutil.copytree(fixtures / name, tmp_path / name)
    path = folder / data
    jsonl = path.suffix == ".jsonl"
    text = path.read_text(encoding="utf-8")
    records = [json.loads(x) for x in text.splitlines()] if jsonl else json.loads(text)
    records[1].pop({"tir_bench": "prompt", "imagemining": "answer", "disbench": "query"}[name])
    records.append("not an object")
    path.write_text("\n".join(json.dumps(r) for r in records) if jsonl else json.dumps(records), encoding="utf-8")
    items = load_benchmark(name, folder, strict=False)
    assert len(items) == len(records)
    assert [it.bad is not None for it in items] == [i in (1, len(records) - 1) for i in range(len(records))]
    assert items[-1].id == f"#{len(records) - 1}" and "expected an object" in items[-1].bad


# ---- 2. jigsaw difficulty as upstream reads it ----------------------------------------------------------

@pytest.mark.parametrize("meta", [{"meta_data": {"difficulty": 3.0}}, {"meta_data": {"difficulty": "3"}},
                                  {"meta_data": {"difficulty": "x"}, "metadata": {"difficulty": 3}}])
def test_tir_loader_reads_jigsaw_difficulty_like_the_scorer(fixtures, tmp_path, meta):
    folder = shutil.copytree(fixtures / "tir_bench", tmp_path / "tir_bench")

    def edit(recs):
        for r in recs:
            if r["task"] == "jigsaw":
                r.pop("meta_data", None)
                r.update(json.loads(json.dumps(meta)))
    _edit_json(folder / "TIR-Bench.json", edit)
    jigsaws = [it for it in load_benchmark("tir_bench", folder) if it.tags["task"] == ["jigsaw"]]
    assert len(jigsaws) == 2
    from lookcloser.eval.scoring import score_response
    string_n = isinstance(meta["meta_data"]["difficulty"], str) and "metadata" not in meta
    for item in jigsaws:  # official mode: "3" scores 0 as upstream; 3.0 and metadata's 3 work
        assert score_response(item, gold_response(item)) == {"accuracy": 0.0 if string_n else 1.0}


# ---- 4. downloads: prepare against local fakes of each hub layout ---------------------------------------

def _zip_folder(folder, archive, prefix=""):
    import zipfile
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, prefix + str(path.relative_to(folder)))


def _fake_hub(monkeypatch, layouts):
    """Replaces ONLY huggingface_hub.snapshot_download (the hub cannot be reached from tests): it writes
    the fake repo's files into local_dir, as the real call would; everything after it runs for real."""
    import huggingface_hub

    calls = []

    def snapshot_download(repo_id, repo_type, local_dir, **_):
        calls.append((repo_id, repo_type))
        layouts[repo_id](Path(local_dir))
        return local_dir
    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    return calls


@pytest.mark.parametrize("zip_prefix", ["", "images/", "MIRBench_images/"])
def test_prepare_mir_from_the_hub_dataset_layout(fixtures, tmp_path, monkeypatch, zip_prefix):
    from lookcloser.eval.loaders import find_benchmark_dir
    from lookcloser.eval.prepare import SOURCES, prepare

    assert SOURCES["mir"] == "hf:ShellyCoder/MIRBench"  # the code-only git repo holds no data
    sample = fixtures / "mir"
    records = json.loads((sample / "all_data_rel.json").read_text())
    image_dirs = {r["images"][0].split("/")[0] for r in records}
    staging = tmp_path / "staging"
    for sub in image_dirs:
        shutil.copytree(sample / sub, staging / sub)

    def mir_repo(local):  # hub dataset ShellyCoder/MIRBench: all_data_rel.json + images.zip
        local.mkdir(parents=True, exist_ok=True)
        shutil.copy(sample / "all_data_rel.json", local / "all_data_rel.json")
        _zip_folder(staging, local / "images.zip", zip_prefix)
    calls = _fake_hub(monkeypatch, {"ShellyCoder/MIRBench": mir_repo})
    prepare(["mir"], tmp_path / "data")
    assert calls == [("ShellyCoder/MIRBench", "dataset")]
    items = load_benchmark("mir", find_benchmark_dir("mir", tmp_path / "data"), check_images=True)
    assert len(items) == len(records) and not any(it.bad for it in items)
    assert all(Path(p).is_file() for it in items for p in it.example["images"])


@pytest.mark.parametrize("form", ["jsonl_and_zip", "parquet"])
def test_prepare_imagemining_from_the_hub_dataset_layout(fixtures, tmp_path, monkeypatch, form):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from lookcloser.eval.loaders import find_benchmark_dir
    from lookcloser.eval.prepare import SOURCES, prepare

    assert SOURCES["imagemining"] == "hf:zai-org/ImageMining"  # the git repo has no images
    sample = fixtures / "imagemining"
    rows = [json.loads(x) for x in (sample / "data.jsonl").read_text(encoding="utf-8").splitlines()]

    def im_repo(local):
        local.mkdir(parents=True, exist_ok=True)
        if form == "jsonl_and_zip":
            shutil.copy(sample / "data.jsonl", local / "data.jsonl")
            _zip_folder(sample / "images", local / "images.zip", "images/")
        else:  # datasets' parquet export: the image column is the Image feature {"bytes", "path"}
            table = [{**r, "image": {"bytes": (sample / "images" / r["image"]).read_bytes(), "path": r["image"]}}
                     for r in rows]
            (local / "data").mkdir()
            pq.write_table(pa.Table.from_pylist(table), local / "data" / "test-00000-of-00001.parquet")
    _fake_hub(monkeypatch, {"zai-org/ImageMining": im_repo})
    prepare(["imagemining"], tmp_path / "data")
    items = load_benchmark("imagemining", find_benchmark_dir("imagemining", tmp_path / "data"), check_images=True)
    assert [it.id for it in items] == [str(r["id"]) for r in rows]
    assert [it.gold["answer"] for it in items] == [r["answer"] for r in rows]
