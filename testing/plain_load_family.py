"""Load checkpoints of any family with plain transformers, as a user's script would, and score one image.

    python testing/plain_load_family.py REQUESTS.json

Run in a fresh process that never imports lookcloser (the tests check ``sys.modules``). REQUESTS.json is
a list of ``{"checkpoint", "image", "prompt", "text", "type_key", "image_token"}``: ``prompt`` is a
one-image prompt as the checkpoint's chat template renders it, ``text`` what lookcloser's processor made
of it, its image tokens expanded (the tokenizer must give the same ids back); ``type_key`` names where
the model takes its 1-on-image-token map (None: it takes none). Prints one JSON list: per checkpoint,
the class names its configs give, what ``AutoProcessor`` did (and its ids for the prompt where it
loads), the ids, and how far the last position's logits move between the image and a flat gray one.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

# The sibling script (run as a script, its folder is sys.path[0]); it imports no lookcloser.
from plain_load import named_classes


def load_and_score(request: dict) -> dict:
    import torch
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    checkpoint = request["checkpoint"]
    classes = named_classes(Path(checkpoint))
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    image_processor = AutoImageProcessor.from_pretrained(checkpoint)
    model = AutoModelForImageTextToText.from_pretrained(checkpoint).eval()
    with Image.open(request["image"]) as img:
        real = img.convert("RGB")
    try:
        processor = AutoProcessor.from_pretrained(checkpoint)
        auto_processor = type(processor).__name__
        stock_ids = processor(text=[request["prompt"]], images=[[real]])["input_ids"][0]
        stock_ids = [int(i) for i in stock_ids]
    except ImportError as err:  # a stock processor with a video half needs torchvision
        auto_processor, stock_ids = f"ImportError: {' '.join(str(err).split())}", None
    ids = tokenizer(request["text"], add_special_tokens=False, return_tensors="pt")
    if request["type_key"]:
        ids[request["type_key"]] = (ids["input_ids"] == tokenizer.convert_tokens_to_ids(request["image_token"])).long()
    takes = set(inspect.signature(model.forward).parameters)

    def last_logits(image):
        vision = image_processor(images=[[image]], return_tensors="pt")
        with torch.no_grad():
            return model(**ids, **{k: v for k, v in vision.items() if k in takes}).logits[0, -1]

    gray = last_logits(Image.new("RGB", real.size, (128, 128, 128)))
    return {
        "classes": classes,
        "unknown_classes": sorted(name for name in classes.values() if not hasattr(transformers, name)),
        "auto_processor": auto_processor,
        "image_processor": type(image_processor).__name__,
        "model": type(model).__name__,
        "input_ids": ids["input_ids"][0].tolist(),
        "stock_input_ids": stock_ids,
        "real_vs_gray_max_abs_diff": float((last_logits(real) - gray).abs().max()),
    }


def main(requests_path: str) -> list[dict]:
    results = [load_and_score(r) for r in json.loads(Path(requests_path).read_text(encoding="utf-8"))]
    imported = any(name == "lookcloser" or name.startswith("lookcloser.") for name in sys.modules)
    return [{**r, "lookcloser_imported": imported} for r in results]


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
