"""Does a tool-curriculum checkpoint copy the question's cell into its reasoning? (docs/grpo.md)

Teacher-forced on the oracle trajectories of a visual_search SFT split: after "<think>The <row>",
the probability of each column word, averaged per target cell. A model that copies puts most of
it on the question's column; one that does not gives both cells of a pair the same distribution.
Prints one JSON object.

    python bench/probe_cell_word.py outputs/tool_curriculum/sft outputs/tool_curriculum/data/train/sft --records 150
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

ROWS, COLUMNS = ("top", "middle", "bottom"), ("left", "centre", "right")


def column_word_probabilities(model_dir: str, dataset_dir: str, records: int) -> dict[str, dict[str, float]]:
    import torch
    from datasets import load_from_disk

    from lookcloser.agent.models import load_model, load_processor, resolve_model_path

    path = resolve_model_path(model_dir)
    processor, model = load_processor(path), load_model(path, dtype="float32").eval()
    tokenizer = processor.tokenizer
    dataset = load_from_disk(dataset_dir)
    per_cell = defaultdict(list)
    for record in dataset.select(range(min(records, len(dataset)))):
        tools = json.loads(record["tools"]) if isinstance(record["tools"], str) else record["tools"]
        text = processor.apply_chat_template(record["messages"], tools=tools, tokenize=False)
        start = text.index("<think>The ") + len("<think>The ")  # the first turn restates the cell
        row, column = text[start:].split()[:2]
        prefix = text[:start] + row
        base = tokenizer(prefix, add_special_tokens=False)["input_ids"]
        first_tokens = []
        for word in COLUMNS:
            ids = tokenizer(f"{prefix} {word}", add_special_tokens=False)["input_ids"]
            if ids[:len(base)] != base:
                raise ValueError(f"{model_dir}: its tokenizer merges across '{row} {word}'; "
                                 "the probe needs a clean cut")
            first_tokens.append(ids[len(base)])
        inputs = processor(text=[prefix], images=list(record["images"])[:1], return_tensors="pt")
        with torch.no_grad():
            probs = torch.softmax(model(**inputs).logits[0, -1], -1)
        per_cell[f"{row} {column}"].append([probs[t].item() for t in first_tokens])
    return {cell: {"records": len(rows), **{w: round(sum(r[i] for r in rows) / len(rows), 3)
                                             for i, w in enumerate(COLUMNS)}}
            for cell, rows in sorted(per_cell.items(), key=lambda kv: (ROWS.index(kv[0].split()[0]),
                                                                       COLUMNS.index(kv[0].split()[1])))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="checkpoint folder (or hub name)")
    parser.add_argument("sft_split", help="a visual_search SFT split saved by the data stage (…/data/train/sft)")
    parser.add_argument("--records", type=int, default=150)
    args = parser.parse_args()
    if not (Path(args.sft_split) / "dataset_info.json").is_file():
        parser.error(f"{args.sft_split}: not a saved dataset (no dataset_info.json); give the data stage's train/sft")
    if args.records < 1:
        parser.error(f"--records {args.records}: must be at least 1")
    try:
        table = column_word_probabilities(args.model, args.sft_split, args.records)
    except ValueError as err:
        parser.error(str(err))
    print(json.dumps({"model": args.model, "column_word": table}, indent=1))


if __name__ == "__main__":
    main()
