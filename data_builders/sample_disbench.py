"""Generate DISBench-format photo collections whose queries need the metadata tools and the pictures.

Deterministic from the seed. Each user has eight trips: three cities visited twice (three photos
a trip) and two visited once (three to six photos), each trip in its own month, each taken with
one of three devices (two of them used on exactly two trips), plus two stray photos with no GPS
or address (one has no device either). A photo shows one big shape in one of four colours. A
query names a colour and a metadata condition: one trip (intra-event: its city and camera) or every photo
of a city or of a device (inter-event). The metadata filter finds 3-6 photos; only 1-2 of them show
the colour, and the colour also shows outside them: neither the filter nor the content alone answers.
The oracle filters, then searches the filter's photos by content (``ImageSearch``) and answers the
search's listing; the shortcut answers every photo the filter found.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from PIL import Image, ImageDraw

from lookcloser.data_builders.sample_mir import COLOURS, SHAPES, draw_shape
from lookcloser.data_builders.search_tasks import LAST_LISTING, SearchTask, disbench_question
from lookcloser.data_builders.synthetic import ToolStep

# City -> (country, latitude, longitude): no name is a substring of another address, so the
# filter's address text match picks exactly one city.
CITIES = {"Oslo": ("Norway", 59.9139, 10.7522), "Rome": ("Italy", 41.9028, 12.4964),
          "Paris": ("France", 48.8566, 2.3522), "Lima": ("Peru", -12.0464, -77.0428),
          "Cairo": ("Egypt", 30.0444, 31.2357), "Tokyo": ("Japan", 35.6762, 139.6503)}
DEVICES = ("Canon EOS 5D", "iPhone 6", "Nikon D90")  # none is a substring of another
IMAGE_SIDE = 96
STRAYS = 2  # photos per user without GPS, address or device: no query's filter finds them
MAX_DRAWS = 200
# The oracle's ImageSearch asks for two photos, the most a query's answer holds, and answers the search's
# listing whole: one photo too many where only one shows the colour (F1 2/3 there).
SEARCH_TOP_K = 2


@dataclass
class _Photo:
    photo_id: str
    taken: datetime
    city: str | None  # None: a stray photo (no GPS, no address)
    device: str | None
    colour: str
    shape: str


@dataclass
class _Query:
    event_type: str
    arguments: dict  # FilterMetadata's arguments
    found: list[str]  # the filter's photo ids, oldest first (as filter_metadata lists them)
    what: str  # "from my trip to Oslo in May 2019" / "taken in Oslo" / "taken with my iPhone 6"
    filter_think: str
    colour: str = ""
    gold: tuple[str, ...] = ()


def _trips(rng: random.Random) -> list[tuple[str, int, int, int, str]]:
    """Eight trips ``(city, size, year, month, device)`` in random order (see the module docstring)."""
    cities = rng.sample(list(CITIES), 5)
    twice, once = cities[:3], cities[3:]
    paired = [(city, k) for city in twice for k in range(2)]
    main, *rare = rng.sample(DEVICES, 3)
    devices = {key: main for key in paired}
    for device in rare:  # each on two trips in two different cities
        free = [key for key in paired if devices[key] == main]
        first = rng.choice(free)
        devices[first] = device
        devices[rng.choice([key for key in free if key[0] != first[0]])] = device
    months = rng.sample([(year, month) for year in range(2012, 2021) for month in range(1, 13)], 8)
    trips = [(city, 3, *months[i], devices[city, k]) for i, (city, k) in enumerate(paired)]
    trips += [(city, rng.randint(3, 6), *months[6 + i], main) for i, city in enumerate(once)]
    rng.shuffle(trips)
    return trips


def _draw_user(rng: random.Random, ids: list[str]) -> list[_Photo]:
    """One user's photos (each trip within one day), ids taken from ``ids``."""
    photos, trips = [], _trips(rng)
    for city, size, year, month, device in trips:
        taken = datetime(year, month, rng.randint(1, 28), rng.randint(8, 11), rng.randint(0, 59), rng.randint(0, 59))
        for _ in range(size):
            photos.append(_Photo(ids.pop(), taken, city, device, rng.choice(list(COLOURS)), rng.choice(SHAPES)))
            taken += timedelta(minutes=rng.randint(60, 120), seconds=rng.randint(0, 59))
    main = max(DEVICES, key=[t[4] for t in trips].count)  # the camera of most trips
    for k in range(STRAYS):  # alternately: no device at all, or the main camera's (never a query's filter)
        taken = datetime(rng.randint(2012, 2020), rng.randint(1, 12), rng.randint(1, 28), rng.randint(8, 20))
        photos.append(_Photo(ids.pop(), taken, None, main if k % 2 else None, rng.choice(list(COLOURS)),
                             rng.choice(SHAPES)))
    return photos


def _oldest_first(photos: list[_Photo]) -> list[str]:
    return [p.photo_id for p in sorted(photos, key=lambda p: (p.taken, p.photo_id))]


def _filters(photos: list[_Photo]) -> list[_Query]:
    """Every metadata filter a query may rest on: one per trip, per city and per device seen on 2+ trips."""
    filters = []
    trips = sorted({(p.city, p.taken.year, p.taken.month) for p in photos if p.city})
    for city, year, month in trips:
        trip = [p for p in photos if (p.city, p.taken.year, p.taken.month) == (city, year, month)]
        device = trip[0].device
        # A trip named by its place and camera, where those single it out: words of the query the filter's
        # arguments repeat. Named by its month ("2013-08") the embedded default had to copy digits from the
        # query into two arguments, and after the cold start its filters found nothing (docs/grpo.md).
        found = [p for p in photos if p.city == city and p.device == device]
        if {p.photo_id for p in found} == {p.photo_id for p in trip}:
            filters.append(_Query("intra-event", {"place": city, "device": device}, _oldest_first(found),
                                  f"from my trip to {city} with my {device}",
                                  f"I filter the photos taken in {city} with the {device}."))
    for key, value, phrase in [("place", c, "in") for c in CITIES] + [("device", d, "with my") for d in DEVICES]:
        found = [p for p in photos if (p.city if key == "place" else p.device) == value]
        if len({(p.city, p.taken.year, p.taken.month) for p in found}) >= 2:
            think = f"I filter the photos taken {phrase.replace('my', 'the')} {value}."
            filters.append(_Query("inter-event", {key: value}, _oldest_first(found), f"taken {phrase} {value}", think))
    return [f for f in filters if 3 <= len(f.found) <= 6]


def _choices(photos: list[_Photo], rng: random.Random) -> dict[str, list[_Query]]:
    """Per event type, the (filter, colour) pairs that make a query, spread over the filters first."""
    colour_of = {p.photo_id: p.colour for p in photos}
    by_type: dict[str, list[list[_Query]]] = {"intra-event": [], "inter-event": []}
    for query in _filters(photos):
        options = []
        for colour in COLOURS:
            gold = tuple(pid for pid in query.found if colour_of[pid] == colour)
            outside = any(c == colour for pid, c in colour_of.items() if pid not in query.found)
            if 1 <= len(gold) <= 2 and outside:
                options.append(_Query(**{**vars(query), "colour": colour, "gold": gold}))
        rng.shuffle(options)
        by_type[query.event_type].append(options)
    spread = {}
    for event_type, per_filter in by_type.items():
        rng.shuffle(per_filter)
        rounds = max((len(options) for options in per_filter), default=0)
        spread[event_type] = [options[r] for r in range(rounds) for options in per_filter if r < len(options)]
    return spread


def _save_image(path: Path, photo: _Photo, rng: random.Random) -> None:
    img = Image.new("RGB", (IMAGE_SIDE, IMAGE_SIDE), (245, 245, 245))
    side = rng.randint(IMAGE_SIDE // 2, IMAGE_SIDE - 16)
    x0, y0 = rng.randint(6, IMAGE_SIDE - side - 6), rng.randint(6, IMAGE_SIDE - side - 6)
    draw_shape(ImageDraw.Draw(img), photo.shape, (x0, y0, x0 + side, y0 + side), COLOURS[photo.colour])
    img.save(path, quality=95)


def _metadata(photo: _Photo, rng: random.Random) -> dict:
    taken = photo.taken.strftime("%Y-%m-%d %H:%M:%S")
    if photo.city is None:  # as in the real data: fields null, or left out
        return {"taken_time": taken, "capturedevice": photo.device} if photo.device else \
            {"taken_time": taken, "longitude": None, "latitude": None, "accuracy": None, "address": None,
             "capturedevice": None}
    country, lat, lon = CITIES[photo.city]
    return {"taken_time": taken, "longitude": round(lon + rng.uniform(-0.02, 0.02), 6),
            "latitude": round(lat + rng.uniform(-0.02, 0.02), 6), "accuracy": 16.0,
            "address": f"{photo.city}, {country}", "capturedevice": photo.device}


def _query_text(query: _Query) -> str:
    every = "all " if query.event_type == "inter-event" else ""
    return f"Find {every}my photos with a {query.colour} shape {query.what}."


def _task(qid: str, user: str, root: Path, query: _Query) -> SearchTask:
    colour, gold = query.colour, list(query.gold)
    filter_step = ToolStep(query.filter_think, [("FilterMetadata", dict(query.arguments))])
    return SearchTask(
        benchmark="disbench", id=qid, task=query.event_type, question=disbench_question(_query_text(query)), images=[],
        example={"user_id": user, "data_root": str(root)}, gold={"answer": gold},
        steps=[filter_step, ToolStep(f"I search these photos for a {colour} shape.", [("ImageSearch", {
            "query": f"{colour} shape", "top_k": SEARCH_TOP_K, "subset": "last_filter"})])],
        final_think="I return the photos the search found.", answer_text=LAST_LISTING,
        shortcut_steps=[filter_step], shortcut_think="I return every photo the filter found.",
        shortcut_answer=json.dumps(query.found))


def write_disbench(out: str | Path, seed: int, count: int, users: int = 4) -> list[SearchTask]:
    """Write ``count`` queries over ``users`` collections under ``out`` in DISBench's layout.

    Queries alternate between the users and, per user, between intra- and inter-event; a user
    whose draw offers too few distinct queries is drawn again.
    """
    if count < 1 or users < 1:
        raise ValueError(f"count and users must be at least 1, got count={count}, users={users}")
    root = Path(out).resolve()
    names = [f"user{u + 1}" for u in range(users)]
    plan = [(names[i % users], ("intra-event", "inter-event")[(i // users) % 2]) for i in range(count)]
    per_user = 8 * 6 + STRAYS  # at most
    # Two-digit ids, unique within a collection (DISBench's ids name a photo of one user's history): each id
    # the model copies from a tool's listing into the answer is two tokens for the embedded default.
    ids_rng = random.Random(f"disbench:{seed}:ids")
    pools = [[str(n) for n in ids_rng.sample(range(10, 100), per_user)] for _ in names]
    photos: dict[str, list[_Photo]] = {}
    chosen: dict[str, dict[str, list[_Query]]] = {}
    for u, user in enumerate(names):
        needs = {t: sum(1 for name, kind in plan if (name, kind) == (user, t)) for t in ("intra-event", "inter-event")}
        rng = random.Random(f"disbench:{seed}:{user}")
        for _ in range(MAX_DRAWS):
            ids = list(pools[u])
            photos[user] = _draw_user(rng, ids)
            chosen[user] = _choices(photos[user], rng)
            if all(len(chosen[user][t]) >= n for t, n in needs.items()):
                break
        else:
            raise ValueError(f"{count} queries over {users} users: too many per user; give more users")
    for sub in ("metadata", "photo_ids", *(f"images/{user}" for user in names)):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for user in names:
        rng = random.Random(f"disbench:{seed}:{user}:files")
        ordered = sorted(photos[user], key=lambda p: p.photo_id)
        lines = [json.dumps({"photo_id": p.photo_id, "metadata": _metadata(p, rng)}) for p in ordered]
        (root / "metadata" / f"{user}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (root / "photo_ids" / f"{user}.txt").write_text("".join(p.photo_id + "\n" for p in ordered), encoding="utf-8")
        for photo in ordered:
            _save_image(root / "images" / user / f"{photo.photo_id}.jpg", photo, rng)
    tasks, records = [], []
    for i, (user, event_type) in enumerate(plan):
        query = chosen[user][event_type].pop(0)
        tasks.append(_task(str(i + 1), user, root, query))
        records.append({"query_id": str(i + 1), "user_id": user, "query": _query_text(query),
                        "answer": list(query.gold), "event_type": event_type})
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return tasks


def metadata_reference(tasks: list[SearchTask]) -> float:
    """Mean DISBench F1 of answering every photo the query's metadata filter finds (the shortcut):
    what a model scores without looking at the photos.

    >>> task = SearchTask("disbench", "1", "intra-event", "q", [], {}, {"answer": ["101"]}, [], "", "",
    ...                   shortcut_answer='["101", "102", "103"]')
    >>> metadata_reference([task])
    0.5
    """
    from lookcloser.rewards.disbench import set_metrics

    return sum(set_metrics(json.loads(t.shortcut_answer), t.gold["answer"])["f1"] for t in tasks) / len(tasks)
