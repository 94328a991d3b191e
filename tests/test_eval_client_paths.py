"""The eval client keeps its results: images sent as their files' own bytes only when those decode
to the very pixels we hold, the prediction file written through one open handle still heals a
torn line, and a prediction that cannot be written stops the run. Real files, real loopback server."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from lookcloser.agent.images import open_image
from lookcloser.agent.openai_policy import OpenAIPolicy, image_data_url, image_url
from lookcloser.eval.runner import PredictionStore
from testing.fake_endpoint import FakeEndpoint

BUDGET = 2048 * 2048


def _decode(url: str) -> tuple[bytes, Image.Image]:
    data = base64.b64decode(url.split(",", 1)[1])
    return data, Image.open(io.BytesIO(data))


def _photo(size=(96, 64)) -> Image.Image:
    rng = np.random.default_rng(0)
    return Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8))


def test_images_travel_as_their_files_only_when_the_pixels_are_the_same(tmp_path):
    photo = _photo()
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90": servers differ in applying it
    files = {
        "plain.png": lambda p: photo.save(p), "plain.jpg": lambda p: photo.save(p, quality=80),
        "lossy.webp": lambda p: photo.save(p, quality=70),
        "alpha.png": lambda p: photo.convert("RGBA").save(p), "grey.jpg": lambda p: photo.convert("L").save(p),
        "rotated.jpg": lambda p: photo.save(p, exif=exif), "big.png": lambda p: _photo((300, 300)).save(p),
        "icc.png": lambda p: photo.save(p, icc_profile=b"\0" * 128),
    }
    for name, write in files.items():
        write(tmp_path / name)
    for name in files:
        image = open_image(tmp_path / name)
        url = image_url(image, 200 * 200)
        sent, decoded = _decode(url)
        if name.startswith(("plain", "lossy")):
            assert sent == (tmp_path / name).read_bytes(), name  # the file itself, not re-encoded
            assert url.startswith({"png": "data:image/png", "jpg": "data:image/jpeg", "webp": "data:image/webp"}
                                  [name.rsplit(".", 1)[1]])
            assert np.array_equal(np.asarray(decoded.convert("RGB")), np.asarray(image)), name
        else:  # anything a server could decode differently: re-encoded, as before
            assert url == image_data_url(image, 200 * 200), name
            assert decoded.format == "PNG"


def test_prediction_store_appends_through_one_handle_and_heals_a_torn_line(tmp_path):
    path = tmp_path / "predictions.jsonl"
    path.write_text('{"id": "1", "status": "ok"}\n{"id": "2", "sta', encoding="utf-8")  # killed mid-write
    store = PredictionStore(path)
    store.append({"id": "2", "status": "ok"})
    store.append({"id": "3", "status": "failed"})
    assert path.read_text(encoding="utf-8").endswith('"failed"}\n')  # flushed before close
    store.close()
    store.append({"id": "3", "status": "ok"})  # reopens after close
    store.close()
    assert {k: r["status"] for k, r in PredictionStore(path).load().items()} == {"1": "ok", "2": "ok", "3": "ok"}


def test_a_prediction_that_cannot_be_written_stops_the_run(tmp_path):
    from lookcloser.eval.config import EvalConfig
    from lookcloser.eval.fixtures import write_tir_bench
    from lookcloser.eval.loaders import load_benchmark
    from lookcloser.eval.runner import env_factory, run_benchmark

    items = load_benchmark("tir_bench", write_tir_bench(tmp_path / "tir"))
    (tmp_path / "out" / "predictions.jsonl").mkdir(parents=True)  # a folder where the file should be
    with FakeEndpoint(lambda request, attempt: {"content": "<answer>A</answer>"}) as endpoint:
        cfg = EvalConfig(model=endpoint.url, concurrency=4, save_trajectories=False)
        policy = OpenAIPolicy(endpoint.url, "m", api_key_env="")
        with pytest.raises(IsADirectoryError):
            run_benchmark("tir_bench", items, policy, cfg, tmp_path / "out", env_factory("tir_bench", cfg))
        assert endpoint.requests < len(items)  # stopped early, did not run everything unrecorded
