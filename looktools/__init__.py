"""looktools: the image library that model-written code imports inside the python tool's sandbox.

``from looktools import *`` (or ``import looktools as lt``). Every function takes a PIL image or a numpy
array where it says ``img`` (converted by ``pixels``) and returns plain Python values (int, float, list,
tuple) or numpy arrays, so that ``print(...)`` writes what an answer writes. ``help(name)`` documents each.

Pure numpy and Pillow, and no import of anything outside this folder: ``agent.sandbox`` binds this folder
alone, read-only, at ``/opt/looktools/looktools`` (the project's checkout stays out of the sandbox's view).
On the host it is ``lookcloser.looktools``.
"""

from .compare import changed, diff, grid
from .jigsaw import best_order, edge_cost, pieces
from .maze import bfs, find, pitch, shrink
from .pictures import COLOURS, binarise, components, equalise, hue_name, mask_of, pixels, share
from .shapes import letter, nearest, tilt
from .text import options, stated_grid

__all__ = [  # sorted (ruff RUF022); the API of docs/agent.md, "The image library"
    "COLOURS", "best_order", "bfs", "binarise", "changed", "components", "diff", "edge_cost", "equalise", "find",
    "grid", "hue_name", "letter", "mask_of", "nearest", "options", "pieces", "pitch", "pixels", "share", "shrink",
    "stated_grid", "tilt",
]
