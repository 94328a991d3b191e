"""Load a checkpoint with plain transformers, as a user's script would, and score one image.

    python testing/plain_load.py CHECKPOINT IMAGE

Run in a fresh process that never imports lookcloser (the tests check ``sys.modules``). Prints one
JSON object: the class names the checkpoint's configs name, what ``AutoProcessor`` did, the input
ids built for the image (its image tokens expanded as the processor expands them: the image
processor's grid over ``merge_size ** 2``; ``mm_token_type_ids`` marking them) and the last position's logits for the image and for a
flat gray image of the same size.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


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


def main(checkpoint: str, image_path: str) -> dict:
    import torch
    import transformers
    from PIL import Image
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer

    classes = named_classes(Path(checkpoint))
    try:
        auto_processor = type(AutoProcessor.from_pretrained(checkpoint)).__name__
    except ImportError as err:  # the stock processor needs torchvision for its video processor
        auto_processor = f"ImportError: {' '.join(str(err).split())}"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    image_processor = AutoImageProcessor.from_pretrained(checkpoint)
    model = AutoModelForImageTextToText.from_pretrained(checkpoint).eval()
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "What is in the image?"}]}]
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def score(image):
        vision = image_processor(images=[image], return_tensors="pt")
        count = int(vision["image_grid_thw"][0].prod()) // image_processor.merge_size ** 2
        expanded = text.replace("<|image_pad|>", "<|image_pad|>" * count, 1)
        ids = tokenizer(expanded, return_tensors="pt")
        # Which positions hold image tokens (1) or text (0), as the processor returns them for M-RoPE.
        ids["mm_token_type_ids"] = (ids["input_ids"] == tokenizer.convert_tokens_to_ids("<|image_pad|>")).long()
        with torch.no_grad():
            logits = model(**ids, pixel_values=vision["pixel_values"], image_grid_thw=vision["image_grid_thw"]).logits
        return ids["input_ids"][0].tolist(), logits[0, -1]

    with Image.open(image_path) as img:
        real = img.convert("RGB")
    ids, real_logits = score(real)
    _, gray_logits = score(Image.new("RGB", real.size, (128, 128, 128)))
    return {
        "classes": classes,
        "unknown_classes": sorted(name for name in classes.values() if not hasattr(transformers, name)),
        "auto_processor": auto_processor,
        "text": text,
        "input_ids": ids,
        "real_vs_gray_max_abs_diff": float((real_logits - gray_logits).abs().max()),
        "lookcloser_imported": any(name == "lookcloser" or name.startswith("lookcloser.") for name in sys.modules),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
