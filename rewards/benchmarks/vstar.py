"""V* Bench's scorer: the option letter (``choice``) against the gold letter; both eval protocols
(``vstar``: the options in SEAL's order, ``vstar_shuffled``: seeded shuffles) score the same way."""

from lookcloser.rewards.benchmarks import choice
from lookcloser.rewards.benchmarks.scorer import Scorer

SCORER = Scorer("vstar", 50, choice.check, choice.score, "V* Bench option letter (original or shuffled order).",
                aliases=("vstar_bench", "v_star", "v*", "vstar_shuffled"), extra_fields=("options",))
