"""Small generated benchmarks in each official on-disk format: the embedded default's eval data.

Deterministic (fixed seeds, no clock), written once into ``$LOOKCLOSER_CACHE/eval_fixtures/<VERSION>``
(or any folder) and reused. They exercise the loaders, tools and scorers with every answer shape
the real files have; they do not measure model quality. MIR uses the bundled ``data/mir_sample``
(the main job's training data) when present, else regenerates it.

    python -c "from eval.loaders import write_fixtures; print(write_fixtures('/tmp/fx'))"

Each spec (``eval/benchmarks/<name>.py``) names its writer here as ``write_fixture``; ``eval.loaders``
writes and caches them all (``ensure_fixtures``).
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from datetime import datetime, timedelta
from pathlib import Path

from PIL import Image, ImageDraw

REPO_MIR_SAMPLE = Path(__file__).resolve().parents[1] / "data" / "mir_sample"
COLOURS = {"red": (220, 30, 30), "green": (30, 160, 60), "blue": (40, 70, 220), "yellow": (235, 200, 20),
           "purple": (150, 70, 190), "white": (245, 245, 245), "gray": (128, 128, 128)}


def write_mir(folder: Path) -> Path:
    """MIR: a copy of the bundled sample (the main job's training data), regenerated if absent."""
    if (REPO_MIR_SAMPLE / "all_data_rel.json").is_file():
        shutil.copytree(REPO_MIR_SAMPLE, folder, dirs_exist_ok=True)
    else:
        from lookcloser.data_builders.sample_mir import (
            generate_sample,  # only when the bundled copy is absent
        )

        generate_sample(folder)
    return folder


def _scene(size: tuple[int, int], background, shapes: list[tuple[str, tuple, tuple]]) -> Image.Image:
    img = Image.new("RGB", size, background)
    draw = ImageDraw.Draw(img)
    for kind, box, fill in shapes:
        if kind == "circle":
            draw.ellipse(box, fill=fill)
        elif kind == "text":
            draw.text(box[:2], fill[0], fill=fill[1])
        else:
            draw.rectangle(box, fill=fill)
    return img


# -- TIR-Bench: 2 items for each of the 13 tasks, every answer shape of the real file --

def _tir_records(rng: random.Random) -> list[tuple[dict, list[Image.Image]]]:
    def choice_prompt(question: str, options: list[str], style: str) -> str:
        fmt = {"dot": "{l}. {o}", "colon": "{l}: {o}", "paren": "({l}) {o}"}[style]
        return question + "\n" + "\n".join(fmt.format(l="ABCDEFGHIJ"[i], o=o) for i, o in enumerate(options))

    out = []
    for k in range(2):
        share = rng.choice([25, 49, 64])
        img = _scene((160, 120), COLOURS["white"], [("rect", (0, 0, 160 * share // 100, 120), COLOURS["blue"])])
        opts = [f"{share}%", f"{share + 16}%", f"{share + 8}%", f"{share - 8}%"]
        out.append(({"task": "refcoco", "answer": "A", "prompt": choice_prompt(
            f"Which value is closest to the share of image {k} covered by the blue region?", opts, "colon")}, [img]))
        reading = rng.randint(40, 99)
        out.append(({"task": "instrument", "answer": str(reading) if k else reading, "prompt":
                     f"Gauge {k}: what temperature does the thermometer show, in Fahrenheit? Answer as an integer."},
                    [_scene((96, 160), COLOURS["white"], [("rect", (44, 150 - reading, 52, 150), COLOURS["red"]),
                                                          ("text", (4, 4, 0, 0), (f"{reading}F", (0, 0, 0)))])]))
        name = ["red", "green"][k]
        out.append(({"task": "color", "answer": "B", "prompt": choice_prompt(
            f"Color question {k}: what is the colour of the circle?", ["blue", name, "yellow", "gray"], "dot")},
                    [_scene((128, 128), COLOURS["white"], [("circle", (30, 30, 98, 98), COLOURS[name])])]))
        out.append(({"task": "rotation_game", "answer": "C", "prompt": choice_prompt(
            f"Puzzle {k}: how many degrees should you rotate this image CLOCKWISE to restore it?",
            ["0°", "90°", "180°", "270°"], "dot")},
                    [_scene((128, 96), COLOURS["white"], [("text", (40, 40, 0, 0), ("UP", (0, 0, 0)))]).rotate(180)]))
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        out.append(({"task": "math", "answer": f"{a * b / 4:g}" if k else str(a + b), "prompt":
                     f"Problem {k}: compute the value written in the image." + (" Give a decimal." if k else "")},
                    [_scene((160, 64), COLOURS["white"], [("text", (8, 24, 0, 0),
                                                           (f"{a}*{b}/4" if k else f"{a}+{b}", (0, 0, 0)))])]))
        out.append(({"task": "word_search", "answer": "[3, 6]" if k else 4, "prompt":
                     (f"Grid {k}: give the (row, column) where the word CAT starts." if k else
                      f"Grid {k}: how many times does the word DOG appear?")},
                    [_scene((160, 160), COLOURS["white"], [("text", (8, 8 + 14 * r, 0, 0), (
                        " ".join(rng.choice("ACDGOT") for _ in range(10)), (0, 0, 0))) for r in range(10)])]))
        out.append(({"task": "visual_search", "answer": "D", "prompt": choice_prompt(
            f"Scene {k}: what colour is the small square in the corner?", ["red", "blue", "green", "yellow"],
            "paren")}, [_scene((256, 192), COLOURS["gray"], [("rect", (236, 172, 248, 184), COLOURS["yellow"])])]))
        word = ["lookcloser", "Zoom In"][k]
        out.append(({"task": "ocr", "answer": word, "prompt": f"Sign {k}: what does the small text say?"},
                    [_scene((200, 80), COLOURS["white"], [("text", (10, 30, 0, 0), (word, (0, 0, 0)))])]))
        out.append(({"task": "symbolic", "answer": "ACD" if k else "BD", "prompt": choice_prompt(
            f"Figure {k}: which statements are true? Select all that apply.",
            ["there is a circle", "there is a triangle", "there is a square", "the circle is red"], "dot")},
                    [_scene((128, 96), COLOURS["white"], [("circle", (8, 8, 48, 48), COLOURS["red"]),
                                                          ("rect", (70, 40, 110, 80), COLOURS["blue"])])]))
        left = _scene((128, 128), COLOURS["white"], [("rect", (8, 8, 40, 40), COLOURS["blue"])])
        right = _scene((128, 128), COLOURS["white"], [("rect", (8, 8, 40, 40), COLOURS["red"]),
                                                      ("circle", (90, 90, 120, 120), COLOURS["green"])])
        out.append(({"task": "spot_difference", "answer": "1, 16" if k else 2, "prompt":
                     (f"Pair {k}: output the list of patch indices where the two images differ. Note that in this "
                      f"image, n is 4 and m is 4" if k else f"Pair {k}: how many differences are there?")},
                    [left, right]))
        order = list(range(1, 10))
        rng.shuffle(order)
        tiles = Image.new("RGB", (150, 150))
        for pos, piece in enumerate(order):
            shade = 25 * piece
            tiles.paste((shade, 255 - shade, 120), (50 * (pos % 3), 50 * (pos // 3), 50 * (pos % 3) + 50,
                                                     50 * (pos // 3) + 50))
        out.append(({"task": "jigsaw", "answer": str(order) if k else ", ".join(map(str, order)),
                     "meta_data": {"difficulty": 3}, "prompt":
                     f"Puzzle {k}: the image was cut into 3×3 pieces and scrambled. Output the correct order of "
                     "the pieces as a list of piece numbers, row by row."}, [tiles]))
        out.append(({"task": "contrast", "answer": "A", "prompt": choice_prompt(
            f"Low-contrast image {k}: what shape is hidden in it?", ["circle", "square", "star"], "dot")},
                    [_scene((128, 128), (120, 120, 120), [("circle", (30, 30, 98, 98), (126, 126, 126))])]))
        out.append(({"task": "maze", "answer": "B" if k else 3, "prompt": (choice_prompt(
            f"Maze {k}: which exit does the path from the green dot reach?", ["exit 1", "exit 2", "exit 3"], "dot")
            if k else f"Maze {k}: how many dead ends does the maze have?")},
                    [_scene((120, 120), COLOURS["white"], [("rect", (10, 10, 110, 14), (0, 0, 0)),
                                                           ("rect", (10, 10, 14, 110), (0, 0, 0)),
                                                           ("circle", (20, 20, 30, 30), COLOURS["green"])])]))
    return out


# Items per task in the real TIR-Bench.json (docs/formats.md §3): 1,215 in all.
TIR_TASK_COUNTS = {"instrument": 80, "color": 100, "refcoco": 120, "rotation_game": 75, "math": 120,
                   "word_search": 100, "visual_search": 120, "ocr": 60, "symbolic": 50, "spot_difference": 100,
                   "contrast": 50, "jigsaw": 120, "maze": 120}


def _tir_sized(rng: random.Random, counts: dict[str, int]):
    """Records drawn round after round until every task has its count; prompts made unique."""
    left, out = dict(counts), []
    while any(left.values()):
        for record, images in _tir_records(rng):
            if left.get(record["task"], 0) > 0:
                left[record["task"]] -= 1
                out.append(({**record, "prompt": f"[{len(out) + 1}] {record['prompt']}"}, images))
    return out


def write_tir_bench(folder: Path, counts: dict[str, int] | None = None) -> Path:
    """The 26-item fixture, or with ``counts`` (e.g. ``TIR_TASK_COUNTS``) a benchmark-sized one."""
    rng = random.Random(7)
    records = []
    suffixes = (".jpg", ".png", ".webp")
    pairs = _tir_records(rng) if counts is None else _tir_sized(rng, counts)
    for index, (record, images) in enumerate(pairs, start=1):
        names = []
        for side, image in enumerate(images):
            # Never "<n>.jpg": the official OCR quirk rewrites the answers of 60.jpg / 62.jpg.
            rel = f"data/{record['task']}/{index}{['_img', '_left', '_right'][side + (len(images) > 1)]}" \
                  f"{suffixes[index % 3]}"
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            image.save(folder / rel)
            names.append(rel)
        records.append({"id": index, "task": record["task"], "answer": record["answer"], "prompt": record["prompt"],
                        "image_1": names[0], "image_2": names[1] if len(names) > 1 else None,
                        "meta_data": record.get("meta_data", {})})
    (folder / "TIR-Bench.json").write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    return folder


# -- DISBench: two users' photo histories (Flickr-style ids); metadata sometimes missing or null --
# The one DISBench fixture: the embedded eval default and the agent/GRPO tests both use it.

# user -> (look, events); event = (name, first photo, photos, address, (lat, lon) or None, device, colour).
# "scene": every photo of an event is in the event's colour (queries answerable from the metadata; the
# colour embedder finds an event by its colour). "object": the first three photos of an event show
# an object in the event's colour, the rest another object (queries that need the images).
_DIS_USERS = {
    "10000001@N01": ("scene", [
        ("paris_2020", datetime(2020, 6, 10, 9), 8, "Rue de Rivoli, Paris, Île-de-France, France",
         (48.8606, 2.3376), "Canon EOS 80D", "red"),
        ("lyon_2020", datetime(2020, 6, 20, 14), 4, "Place Bellecour, Lyon, France", (45.7578, 4.8320),
         "Canon EOS 80D", "green"),
        ("london_2019", datetime(2019, 9, 3, 11), 6, "Westminster, London, England, United Kingdom",
         (51.5007, -0.1246), "Apple iPhone 8", "blue"),
        ("berlin_home", datetime(2021, 1, 5, 18), 10, "Kreuzberg, Berlin, Germany", (52.4986, 13.4030),
         "Google Pixel 4", "gray"),
        ("paris_2021", datetime(2021, 3, 14, 10), 3, "Montmartre, Paris, France", (48.8867, 2.3431),
         "Google Pixel 4", "yellow"),
        ("unknown", datetime(2018, 5, 1, 8), 5, None, None, None, "purple")]),
    "10000002@N02": ("object", [
        ("oslo_2018", datetime(2018, 12, 24, 10), 6, "Oslo, Norway", (59.9139, 10.7522), "Nikon D750", "green"),
        ("rome_2019", datetime(2019, 7, 10, 10), 6, "Rome, Lazio, Italy", (41.9028, 12.4964), "Nikon D750",
         "purple"),
        ("oslo_2021", datetime(2021, 5, 1, 10), 6, "Oslo, Norway", (59.9139, 10.7522), "Apple iPhone 12",
         "purple")]),
}
# Gaps the real metadata has, by (event, photo index): "gps" (lat/lon null), "gps+device" (also no
# accuracy or device), "time" (only a null taken_time), "all" (metadata null).
_DIS_GAPS = {("paris_2020", 2): "gps", ("paris_2020", 5): "gps", ("unknown", 1): "time", ("unknown", 3): "all",
             ("oslo_2018", 5): "gps+device", ("rome_2019", 5): "gps+device", ("oslo_2021", 5): "gps+device"}


def _dis_metadata(event: tuple, k: int, rng: random.Random) -> dict | None:
    name, first, _, address, gps, device, _ = event
    gap = _DIS_GAPS.get((name, k), "")
    if gap in ("time", "all"):
        return {"taken_time": None} if gap == "time" else None
    taken = first + timedelta(days=k // 3, hours=k, minutes=rng.randint(0, 59))
    meta: dict = {"taken_time": taken.strftime("%Y-%m-%d %H:%M:%S"), "longitude": None, "latitude": None,
                  "accuracy": 16.0}
    if gps and "gps" not in gap:
        meta.update(longitude=round(gps[1] - 0.001 * k, 6), latitude=round(gps[0] + 0.001 * k, 6))
    if address:
        meta["address"] = address
    if device and "device" not in gap:
        meta["capturedevice"] = device
    if gap == "gps+device":
        meta["accuracy"] = None
    return meta


def write_disbench(folder: str | Path) -> dict:
    """Write the fixture; returns ``{"root", "users": [user ids], "events": {event: [photo ids]},
    "shows": {event: [ids of its photos showing the event's colour]}}``."""
    folder, rng = Path(folder), random.Random(11)
    events: dict[str, list[str]] = {}
    shows: dict[str, list[str]] = {}
    for u, (user, (look, plan)) in enumerate(_DIS_USERS.items()):
        for sub in ("images/" + user, "metadata", "photo_ids"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        lines, id_lines, serial = [], [], 0
        for event in plan:
            name, colour = event[0], COLOURS[event[6]]
            for k in range(event[2]):
                serial += 1
                pid = str(7759100000 + 100000 * u + 7 * serial)
                shown = look == "scene" or k < 3
                if look == "scene":
                    x = 8 + (serial * 13) % 60
                    lighter = tuple(min(255, c + 40) for c in colour)
                    img = _scene((96, 72), colour, [("rect", (x, 20, x + 20, 44), lighter)])
                else:
                    fill = colour if shown else COLOURS[rng.choice(["blue", "gray", "white"])]
                    img = _scene((96, 72), (200, 220, 235), [("circle", (20, 10, 76, 62), fill)])
                path = folder / "images" / user / f"{pid}.jpg"
                img.save(path, quality=90)
                id_lines.append(f"{pid}\t{hashlib.md5(path.read_bytes()).hexdigest()}")
                meta = _dis_metadata(event, k, rng)
                lines.append(json.dumps({"photo_id": pid, "metadata": meta}, ensure_ascii=False))
                events.setdefault(name, []).append(pid)
                if shown:
                    shows.setdefault(name, []).append(pid)
        (folder / "metadata" / f"{user}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (folder / "photo_ids" / f"{user}.txt").write_text("\n".join(id_lines) + "\n", encoding="utf-8")
    first, second = _DIS_USERS
    queries = [
        {"query_id": "1", "user_id": first, "event_type": "intra-event",
         "query": "Find the photos from my trip to Paris in June 2020.", "answer": events["paris_2020"]},
        {"query_id": "2", "user_id": first, "event_type": "inter-event",
         "query": "Which photos did I take with the Pixel 4 in Paris?", "answer": events["paris_2021"]},
        {"query_id": "3", "user_id": second, "event_type": "intra-event",
         "query": "Find the photos from the trip to Oslo in 2018-12 that show the green balloon.",
         "answer": shows["oslo_2018"]},
        {"query_id": "4", "user_id": second, "event_type": "inter-event",
         "query": "Find every photo of my purple kite, across all trips after 2019-01-01.",
         "answer": shows["rome_2019"] + shows["oslo_2021"]},
    ]
    (folder / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return {"root": folder, "users": list(_DIS_USERS), "events": events, "shows": shows}


# -- ImageMining: 2 items per domain, every answer shape (units, zh answers, alternatives) --

_IM_ITEMS = [
    ("Rich Text", "Poster", ["Text Reasoning", "Object Recognition"], "no", "yes", "DOU WEI", "DOU WEI", "png"),
    ("Rich Text", "Menu", ["Text Reasoning"], "no", "no", "12 dollars", "12美元", "PNG"),
    ("Science", "Biology", ["Object Recognition", "Image Retrieval Reasoning"], "yes", "yes", "8", "8个", "jpg"),
    ("Science", "Astronomy", ["Spatiotemporal Reasoning"], "yes", "no", "4700 mAh", "4700毫安时", "JPG"),
    ("Place", "Landmark", ["Image Retrieval Reasoning", "Spatiotemporal Reasoning"], "yes", "yes", "1944", "1944年",
     "jpeg"),
    ("Place", "Street", ["Object Recognition"], "no", "yes", "Cherwell Street", "彻韦尔街", "JPEG"),
    ("Social & Humanities", "Politics", ["Event Reasoning", "Image Retrieval Reasoning"], "yes", "no",
     "The Atlantic Charter", "大西洋宪章", "webp"),
    ("Social & Humanities", "History", ["Event Reasoning"], "no", "no", "1815", "1815年", "png"),
    ("Product", "Electronics", ["Object Recognition", "Text Reasoning"], "yes", "yes", "$3299", "3299美元", "jpg"),
    ("Product", "Fashion", ["Object Recognition"], "no", "yes", "(Pale/Light) purple", "淡紫色", "png"),
    ("Entertainment & Sports", "Football", ["Event Reasoning", "Spatiotemporal Reasoning"], "yes", "no", "3", "3",
     "jpg"),
    ("Entertainment & Sports", "Film", ["Image Retrieval Reasoning"], "yes", "yes", "Blade Runner", "银翼杀手",
     "webp"),
    ("Nature", "Birds", ["Object Recognition", "Image Retrieval Reasoning"], "no", "yes", "Kingfisher", "翠鸟", "png"),
    ("Nature", "Plants", ["Text Reasoning", "Spatiotemporal Reasoning"], "no", "no", "30.679 billion yuan",
     "306.79亿元", "JPG"),
]


def write_imagemining(folder: Path) -> Path:
    (folder / "images").mkdir(parents=True, exist_ok=True)
    lines, corpus = [], []
    for n, (l1, l2, tags, before, during, answer, answer_zh, ext) in enumerate(_IM_ITEMS):
        item_id = 3 * n + 1  # ids are not contiguous in the real file
        name = f"{item_id}.{ext}"
        img = _scene((160, 120), COLOURS["white"], [("rect", (10, 10, 150, 110), COLOURS["gray"]),
                                                    ("text", (20, 50, 0, 0), (f"clue {item_id}", (255, 255, 255)))])
        img.save(folder / "images" / name, format={"jpg": "JPEG", "jpeg": "JPEG"}.get(ext.lower(), ext.upper()))
        question = f"Item {item_id} ({l2}): find the page about the clue in the image; what does it give as the answer?"
        lines.append(json.dumps({
            "id": item_id, "category_l1": l1, "category_l2": l2, "difficulty_tags": tags, "image": name,
            "question": question, "answer": answer, "question_zh": f"第{item_id}题：图中的线索对应的答案是什么？",
            "answer_zh": answer_zh, "reasoning": f"1. Read 'clue {item_id}' in the image.\n2. Search it; the page "
            f"gives {answer}.", "reasoning_zh": f"1. 读出图中的线索。\n2. 搜索得到{answer_zh}。",
            "need_image_before_search": before, "need_image_during_search": during}, ensure_ascii=False))
        corpus.append(json.dumps({"url": f"https://example.org/clue-{item_id}", "title": f"Clue {item_id}",
                                  "text": f"The answer for clue {item_id} is {answer}."}))
    (folder / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # Not part of ImageMining's layout: an offline corpus so web_search works without internet.
    (folder / "search_corpus.jsonl").write_text("\n".join(corpus) + "\n", encoding="utf-8")
    return folder
