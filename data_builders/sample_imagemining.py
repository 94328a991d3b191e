"""ImageMining-format look-then-search questions, with the offline corpus that answers them.

    python -m data_builders heldout --out outputs/heldout/9009 --seed 9009 --benchmarks imagemining

Each question shows a flag (a field of one colour with a white emblem) and asks which city flies
it. The picture alone does not say (no city is drawn), the question alone does not say (no colour
is named), and the corpus (``search_corpus.jsonl``: ``{"url", "title", "text"}`` per line, the
``web_search`` tool's BM25 backend) says which city flies which colour. Which city flies which
colour is drawn per *world* from the seed, so a model that memorised one world's flags is at
chance in another: training spreads its questions over many worlds (``corpora/{k}.jsonl``, one per
world, named in each task's ``search_corpus``); a held-out folder is one world, its corpus at
``search_corpus.jsonl`` beside ``data.jsonl``, where ``python -m eval --data_root`` finds it.

Written in ImageMining's layout (``data.jsonl`` + ``images/``, every field of the real records), so
eval's loader reads it unchanged. Deterministic: question ``i`` draws from
``random.Random(f"imagemining:{seed}:{i}")``; the worlds from ``f"imagemining-world:{seed}:{k}"``.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

from lookcloser.data_builders.sample_mir import SHAPES, draw_shape
from lookcloser.data_builders.search_tasks import SearchTask
from lookcloser.data_builders.synthetic import ToolStep

# Colours the embedded default tells apart at 128 x 128 (the tool curriculum reads these six).
FLAG_COLOURS = {"red": (220, 30, 30), "green": (20, 170, 50), "blue": (30, 60, 230), "yellow": (245, 210, 0),
                "purple": (140, 40, 190), "orange": (250, 130, 0)}
CITIES = ("Oslo", "Lima", "Rome", "Paris", "Cairo", "Delhi", "Tokyo", "Quito")
QUESTION = "Which city flies the flag in this picture? Answer with the city's name."
QUESTION_ZH = "图中的旗帜属于哪个城市？请回答城市名。"
SIZE = 128
CORPUS_FILE = "search_corpus.jsonl"


def world_flags(seed: int, world: int) -> dict[str, str]:
    """Which city flies each colour's flag in one world (a different city per colour).

    >>> flags = world_flags(1, 0)
    >>> sorted(flags) == sorted(FLAG_COLOURS) and len(set(flags.values())) == len(flags)
    True
    """
    rng = random.Random(f"imagemining-world:{seed}:{world}")
    return dict(zip(FLAG_COLOURS, rng.sample(CITIES, len(FLAG_COLOURS))))


def corpus_documents(flags: dict[str, str]) -> list[dict]:
    """The corpus of one world: a page per flag, and a guide per city that names no colour.

    >>> docs = corpus_documents({"red": "Oslo"})
    >>> docs[0]["text"]
    'Oslo flies the red flag.'
    """
    # The city opens the title, so it opens its search result ("1. Oslo: the green flag"): the tiny model
    # copies a word at a fixed place far more reliably than one after a URL (docs/grpo.md).
    pages = [{"url": f"https://flags.example/{colour}", "title": f"{city}: the {colour} flag",
              "text": f"{city} flies the {colour} flag."} for colour, city in flags.items()]
    guides = [{"url": f"https://cities.example/{city.lower()}", "title": f"{city} city guide",
               "text": f"{city} is a city with a harbour, a museum and a market."} for city in CITIES]
    return pages + guides


def draw_flag(colour: str, rng: random.Random) -> Image.Image:
    """A flag of one colour filling most of a light picture, with a white emblem of a random shape."""
    img = Image.new("RGB", (SIZE, SIZE), (235, 235, 228))
    draw = ImageDraw.Draw(img)
    top = rng.randint(16, 30)
    draw.rectangle((10, top, SIZE - 10, top + 76), fill=FLAG_COLOURS[colour])
    draw.line((8, top - 6, 8, SIZE - 4), fill=(90, 70, 50), width=3)  # the pole
    draw_shape(draw, rng.choice(SHAPES), (SIZE // 2 - 14, top + 24, SIZE // 2 + 14, top + 52), (250, 250, 250))
    return img


def write_imagemining(out: str | Path, seed: int, count: int, worlds: int = 1) -> list[SearchTask]:
    """Write ``count`` questions over ``worlds`` worlds under ``out`` (see the module docstring)."""
    out = Path(out)
    (out / "images").mkdir(parents=True, exist_ok=True)
    corpora = []
    for k in range(worlds):
        path = out / CORPUS_FILE if worlds == 1 else out / "corpora" / f"{k}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        flags = world_flags(seed, k)
        path.write_text("".join(json.dumps(d) + "\n" for d in corpus_documents(flags)), encoding="utf-8")
        corpora.append((flags, str(path.resolve())))
    colours = list(FLAG_COLOURS)
    records, tasks = [], []
    for i in range(count):
        rng = random.Random(f"imagemining:{seed}:{i}")
        flags, corpus = corpora[i % worlds]
        colour = colours[i % len(colours)] if rng.random() < 0.5 else rng.choice(colours)
        city = flags[colour]
        name = f"{i + 1}.png"
        draw_flag(colour, rng).save(out / "images" / name)
        query = f"{colour} flag"
        record = {"id": i + 1, "category_l1": "Place", "category_l2": "Flags",
                  "difficulty_tags": ["Object Recognition", "Image Retrieval Reasoning"], "image": name,
                  "question": QUESTION, "answer": city, "question_zh": QUESTION_ZH, "answer_zh": city,
                  "reasoning": f"1. The picture shows a {colour} flag.\n2. A web search for \"{query}\" "
                               f"finds: {city} flies the {colour} flag.",
                  "reasoning_zh": f"1. 图中是{colour}旗。\n2. 搜索得知{city}使用该旗。",
                  "need_image_before_search": "yes", "need_image_during_search": "no"}
        records.append(record)
        tasks.append(SearchTask(
            benchmark="imagemining", id=str(record["id"]), task=record["category_l1"], question=QUESTION,
            images=[str((out / "images" / name).resolve())], example={"search_corpus": corpus},
            gold={"answer": city, "answer_zh": city},
            steps=[ToolStep(f"The flag is {colour}.", [("web_search", {"query": query})])],
            final_think="The top result names the city.", answer_text=city,
            shortcut_think="I answer from the picture as it is.", shortcut_answer=city))
    (out / "data.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                                    encoding="utf-8")
    return tasks

