"""What the DISBench and ImageMining generators hand to training: one ``SearchTask`` per question.

A generator (``data_builders.sample_disbench``, ``data_builders.sample_imagemining``) writes its
benchmark's official on-disk layout (the same loaders as the real data read it) and returns, for
each question, the user turn exactly as ``python -m eval``'s loader builds it, the columns the
environment's ``reset`` reads, the gold the reward scores against, and two oracle plans: the one
that needs the tools and the look, and the shortcut a model can take without them (DISBench: return
every photo the metadata filter finds; ImageMining: answer at once). ``agent.oracle`` renders the
plans through the agent's own environment into SFT trajectories; ``data_builders/commands/search_benchmark_tasks.py`` writes
them with the GRPO prompts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lookcloser.data_builders.synthetic import ToolStep

# The user turn of a DISBench query: the query, then how to answer. eval's loader and the GRPO rows
# both build it here, so what is trained is what is measured.
DISBENCH_INSTRUCTION = (
    "\nSearch this user's photo collection with the tools and find every photo that satisfies the request. "
    'Answer with the list of photo ids, e.g. <answer>["1234567890", "2345678901"]</answer>.'
)


# An ``answer_text`` that stands for what the last tool call listed (a JSON list after its colon): DISBench's
# ImageSearch ranks by the retriever's scores, which only the tool knows.
LAST_LISTING = "<the last tool's listing>"


def disbench_question(query: str) -> str:
    """The user turn of a DISBench query.

    >>> disbench_question("Find my photos of a red kite.").splitlines()[0]
    'Find my photos of a red kite.'
    """
    return query + DISBENCH_INSTRUCTION


@dataclass
class SearchTask:
    """One generated question with its oracle plans (see the module docstring)."""

    benchmark: str  # the data_source: "disbench" or "imagemining"
    id: str
    task: str  # DISBench: event_type; ImageMining: category_l1
    question: str  # the user turn's text, as eval's loader builds it
    images: list[str]  # input images of the user turn (absolute paths; DISBench: none)
    example: dict  # what the environment's reset reads besides images (user_id + data_root; search_corpus)
    gold: dict  # the reward_info the benchmark's scorer reads ({"answer": ...})
    steps: list[ToolStep]  # the oracle's tool turns
    final_think: str
    answer_text: str  # what the oracle writes inside <answer>; LAST_LISTING: the last tool's id list, verbatim
    shortcut_steps: list[ToolStep] = field(default_factory=list)  # the way without the look/the tools
    shortcut_think: str = "I answer from what I have."
    shortcut_answer: str = ""
