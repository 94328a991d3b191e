"""V* Bench's scorer: the option letter (``_choice``) against the gold letter; both eval protocols
(``vstar``: the options in SEAL's order, ``vstar_shuffled``: seeded shuffles) score the same way."""

from lookcloser.rewards.benchmarks import Scorer, _choice

SCORER = Scorer("vstar", 50, _choice.check, _choice.score, "V* Bench option letter (original or shuffled order).",
                aliases=("vstar_bench", "v_star", "v*", "vstar_shuffled"), extra_fields=("options",))
