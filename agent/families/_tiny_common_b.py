"""What the InternVL, LLaVA-OneVision and SmolVLM2 family modules share: a small trained BPE tokenizer
holding a family's real special tokens (the tiny checkpoints' tokenizer), and the behaviour each of their
processors adds to transformers' own (images only, torch tensors, saved as the stock class).

Why a mixin over transformers' processors: their stock classes need a torchvision video processor (absent on
CPU machines), the PIL image backends return numpy (TRL's GRPO tool loop needs tensors), and GRPO batches
that mix prompts with and without images pass ``None`` image entries (``agent/processor.py`` does the same
for Qwen3-VL).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from lookcloser.agent.families.tiny import CORPUS as _CORPUS
from lookcloser.agent.processor import _drop_empty_images

VOCAB_SIZE = 1024
# Beyond Qwen's corpus: the other families' turn words, so common prompt pieces get their own merges.
CORPUS = [*_CORPUS, "User: Assistant: System: <tool_response> </tool_response> tool response function call"]


def build_tokenizer(special_tokens: list[str], *, eos: str, pad: str, chat_template: str, bos: str | None = None,
                    unk: str | None = None, added_tokens: tuple[str, ...] = (),
                    extra_special_tokens: dict[str, str] | None = None):
    """A byte-level BPE tokenizer trained on ``CORPUS`` (deterministic), with ``special_tokens`` first (ids 0..)
    and ``added_tokens`` as plain added tokens; ``extra_special_tokens`` names some of them as tokenizer
    attributes (``tokenizer.<name>`` and ``tokenizer.<name>_id``), as the families' processors read them.

    >>> tok = build_tokenizer(["<pad>", "<eos>", "<img>"], eos="<eos>", pad="<pad>", chat_template="",
    ...                       extra_special_tokens={"image_token": "<img>"})
    >>> tok.image_token, tok.image_token_id, len(tok) <= VOCAB_SIZE  # merges stop where the corpus runs out
    ('<img>', 2, True)
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE - len(special_tokens) - len(added_tokens),
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 4, trainer=trainer)
    named = {"eos_token": eos, "pad_token": pad}
    named.update({k: v for k, v in (("bos_token", bos), ("unk_token", unk)) if v is not None})
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok, padding_side="left", model_max_length=32768,
        extra_special_tokens=dict(extra_special_tokens or {}), **named,
    )
    wrapped.add_tokens(list(added_tokens))
    wrapped.chat_template = chat_template
    return wrapped


class ImagesOnlyProcessorMixin:
    """Put before a transformers processor class: images only, torch tensors out, ``None``/``[]`` image entries
    allowed, and saved under the stock class name (``saved_processor_class``) with a video processor entry
    (``saved_video_processor(image_processor)``), so plain transformers loads the folder with its own class.
    The subclass's ``__init__`` signature must leave ``video_processor`` out (``ProcessorMixin`` derives the
    sub-processors it checks and saves from that signature)."""

    saved_processor_class: str = ""
    image_output_keys: tuple[str, ...] = ("pixel_values",)
    # The video processor settings a loaded checkpoint holds, kept on re-save (None: derived on save).
    video_processor_config: dict | None = None

    @staticmethod
    def saved_video_processor(image_processor) -> dict:
        raise NotImplementedError

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **kwargs):
        from lookcloser.agent.processor import stored_video_processor_config

        processor = super().from_pretrained(pretrained_model_name_or_path, **kwargs)
        processor.video_processor_config = stored_video_processor_config(pretrained_model_name_or_path, **kwargs)
        return processor

    def __call__(self, images=None, text=None, videos=None, **kwargs):
        if videos is not None:
            raise ValueError(f"lookcloser's {self.saved_processor_class} handles images only (no video processor on CPU)")
        out = super().__call__(images=_drop_empty_images(images), text=text, **kwargs)
        for key in self.image_output_keys:
            if key in out:
                out[key] = _as_tensor(out[key])
        return out

    def to_dict(self) -> dict:
        out = super().to_dict()
        out["processor_class"] = self.saved_processor_class
        out["video_processor"] = self.video_processor_config or self.saved_video_processor(self.image_processor)
        return out

    def save_pretrained(self, save_directory, push_to_hub: bool = False, **kwargs):
        files = super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)
        # ProcessorMixin writes the runtime class's name into tokenizer_config.json: name the stock class.
        tokenizer_config = Path(save_directory) / "tokenizer_config.json"
        if tokenizer_config.is_file():
            config = json.loads(tokenizer_config.read_text(encoding="utf-8"))
            if config.get("processor_class") not in (None, self.saved_processor_class):
                config["processor_class"] = self.saved_processor_class
                tokenizer_config.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return files


def _as_tensor(value):
    """A numpy array, a list of same-shaped ones (the PIL backends' output without ``return_tensors``) or a
    list of numbers (``image_sizes``) as one torch tensor; anything else as it is.

    >>> _as_tensor([np.zeros((2, 3)), np.ones((2, 3))]).shape, _as_tensor([[64, 48]]).tolist()
    (torch.Size([2, 2, 3]), [[64, 48]])
    """
    if isinstance(value, list) and value and all(isinstance(v, np.ndarray) for v in value):
        value = np.stack(value) if len({v.shape for v in value}) == 1 else value
    elif isinstance(value, list) and value:
        try:
            value = np.asarray(value, dtype=np.int64)
        except (TypeError, ValueError):  # ragged or not numbers: left as it is
            return value
    return torch.from_numpy(value) if isinstance(value, np.ndarray) else value


def image_settings(image_processor, keys: tuple[str, ...]) -> dict:
    """JSON-ready copies of an image processor's settings, as its own saved config gives them (for the saved
    video processor entry)."""
    saved = image_processor.to_dict()
    return {key: list(saved[key]) if isinstance(saved[key], tuple) else saved[key] for key in keys if key in saved}
