"""Prompt truncation for GRPO that never cuts through an image (TRL 1.16 has no ``max_prompt_length``).

Truncating token ids would break TRL twice over: it re-renders the conversation later to get
the pixel values and the image-token map, and an image whose tokens are cut no longer matches
its features. So the cut happens on the conversation, before TRL renders it: text is removed
from the left (oldest text first, the beginning of a block first, as a left token truncation
would), image blocks are never touched, and system messages (the tool schemas live there) are
kept. The length is measured exactly as TRL will tokenize the prompt: the chat template with the
tools, plus each image's token count from the processor.

If the images and the untouchable text alone exceed the budget, the prompt is left over budget
(reported as ``prompt/over_budget_ratio``) rather than an image being cut.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PIL import Image


@dataclass
class TruncationResult:
    messages: list[dict]
    length: int  # measured length after truncation
    original_length: int
    truncated: bool
    over_budget: bool


def _copy_message(message: dict) -> dict:
    """A copy whose text blocks may be edited; images are shared, not copied."""
    content = message.get("content")
    if isinstance(content, list):
        content = [dict(b) if isinstance(b, dict) else b for b in content]
    return {**message, "content": content}


def _image_sizes(messages: list[dict]) -> list[tuple[int, int]]:
    sizes = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            image = block.get("image") if isinstance(block, dict) and block.get("type") == "image" else None
            if isinstance(image, str):  # a path: the header gives the size
                with Image.open(image) as opened:
                    sizes.append((opened.size[1], opened.size[0]))
            elif image is not None and hasattr(image, "size"):
                sizes.append((image.size[1], image.size[0]))  # (height, width), as processors want
    return sizes


class PromptTruncator:
    """Measure and left-truncate conversational prompts to ``max_length`` tokens, images kept whole.

    Args:
        processor: The processor (or tokenizer) TRL renders prompts with.
        max_length: Token budget of a rendered prompt (generation prompt included).
        chat_template: The template TRL uses (its training template, when it swapped one in).
        chat_template_kwargs: Passed to ``apply_chat_template`` as TRL does.
    """

    def __init__(self, processor: Any, max_length: int, chat_template: str | None = None,
                 chat_template_kwargs: dict | None = None):
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.max_length = int(max_length)
        self.chat_template = chat_template
        self.chat_template_kwargs = chat_template_kwargs or {}

    def _image_tokens(self, messages: list[dict]) -> int:
        sizes = _image_sizes(messages)
        if not sizes:
            return 0
        counter = getattr(self.processor, "_get_num_multimodal_tokens", None)
        if counter is None:
            raise ValueError("max_prompt_length with images needs a processor that reports image token counts")
        # The rendered text already holds one image token per image; the processor expands it to N.
        return sum(n - 1 for n in counter(image_sizes=sizes).num_image_tokens)

    def length(self, messages: list[dict], tools: list | None = None) -> int:
        text = self.processor.apply_chat_template(
            messages, tools=tools or None, chat_template=self.chat_template, tokenize=False,
            add_generation_prompt=True, **self.chat_template_kwargs)
        if isinstance(text, list):
            text = text[0]
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"]) + self._image_tokens(messages)

    def _text_blocks(self, messages: list[dict]) -> list[dict]:
        """The cuttable text blocks, oldest first (system messages excluded)."""
        blocks = []
        for message in messages:
            if message.get("role") == "system":
                continue
            if isinstance(message.get("content"), str):
                message["content"] = [{"type": "text", "text": message["content"]}]
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                    blocks.append(block)
        return blocks

    def _cut(self, blocks: list[dict], excess: int) -> bool:
        """Remove ``excess`` tokens from the left of the text blocks; False when nothing is left to cut."""
        for block in blocks:
            if excess <= 0:
                return True
            ids = self.tokenizer(block["text"], add_special_tokens=False)["input_ids"]
            if not ids:
                continue
            drop = min(len(ids), excess)
            block["text"] = self.tokenizer.decode(ids[drop:]) if drop < len(ids) else ""
            excess -= drop
        return excess <= 0

    def __call__(self, messages: list[dict], tools: list | None = None) -> TruncationResult:
        """Truncate a prompt whose image blocks carry their images (PIL) so they can be counted."""
        original = self.length(messages, tools)
        if original <= self.max_length:
            return TruncationResult(messages, original, original, False, False)
        out = [_copy_message(m) for m in messages]
        length = original
        for _ in range(4):  # re-measure: BPE merges across a cut can shift a token or two
            blocks = self._text_blocks(out)
            if not blocks or not self._cut(blocks, length - self.max_length):
                length = self.length(out, tools)
                break
            length = self.length(out, tools)
            if length <= self.max_length:
                break
        for message in out:  # emptied blocks would render as empty strings; drop them
            if isinstance(message.get("content"), list):
                message["content"] = [b for b in message["content"]
                                      if not (b.get("type") == "text" and not b.get("text"))]
        return TruncationResult(out, length, original, True, length > self.max_length)


def as_placeholders(messages: list[dict]) -> list[dict]:
    """Image blocks back to bare ``{"type": "image"}`` placeholders (TRL fills them from ``images``).

    >>> as_placeholders([{"role": "user", "content": [{"type": "image", "image": "x"}, {"type": "text", "text": "q"}]}])
    [{'role': 'user', 'content': [{'type': 'image'}, {'type': 'text', 'text': 'q'}]}]
    """
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            content = [{"type": "image"} if isinstance(b, dict) and b.get("type") == "image" else b for b in content]
        out.append({**message, "content": content})
    return out
