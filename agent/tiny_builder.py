"""What every family's tiny offline checkpoint shares: a small BPE tokenizer trained here on a fixed
corpus (with the family's real special tokens), and the seeded, ZeRO-3-proof save.

Each family's ``build_tiny`` picks its tokens, config and image processor sizes; the weights are random
and exist so the whole stack runs end to end on a CPU in seconds (``agent/tiny_qwen3_vl.py`` for the
embedded default).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

VOCAB_SIZE = 1024
# A small corpus so common prompt words get their own merges (shorter sequences, faster tests).
# Changing it changes every tiny tokenizer (bump the families' VERSIONs).
CORPUS = (
    "Select the correct option from the following options: A. B. C. D. E.",
    "Reference Context: Summary Captions Image 1: Image 2: Text to image Image to image Conclusion",
    "Based on the above, the correct answer is A B C D. Let's analyze these images first:",
    "Which image shows the larger red green blue yellow circle square triangle? How many objects?",
    '<tool_call>\n{"name": "crop", "arguments": {"image_index": 0, "box": [0, 0, 32, 32]}}\n</tool_call>',
    "<think>I should look closer at the image.</think><answer>B</answer>",
    "You may call one or more functions to assist with the user query. # Tools <tools></tools>",
    "zoom rotate flip search photos metadata filter view query answer error the a of in is to",
    "0 1 2 3 4 5 6 7 8 9 10 100 [1, 2, 3] {\"type\": \"object\", \"properties\": {}}",
)


def trl_chat_template(name: str) -> str:
    """A published chat template as TRL stores it (``trl/chat_templates/<name>.jinja``): TRL recognises
    these by their exact text (training template, response schema), as it does a real checkpoint's."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def bpe_tokenizer(special_tokens: list[str], added_tokens: list[str], chat_template: str, *,
                  extra_special_tokens: dict[str, str] | None = None, vocab_size: int = VOCAB_SIZE,
                  **roles: str) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer of at most ``vocab_size`` ids (the corpus runs out of merges first) trained on
    ``CORPUS``: ``special_tokens`` take the first ids (in order), ``added_tokens`` (plain, e.g. tool-call
    markers) the last ones. ``roles`` names the tokens' roles (``eos_token=...``, ``pad_token=...``);
    ``extra_special_tokens`` the named ones a processor reads from the tokenizer (``tokenizer.image_token``).

    >>> tok = bpe_tokenizer(["<pad>", "<eos>"], ["<tool_call>"], "", eos_token="<eos>", pad_token="<pad>")
    >>> tok.convert_tokens_to_ids(["<pad>", "<eos>"]), tok.convert_tokens_to_ids("<tool_call>") == len(tok) - 1
    ([0, 1], True)
    >>> tok("<tool_call>", add_special_tokens=False)["input_ids"] == [len(tok) - 1]
    True
    """
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(special_tokens) - len(added_tokens),
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(CORPUS) * 4, trainer=trainer)
    extra = {"extra_special_tokens": extra_special_tokens} if extra_special_tokens else {}
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tok, padding_side="left", model_max_length=32768,
                                      **roles, **extra)
    wrapped.add_tokens(list(added_tokens))
    wrapped.chat_template = chat_template
    return wrapped


def text_config(tokenizer, hidden: int, layers: int, *, eos: str | list[str], pad: str, bos: str | None = None,
                **settings) -> dict:
    """A tiny decoder's ``text_config``: ``hidden`` wide in 16-wide heads (2 key/value heads, an MLP twice as
    wide), ``layers`` deep, over ``tokenizer``'s ids (``bos``, ``eos`` and ``pad`` given as tokens); ``settings``
    are the family's own keys.

    >>> tok = bpe_tokenizer(["<pad>", "<eos>"], [], "", eos_token="<eos>", pad_token="<pad>")
    >>> config = text_config(tok, 64, 2, eos=["<eos>", "<pad>"], pad="<pad>", head_dim=16)
    >>> config["num_attention_heads"], config["eos_token_id"], config["bos_token_id"], config["head_dim"]
    (4, [1, 0], None, 16)
    """
    ids = tokenizer.convert_tokens_to_ids
    return {"vocab_size": len(tokenizer), "hidden_size": hidden, "intermediate_size": 2 * hidden,
            "num_hidden_layers": layers, "num_attention_heads": hidden // 16, "num_key_value_heads": 2,
            "max_position_embeddings": 4096, "bos_token_id": None if bos is None else ids(bos),
            "eos_token_id": ids(eos), "pad_token_id": ids(pad), **settings}


def save_tiny(out_dir: str | Path, model_class, config, processor, seed: int, replace: bool,
              redraw: Callable | None = None) -> Path:
    """Build ``model_class(config)`` with weights drawn from ``seed`` (same seed, same bytes) and save it with
    ``processor`` as a checkpoint folder (``lookcloser.checkpoints.save_checkpoint``). ``redraw(model)``
    draws again (from the same generator) what the model initialises to zeros but a trained one does not.
    Built as a plain model even inside a ZeRO-3 run (``zero.Init`` would leave every rank an empty shard)."""
    from lookcloser.checkpoints import save_checkpoint
    from lookcloser.trl_surface import outside_deepspeed_zero3

    torch.manual_seed(seed)
    with outside_deepspeed_zero3():
        model = model_class(config).eval()
        if redraw is not None:
            with torch.no_grad():
                redraw(model)
    # Processes building it at once (not through agent.models' lock): the first whole copy is kept.
    return save_checkpoint(out_dir, model, processor, replace=replace)
