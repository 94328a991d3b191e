"""ImageMining's scorer: normalized exact match (``rewards.imagemining``), optionally with the LLM-judge recall."""

from lookcloser.rewards import imagemining
from lookcloser.rewards.benchmarks.scorer import Scorer


def _check(info: dict) -> str | None:
    return None if isinstance(info.get("answer"), str) else "the answer text, or a JSON object with `answer`"


def _score(text: str, info: dict, mode: str = "strict", **judge) -> float:
    zh, question = info.get("answer_zh"), info.get("question")
    return float(imagemining.score(text, info["answer"], zh if isinstance(zh, str) else None,
                                   question=question if isinstance(question, str) else None, **judge))


SCORER = Scorer("imagemining", 40, _check, _score, "ImageMining normalized exact match (+ optional LLM judge).",
                aliases=("image_mining",), extra_fields=("answer_zh", "question"), judged=True)
