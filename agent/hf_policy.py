"""``HFPolicy``: multi-turn generation with a local transformers VLM, batched across episodes.

It builds token ids exactly as TRL's GRPO tool loop does: the prompt rendered once with the chat
template and the tool schemas; then, each turn, the generated ids are kept as they are and the
tool results are appended as the template renders them (the ``_get_tool_suffix_ids`` trick: the
difference between a dummy conversation with and without the tool messages). Replies are parsed
with TRL's ``parse_response``. All live episodes generate in one left-padded ``generate`` call.

The family spec (``agent/families``) names the image tokens, the per-image tensors and the token-type
map the model takes, so every supported family runs through the same code.

Prefix cache (families that allow it, ``ModelFamily.prefix_cache``): every prompt starts with the same system text and tool schemas, often
most of its tokens. Their key/value cache is computed once and shared by every episode and turn
(copied into a static cache, so decoding does not re-copy the cache every step; recomputed when
the weights change, e.g. between training steps); rows are laid out ``[shared prefix | padding | rest]`` (the model's position ids skip padding, so
the result equals plain left padding, to float rounding; a test checks it).
"""

from __future__ import annotations

from typing import Any

import torch

from lookcloser.agent.episode import Episode, Turn, as_blocks
from lookcloser.agent.families import family_for_model_type
from lookcloser.agent.families.batching import join_along_batch
from lookcloser.agent.families.chat import after_last_stop, prepare_processor, tool_call_exchange


class HFPolicy:
    """A local Hugging Face checkpoint as the loop's policy.

    Args:
        model: A loaded image-text-to-text model (e.g. from ``agent.models.load_model``).
        processor: Its processor (``agent.models.load_processor``); a tool-call response template
            is added to its tokenizer as TRL does, when missing.
        generation_kwargs: Extra ``generate`` arguments (default greedy decoding).
        max_context: Longest sequence allowed; defaults to the model's ``max_position_embeddings``.
        prefix_cache: Share the key/value cache of the common prompt prefix (default: the family's
            ``prefix_cache``, on where a test shows it equals plain left padding).
    """

    batched = True

    def __init__(self, model, processor, generation_kwargs: dict | None = None, max_context: int | None = None,
                 prefix_cache: bool | None = None):
        self.model, self.processor = model, processor
        self.family = family_for_model_type(str(getattr(model.config, "model_type", "")))
        self.tokenizer = getattr(processor, "tokenizer", processor)
        if getattr(self.tokenizer, "response_template", None) is None and \
                getattr(self.tokenizer, "response_schema", None) is None:
            prepare_processor(processor, self.family)
        self.generation_kwargs = {"do_sample": False, **(generation_kwargs or {})}
        config = model.config.get_text_config()
        self.max_context = max_context or getattr(config, "max_position_embeddings", None) or 32768
        self.pad_id = self.tokenizer.pad_token_id
        self.eos_ids = {self.tokenizer.eos_token_id}
        extra_eos = model.generation_config.eos_token_id
        self.eos_ids |= set(extra_eos if isinstance(extra_eos, list) else [extra_eos] if extra_eos is not None else [])
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(self.family.image_token)
        self._suffix_prefix: dict[str, list[int]] = {}
        start = self.family.image_start or self.family.image_token
        self.vision_start_id = self.tokenizer.convert_tokens_to_ids(start)
        if prefix_cache is None:
            prefix_cache = self.family.prefix_cache
        self.prefix_cache = prefix_cache
        self._prefix: tuple[list[int], list[tuple[torch.Tensor, torch.Tensor]], int] | None = None
        self.min_prefix = 32  # below this, a shared cache is not worth building

    # -- episode bookkeeping --

    def _render(self, messages: list[dict], **kwargs) -> dict:
        out = self.processor.apply_chat_template([as_blocks(m) for m in messages], tokenize=True, return_dict=True,
                                                 **kwargs)
        return {k: (v[0] if k == "input_ids" else v) for k, v in out.items()}

    def _add_vision(self, state: dict, rendered: dict) -> None:
        """Keep the family's per-image tensors of a rendered piece (``ModelFamily.image_keys``)."""
        if rendered.get("pixel_values") is not None and len(rendered["pixel_values"]):
            for key in self.family.image_keys:
                state[key].append(torch.as_tensor(rendered[key]))

    def start(self, episode: Episode) -> None:
        rendered = self._render(episode.messages, tools=episode.tools or None, add_generation_prompt=True)
        episode.state.update(ids=list(rendered["input_ids"]), **{key: [] for key in self.family.image_keys})
        self._add_vision(episode.state, rendered)

    def extend(self, episode: Episode, tool_messages: list[dict]) -> None:
        name = str(tool_messages[0].get("name") or "tool")
        dummy = tool_call_exchange(name)
        if name not in self._suffix_prefix:
            prefix = list(self._render(dummy)["input_ids"])
            self._suffix_prefix[name] = prefix[: after_last_stop(prefix, self.eos_ids) or len(prefix)]
        prefix = self._suffix_prefix[name]
        full = self._render(dummy + tool_messages, add_generation_prompt=True)
        ids = list(full["input_ids"])
        if ids[: len(prefix)] != prefix:
            raise ValueError("the chat template is not prefix-preserving for tool messages")
        episode.state["ids"] += ids[len(prefix):]
        self._add_vision(episode.state, full)

    # -- generation --

    def generate(self, episodes: list[Episode], max_new_tokens: int) -> list[Turn]:
        turns: list[Turn | None] = [None] * len(episodes)
        live = []
        for i, ep in enumerate(episodes):
            if len(ep.state["ids"]) + max_new_tokens > self.max_context:
                turns[i] = Turn({"role": "assistant", "content": ""},
                                error=f"context of {len(ep.state['ids'])} tokens + {max_new_tokens} new "
                                      f"exceeds the model's {self.max_context}")
            else:
                live.append(i)
        if live:
            completions = self._generate_ids([episodes[i] for i in live], max_new_tokens)
            for i, completion in zip(live, completions):
                turns[i] = self._finish(episodes[i], completion)
        return turns

    def _shared_prefix(self, episodes: list[Episode]) -> int:
        """Length of the prefix all rows share, within the system block (system text and tool schemas,
        the part every episode of a run has in common) and before any image and the last token."""
        rows = [ep.state["ids"] for ep in episodes]
        limit = min(len(r) for r in rows) - 1
        first = rows[0]
        eos = self.tokenizer.eos_token_id
        if eos in first[:limit]:
            limit = first.index(eos) + 1
        if self.vision_start_id in first[:limit]:
            limit = first.index(self.vision_start_id)
        length = 0
        while length < limit and all(r[length] == first[length] for r in rows):
            length += 1
        return length

    def _prefix_kv(self, ids: list[int], length: int) -> int:
        """Make sure a cache for ``ids[:length]`` (or a shorter stored prefix of it) exists; its length."""
        version = self._weights_version()
        if self._prefix is not None:
            stored, _, stored_version = self._prefix
            if stored_version == version and len(stored) <= length and ids[: len(stored)] == stored:
                return len(stored)
        if length < self.min_prefix:
            return 0
        device = getattr(self.model, "device", torch.device("cpu"))
        with torch.no_grad():
            out = self.model(input_ids=torch.tensor([ids[:length]], device=device), use_cache=True)
        layers = [(layer.keys, layer.values) for layer in out.past_key_values.layers]
        self._prefix = (list(ids[:length]), layers, version)
        return length

    def _weights_version(self) -> int:
        """Changes whenever a weight is modified in place (optimizer steps, loading): the cache is then stale."""
        return sum(p._version for p in self.model.parameters())

    def _expanded_cache(self, batch: int, max_len: int):
        """The shared prefix as a static cache for ``batch`` rows: decoding writes in place, no copies per step."""
        from transformers import StaticCache

        cache = StaticCache(config=self.model.config, max_cache_len=max_len)
        for index, (keys, values) in enumerate(self._prefix[1]):
            cache.update(keys.expand(batch, -1, -1, -1).contiguous(), values.expand(batch, -1, -1, -1).contiguous(),
                         index)
        return cache

    def _generate_ids(self, episodes: list[Episode], max_new_tokens: int) -> list[list[int]]:
        shared = self._prefix_kv(episodes[0].state["ids"], self._shared_prefix(episodes)) if self.prefix_cache else 0
        length = max(len(ep.state["ids"]) for ep in episodes)
        input_ids = torch.full((len(episodes), length), self.pad_id, dtype=torch.long)
        attention_mask = torch.zeros((len(episodes), length), dtype=torch.long)
        for row, ep in enumerate(episodes):  # [shared prefix | left padding | rest], as TRL pads on the left
            ids = ep.state["ids"]
            input_ids[row, :shared] = torch.tensor(ids[:shared], dtype=torch.long)
            attention_mask[row, :shared] = 1
            input_ids[row, length - len(ids) + shared:] = torch.tensor(ids[shared:], dtype=torch.long)
            attention_mask[row, length - len(ids) + shared:] = 1
        inputs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if any(ep.state["pixel_values"] for ep in episodes):
            for key in self.family.image_keys:
                inputs[key] = join_along_batch([t for ep in episodes for t in ep.state[key]])
            if self.family.token_type_key:
                # The image-token map (Qwen's multimodal RoPE, Gemma's image attention), built as TRL builds it.
                inputs[self.family.token_type_key] = (input_ids == self.image_token_id).long()
        device = getattr(self.model, "device", torch.device("cpu"))
        inputs = {k: v.to(device) for k, v in inputs.items()}
        if shared:
            inputs["past_key_values"] = self._expanded_cache(len(episodes), length + max_new_tokens)
        inner = getattr(self.model, "model", None)
        if hasattr(inner, "rope_deltas"):
            inner.rope_deltas = None  # left over from the previous batch: positions must be recomputed
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=max_new_tokens, pad_token_id=self.pad_id,
                                      **self.generation_kwargs)
        completions = []
        for row in out[:, length:].tolist():
            ids = []
            for token in row:
                ids.append(token)
                if token in self.eos_ids:
                    break
            completions.append(ids)
        return completions

    def _finish(self, episode: Episode, completion: list[int]) -> Turn:
        from trl.chat_template_utils import parse_response

        prefix = episode.state["ids"]
        message = parse_response(self.tokenizer, completion, prefix=prefix, tools=episode.tools or None)
        message.setdefault("role", "assistant")
        episode.state["ids"] = prefix + completion
        truncated = not completion or completion[-1] not in self.eos_ids
        return Turn(message, truncated=truncated)
