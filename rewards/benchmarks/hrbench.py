"""HR-Bench's scorer: the option letter (``choice``) against the row's gold letter, for 4K and 8K alike.

Letter matching, not the official harness's LLM yes/no judge (../shared/specs/vstar_hrbench.md §2):
a response naming the option's text without its letter scores 0 here.
"""

from lookcloser.rewards.benchmarks import choice
from lookcloser.rewards.benchmarks.scorer import Scorer

SCORER = Scorer("hrbench", 60, choice.check, choice.score, "HR-Bench option letter (4K and 8K).",
                aliases=("hr_bench", "hrbench_4k", "hrbench_8k", "hr_bench_4k", "hr_bench_8k"),
                extra_fields=("options",))
