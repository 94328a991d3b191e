"""MIR's scorer: the option letter (``rewards.mir``) against the gold letter or MIR's ``conclusion`` text."""

from lookcloser.rewards import mir
from lookcloser.rewards.benchmarks.scorer import Scorer


def _check(info: dict) -> str | None:
    answer = info.get("answer") if isinstance(info.get("answer"), str) else info.get("conclusion")
    if not isinstance(answer, str) or mir.gold_letter(answer) is None:
        return "the answer letter, or a JSON object with `answer` or `conclusion`"
    info["answer"] = answer
    return None


SCORER = Scorer("mir", 20, _check, lambda text, info, mode="strict", **_: float(mir.score(text, info["answer"],
                                                                                           info.get("options"))),
                "MIR option-letter exact match.", extra_fields=("options",))
