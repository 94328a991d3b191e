"""Where an assistant turn starts and ends in each chat-template style: what a scorer needs to find
the final answer in a decoded rollout (verl's ``solution_str``, OpenRLHF's query).

Torch-free and family-free: a model family's spec (``agent/families/<family>.py``) names its style
here by key (``ModelFamily.turns``). Facts: shared/specs/model_families.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnMarkers:
    """``start``: the text that opens an assistant turn; ``ends``: texts that close one;
    ``plain_text``: the start is ordinary text (it may occur inside a reply), so it is looked for only
    when no special-token style is found."""

    start: str
    ends: tuple[str, ...]
    plain_text: bool = False


TURN_MARKERS: dict[str, TurnMarkers] = {
    # Qwen2.5-VL, Qwen3-VL, InternVL, LLaVA-OneVision.
    "chatml": TurnMarkers("<|im_start|>assistant", ("<|im_end|>", "<|endoftext|>")),
    # Gemma 3: the assistant's role is "model".
    "gemma": TurnMarkers("<start_of_turn>model", ("<end_of_turn>", "<eos>")),
    # Idefics3, SmolVLM2.
    "user_assistant": TurnMarkers("Assistant:", ("<end_of_utterance>", "<|im_end|>", "<|end_of_text|>"),
                                  plain_text=True),
}


def last_turn_start(decoded: str) -> tuple[int, TurnMarkers]:
    """The position just past the last assistant-turn start, and its style: the special-token styles
    first (the latest of them wins); a plain-text style only when none is found; ``(-1, ChatML)``
    when there is no start at all.

    >>> text = "<start_of_turn>user\\nx<end_of_turn>\\n<start_of_turn>model\\nB"
    >>> text[last_turn_start(text)[0]:]
    '\\nB'
    >>> last_turn_start("User: hi<end_of_utterance>\\nAssistant: B")[1].ends[0]
    '<end_of_utterance>'
    >>> last_turn_start("no markers")[0]
    -1
    """
    for plain in (False, True):
        best, style = -1, None
        for markers in TURN_MARKERS.values():
            at = decoded.rfind(markers.start) if markers.plain_text == plain else -1
            if at >= 0 and at + len(markers.start) > best:
                best, style = at + len(markers.start), markers
        if style is not None:
            return best, style
    return -1, TURN_MARKERS["chatml"]
