"""What a copy drill draws per task kind (``agent.code_oracle.copy_drill``): a question of the kind whose
values (a stated grid, the puzzle's size, the named colour, the options: programs read the grid and the
options from the question's text) are drawn wider than the tasks draw them, the meta data the program grammar
reads the copied values from, the line the last call prints (the answer repeats it) and the line a ``read``
plan's first call prints (its second program repeats it).

A drill teaches the copies a trajectory makes, and nothing the pictures decide: every copy is drawn, so only a
copy from the context lowers the loss. The cold start then learns the programs on real trajectories."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from lookcloser.data_builders.procedural import GRID_SHOWN_PROMPT
from lookcloser.data_builders.program_tasks import MAZE_PROMPT, color_prompt, refcoco_options, refcoco_prompt
from lookcloser.data_builders.synthetic import (
    COLOURS,
    LETTERS,
    SHAPES,
    SyntheticConfig,
    jigsaw_prompt,
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


@dataclass(frozen=True)
class Drill:
    question: str
    meta: dict
    printed: str  # what the last call prints, and the answer
    reading: str = ""  # what a read plan's first call prints


def _spot_difference(rng: random.Random) -> Drill:
    rows, cols = rng.randint(*DRILL_GRID), rng.randint(*DRILL_GRID)
    cells = sorted(rng.sample(range(1, rows * cols + 1), rng.randint(1, min(DRILL_MAX_PATCHES, rows * cols))))
    shown = rng.random() < 0.5
    return Drill(GRID_SHOWN_PROMPT if shown else spot_difference_prompt(rows, cols),
                 {"grid_shown": shown}, ", ".join(map(str, cells)), f"({rows}, {cols})")


def _rotation(rng: random.Random) -> Drill:
    options = rng.sample(ROTATION_ANGLES, rng.randint(*DRILL_OPTIONS))
    return Drill(rotation_prompt(options), {}, rng.choice(LETTERS[:len(options)]),
                 f"{rng.uniform(0, 90):.1f}")


def _jigsaw(rng: random.Random) -> Drill:
    n = rng.choice((2, 3))
    order = rng.sample(range(1, n * n + 1), n * n)
    return Drill(jigsaw_prompt(n), {"difficulty": n}, str(order))


def _maze(rng: random.Random) -> Drill:
    return Drill(MAZE_PROMPT, {}, str(rng.randint(1, 199)), str(rng.randint(4, 16)))


def _color(rng: random.Random) -> Drill:
    colour = rng.choice(list(COLOURS))
    return Drill(color_prompt(colour), {"colour": colour}, str(rng.randint(0, 9)))


def _refcoco(rng: random.Random) -> Drill:
    colour, shape, share = rng.choice(list(COLOURS)), rng.choice(SHAPES), rng.randint(1, 99)
    options = refcoco_options(rng, share)
    return Drill(refcoco_prompt(colour, shape, options), {"colour": colour},
                 rng.choice(LETTERS[:len(options)]), str(share))


DRILLS: dict[str, Callable[[random.Random], Drill]] = {
    "spot_difference": _spot_difference, "rotation_game": _rotation, "jigsaw": _jigsaw, "maze": _maze,
    "color": _color, "refcoco": _refcoco,
}
