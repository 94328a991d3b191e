"""Small generated data in the benchmarks' own on-disk formats, for tests and offline runs.

``make_disbench(root)`` writes a DISBench-format collection (docs/formats.md §4): two users, a few dozen
photos in distinctly coloured "events" with metadata (some photos lack GPS, time, address or
device), ``queries.jsonl`` whose answers follow from the metadata, and ``photo_ids/``.
``make_search_corpus(path)`` writes a JSONL corpus for the offline web-search backend.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

from PIL import Image, ImageDraw

# (event, start, count, address, (lat, lon) or None, device, RGB colour)
_EVENTS = [
    ("paris_2020", datetime(2020, 6, 10, 9), 8, "Rue de Rivoli, Paris, Ile-de-France, France", (48.8606, 2.3376),
     "Canon EOS 80D", (210, 40, 40)),
    ("lyon_2020", datetime(2020, 6, 20, 14), 4, "Place Bellecour, Lyon, France", (45.7578, 4.8320), "Canon EOS 80D",
     (40, 160, 70)),
    ("london_2019", datetime(2019, 9, 3, 11), 6, "Westminster, London, England, United Kingdom", (51.5007, -0.1246),
     "Apple iPhone 8", (40, 70, 210)),
    ("berlin_home", datetime(2021, 1, 5, 18), 10, "Kreuzberg, Berlin, Germany", (52.4986, 13.4030), "Google Pixel 4",
     (128, 128, 128)),
    ("paris_2021", datetime(2021, 3, 14, 10), 3, "Montmartre, Paris, France", (48.8867, 2.3431), "Google Pixel 4",
     (240, 220, 40)),
    ("unknown", datetime(2018, 5, 1, 8), 5, None, None, None, (130, 50, 170)),
]


def _photo(color: tuple[int, int, int], seed: int) -> Image.Image:
    image = Image.new("RGB", (96, 72), color)
    draw = ImageDraw.Draw(image)
    x = 8 + (seed * 13) % 60
    draw.rectangle((x, 20, x + 20, 44), fill=tuple(min(255, c + 40) for c in color))
    return image


def make_disbench(root: str | Path) -> dict:
    """Write the fixture under ``root``; returns ``{"root", "users", "events": {event: [photo ids]}}``."""
    root = Path(root)
    events: dict[str, list[str]] = {}
    users = {"u1": [], "u2": []}
    serial = 0
    for name, start, count, address, gps, device, color in _EVENTS:
        for k in range(count):
            serial += 1
            pid = f"{9000000 + serial * 7}"
            taken = start + timedelta(days=k // 3, hours=k)
            meta: dict = {"taken_time": taken.strftime("%Y-%m-%d %H:%M:%S"), "accuracy": 16.0}
            if address:
                meta["address"] = address
            if device:
                meta["capturedevice"] = device
            if gps and not (name == "paris_2020" and k in (2, 5)):  # two Paris photos without GPS
                meta["latitude"], meta["longitude"] = gps[0] + 0.001 * k, gps[1] - 0.001 * k
            else:
                meta["latitude"] = meta["longitude"] = None
            if name == "unknown" and k % 2:
                meta = {"taken_time": None} if k == 1 else None  # null and missing metadata
            users["u1"].append({"photo_id": pid, "metadata": meta})
            events.setdefault(name, []).append(pid)
            out = root / "images" / "u1" / f"{pid}.jpg"
            out.parent.mkdir(parents=True, exist_ok=True)
            _photo(color, serial).save(out, quality=90)
    for k in range(4):  # a second, small user
        pid = f"u2p{k}"
        users["u2"].append({"photo_id": pid, "metadata": {"taken_time": f"2022-02-0{k + 1} 12:00:00",
                                                          "address": "Oslo, Norway"}})
        out = root / "images" / "u2" / f"{pid}.jpg"
        out.parent.mkdir(parents=True, exist_ok=True)
        _photo((20, 20, 20), k).save(out)
    (root / "metadata").mkdir(parents=True, exist_ok=True)
    (root / "photo_ids").mkdir(parents=True, exist_ok=True)
    for user, rows in users.items():
        (root / "metadata" / f"{user}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (root / "photo_ids" / f"{user}.txt").write_text("".join(r["photo_id"] + "\n" for r in rows), encoding="utf-8")
    queries = [
        {"query_id": "q1", "user_id": "u1", "event_type": "intra-event",
         "query": "Find the photos from my trip to Paris in June 2020.", "answer": events["paris_2020"]},
        {"query_id": "q2", "user_id": "u1", "event_type": "inter-event",
         "query": "Which photos did I take with the Pixel 4 in Paris?", "answer": events["paris_2021"]},
    ]
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return {"root": root, "users": list(users), "events": events}


def make_search_corpus(path: str | Path) -> Path:
    """A tiny JSONL corpus: a few pages about landmarks, one about an unrelated topic."""
    docs = [
        {"url": "https://example.org/eiffel", "title": "Eiffel Tower",
         "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889. It is 330 metres tall."},
        {"url": "https://example.org/big-ben", "title": "Big Ben",
         "text": "Big Ben is the nickname for the Great Bell of the clock at the Palace of Westminster in London."},
        {"url": "https://example.org/brandenburg", "title": "Brandenburg Gate",
         "text": "The Brandenburg Gate is an 18th-century neoclassical monument in Berlin, built in 1791."},
        {"url": "https://example.org/sourdough", "title": "Sourdough bread",
         "text": "Sourdough is bread made by fermenting dough with wild yeast and lactic acid bacteria."},
    ]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path
