"""The program grammar: the ``python`` calls an oracle trajectory makes, composed per item, never one template.

Each task kind that a program solves (``KINDS``) writes its calls from a small grammar over ``looktools``
(the image library bound into the sandbox, ``lookcloser.looktools``) and plain numpy: several correct
decompositions per kind, with names, imports, thresholds and the order of steps drawn from the item's rng,
and three shapes of trajectory:

- ``one``: one call that prints the answer;
- ``read``: a first call prints what the picture holds (the grid it shows, the tilt, the share of a colour),
  the next call is written from what that call printed, and prints the answer;
- ``fix``: a first call with a mistake (a misspelt name, a missing argument) fails, the next is the fix.

A plan's calls are written lazily (``Plan.stages``: each from the texts the earlier calls printed), because
a ``read`` trajectory copies what the picture gave, not what the generator knows. ``agent.code_oracle`` runs
each call in the real sandbox while the data is built and keeps a plan only when it prints the gold answer.

The values a program takes from the question (``facts``: the named colour, the puzzle's size) are the only
copies; a question's options and a stated grid are read from its text (``options(question)``,
``stated_grid(question)``); the grid a picture shows, the tilt, the pieces' order and the path are computed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Call:
    """One python call of a trajectory: the turn's thinking and the program; ``fails``: written to fail."""

    think: str
    code: str
    fails: bool = False


# A stage writes its call from the texts the earlier calls printed (their "Output:" bodies, or error lines).
Stage = Callable[[list[str]], Call]


@dataclass(frozen=True)
class Plan:
    shape: str  # one, read or fix
    stages: tuple[Stage, ...]
    final_think: str


def _prefix_and_imports(rng: random.Random, names: list[str]) -> tuple[str, str]:
    """How a program imports the library: ``*``, the names it uses, or the module under a short name.

    >>> for prefix, line in sorted({_prefix_and_imports(random.Random(s), ["grid", "changed"]) for s in range(20)}):
    ...     print(repr(prefix), line, end="")
    '' from looktools import *
    '' from looktools import changed, grid
    'lt.' import looktools as lt
    """
    way = rng.choice(("star", "names", "module"))
    if way == "star":
        return "", "from looktools import *\n"
    if way == "names":
        return "", f"from looktools import {', '.join(sorted(set(names)))}\n"
    return "lt.", "import looktools as lt\n"


def _ints(text: str) -> list[int]:
    """The integers a printed line holds.

    >>> _ints("(3, 4)"), _ints("35.2")
    ([3, 4], [35, 2])
    """
    return [int(v) for v in re.findall(r"-?\d+", text)]


def _number(text: str) -> str:
    """The first number printed, as printed.

    >>> _number("Output: 41.5\\n")
    '41.5'
    """
    found = re.search(r"-?\d+(?:\.\d+)?", text)
    return found.group(0) if found else "0"


def _listing(rng: random.Random, expr: str) -> str:
    """A print of a list of numbers as TIR answers write them: ``3, 7, 12``."""
    return rng.choice((f"print(*{expr}, sep=', ')\n", f"print(', '.join(map(str, {expr})))\n"))


def _fixed(rng: random.Random, good: str, think: str, mistakes: list[tuple[str, str]]) -> tuple[Stage, Stage]:
    """``fix``: a mistaken first call (one of ``mistakes``: the wrong text and its right one in ``good``),
    then ``good``, its thought naming the error the call raised (the traceback's last line)."""
    wrong, right = rng.choice([m for m in mistakes if m[1] in good])
    bad = good.replace(right, wrong, 1)
    return ((lambda _: Call(think, bad, fails=True)),
            (lambda out: Call(f"The call failed with {out[-1].strip().splitlines()[-1][:100]}. I fix it.", good)))


# How often each shape leads an item's plans: mostly one call; a mistake written on purpose is trained on as any
# other turn (the loss covers every assistant turn), so it stays rare.
SHAPE_WEIGHTS = {"one": 6.0, "read": 3.0, "fix": 1.0}


def _ordered(plans: list[Plan], rng: random.Random) -> list[Plan]:
    """The plans in a random order where each shape leads with odds ``SHAPE_WEIGHTS`` (a weighted shuffle:
    each plan's key is u ** (1 / weight), largest first)."""
    return sorted(plans, key=lambda p: rng.random() ** (1 / SHAPE_WEIGHTS[p.shape]), reverse=True)


# ---- spot_difference ------------------------------------------------------------------------------------

def _spot_plans(facts: dict, rng: random.Random) -> list[Plan]:
    shown = facts.get("grid_shown")
    L, head = _prefix_and_imports(rng, ["changed", "grid" if shown else "stated_grid"])
    a, b = rng.choice((("image_1", "image_2"), ("a", "b"), ("x", "y")))
    names = f"{a},{b}=image_1,image_2\n" if a != "image_1" else ""
    t, s = rng.choice(((60, 0.01), (50, 0.01), (80, 0.01), (60, 0.02), (40, 0.005)))
    extra = "" if (t, s) == (60, 0.01) else f",threshold={t},share={s}"
    think = ("The grid is drawn on the pictures: I read its size from them, then compare the two pictures cell by "
             "cell." if shown else "The question states the grid: I read it from its text and compare the two "
             "pictures cell by cell.")
    final = "The program printed the patches where the pictures differ."

    def program(n: str, m: str) -> str:
        return head + names + f"d={L}changed({a},{b},{n},{m}{extra})\n" + _listing(rng, "d")

    def numpy_program() -> str:  # the same with numpy for the comparison
        return ("import numpy as np\n" f"from looktools import stated_grid\n"
                f"d=np.abs(np.int16(image_1)-np.int16(image_2)).sum(2)>{t}\nh,w=d.shape\n"
                f"n,m=stated_grid(question)\n"
                f"print(', '.join(str(r*m+c+1) for r in range(n) for c in range(m) "
                f"if d[r*h//n:(r+1)*h//n,c*w//m:(c+1)*w//m].mean()>{s}))\n")

    plans = []
    if shown:
        one = head + names + f"n,m={L}grid({a})\n" + f"d={L}changed({a},{b},n,m{extra})\n" + _listing(rng, "d")
        plans.append(Plan("one", (lambda _: Call(think, one),), final))
        first = head + f"print({L}grid(image_1))\n"
        plans.append(Plan("read", (
            lambda _: Call("The grid is drawn on the pictures; I read its size first.", first),
            lambda out: Call(f"The grid has {_ints(out[-1])[0]} rows and {_ints(out[-1])[1]} columns. "
                             "I compare the pictures cell by cell.", program(*map(str, _ints(out[-1])[:2])))), final))
        plans.append(Plan("fix", _fixed(rng, one, think, [("grd(", "grid("), ("image_0", "image_1")]), final))
    else:  # the stated grid is read from the question's text, not copied (a miscopied grid was a miss)
        one = head + names + f"n,m={L}stated_grid(question)\n" + f"d={L}changed({a},{b},n,m{extra})\n" + _listing(rng, "d")
        inline = head + names + f"d={L}changed({a},{b},*{L}stated_grid(question){extra})\n" + _listing(rng, "d")
        plans.append(Plan("one", (lambda _: Call(think, one),), final))
        plans.append(Plan("one", (lambda _: Call(think, inline),), final))
        plans.append(Plan("one", (lambda _: Call(think, numpy_program()),), final))
        plans.append(Plan("fix", _fixed(rng, one, think, [("chnged(", "changed("), ("image_0", "image_1"),
                                                          ("imag_2", "image_2"), ("stated_grd(", "stated_grid(")]),
                          final))
    return _ordered(plans, rng)


# ---- rotation_game --------------------------------------------------------------------------------------

def _rotation_plans(facts: dict, rng: random.Random) -> list[Plan]:
    L, head = _prefix_and_imports(rng, ["tilt", "nearest", "options"])
    name = rng.choice(("o", "opts", "choices"))
    think = "The picture is tilted on a uniform fill. I measure the tilt of its edges and match it to an option."
    final = "The program printed the option the tilt matches."
    # The options are read from the question's text (`question`), not copied: a copied list of six angles
    # was the tiny model's one miscopy (docs/grpo.md, "Code tool").
    one = head + f"{name}={L}options(question)\n" + f"a={L}tilt(image_1)\n" + f"print({L}nearest(a,{name},90))\n"
    inline = head + f"print({L}nearest({L}tilt(image_1),{L}options(question),90))\n"
    plans = [Plan("one", (lambda _: Call(think, one),), final), Plan("one", (lambda _: Call(think, inline),), final)]
    first = head + f"print(round({L}tilt(image_1),1))\n"

    def decide(out: list[str]) -> Call:
        angle = _number(out[-1])
        return Call(f"The edges are tilted {angle} degrees. The option that matches it modulo 90 is the answer.",
                    head + f"print({L}nearest({angle},{L}options(question),90))\n")

    plans.append(Plan("read", (lambda _: Call("I measure the tilt first.", first), decide), final))
    plans.append(Plan("fix", _fixed(rng, one, think, [("image_0", "image_1"), ("nearst(", "nearest(")]), final))
    return _ordered(plans, rng)


# ---- jigsaw ---------------------------------------------------------------------------------------------

def _jigsaw_plans(facts: dict, rng: random.Random) -> list[Plan]:
    L, head = _prefix_and_imports(rng, ["pieces", "best_order"])
    n = str(facts["n"])
    t = rng.choice(("t", "tiles", "p"))
    think = (f"The puzzle is {n}x{n}. I cut the pieces and try every arrangement: the one whose seams match best "
             "is the original.")
    final = "The program printed the order whose seams match best."
    one = head + f"{t}={L}pieces(image_1,{n})\n" + f"print({L}best_order({t},{n}))\n"
    inline = head + f"print({L}best_order({L}pieces(image_1,{n}),{n}))\n"
    plans = [Plan("one", (lambda _: Call(think, one),), final), Plan("one", (lambda _: Call(think, inline),), final),
             Plan("fix", _fixed(rng, one, think, [(f"best_order({t})", f"best_order({t},{n})"),
                                                  ("image_0", "image_1")]), final)]
    return _ordered(plans, rng)


# ---- maze -----------------------------------------------------------------------------------------------

def _maze_plans(facts: dict, rng: random.Random) -> list[Plan]:
    L, head = _prefix_and_imports(rng, ["mask_of", "binarise", "pitch", "shrink", "find", "bfs"])
    walls = rng.choice((f"{L}mask_of(image_1,'black')", f"{L}binarise(image_1,40)"))
    think = "I find the maze's cells from its walls, then search the shortest path from green to red."
    final = "The program printed the length of the shortest path."

    def program(p: str) -> str:
        return (head + f"w={walls}\n" + (f"p={p}\n" if p != "p" else f"p={L}pitch(w)\n")
                + f"s,g={L}find(image_1,'green',p),{L}find(image_1,'red',p)\n"
                + f"print({L}bfs(~{L}shrink(w,p),s,g))\n")

    one = program("p")
    plans = [Plan("one", (lambda _: Call(think, one),), final)]
    first = head + f"print({L}pitch({walls}))\n"
    plans.append(Plan("read", (
        lambda _: Call("I measure the size of the maze's cells first.", first),
        lambda out: Call(f"A cell is {_ints(out[-1])[0]} pixels wide. I search the shortest path on the cells.",
                         program(str(_ints(out[-1])[0])))), final))
    plans.append(Plan("fix", _fixed(rng, one, think, [("shrnk(", "shrink("), ("'gren'", "'green'"), ("image_0", "image_1")]),
                      final))
    return _ordered(plans, rng)


# ---- color ----------------------------------------------------------------------------------------------

def _color_plans(facts: dict, rng: random.Random) -> list[Plan]:
    L, head = _prefix_and_imports(rng, ["mask_of", "components"])
    colour = facts["colour"]
    think = f"I mark the {colour} pixels and count the separate regions they form."
    final = f"The program printed how many {colour} shapes there are."
    m = rng.choice(("m", "mask", colour[:3]))
    one = head + f"{m}={L}mask_of(image_1,'{colour}')\n" + f"print(len({L}components({m})))\n"
    inline = head + f"print(len({L}components({L}mask_of(image_1,'{colour}'))))\n"
    plans = [Plan("one", (lambda _: Call(think, one),), final), Plan("one", (lambda _: Call(think, inline),), final),
             Plan("fix", _fixed(rng, one, think, [("mask_of(image_0", "mask_of(image_1"), ("componets(", "components(")]),
                  final)]
    return _ordered(plans, rng)


# ---- refcoco --------------------------------------------------------------------------------------------

def _refcoco_plans(facts: dict, rng: random.Random) -> list[Plan]:
    L, head = _prefix_and_imports(rng, ["mask_of", "share", "nearest", "options"])
    colour = facts["colour"]
    think = f"I measure the share of the picture that is {colour} and match it to the nearest option."
    final = "The program printed the option nearest to the measured share."
    one = (head + f"s=100*{L}share({L}mask_of(image_1,'{colour}'))\n" + f"print({L}nearest(s,{L}options(question)))\n")
    plans = [Plan("one", (lambda _: Call(think, one),), final)]
    first = head + f"print(round(100*{L}share({L}mask_of(image_1,'{colour}'))))\n"
    plans.append(Plan("read", (
        lambda _: Call(f"I measure the {colour} share first, in percent.", first),
        lambda out: Call(f"It is {_number(out[-1])}%. The nearest option is the answer.",
                         head + f"print({L}nearest({_number(out[-1])},{L}options(question)))\n")), final))
    return _ordered(plans, rng)


@dataclass(frozen=True)
class Kind:
    """A task kind that programs solve: its facts (what a program copies from the question, from the record's
    meta_data), its plans (``facts, rng -> [Plan]``, best-first in the drawn order), and whether every item is
    solvable (a miss is then the oracle's bug) or some may not be (that item gets no trajectory)."""

    facts: Callable[[dict], dict]
    plans: Callable[[dict, random.Random], list[Plan]]
    exact: bool = True


KINDS = {
    # The grid is read (from the picture, or from the question's text), so nothing of it is copied.
    "spot_difference": Kind(lambda meta: {"grid_shown": bool(meta.get("grid_shown"))}, _spot_plans),
    # Square pictures look alike a quarter turn on: options 90 degrees apart tie and the first is printed.
    "rotation_game": Kind(lambda meta: {}, _rotation_plans, exact=False),  # the options: options(question)
    # The bundled pictures (two flat colours each) often cut into identical pieces that can swap places: no
    # program is exact there. On the procedural pictures every piece is unique (tests/test_code_programs.py).
    "jigsaw": Kind(lambda meta: {"n": meta["difficulty"]}, _jigsaw_plans, exact=False),
    "maze": Kind(lambda meta: {}, _maze_plans),
    "color": Kind(lambda meta: {"colour": meta["colour"]}, _color_plans),
    "refcoco": Kind(lambda meta: {"colour": meta["colour"]}, _refcoco_plans),
}


def plans_for(task: str, meta: dict, rng: random.Random) -> list[Plan]:
    """The candidate plans for an item of ``task`` (empty when no program solves that kind), in the order the
    oracle tries them."""
    kind = KINDS.get(task)
    return kind.plans(kind.facts(meta), rng) if kind else []
