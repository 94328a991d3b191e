"""DISBench's scorer: F1 of the photo ids (``rewards.disbench``); eval's other set metrics build on the same parse."""

from lookcloser.rewards import disbench
from lookcloser.rewards.benchmarks.scorer import Scorer


def _check(info: dict) -> str | None:
    ids = info.get("answer")
    # one id ("0012" stays "0012"); JSON text of the list was read by gold_info (list_gold)
    if isinstance(ids, str) or (isinstance(ids, int) and not isinstance(ids, bool)):
        ids = [ids]
    if not isinstance(ids, list) or not all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids):
        return "the list of gold photo ids"
    info["answer"] = [str(i) for i in ids]
    return None


SCORER = Scorer("disbench", 30, _check, lambda text, info, mode="strict", **_: float(disbench.score(text, info["answer"])),
                "DISBench F1 of photo ids.", aliases=("dis_bench", "deepimagesearch"), list_gold=True)
