"""A scripted model for tests and benchmarks: real ``generate``, real forward passes, fixed replies.

TRL's own tests patch ``generate`` to return fixed token sequences. ``ScriptedLogitsProcessor``
gets the same fixed sequences out of the real ``generate`` instead: each step it forces the next
token of the scripted reply, so the model still runs its full forward pass over every prompt,
image and tool result. The reply is chosen by ``script(turn, prompt_text)``, where ``turn``
counts the assistant turns of that row so far (0 for the first) and ``prompt_text`` is the
decoded conversation, so a script can react to tool results.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from transformers import LogitsProcessor


class ScriptedLogitsProcessor(LogitsProcessor):
    """Force each row of a batch to emit ``script(turn, prompt_text)`` followed by the end-of-turn token.

    Args:
        tokenizer: The model's tokenizer.
        script: Maps (turn, prompt text) to the reply text.
        header: The ids that open an assistant turn (``generation_header(processor)`` for any family);
            default ChatML's ``<|im_start|>assistant\\n``.
    """

    def __init__(self, tokenizer, script: Callable[[int, str], str], header: list[int] | None = None) -> None:
        self.tokenizer, self.script = tokenizer, script
        self.header = header or [tokenizer.convert_tokens_to_ids("<|im_start|>"),
                                 *tokenizer.encode("assistant\n", add_special_tokens=False)]
        self.eos = tokenizer.eos_token_id
        self._targets: dict[bytes, list[int]] = {}

    def _starts(self, ids: list[int]) -> list[int]:
        """Where each assistant header ends in ``ids``."""
        n = len(self.header)
        return [i + n for i in range(len(ids) - n + 1) if ids[i:i + n] == self.header]

    def _target(self, row: torch.Tensor) -> tuple[list[int], int]:
        gen_start = self._starts(row.tolist())[-1]  # the open assistant header
        key = row[:gen_start].numpy().tobytes()
        if key not in self._targets:
            ids = row[:gen_start].tolist()
            turn = len(self._starts(ids)) - 1
            text = self.script(turn, self.tokenizer.decode(ids, skip_special_tokens=False))
            self._targets[key] = self.tokenizer.encode(text, add_special_tokens=False) + [self.eos]
        return self._targets[key], row.shape[0] - gen_start

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        forced = torch.full_like(scores, float("-inf"))
        for row in range(input_ids.shape[0]):
            target, position = self._target(input_ids[row].cpu())
            forced[row, target[position] if position < len(target) else self.eos] = 0.0
        return forced


def generation_header(processor) -> list[int]:
    """The ids a family's chat template appends for the generation prompt (``<|im_start|>assistant\\n``,
    ``Assistant:``, ``<start_of_turn>model\\n``), tokenized in context."""
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    bare = processor.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"]
    opened = processor.apply_chat_template(messages, tokenize=True, return_dict=True,
                                           add_generation_prompt=True)["input_ids"]
    bare, opened = (list(x[0]) if x and isinstance(x[0], list) else list(x) for x in (bare, opened))
    assert opened[: len(bare)] == bare and len(opened) > len(bare), "the generation prompt is not a suffix"
    return opened[len(bare):]
