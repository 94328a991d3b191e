"""Small generated data for the agent's tests and offline runs.

``make_search_corpus(path)`` writes a JSONL corpus for the offline web-search backend. The DISBench
fixture is the product's own: ``lookcloser.eval.fixtures.write_disbench(root)`` (the embedded eval
default writes it too), so tests and ``python -m eval`` read the same collection.
"""

from __future__ import annotations

import json
from pathlib import Path


def make_search_corpus(path: str | Path) -> Path:
    """A tiny JSONL corpus: a few pages about landmarks, one about an unrelated topic."""
    docs = [
        {"url": "https://example.org/eiffel", "title": "Eiffel Tower",
         "text": "The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889. It is 330 metres tall."},
        {"url": "https://example.org/big-ben", "title": "Big Ben",
         "text": "Big Ben is the nickname for the Great Bell of the clock at the Palace of Westminster in London."},
        {"url": "https://example.org/brandenburg", "title": "Brandenburg Gate",
         "text": "The Brandenburg Gate is an 18th-century neoclassical monument in Berlin, built in 1791."},
        {"url": "https://example.org/sourdough", "title": "Sourdough bread",
         "text": "Sourdough is bread made by fermenting dough with wild yeast and lactic acid bacteria."},
    ]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path
