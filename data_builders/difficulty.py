"""MIR difficulty filter (docs/formats.md §1): pass rates from k sampled answers, buckets, curriculum order.

Pass rate = share of a question's k sampled answers whose option letter (``rewards.mir``'s
extraction, the one the rewards use) equals the gold letter. The answers come from a
predictions JSONL (``{"id": ..., "predictions": ["B", "Your option: C", ...]}``) or from
sampling a model through ``agent.loop`` (``agent.sampling.sample_predictions``, passed in as ``sample``).

Buckets use the recipe's thresholds (default: pass rate >= 0.7 easy, <= 0.3 hard, else medium).
The curriculum orders easy -> medium -> hard with a seeded shuffle inside each level (upstream
trains on it with shuffling off). The paper's two-stage mix: stage 1 on the easy questions, then
a seeded sample (default 40%) of the hard ones for stages 2-4.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lookcloser.data_builders.records import (
    RecordError,
    iter_jsonl,
    read_json_records,
    record_id,
    validate_mir_record,
)

LEVELS = ("easy", "medium", "hard")
# Upstream's sampling prompt (Qwen2.5-VL-7B, 10 samples, temperature 0.7, top-p 0.8).
SAMPLING_INSTRUCTION = "Please select the most likely answer from the following options:"
SAMPLING_FORMAT = "Respond in the following format:\nYour option: ...\nReason: ..."


@dataclass
class DifficultyConfig:
    easy_threshold: float = 0.7
    hard_threshold: float = 0.3
    hard_share: float = 0.4
    seed: int = 42

    def __post_init__(self) -> None:
        if not 0.0 <= self.hard_threshold < self.easy_threshold <= 1.0:
            raise ValueError(f"need 0 <= hard_threshold < easy_threshold <= 1, got {self.hard_threshold} and "
                             f"{self.easy_threshold}")
        if not 0.0 <= self.hard_share <= 1.0:
            raise ValueError(f"hard_share must be in [0, 1], got {self.hard_share}")


def pass_rate(predictions: list[str], gold: str, options: object = None) -> float:
    """Share of predictions whose extracted option is the gold letter (unreadable answers count as
    wrong); ``options`` (the record's) keep extraction inside its letters.

    >>> pass_rate(["B", "Your option: b", "the correct answer is C", "no idea"], "B")
    0.5
    """
    from lookcloser.rewards.mir import extract_option

    if not predictions:
        return 0.0
    return sum(extract_option(p, options) == gold for p in predictions) / len(predictions)


def level(rate: float, cfg: DifficultyConfig | None = None) -> str:
    """Bucket a pass rate.

    >>> [level(r) for r in (1.0, 0.7, 0.5, 0.3, 0.0)]
    ['easy', 'easy', 'medium', 'hard', 'hard']
    """
    cfg = cfg or DifficultyConfig()
    if rate >= cfg.easy_threshold:
        return "easy"
    if rate <= cfg.hard_threshold:
        return "hard"
    return "medium"


def curriculum_order(levels: dict[str, str], seed: int) -> list[str]:
    """Ids easy -> medium -> hard, shuffled inside each level with ``seed`` (input order does not matter).

    >>> order = curriculum_order({"a": "hard", "b": "easy", "c": "medium", "d": "easy"}, seed=0)
    >>> order[2:], sorted(order[:2])
    (['c', 'a'], ['b', 'd'])
    """
    rng = random.Random(seed)
    order: list[str] = []
    for name in LEVELS:
        ids = sorted(i for i, lv in levels.items() if lv == name)
        rng.shuffle(ids)
        order += ids
    return order


def two_stage_split(order: list[str], levels: dict[str, str], hard_share: float, seed: int) -> tuple[list, list]:
    """The paper's mix: every easy id (stage 1), and a seeded ``hard_share`` of the hard ids (stages 2-4).

    Both lists keep the curriculum order.

    >>> lv = {str(i): "hard" for i in range(10)} | {"e": "easy"}
    >>> easy, hard = two_stage_split(curriculum_order(lv, 0), lv, 0.4, seed=0)
    >>> easy, len(hard), set(hard) <= {str(i) for i in range(10)}
    (['e'], 4, True)
    """
    hard = [i for i in order if levels[i] == "hard"]
    keep = set(random.Random(seed).sample(hard, round(hard_share * len(hard))))
    return [i for i in order if levels[i] == "easy"], [i for i in hard if i in keep]


def read_predictions(path: str | Path) -> dict[str, list[str]]:
    """``{id: [answer, ...]}`` from a predictions JSONL; bad lines raise ``RecordError``."""
    path = Path(path)
    out: dict[str, list[str]] = {}
    for lineno, row in enumerate(iter_jsonl(path), start=1):
        if not isinstance(row, dict) or row.get("id") is None:
            raise RecordError(path, f"line {lineno}", "id", "each line needs an 'id'")
        preds = row.get("predictions")
        if not isinstance(preds, list) or not all(isinstance(p, str) for p in preds):
            raise RecordError(path, row["id"], "predictions", "must be a list of strings")
        out.setdefault(str(row["id"]), []).extend(preds)
    return out


def sampling_options_text(options: list | dict) -> str:
    """Upstream's (``vlm_infer.py``) option block: an ``Options:`` line, then one option per line;
    a dict's values go through ``json.dumps`` (``A: "red"``).

    >>> print(sampling_options_text(["A. red", "B. blue"]))
    Options:
    A. red
    B. blue
    >>> sampling_options_text({"A": "red", "B": {"x": 1}}).splitlines()[1:]
    ['A: "red"', 'B: {"x": 1}']
    """
    if isinstance(options, dict):
        lines = [f"{key}: {json.dumps(value)}" for key, value in options.items()]
    else:
        lines = [str(option) for option in options]
    return ("\nOptions:\n" + "".join(line + "\n" for line in lines)).strip()


def sampling_prompt(record: dict) -> dict:
    """Upstream's difficulty-sampling question as a user message: the question's text pieces
    (stripped) with the images where its placeholders are, then one text block with the
    instruction, the option block and the answer format.

    >>> sampling_prompt({"question": "Is <image> red?", "options": ["A. yes", "B. no"]})["content"][-1]["text"]
    'Please select the most likely answer from the following options:\\nOptions:\\nA. yes\\nB. no\\nRespond in the following format:\\nYour option: ...\\nReason: ...'
    """
    from lookcloser.data_builders.mir import IMAGE_PLACEHOLDER

    blocks: list[dict] = []
    for i, piece in enumerate(IMAGE_PLACEHOLDER.split(record["question"])):
        if i > 0:
            blocks.append({"type": "image"})
        if piece.strip():
            blocks.append({"type": "text", "text": piece.strip()})
    tail = f"{SAMPLING_INSTRUCTION}\n{sampling_options_text(record['options'])}\n{SAMPLING_FORMAT}"
    blocks.append({"type": "text", "text": tail})
    return {"role": "user", "content": blocks}


def build_difficulty(mir_path: str | Path, out_dir: str | Path, report, *, predictions: str | Path | None = None,
                     sample: Callable[[list[dict]], dict[str, list[str]]] | None = None,
                     images_root: str | Path | None = None,
                     cfg: DifficultyConfig | None = None, fmt: str = "hf", progress: bool = True) -> dict:
    """Pass rates, levels and order as a data set at ``out_dir``, plus MIR JSON files beside it.

    ``curriculum.json`` (every scored record, easy -> hard), ``stage1_easy.json`` and
    ``stages2-4_hard.json`` (the two-stage mix) keep the input's relative image paths and add
    ``pass_rate`` and ``difficulty``: feed them to ``python -m data_builders mir`` or ``train/sft.py``.
    ``sample``: without a predictions file, a function from records (absolute image paths) to k
    answers per record id (``agent.sampling.sample_predictions`` with a model, as the command wires it).
    """
    from tqdm import tqdm

    from lookcloser.data_builders.mir import answer_letter
    from lookcloser.data_builders.output import DatasetWriter

    cfg = cfg or DifficultyConfig()
    mir_path = Path(mir_path)
    raw_records = read_json_records(mir_path)
    if predictions is None:
        if sample is None:
            raise ValueError("give a predictions file (--predictions) or a model to sample (--model)")
        from lookcloser.data_builders.mir import load_mir_records

        preds = sample(load_mir_records(mir_path, images_root))
        pred_path = Path(out_dir).parent / f"{Path(out_dir).name}.predictions.jsonl"
        pred_path.parent.mkdir(parents=True, exist_ok=True)
        pred_path.write_text("".join(json.dumps({"id": i, "predictions": p}) + "\n" for i, p in preds.items()))
    else:
        preds = read_predictions(predictions)

    scored: dict[str, dict] = {}
    for index, raw in enumerate(tqdm(raw_records, desc="difficulty", unit="record", disable=None if progress else True)):
        report.read += 1
        try:
            record = validate_mir_record(raw, mir_path, index)
            rid = str(record_id(record, index))
            gold = answer_letter(record)
            if gold is None:
                raise RecordError(mir_path, rid, "conclusion", "no option letter can be read from the conclusion")
            if rid not in preds:
                raise RecordError(predictions or mir_path, rid, "predictions", "no predictions for this record id")
            if rid in scored:
                raise RecordError(mir_path, rid, "id", "duplicate record id")
        except RecordError as err:
            report.reject(err, raw)
            continue
        rate = pass_rate(preds[rid], gold, record.get("options"))
        scored[rid] = {"record": raw, "pass_rate": rate, "n": len(preds[rid]), "gold": gold,
                       "difficulty": level(rate, cfg)}
        report.written += 1

    levels = {rid: s["difficulty"] for rid, s in scored.items()}
    order = curriculum_order(levels, cfg.seed)
    easy, hard = two_stage_split(order, levels, cfg.hard_share, cfg.seed)
    from datasets import Features, Value

    features = Features({"id": Value("string"), "pass_rate": Value("float64"), "n_samples": Value("int64"),
                         "answer": Value("string"), "difficulty": Value("string"), "order": Value("int64")})
    with DatasetWriter(out_dir, features, fmt=fmt) as writer:
        for position, rid in enumerate(order):
            s = scored[rid]
            writer.add({"id": rid, "pass_rate": s["pass_rate"], "n_samples": s["n"], "answer": s["gold"],
                        "difficulty": s["difficulty"], "order": position})
    report.rows = writer.rows

    def dump(name: str, ids: list[str]) -> Path:
        path = Path(out_dir) / name
        rows = [{**scored[i]["record"], "pass_rate": scored[i]["pass_rate"], "difficulty": scored[i]["difficulty"]}
                for i in ids]
        path.write_text(json.dumps(rows, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return path

    counts = {name: sum(1 for v in levels.values() if v == name) for name in LEVELS}
    return {"dataset": Path(out_dir), "curriculum": dump("curriculum.json", order),
            "stage1_easy": dump("stage1_easy.json", easy), "stages2_4_hard": dump("stages2-4_hard.json", hard),
            "levels": counts}
