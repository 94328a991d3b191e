"""Load a checkpoint of any family with plain transformers, as a user's script would, and score one image.

    python testing/plain_load_images.py CHECKPOINT REQUEST_JSON [CHECKPOINT REQUEST_JSON ...]

Each ``REQUEST_JSON`` holds ``input_ids`` (the prompt with its image tokens expanded, built by the caller's
processor), ``image`` (a path) and ``messages`` (rendered with the checkpoint's chat template here). Run in
a fresh process that never imports lookcloser (checked through ``sys.modules``). Without torchvision the
family's stock processor cannot be built (its video processor needs it), so the pieces are loaded on their
own: ``AutoTokenizer``, ``AutoImageProcessor`` and ``AutoModelForImageTextToText``. Prints one JSON line per checkpoint:
the class names the configs give, what ``AutoProcessor`` did, the chat template's text, the shapes the
image processor returns, and how far the last position's logits move between the image and a flat gray one.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path

from plain_load import named_classes


def main(checkpoint: str, request_path: str) -> dict:
    import torch
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    request = json.loads(Path(request_path).read_text(encoding="utf-8"))
    classes = named_classes(Path(checkpoint))
    try:
        auto_processor = type(AutoProcessor.from_pretrained(checkpoint)).__name__
    except ImportError as err:  # the stock processor needs torchvision for its video processor
        auto_processor = f"ImportError: {' '.join(str(err).split())}"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    image_processor = AutoImageProcessor.from_pretrained(checkpoint)
    model = AutoModelForImageTextToText.from_pretrained(checkpoint).eval()
    accepted = set(inspect.signature(model.forward).parameters)
    ids = torch.tensor([request["input_ids"]])

    def score(image):
        vision = image_processor(images=[[image]], return_tensors="pt")
        inputs = {key: value for key, value in vision.items() if key in accepted}
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=torch.ones_like(ids), **inputs).logits
        return {key: list(value.shape) for key, value in inputs.items()}, logits[0, -1]

    with Image.open(request["image"]) as img:
        real = img.convert("RGB")
    shapes, real_logits = score(real)
    _, gray_logits = score(Image.new("RGB", real.size, (128, 128, 128)))
    return {
        "classes": classes,
        "unknown_classes": sorted(name for name in classes.values() if not hasattr(transformers, name)),
        "auto_processor": auto_processor,
        "image_processor": type(image_processor).__name__,
        "model": type(model).__name__,
        "text": tokenizer.apply_chat_template(request["messages"], tokenize=False, add_generation_prompt=True),
        "image_shapes": shapes,
        "real_vs_gray_max_abs_diff": float((real_logits - gray_logits).abs().max()),
        "lookcloser_imported": any(name == "lookcloser" or name.startswith("lookcloser.") for name in sys.modules),
    }


if __name__ == "__main__":
    for at in range(1, len(sys.argv), 2):  # one process for several checkpoints: transformers imports once
        print(json.dumps(main(sys.argv[at], sys.argv[at + 1])))
