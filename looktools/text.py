"""What a question's text states: its numeric options, its grid (``question`` in the tool is that text).

A program reads these instead of copying them from the question into its code: a copied list of numbers was
the tiny model's one miscopy (docs/grpo.md, "Code tool")."""

from __future__ import annotations

import re

# An option line as multiple-choice questions write them: "A. 140°", "B: 33%", "(C) 12", "D) 0.5".
_OPTION = re.compile(r"^[ \t]*\(?([A-J])[.):][ \t]*(-?\d+(?:\.\d+)?)", re.MULTILINE)


def options(text: str) -> dict:
    """The numeric options a question lists, keyed by their letters, in order (``question`` in the tool).

    >>> options("How many degrees?\\nA. 140°\\nB. 30°"), options("closest?\\nA: 33%\\nB: 4.5%")
    ({'A': 140, 'B': 30}, {'A': 33, 'B': 4.5})
    """
    found = {key: float(value) if "." in value else int(value) for key, value in _OPTION.findall(str(text))}
    if not found:
        raise ValueError("options() found no lines like 'A. 140' in the text")
    return found


# TIR-Bench's spot-the-difference wording ("n is 3 and m is 4"), and the usual "3x4 grid" / "3 rows and 4 columns".
_GRID = (re.compile(r"\bn is (\d+) and m is (\d+)"), re.compile(r"\b(\d+) ?[x×] ?(\d+) grid"),
         re.compile(r"\b(\d+) rows? and (\d+) columns?"))


def stated_grid(text: str) -> tuple[int, int]:
    """(rows, cols) of the grid a question states (``grid(img)`` reads a grid drawn on the picture instead).

    >>> stated_grid("... Note that in this image, n is 3 and m is 4"), stated_grid("a 2x5 grid")
    ((3, 4), (2, 5))
    >>> stated_grid("6 rows and 2 columns")
    (6, 2)
    """
    for pattern in _GRID:
        found = pattern.search(str(text))
        if found:
            return int(found.group(1)), int(found.group(2))
    raise ValueError("stated_grid() found no grid in the text (like 'n is 3 and m is 4' or 'a 3x4 grid')")
