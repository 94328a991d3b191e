"""Programs that solve synthetic TIR tasks, for oracle trajectories that call the ``python`` tool.

Fixed image tools cannot count the differing cells of two pictures; three lines of numpy can. For each
such task kind, ``program_step`` writes the oracle's one tool turn: a short program over ``image_1`` /
``image_2`` that prints the answer exactly as the answer is written, and the thinking around it. The
program runs in the real sandbox when the trajectory is rendered (``agent.oracle.oracle_trajectory``), and
the trajectory is kept only when what it printed is the gold answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from lookcloser.data_builders.synthetic import SyntheticItem, ToolStep

# A pixel differs when its channels differ by more than this in sum; a cell differs when more than this
# share of its pixels do (a drawn shape covers >= 12% of its cell; the images are lossless PNG).
SPOT_PIXEL_THRESHOLD = 60
SPOT_CELL_SHARE = 0.01


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


def program_step(item: SyntheticItem) -> ProgramStep | None:
    """The oracle's python turn for ``item``'s task, or None when no program solves that kind."""
    task, meta = item.record["task"], item.record["meta_data"]
    if task == "spot_difference":
        rows, cols = meta["rows"], meta["cols"]
        think = (f"The two images are the same picture on a {rows}x{cols} grid. Comparing their pixels cell by cell "
                 "finds every changed patch at once.")
        return ProgramStep(ToolStep(think, [("python", {"code": spot_difference_program(rows, cols)})]),
                           "The program printed the patches where the two images differ.")
    return None
