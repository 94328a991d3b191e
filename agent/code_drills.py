"""What a copy drill draws per task kind: a question whose copied values are drawn wider than the tasks draw
them, the item meta data the program grammar reads those values from, and a printed line to go with it
(``agent.code_oracle.copy_drill``). A kind whose programs copy nothing from the question has no drill."""

from __future__ import annotations

import random
from collections.abc import Callable

from lookcloser.data_builders.synthetic import (
    LETTERS,
    SyntheticConfig,
    rotation_prompt,
    spot_difference_prompt,
)

# Wider than the tasks' (grids of 3-5 each way, 6 options), and lists longer, so a value guessed from what is
# common, not copied from the context, is wrong.
DRILL_GRID = (2, 9)
DRILL_MAX_PATCHES = 6
DRILL_OPTIONS = (3, 8)
# The angles data_builders.synthetic.make_rotation draws its options from (the default step).
ROTATION_ANGLES = range(SyntheticConfig.rotation_step, 360, SyntheticConfig.rotation_step)


def _spot_difference(rng: random.Random) -> tuple[str, dict, str]:
    rows, cols = rng.randint(*DRILL_GRID), rng.randint(*DRILL_GRID)
    cells = sorted(rng.sample(range(1, rows * cols + 1), rng.randint(1, min(DRILL_MAX_PATCHES, rows * cols))))
    return spot_difference_prompt(rows, cols), {"rows": rows, "cols": cols}, ", ".join(map(str, cells))


def _rotation(rng: random.Random) -> tuple[str, dict, str]:
    options = rng.sample(ROTATION_ANGLES, rng.randint(*DRILL_OPTIONS))
    return rotation_prompt(options), {"options": options}, rng.choice(LETTERS[:len(options)])


DRILLS: dict[str, Callable[[random.Random], tuple[str, dict, str]]] = {
    "spot_difference": _spot_difference,
    "rotation_game": _rotation,
}
