"""DISBench tools over a generated collection in the official layout (lookcloser.eval.fixtures.write_disbench:
the one DISBench fixture, also the embedded eval default)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

from lookcloser.agent import embedders
from lookcloser.agent.environments import PhotoCollectionEnv
from lookcloser.agent.photo_env import listed_ids
from lookcloser.agent.photos import load_collection
from lookcloser.agent.toolkit import is_error
from lookcloser.eval.fixtures import write_disbench


@pytest.fixture(scope="module")
def disbench(tmp_path_factory):
    return write_disbench(tmp_path_factory.mktemp("DISBench"))


@pytest.fixture
def env(disbench, tmp_path):
    embedders_cache = tmp_path / "index"
    env = PhotoCollectionEnv(embedder=embedders.ColorHashEmbedder(), cache_dir=str(embedders_cache))
    embedders_cache.mkdir()
    return env


def ids_in(text: str) -> list[str]:
    return re.findall(r"\b\d{10}\b", text)  # Flickr-style photo ids


def start(env, disbench, user: int = 0) -> str:
    from lookcloser.agent.photo_env import _COLLECTIONS

    _COLLECTIONS._items.clear()  # each test builds (or loads) its own index
    return env.reset(user_id=disbench["users"][user], data_root=str(disbench["root"]), query="...")


def test_metadata_with_missing_fields_is_read(disbench):
    collection = load_collection(disbench["root"], disbench["users"][0])
    assert len(collection.photos) == 36
    unknown = [collection.photos[p] for p in disbench["events"]["unknown"]]
    assert [p.taken is None for p in unknown] == [False, True, False, True, False]
    assert all(p.latitude is None and p.address is None for p in unknown)
    paris = [collection.photos[p] for p in disbench["events"]["paris_2020"]]
    assert sum(p.latitude is None for p in paris) == 2


def test_filter_query_answered_through_the_tools(env, disbench):
    """Query q1, "my trip to Paris in June 2020", answered exactly by a time + place filter."""
    overview = start(env, disbench)
    assert "36 photos" in overview and f"user {disbench['users'][0]}" in overview
    queries = [json.loads(line) for line in (disbench["root"] / "queries.jsonl").read_text().splitlines()]
    gold = set(queries[0]["answer"])
    result = env.filter_metadata(start_time="2020-06", end_time="2020-06-30", place="paris")
    assert set(ids_in(result)) == gold
    assert "saved as subset 'last_filter'" in result
    # listed as the tools and the answer take ids (a JSON list of strings), so a model copies them verbatim
    listed = listed_ids(result)
    assert listed == ids_in(result) and result.endswith(json.dumps(listed))  # nothing after the list
    # q2: the Pixel 4 photos in Paris, narrowed inside a saved subset.
    env.save_subset(name="paris_all", photo_ids=ids_in(env.filter_metadata(place="Paris")))
    pixel = env.filter_metadata(device="pixel 4", subset="paris_all")
    assert set(ids_in(pixel)) == set(queries[1]["answer"])
    assert env.tool_errors == 0


def test_object_query_needs_the_photos_after_the_metadata(env, disbench):
    """Query 3 (second user): the metadata finds the Oslo 2018 trip, only the images find the green balloon."""
    start(env, disbench, user=1)
    queries = [json.loads(line) for line in (disbench["root"] / "queries.jsonl").read_text().splitlines()]
    assert queries[2]["user_id"] == disbench["users"][1]
    trip = ids_in(env.filter_metadata(start_time="2018-12", end_time="2018-12-31", place="oslo"))
    assert set(trip) == set(disbench["events"]["oslo_2018"]) and len(trip) == 6  # gold is 3 of these
    hits = ids_in(env.image_search(query="green balloon", top_k=3, subset="last_filter"))
    assert set(hits) == set(queries[2]["answer"]) == set(disbench["shows"]["oslo_2018"])
    assert env.tool_errors == 0


def test_gps_radius_skips_photos_without_position(env, disbench):
    start(env, disbench)
    near = set(ids_in(env.filter_metadata(latitude=48.8566, longitude=2.3522, radius_km=10)))
    paris_2020 = disbench["events"]["paris_2020"]
    assert near == {p for i, p in enumerate(paris_2020) if i not in (2, 5)} | set(disbench["events"]["paris_2021"])
    assert env.filter_metadata(latitude=0.0, longitude=0.0, radius_km=1) == "No photos match."


def test_metadata_view_search_and_subsets(env, disbench):
    start(env, disbench)
    london = disbench["events"]["london_2019"]
    meta = [json.loads(line) for line in env.get_metadata(photo_ids=london[:2]).splitlines()]
    assert meta[0]["photo_id"] == london[0] and meta[0]["device"] == "Apple iPhone 8"
    no_gps = env.get_metadata(photo_ids=[disbench["events"]["unknown"][3]])
    assert "latitude" not in no_gps and "taken_time" not in no_gps
    blocks = env.view_photos(photo_ids=london[:3])
    images = [b["image"] for b in blocks if b["type"] == "image"]
    assert len(images) == 3 and all(max(img.size) <= 448 for img in images)
    assert [b["type"] for b in blocks[:2]] == ["image", "text"]  # each picture, then its caption
    assert f'Photo "{london[0]}"' in blocks[1]["text"] and "taken_time" in blocks[1]["text"]
    hits = ids_in(env.image_search(query="blue photos", top_k=6))
    assert set(hits) == set(london)  # the colour embedder ranks the blue event first
    similar = ids_in(env.image_search(query=london[0], top_k=3))
    assert similar[0] == london[0] and set(similar) <= set(london)
    assert env.save_subset(name="trip-1", photo_ids=london) == "Saved subset 'trip-1' with 6 photos."
    assert set(ids_in(env.filter_metadata(subset="trip-1"))) == set(london)
    assert env.tool_errors == 0


@pytest.mark.parametrize("call, message", [
    (lambda e: e.get_metadata(photo_ids=["123"]), "unknown photo ids: 123"),
    (lambda e: e.get_metadata(photo_ids=[]), "empty"),
    (lambda e: e.view_photos(photo_ids=["nope"]), "unknown photo ids"),
    (lambda e: e.filter_metadata(), "at least one criterion"),
    (lambda e: e.filter_metadata(start_time="June 2020"), "not understood"),
    (lambda e: e.filter_metadata(start_time="2021", end_time="2020"), "after end_time"),
    (lambda e: e.filter_metadata(latitude=48.8, longitude=2.3), "together"),
    (lambda e: e.filter_metadata(latitude=91.0, longitude=2.3, radius_km=5), "latitude must be"),
    (lambda e: e.filter_metadata(latitude=48.0, longitude=2.3, radius_km=-5), "radius_km > 0"),
    (lambda e: e.filter_metadata(radius_km=float("nan")), "finite"),
    (lambda e: e.filter_metadata(subset="missing"), "no subset named"),
    (lambda e: e.image_search(query="red", top_k=0), "between 1 and 50"),
    (lambda e: e.image_search(query="  "), "empty"),
    (lambda e: e.save_subset(name="bad name!", photo_ids=[]), "subset name"),
    (lambda e: e.save_subset(name="ok", photo_ids=["404"]), "nothing saved"),
    (lambda e: e.get_metadata(photo_ids={"a": 1}), "list"),
])
def test_bad_calls_return_counted_errors(env, disbench, call, message):
    start(env, disbench)
    result = call(env)
    assert is_error(result) and message in result, result
    assert (env.tool_calls, env.tool_errors) == (1, 1)


def test_partly_unknown_ids_still_show_the_known(env, disbench):
    start(env, disbench)
    known = disbench["events"]["lyon_2020"][0]
    result = env.get_metadata(photo_ids=[known, "404", 404])
    assert result.startswith("Error: unknown photo ids: 404") and known in result
    assert "at most 8 photos" in env.view_photos(photo_ids=disbench["events"]["berlin_home"])


def test_index_is_cached_on_disk_and_reused(disbench, tmp_path):
    class CountingEmbedder(embedders.ColorHashEmbedder):
        images_embedded = 0

        def embed_images(self, images):
            CountingEmbedder.images_embedded += len(images)
            return super().embed_images(images)

    user = disbench["users"][1]
    collection = load_collection(disbench["root"], user)
    assert len(collection.photos) == 18
    index, cached = embedders.build_or_load_index(collection, CountingEmbedder(), tmp_path)
    assert not cached and CountingEmbedder.images_embedded == 18
    assert len(list(tmp_path.glob(f"{user}-*.npz"))) == 1
    again, cached = embedders.build_or_load_index(collection, CountingEmbedder(), tmp_path)
    assert cached and CountingEmbedder.images_embedded == 18
    np.testing.assert_array_equal(index.vectors, again.vectors)
    photo = collection.image_path(disbench["events"]["oslo_2018"][0])
    os.utime(photo, ns=(photo.stat().st_atime_ns, photo.stat().st_mtime_ns + 10**9))  # a changed photo rebuilds
    _, cached = embedders.build_or_load_index(collection, CountingEmbedder(), tmp_path)
    assert not cached and CountingEmbedder.images_embedded == 36


def test_env_instances_share_one_index_per_user(disbench, tmp_path):
    from lookcloser.agent.photo_env import _COLLECTIONS

    _COLLECTIONS._items.clear()
    first, second = (PhotoCollectionEnv(embedder=embedders.ColorHashEmbedder(), cache_dir=str(tmp_path))
                     for _ in range(2))
    first.reset(user_id=disbench["users"][1], data_root=str(disbench["root"]))
    assert first.index_from_cache is False
    second.reset(user_id=disbench["users"][1], data_root=str(disbench["root"]))
    assert second._index is first._index
    _COLLECTIONS._items.clear()  # a new process: the disk cache answers
    third = PhotoCollectionEnv(embedder=embedders.ColorHashEmbedder(), cache_dir=str(tmp_path))
    third.reset(user_id=disbench["users"][1], data_root=str(disbench["root"]))
    assert third.index_from_cache is True


def test_reset_refuses_bad_rows(disbench, tmp_path):
    from lookcloser.data_builders.records import RecordError

    env = PhotoCollectionEnv(embedder=embedders.ColorHashEmbedder(), cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="user_id"):
        env.reset(query="no user")
    with pytest.raises(RecordError, match="user_id"):
        env.reset(user_id=f"../{disbench['users'][0]}", data_root=str(disbench["root"]))
    with pytest.raises(RecordError, match="not found"):
        env.reset(user_id="ghost", data_root=str(disbench["root"]))


def test_transformers_embedder_plumbing(disbench, tmp_path):
    """A tiny random CLIP built offline: checks loading and shapes only (its rankings mean nothing)."""
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    from lookcloser.agent.tiny_qwen3_vl import build_tokenizer

    tokenizer = build_tokenizer()
    config = CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 32, "bos_token_id": 1,
                     "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 16},
        projection_dim=16,
    )
    CLIPModel(config).save_pretrained(tmp_path / "clip")
    tokenizer.save_pretrained(tmp_path / "clip")
    CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(
        tmp_path / "clip")
    embedder = embedders.TransformersEmbedder(str(tmp_path / "clip"))
    env = PhotoCollectionEnv(embedder=embedder, cache_dir=str(tmp_path / "index"))
    from lookcloser.agent.photo_env import _COLLECTIONS

    _COLLECTIONS._items.clear()
    env.reset(user_id=disbench["users"][1], data_root=str(disbench["root"]))
    assert env._index.vectors.shape == (18, 16)
    np.testing.assert_allclose(np.linalg.norm(env._index.vectors, axis=1), 1.0, rtol=1e-5)
    result = env.image_search(query="a dark photo", top_k=2)
    hits = ids_in(result)
    second_user = {p for e in ("oslo_2018", "rome_2019", "oslo_2021") for p in disbench["events"][e]}
    assert len(hits) == 2 and set(hits) <= second_user
    assert env.tool_errors == 0


def test_upstream_tool_names_run_the_same_tools(env, disbench, tmp_path):
    """Issue 12.7: DISBench's agent calls ImageSearch, GetMetadata, FilterMetadata, ViewPhotos, WebSearch."""
    import inspect

    from lookcloser.agent.environments import tool_schemas
    from lookcloser.agent.photo_env import ImageSeekerEnv

    upstream = {"ImageSearch", "GetMetadata", "FilterMetadata", "ViewPhotos", "WebSearch"}
    ours = {"image_search", "get_metadata", "filter_metadata", "view_photos", "web_search"}
    shown = {s["function"]["name"] for s in tool_schemas(ImageSeekerEnv)}
    assert shown == upstream | {"save_subset", "fetch_page"}  # one spelling per prompt
    trl_sees = {n for n, _ in inspect.getmembers(ImageSeekerEnv, inspect.isfunction) if not n.startswith("_")}
    assert trl_sees - {"reset", "get_reward"} == shown  # what TRL's environment_factory exposes
    assert ours <= {s["function"]["name"] for s in tool_schemas(PhotoCollectionEnv)}
    seeker = ImageSeekerEnv(embedder=embedders.ColorHashEmbedder(), cache_dir=str(tmp_path / "seeker"))
    for e in (env, seeker):  # each env takes both spellings in a call
        start(e, disbench)
        london = disbench["events"]["london_2019"]
        search = e._call_tool("ImageSearch", {"query": "blue photos", "top_k": 6})
        assert search == e._call_tool("image_search", {"query": "blue photos", "top_k": 6})
        assert set(ids_in(search)) == set(london)
        assert e._call_tool("GetMetadata", {"photo_ids": london[:2]}) == \
            e._call_tool("get_metadata", {"photo_ids": london[:2]})
        assert set(ids_in(e._call_tool("FilterMetadata", {"place": "Paris"}))) == \
            set(ids_in(e._call_tool("filter_metadata", {"place": "Paris"})))
        assert len([b for b in e._call_tool("ViewPhotos", {"photo_ids": london[:2]}) if b["type"] == "image"]) == 2
        assert is_error(e._call_tool("WebSearch", {"query": "eiffel tower"}))  # no backend: an observation
        assert e.tool_calls == 8 and e.tool_errors == 1  # each call counted once, under either name
    assert seeker.GetMetadata(photo_ids=london[:1]) == env.get_metadata(photo_ids=london[:1])


def test_image_search_within_a_saved_subset(env, disbench):
    start(env, disbench)
    london, paris = disbench["events"]["london_2019"], disbench["events"]["paris_2020"]
    env.save_subset(name="paris", photo_ids=paris)
    hits = ids_in(env.image_search(query="blue photos", top_k=6, subset="paris"))
    assert hits and set(hits) <= set(paris) and not set(hits) & set(london)
    assert "in subset 'paris'" in env._call_tool("ImageSearch", {"query": london[0], "top_k": 3, "subset": "paris"})
    assert "no subset named" in env.image_search(query="blue photos", subset="nope")
