"""Programs that solve synthetic TIR tasks, for oracle trajectories that call the ``python`` tool.

Fixed image tools cannot count the differing cells of two pictures or measure a tilt; a few lines of
numpy can. For each such task kind, ``program_step`` writes the oracle's one tool turn: a short program
over ``image_1`` / ``image_2`` that prints the answer exactly as the answer is written, and the thinking
around it. The program runs in the real sandbox when the trajectory is rendered
(``agent.oracle.oracle_trajectory``), and the trajectory is kept only when what it printed is the gold
answer.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from lookcloser.data_builders.synthetic import SyntheticConfig, SyntheticItem, ToolStep

# A pixel differs when its channels differ by more than this in sum; a cell differs when more than this
# share of its pixels do (a drawn shape covers >= 12% of its cell; the images are lossless PNG).
SPOT_PIXEL_THRESHOLD = 60
SPOT_CELL_SHARE = 0.01

# The drill's values are drawn wider than the tasks' (grids of 3-5 each way, 6 options), and its lists
# longer, so a value that is guessed from what is common, not copied from the context, is wrong.
DRILL_GRID = (2, 9)
DRILL_MAX_PATCHES = 6
DRILL_OPTIONS = (3, 8)


@dataclass
class ProgramStep:
    step: ToolStep
    final_think: str


def spot_difference_program(rows: int, cols: int) -> str:
    """The program for a ``rows`` x ``cols`` spot-the-difference grid: prints the differing patches, numbered
    from 1 row by row, as the answer lists them. Written tersely: the tiny model's tokenizer spends about one
    token a character, and a program the policy writes in fewer tokens is sampled right more often.

    >>> print(spot_difference_program(2, 3).splitlines()[1])
    n,m=2,3
    """
    return ("import numpy as np\n"
            f"n,m={rows},{cols}\n"
            f"d=np.abs(np.int16(image_1)-np.int16(image_2)).sum(2)>{SPOT_PIXEL_THRESHOLD}\nh,w=d.shape\n"
            "print(', '.join(str(r*m+c+1) for r in range(n) for c in range(m) "
            f"if d[r*h//n:(r+1)*h//n,c*w//m:(c+1)*w//m].mean()>{SPOT_CELL_SHARE}))\n")


def _spot_difference_step(rows: int, cols: int) -> ProgramStep:
    think = (f"The two images are the same picture on a {rows}x{cols} grid. Comparing their pixels cell by cell "
             "finds every changed patch at once.")
    return ProgramStep(ToolStep(think, [("python", {"code": spot_difference_program(rows, cols)})]),
                       "The program printed the patches where the two images differ.")


# The angles data_builders.synthetic.make_rotation draws its options from (the default step).
ROTATION_ANGLES = range(SyntheticConfig.rotation_step, 360, SyntheticConfig.rotation_step)


def rotation_program(options: list[int]) -> str:
    """The program for a rotation_game item with these options (degrees clockwise): prints the letter of
    the option that the tilt of the picture's edges matches, modulo 90 degrees. The rotated picture sits
    on white fill (``expand``), so its leftmost and topmost pixels are two corners and the edge between
    them shows the tilt; a square picture looks the same a quarter turn on, so options 90 degrees apart
    tie and the first is printed (on 200 items of seed 11: right on 0.905; 0.225 had such a tie).

    >>> print(rotation_program([35, 120]).splitlines()[1])
    o=[35,120]
    """
    return ("import numpy as np\n"
            f"o=[{','.join(map(str, options))}]\n"
            "y,x=np.nonzero((np.array(image_1)<255).any(2))\n"
            "a=np.degrees(np.arctan2(y[x==x.min()].mean()-y.min(),x[y==y.min()].min()-x.min()))\n"
            "print('ABCDEFGHIJ'[min(range(len(o)),key=lambda i:abs((o[i]-a+45)%90-45))])\n")


def _rotation_step(options: list[int]) -> ProgramStep:
    think = ("The picture is tilted on a white fill. The angle of its edges, measured from its corners, "
             "matches one option.")
    return ProgramStep(ToolStep(think, [("python", {"code": rotation_program(options)})]),
                       "The program printed the option the tilt matches.")


@dataclass(frozen=True)
class Program:
    """A task kind that a program solves: the oracle's turn from an item's meta data; a drill (a question
    drawn from ``rng``, its turn, and a printed line drawn to go with it); whether the program is always
    right (a miss is then the oracle's bug) or may miss (that item gets no trajectory)."""

    step: Callable[[dict], ProgramStep]
    drill: Callable[[random.Random], tuple[str, ProgramStep, str]]
    exact: bool = True


def _spot_difference_drill(rng: random.Random) -> tuple[str, ProgramStep, str]:
    from lookcloser.data_builders.synthetic import spot_difference_prompt

    rows, cols = rng.randint(*DRILL_GRID), rng.randint(*DRILL_GRID)
    cells = sorted(rng.sample(range(1, rows * cols + 1), rng.randint(1, min(DRILL_MAX_PATCHES, rows * cols))))
    return spot_difference_prompt(rows, cols), _spot_difference_step(rows, cols), ", ".join(map(str, cells))


def _rotation_drill(rng: random.Random) -> tuple[str, ProgramStep, str]:
    from lookcloser.data_builders.synthetic import LETTERS, rotation_prompt

    options = rng.sample(ROTATION_ANGLES, rng.randint(*DRILL_OPTIONS))
    return rotation_prompt(options), _rotation_step(options), rng.choice(LETTERS[:len(options)])


# The task kinds a program solves.
PROGRAMS = {
    "spot_difference": Program(lambda meta: _spot_difference_step(meta["rows"], meta["cols"]),
                               _spot_difference_drill),
    "rotation_game": Program(lambda meta: _rotation_step(meta["options"]), _rotation_drill,
                             exact=False),
}


def program_step(item: SyntheticItem) -> ProgramStep | None:
    """The oracle's python turn for ``item``'s task, or None when no program solves that kind."""
    program = PROGRAMS.get(item.record["task"])
    return program.step(item.record["meta_data"]) if program else None


def copy_drill(item: SyntheticItem, trajectory: dict, rng: random.Random) -> dict | None:
    """A drill on the copies a python trajectory makes, for a warm-up stage before its cold start.

    ``trajectory`` (``agent.oracle.oracle_trajectory``'s record for ``item``) with the values it copies drawn
    from ``rng`` (``Program.drill``): the question names them (spot_difference: the grid; rotation_game: the
    options), the program repeats them, the tool result prints a line and the answer repeats it. Only a copy
    from the context writes those right. The tiny model learned the program's fixed text in 300 cold-start
    steps but not these copies (docs/grpo.md, "Code tool"); here they are all a row teaches. The printed line
    is drawn, not run (a drill, not a trajectory: the pictures do not show it), and the record carries no
    tool schemas, so a row is about 600 tiny-model tokens against 1,400 and many steps are cheap. None where
    no program solved the item.

    >>> from lookcloser.data_builders.synthetic import SyntheticItem, spot_difference_prompt
    >>> item = SyntheticItem({"task": "spot_difference", "prompt": spot_difference_prompt(3, 4), "answer": "2",
    ...                       "meta_data": {"rows": 3, "cols": 4}}, [])
    >>> call = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "python"}}]}
    >>> messages = [{"role": "user", "content": [{"type": "text", "text": item.record["prompt"]}]}, call, {}, {}]
    >>> drill = copy_drill(item, {"messages": messages, "images": [], "task": "spot_difference", "id": "0"},
    ...                    random.Random(0))
    >>> drill["messages"][0]["content"][0]["text"][-17:]
    'n is 8 and m is 8'
    >>> drill["messages"][1]["tool_calls"][0]["function"]["arguments"]["code"].splitlines()[1]
    'n,m=8,8'
    >>> drill["messages"][2]["content"][0]["text"].split(), drill["messages"][3]["content"][-27:]
    (['Output:', '34'], '</think><answer>34</answer>')
    """
    from lookcloser.agent.code_env import printed_text
    from lookcloser.data_builders.tool_sft import call_message, final_message

    called = trajectory["messages"][1].get("tool_calls") or []
    program = PROGRAMS.get(item.record["task"])
    if program is None or [c["function"]["name"] for c in called] != ["python"]:
        return None  # solved with the image tools (an environment without python): nothing to drill
    prompt, step, printed = program.drill(rng)
    question = trajectory["messages"][0]
    asked = [{"type": "text", "text": prompt} if block.get("text") == item.record["prompt"]
             else block for block in question["content"]]
    messages = [{**question, "content": asked}, call_message(step.step),
                {"role": "tool", "name": "python", "content": [{"type": "text", "text": printed_text(f"{printed}\n")}]},
                final_message(step.final_think, printed)]
    return {**trajectory, "messages": messages, "tools": "", "id": f"{trajectory['id']}-drill"}
