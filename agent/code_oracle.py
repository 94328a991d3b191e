"""Oracle trajectories that call the ``python`` tool: a plan from the program grammar, run in the real sandbox.

Fixed image tools cannot count the differing cells of two pictures, measure a tilt, order jigsaw pieces or
walk a maze; a few lines over ``looktools`` can. ``solve_with_python`` renders an item's trajectory from the
plans ``agent.code_programs`` composes for it (one call, print-read-decide, or a mistake and its fix), each
call run through the episode's own ``python`` tool, and keeps the first plan whose last call printed the gold
answer. ``copy_drill`` writes the warm-up rows on what a program copies from the question.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from lookcloser.agent.code_programs import KINDS, plans_for
from lookcloser.data_builders.synthetic import SyntheticItem, ToolStep

__all__ = ["KINDS", "copy_drill", "item_rng", "solve_with_python"]


def item_rng(record: dict) -> random.Random:
    """The rng an item's plans are drawn from: the same on every machine and run (a str seed is hashed with
    sha512, not Python's per-process hash)."""
    return random.Random(f"program:{record['id']}:{record['prompt']}:{record['answer']}")


def _shown(message: dict) -> str:
    """The text a python turn showed: ``Output:`` and what the call printed, or its error line."""
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


def solve_with_python(item: SyntheticItem, messages: list[dict], images: list[str],
                      render: Callable[[ToolStep, bool], None]) -> str | None:
    """Append the turns of the first of the item's plans whose last call printed the gold answer to
    ``messages``; return that plan's closing thought, or None when none did (``messages`` as it was).

    ``render(step, fails)`` runs one python turn through the episode's environment and appends it and its
    result to ``messages`` (``agent.oracle.render_steps``; ``fails``: the call is a deliberate mistake)."""
    from lookcloser.agent.code_env import printed_text

    gold = printed_text(f"{item.answer_text}\n")
    for plan in plans_for(item.record["task"], item.record["meta_data"], item_rng(item.record)):
        kept, shown = len(messages), len(images)
        outputs: list[str] = []
        for stage in plan.stages:
            call = stage(outputs)
            render(ToolStep(call.think, [("python", {"code": call.code})]), call.fails)
            outputs.append(_shown(messages[-1]).removeprefix("Output:\n"))
        if _shown(messages[-1]) == gold:
            return plan.final_think
        del messages[kept:], images[shown:]
    return None


def copy_drill(item: SyntheticItem, trajectory: dict, rng: random.Random) -> dict | None:
    """A drill on what a python trajectory copies, for a warm-up stage before the cold start.

    ``trajectory`` (``agent.oracle.oracle_trajectory``'s record for ``item``) with a question of the same kind
    whose copied values are drawn from ``rng`` (``agent.code_drills.DRILLS``: a stated grid, the options, the
    puzzle's size, the named colour), the calls of a plan from the grammar with those values (one call, or a
    first call whose printed line the second program repeats), printed lines drawn to go with them and the
    answer repeating the last. Only a copy from the context writes those right. Nothing is run (a drill, not a
    trajectory: the pictures do not show what it prints), and the record carries no tool schemas, so a row is
    short. None where the trajectory did not call python. Drills have no ``fix`` plan: its error line is the
    sandbox's, not a drawn one.

    >>> from lookcloser.data_builders.synthetic import SyntheticItem, spot_difference_prompt
    >>> item = SyntheticItem({"id": 0, "task": "spot_difference", "prompt": spot_difference_prompt(3, 4),
    ...                       "answer": "2", "meta_data": {"rows": 3, "cols": 4}}, [])
    >>> call = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "python"}}]}
    >>> messages = [{"role": "user", "content": [{"type": "text", "text": item.record["prompt"]}]}, call, {}, {}]
    >>> drill = copy_drill(item, {"messages": messages, "images": [], "task": "spot_difference", "id": "0"},
    ...                    random.Random(0))
    >>> drill["messages"][0]["content"][0]["text"][-17:]
    'n is 8 and m is 8'
    >>> "stated_grid(question)" in drill["messages"][1]["tool_calls"][0]["function"]["arguments"]["code"]
    True
    >>> drill["messages"][-2]["content"][0]["text"].split(), drill["messages"][-1]["content"][-27:]
    (['Output:', '34'], '</think><answer>34</answer>')
    """
    from lookcloser.agent.code_drills import DRILLS
    from lookcloser.agent.code_env import printed_text
    from lookcloser.data_builders.tool_sft import call_message, final_message

    called = [c["function"]["name"] for m in trajectory["messages"][1:] for c in m.get("tool_calls") or []]
    draw = DRILLS.get(item.record["task"])
    if draw is None or "python" not in called:
        return None
    drill = draw(rng)
    plan = next(p for p in plans_for(item.record["task"], drill.meta, rng) if p.shape != "fix")
    question = trajectory["messages"][0]
    asked = [{"type": "text", "text": drill.question} if block.get("text") == item.record["prompt"]
             else block for block in question["content"]]
    messages, outputs = [{**question, "content": asked}], []
    printed = [drill.reading, drill.printed][-len(plan.stages):]
    for stage, line in zip(plan.stages, printed):
        call = stage(outputs)
        messages += [call_message(ToolStep(call.think, [("python", {"code": call.code})])),
                     {"role": "tool", "name": "python", "content": [{"type": "text", "text": printed_text(f"{line}\n")}]}]
        outputs.append(f"{line}\n")
    messages.append(final_message(plan.final_think, drill.printed))
    return {**trajectory, "messages": messages, "tools": "", "id": f"{trajectory['id']}-drill"}
