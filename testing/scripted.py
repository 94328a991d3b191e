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
        tokenizer: The model's tokenizer (Qwen-style ``<|im_start|>assistant\\n`` headers).
        script: Maps (turn, prompt text) to the reply text.
    """

    def __init__(self, tokenizer, script: Callable[[int, str], str]) -> None:
        self.tokenizer, self.script = tokenizer, script
        self.im_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
        self.header = tokenizer.encode("assistant\n", add_special_tokens=False)
        self.eos = tokenizer.eos_token_id
        self._targets: dict[bytes, list[int]] = {}

    def _target(self, row: torch.Tensor) -> tuple[list[int], int]:
        last_start = int((row == self.im_start).nonzero()[-1])  # the open assistant header
        gen_start = last_start + 1 + len(self.header)
        key = row[:gen_start].numpy().tobytes()
        if key not in self._targets:
            ids = row[:gen_start].tolist()
            turn = sum(1 for i, t in enumerate(ids)
                       if t == self.im_start and ids[i + 1:i + 1 + len(self.header)] == self.header) - 1
            text = self.script(turn, self.tokenizer.decode(ids, skip_special_tokens=False))
            self._targets[key] = self.tokenizer.encode(text, add_special_tokens=False) + [self.eos]
        return self._targets[key], row.shape[0] - gen_start

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        forced = torch.full_like(scores, float("-inf"))
        for row in range(input_ids.shape[0]):
            target, position = self._target(input_ids[row].cpu())
            forced[row, target[position] if position < len(target) else self.eos] = 0.0
        return forced
