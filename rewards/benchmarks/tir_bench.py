"""TIR-Bench's scorer: ``rewards.tir_bench.score`` on the official item (strict: the reward; official: eval)."""

from lookcloser.rewards import tir_bench
from lookcloser.rewards.benchmarks.scorer import Scorer


def _check(info: dict) -> str | None:
    answer = info.get("answer")
    if not isinstance(answer, (str, int, float, list)) or isinstance(answer, bool):
        return "the answer, or the official item with `answer`"
    return None


SCORER = Scorer("tir_bench", 10, _check, lambda text, info, mode="strict", **_: float(tir_bench.score(info, text, mode)),
                "TIR-Bench, strict mode.", aliases=("tirbench",),
                extra_fields=("task", "prompt", "meta_data", "metadata", "image_1", "id"),
                modes=(("official", "TIR-Bench, official mode (for eval parity, not for training)."),))
