"""Load checkpoints of any family with plain transformers, as a user's script would, and score one image.

    python testing/plain_load.py < REQUESTS.json

Run in a fresh process that never imports lookcloser (each result says whether ``sys.modules`` holds it);
tests build the requests with lookcloser's processor (``request``) and run this script through ``run``.
A request holds the checkpoint, an image, the one-image prompt lookcloser's processor rendered (``text``)
and what it made of it with the image tokens expanded (``expanded``), and where the model takes its
1-on-image-token map (``type_key``, None: it takes none). Per checkpoint this prints the class names its
configs give, what ``AutoProcessor`` did (and its ids for the prompt where it loads: without torchvision a
stock processor with a video half cannot be built), the prompt as the saved chat template renders it, the
plain tokenizer's ids for ``expanded``, the shapes the image processor gives the model, and how far the last
position's logits move between the image and a flat gray one, all as one JSON list.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

MESSAGES = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the image?"}]}]


def request(checkpoint, processor, family, image_path) -> dict:
    """What ``run`` asks about ``checkpoint``, built in the caller's process with lookcloser's ``processor``
    (``family``: its ``ModelFamily``); ``ids`` and ``shapes`` are what that processor gives, for comparing."""
    from PIL import Image

    text = processor.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    with Image.open(image_path) as img:
        out = processor(text=[text], images=[[img.convert("RGB")]], return_tensors="pt")
    ids = [int(i) for i in out["input_ids"][0]]
    return {"checkpoint": str(checkpoint), "image": str(image_path), "text": text,
            "expanded": processor.tokenizer.decode(ids), "ids": ids, "type_key": family.token_type_key,
            "image_token": family.image_token,
            "shapes": {key: list(out[key].shape) for key in family.image_keys if key in out}}


def run(requests: list[dict]) -> list[dict]:
    """This script on ``requests`` (given on its stdin) in a fresh Python process: one result per request, with
    that request under ``"asked"``."""
    out = subprocess.run([sys.executable, __file__], input=json.dumps(requests), check=False, capture_output=True,
                         text=True, timeout=300)
    if out.returncode != 0:
        raise AssertionError(f"testing/plain_load.py failed:\n{out.stderr[-3000:]}")
    results = json.loads(out.stdout.strip().splitlines()[-1])
    return [{**result, "asked": asked} for asked, result in zip(requests, results, strict=True)]


def check(result: dict, family) -> None:
    """What holds for every checkpoint lookcloser writes, ``result`` being ``run``'s for a ``family`` one."""
    import importlib.util

    asked, stock = result["asked"], family.processor_class.saved_class
    assert not result["lookcloser_imported"]
    assert result["classes"]["processor_config.json:processor_class"] == stock
    assert result["classes"]["tokenizer_config.json:processor_class"] == stock
    assert result["unknown_classes"] == [], "every class a config names is one of transformers' own"
    assert result["text"] == asked["text"], "the saved chat template renders as lookcloser's processor does"
    assert result["input_ids"] == asked["ids"], "the plain tokenizer gives lookcloser's ids back"
    if family.processor_class.video_processor_type and importlib.util.find_spec("torchvision") is None:
        # loudly, naming what is missing; never a tokenizer alone that drops the image
        assert result["auto_processor"].startswith("ImportError") and "orchvision" in result["auto_processor"]
    else:  # the stock processor, expanding the image as ours does
        assert result["auto_processor"] == stock and result["stock_input_ids"] == asked["ids"]
    # The image processor alone gives the model what ours gives (batch_num_images is the model's default).
    assert {k: v for k, v in result["image_shapes"].items() if k != "batch_num_images"} == \
        {k: v for k, v in asked["shapes"].items() if k != "batch_num_images"}
    assert result["real_vs_gray_max_abs_diff"] > 1e-4, "the model must see the image"


def named_classes(folder: Path) -> dict[str, str]:
    """Every class name a checkpoint's JSON configs give (``*_class``, ``*_type`` names, ``architectures``)."""
    names = {}

    def walk(value, where):
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(inner, str) and key.endswith(("_class", "processor_type")):
                    names[f"{where}:{key}"] = inner
                elif key == "architectures" and isinstance(inner, list):
                    names.update({f"{where}:architectures[{i}]": name for i, name in enumerate(inner)})
                else:
                    walk(inner, where)

    for path in sorted(folder.glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), path.name)
    return names


def load_and_score(asked: dict) -> dict:
    import torch
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    checkpoint = asked["checkpoint"]
    classes = named_classes(Path(checkpoint))
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    image_processor = AutoImageProcessor.from_pretrained(checkpoint)
    model = AutoModelForImageTextToText.from_pretrained(checkpoint).eval()
    text = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False)
    with Image.open(asked["image"]) as img:
        real = img.convert("RGB")
    try:
        processor = AutoProcessor.from_pretrained(checkpoint)
        auto_processor = type(processor).__name__
        stock_ids = [int(i) for i in processor(text=[text], images=[[real]])["input_ids"][0]]
    except ImportError as err:  # a stock processor with a video half needs torchvision
        auto_processor, stock_ids = f"ImportError: {' '.join(str(err).split())}", None
    ids = tokenizer(asked["expanded"], add_special_tokens=False, return_tensors="pt")
    if asked["type_key"]:
        ids[asked["type_key"]] = (ids["input_ids"] == tokenizer.convert_tokens_to_ids(asked["image_token"])).long()
    takes = set(inspect.signature(model.forward).parameters)

    def last_logits(image):
        vision = image_processor(images=[[image]], return_tensors="pt")
        vision = {key: value for key, value in vision.items() if key in takes}
        with torch.no_grad():
            return {key: list(value.shape) for key, value in vision.items()}, model(**ids, **vision).logits[0, -1]

    shapes, real_logits = last_logits(real)
    _, gray_logits = last_logits(Image.new("RGB", real.size, (128, 128, 128)))
    return {
        "classes": classes,
        "unknown_classes": sorted(name for name in classes.values() if not hasattr(transformers, name)),
        "auto_processor": auto_processor,
        "image_processor": type(image_processor).__name__,
        "model": type(model).__name__,
        "text": text,
        "input_ids": ids["input_ids"][0].tolist(),
        "stock_input_ids": stock_ids,
        "image_shapes": shapes,
        "real_vs_gray_max_abs_diff": float((real_logits - gray_logits).abs().max()),
    }


def main(requests: list[dict]) -> list[dict]:
    results = [load_and_score(asked) for asked in requests]
    imported = any(name == "lookcloser" or name.startswith("lookcloser.") for name in sys.modules)
    return [{**result, "lookcloser_imported": imported} for result in results]


if __name__ == "__main__":
    print(json.dumps(main(json.load(sys.stdin))))
