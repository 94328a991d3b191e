"""``LookcloserGRPOTrainer``: TRL's GRPOTrainer plus what multi-turn image tool use needs and TRL lacks.

Each addition sits on one TRL method and calls the original (see docs/grpo.md for why these):

- ``_generate_and_score_completions``: prompt truncation before TRL renders the prompt; then
  dynamic group filtering on the scored batch (mask constant-reward groups out of the loss, or
  replace them with groups generated from freshly drawn prompts, up to ``resample_rounds``).
- ``_generate``: safe tool dicts (malformed calls and unknown tools become ``Error:``
  observations, the image budget), rollouts in chunks (``rollout_chunk_size: 1`` is sequential),
  per-trajectory flags (out of turns, out of length) and metrics, rollout timing.
- ``_calculate_rewards``: rewards read ``<think>`` again (and log accuracy per benchmark and task); rows
  that ran out of turns or length get NaN rewards, which TRL already treats as unscorable: left
  out of the group baseline, advantage 0; they are also taken out of the loss.
- ``log``: a completions table that W&B renders (text cells, one image per row) plus JSONL.
- The per-turn token cap is TRL's own ``generation_kwargs`` (``max_new_tokens`` / vLLM ``max_tokens``).
"""

from __future__ import annotations

import copy
import json
import logging
import time
from collections import defaultdict

import torch
from datasets import Dataset
from trl import GRPOTrainer
from trl.data_utils import prepare_multimodal_messages

from lookcloser.agent.families import family_for_model_type
from lookcloser.agent.families.chat import after_last_stop, tool_call_exchange
from lookcloser.errors import RecipeError
from lookcloser.train.grpo_lib.filtering import (
    concat_batches,
    constant_groups,
    loss_tokens,
    mask_rows,
    select_rows,
    unsupported_keys,
)
from lookcloser.train.grpo_lib.tables import table_rows, wandb_table, write_jsonl
from lookcloser.train.grpo_lib.tools import RolloutTools, SafeToolDict, safe_parser
from lookcloser.train.grpo_lib.truncation import PromptTruncator, as_placeholders
from lookcloser.trl_surface import (
    generated,
    grpo_config_argument,
    merge_generations,
    rollout_slice,
    set_image_token_id,
    set_sync_tool_dict,
    tool_dicts,
    wrapped_parse_response,
)

logger = logging.getLogger(__name__)


def _count_images(prompt) -> int:
    return sum(1 for m in prompt if isinstance(m.get("content"), list)
               for b in m["content"] if isinstance(b, dict) and b.get("type") == "image")


class LookcloserGRPOTrainer(GRPOTrainer):
    """GRPOTrainer for multi-turn tool use with images; takes ``LookcloserGRPOConfig`` (a plain
    ``GRPOConfig`` works too, with the additions off)."""

    def __init__(self, *args, **kwargs):
        config = grpo_config_argument(args, kwargs)
        cap = getattr(config, "max_turn_tokens", None)
        if cap:
            gen = config.generation_kwargs
            gen = json.loads(gen) if isinstance(gen, str) else dict(gen or {})
            gen.setdefault("max_tokens" if config.use_vllm else "max_new_tokens", int(cap))
            config.generation_kwargs = gen
        super().__init__(*args, **kwargs)
        self.family = family_for_model_type(str(self.model.config.model_type))
        if (self.tools or self.environment_factories) and not self.family.grpo_tool_images:
            raise RecipeError(f"{self.family.name}: GRPO with tools cannot train on this family yet: TRL 1.16 batches the "
                              "pictures tools return as one flat list, and this family batches pictures per sample "
                              "(agent/families/base.py, grpo_tool_images); train it with SFT, or GRPO without tools")
        set_image_token_id(self, self.processing_class.tokenizer.convert_tokens_to_ids(self.family.image_token))
        # Our table replaces TRL's (which W&B rejects for image prompts); it needs the images kept.
        self._table = bool(self.log_completions)
        if self._table:
            self.log_completions, self.log_multimodal = False, True
        self._last_table_step = -1
        max_prompt = self._opt("max_prompt_length")
        self._truncator = PromptTruncator(self.processing_class, max_prompt, self.chat_template,
                                          self.chat_template_kwargs) if max_prompt else None
        self._rollout_tools: list[RolloutTools] = []
        self._row_flags = torch.zeros(0, 2, dtype=torch.bool)
        self._round_rewards: torch.Tensor | None = None  # global weighted reward per row (NaN: masked/unscorable)
        self._round_masked = torch.zeros(0, dtype=torch.bool)  # global: rows taken out of baseline and loss
        self._resample_calls = 0
        self._turn_tail: list[int] | None = None  # what a tool-call turn renders past its stop token (below)
        self.timings: dict[str, list[float]] = defaultdict(list)

    def _get_tool_suffix_ids(self, tool_messages):
        """TRL's tool-result ids, plus what the template renders after a turn's stop token when that token
        is not the tokenizer's eos (Gemma's ``<end_of_turn>``, Idefics3's ``<end_of_utterance>``): TRL cuts its
        dummy prefix at ``eos_token`` only, so there a generated turn, which stops at the stop token, would
        lose the newline the template puts after it."""
        suffix = super()._get_tool_suffix_ids(tool_messages)
        if self._turn_tail is None:
            self._turn_tail = self._rendered_after_stop(tool_messages[0]["name"])
        return self._turn_tail + list(suffix)

    def _rendered_after_stop(self, tool_name: str) -> list[int]:
        """The ids a rendered assistant tool-call turn has after its last stop token, when TRL keeps them
        out of the suffix (no tokenizer eos in the turn); else none."""
        messages = prepare_multimodal_messages(tool_call_exchange(tool_name))
        ids = self.processing_class.apply_chat_template(messages, tokenize=True, chat_template=self.chat_template,
                                                        return_dict=False, **self.chat_template_kwargs)[0]
        end = after_last_stop(ids, self.eos_token_ids)
        return list(ids[end:]) if end and self._tokenizer.eos_token_id not in ids else []

    def _opt(self, name: str, default=None):
        return getattr(self.args, name, default)

    def _mode(self) -> str:
        return "train" if self.model.training else "eval"

    # -- the step: truncation, scoring, filtering --

    def training_step(self, model, inputs, num_items_in_batch):
        start = time.perf_counter()
        out = super().training_step(model, inputs, num_items_in_batch)
        self.timings["step"].append(time.perf_counter() - start)
        return out

    def _generate_and_score_completions(self, inputs):
        batch = self._score_round(inputs)
        if self._mode() != "train" or not self._opt("filter_groups", False):
            return batch
        return self._filter_groups(batch)

    def _score_round(self, inputs):
        if self._truncator is not None:
            inputs = [self._truncate_row(x) for x in inputs]
        batch = super()._generate_and_score_completions(inputs)
        if self._round_masked.any():  # global flags: every rank takes this branch (the gather is collective)
            start = self.accelerator.process_index * len(inputs)
            keep = ~self._round_masked[start:start + len(inputs)]
            batch = mask_rows(batch, keep)
            batch["num_items_in_batch"] = self.accelerator.gather(loss_tokens(batch)).sum()
        return batch

    def _truncate_row(self, row: dict) -> dict:
        prompt = row.get("prompt")
        if not isinstance(prompt, list):
            return row
        images = row.get("images") or ([row["image"]] if row.get("image") is not None else [])
        if self.environment_factories is not None:
            tools = self._env_tools[row.get("environment") if self._multi_environment else None]
        else:
            tools = self.tools
        messages = prepare_multimodal_messages(copy.deepcopy(prompt), images=list(images))
        result = self._truncator(messages, tools)
        self._log_metric("prompt/truncated_ratio", float(result.truncated))
        self._log_metric("prompt/over_budget_ratio", float(result.over_budget))
        return {**row, "prompt": as_placeholders(result.messages)} if result.truncated else row

    def _filter_groups(self, batch: dict) -> dict:
        size, G = batch["advantages"].size(0), self.num_generations
        start = self.accelerator.process_index * size
        constant = constant_groups(self._round_rewards, G)
        self._metrics["train"]["groups/dropped_ratio"].append(constant.float().mean().item())
        rows_constant = constant.repeat_interleave(G)[start:start + size].cpu()
        rounds = int(self._opt("resample_rounds", 0) or 0)
        resample = (rounds > 0 and size % G == 0 and isinstance(self.train_dataset, Dataset)
                    and not unsupported_keys(batch))
        if not resample:
            if constant.any():
                batch = mask_rows(batch, ~rows_constant)
                batch["num_items_in_batch"] = self.accelerator.gather(loss_tokens(batch)).sum()
            return batch
        need = size // G
        group_rows = lambda gs: [g * G + k for g in gs for k in range(G)]
        informative = [g for g in range(need) if not rows_constant[g * G]]
        parts = [select_rows(batch, group_rows(informative))] if informative else []
        have, used = len(informative), 0
        while used < rounds:
            deficit = torch.tensor([need - have], device=self.accelerator.device)
            if self.accelerator.gather(deficit).max().item() <= 0:
                break
            used += 1
            extra = self._score_round(self._draw_inputs(need))
            flags = constant_groups(self._round_rewards, G)
            self._metrics["train"]["groups/dropped_ratio"].append(flags.float().mean().item())
            flags = flags.repeat_interleave(G)[start:start + size].cpu()
            take = [g for g in range(need) if not flags[g * G]][: max(need - have, 0)]
            if take:
                parts.append(select_rows(extra, group_rows(take)))
                have += len(take)
        keep = [True] * (have * G)
        if have < need:  # still short: fill with constant groups of the first round, out of the loss
            fillers = [g for g in range(need) if rows_constant[g * G]][: need - have]
            parts.append(select_rows(batch, group_rows(fillers)))
            keep += [False] * (len(fillers) * G)
        merged = mask_rows(concat_batches(parts, self._tokenizer.pad_token_id), torch.tensor(keep))
        merged["num_items_in_batch"] = self.accelerator.gather(loss_tokens(merged)).sum()
        self._metrics["train"]["groups/resample_rounds"].append(float(used))
        filled = self.accelerator.gather(torch.tensor([have / need], device=self.accelerator.device))
        self._metrics["train"]["groups/informative_ratio"].append(filled.mean().item())
        return merged

    def _draw_inputs(self, groups: int) -> list[dict]:
        """Fresh prompts for a resampling round: the same seeded draw on every rank, each its own slice."""
        self._resample_calls += 1
        generator = torch.Generator().manual_seed(int(self.args.seed) * 1_000_003 + self._resample_calls)
        total = groups * self.accelerator.num_processes
        index = torch.randint(len(self.train_dataset), (total,), generator=generator).tolist()
        mine = index[self.accelerator.process_index * groups:(self.accelerator.process_index + 1) * groups]
        rows = [self.train_dataset[i] for i in mine]
        return [dict(row) for row in rows for _ in range(self.num_generations)]

    # -- rollouts --

    def _generate(self, prompts: list):
        start = time.perf_counter()
        if self.tools:
            self._wrap_tools(prompts)
        size = self._opt("rollout_chunk_size")
        if self.tools:  # where TRL's failure values for this rollout will start (replaced below)
            self._failure_mark = len(self._metrics[self._mode()]["tools/failure_frequency"])
        with wrapped_parse_response(safe_parser):  # malformed tool calls become error observations
            if size and size < len(prompts):
                out = self._generate_chunked(prompts, int(size))
            else:
                out = super()._generate(prompts)
        self._trajectory_metrics(prompts, out)
        seconds = time.perf_counter() - start
        self.timings["rollout"].append(seconds)
        self._metrics[self._mode()]["timing/rollout_seconds"].append(seconds)
        return out

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        # TRL 1.16 asks for image token-type ids when any rollout of the batch got a tool image, also for a
        # later turn that continues only rows without one (a mixed batch: a crop row saw its crop, a DISBench
        # row goes on alone). With no image in that turn it sends `token_type_ids`, which Qwen3-VL's generate
        # refuses: ask for them only when the rows of this turn carry an image.
        # The flag only makes TRL add that map (as `token_type_ids` unless the batch has `image_grid_thw`):
        # a family whose model takes none (InternVL, LLaVA-OneVision, SmolVLM) must not get it, since
        # `generate` refuses arguments its model does not take.
        has_tool_images = has_tool_images and any(rows for rows in images or []) and bool(self.family.token_type_key)
        # For the same reason, what the image processor returns beside the family's own per-image tensors
        # (InternVL's `num_patches`, which its processor uses to expand the text) stays out of `generate`.
        multimodal_fields = {k: v for k, v in multimodal_fields.items()
                             if k in self.family.image_keys or k == self.family.token_type_key}
        return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                             has_tool_images=has_tool_images)

    def _wrap_tools(self, prompts: list) -> None:
        self._rollout_tools = []
        for i, prompt in enumerate(prompts):
            env = self.environments[i] if self.environments else None
            state = RolloutTools(env, images=_count_images(prompt), max_images=self._opt("max_images"))
            sync, asynchronous = tool_dicts(self, i)
            available = sorted(set(sync) | set(asynchronous))
            set_sync_tool_dict(self, i, SafeToolDict(sync, state, available, frozenset(asynchronous)))
            self._rollout_tools.append(state)

    def _generate_chunked(self, prompts: list, size: int) -> tuple:
        outs = []
        for begin in range(0, len(prompts), size):
            with rollout_slice(self, begin, begin + size):
                outs.append(super()._generate(prompts[begin:begin + size]))
        return merge_generations(outs)

    def _trajectory_metrics(self, prompts: list, out: tuple) -> None:
        completion_ids, completions, tool_images = generated(out, "completion_ids", "completions", "tool_images")
        eos = {*self.eos_token_ids, self._tokenizer.pad_token_id}
        stats, flags = [], []
        for i, (ids, messages) in enumerate(zip(completion_ids, completions)):
            turns = sum(1 for m in messages if m.get("role") == "assistant")
            pending = bool(self.tools) and bool(messages) and messages[-1].get("role") == "assistant" \
                and bool(messages[-1].get("tool_calls"))
            out_of_turns = pending and turns > self.max_tool_calling_iterations
            out_of_length = (not ids or ids[-1] not in eos) or (pending and not out_of_turns)
            tools = self._rollout_tools[i] if i < len(self._rollout_tools) and self.tools else None
            images = _count_images(prompts[i]) + (len(tool_images[i]) if i < len(tool_images) else 0)
            stats.append([turns, images, out_of_turns, out_of_length, tools.calls if tools else 0,
                          tools.errors if tools else 0, tools.refused if tools else 0])
            flags.append([out_of_turns, out_of_length])
        self._row_flags = torch.tensor(flags, dtype=torch.bool).view(-1, 2)
        totals = self.accelerator.gather(torch.tensor(stats, dtype=torch.float32, device=self.accelerator.device))
        totals = totals.view(-1, 7)
        metrics = self._metrics[self._mode()]
        metrics["trajectory/turns"].append(totals[:, 0].mean().item())
        metrics["trajectory/images"].append(totals[:, 1].mean().item())
        metrics["trajectory/out_of_turns_ratio"].append(totals[:, 2].mean().item())
        metrics["trajectory/out_of_length_ratio"].append(totals[:, 3].mean().item())
        if self.tools:
            calls = totals[:, 4].sum().item()
            # TRL counts raised exceptions; the agent's tools answer errors as "Error:" text instead.
            failure = totals[:, 5].sum().item() / calls if calls else 0.0
            del metrics["tools/failure_frequency"][self._failure_mark:]  # TRL's values for this rollout
            metrics["tools/failure_frequency"].append(failure)
            metrics["tools/image_budget_refusals"].append(totals[:, 6].mean().item())
            for tool in self.tools:  # calls per trajectory of each tool (every rank logs every name)
                name = getattr(tool, "__name__", str(tool))
                for state in self._rollout_tools:
                    self._log_metric(f"tools/{name}/call_frequency", float(state.by_name.get(name, 0)))

    # -- rewards --

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        # rewards/ reads parsed-out reasoning_content back inside <think> itself.
        # rewards/ also logs accuracy/<benchmark>[/<task>] of every row as it scores (TRL's log_metric).
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        flags = self._row_flags if len(self._row_flags) == len(prompts) else torch.zeros(len(prompts), 2, dtype=torch.bool)
        local = (flags[:, 0] & bool(self._opt("mask_out_of_turns", False))) | \
            (flags[:, 1] & bool(self._opt("mask_out_of_length", False)))
        masked = self.accelerator.gather(local.to(rewards_per_func.device)).bool()
        rewards_per_func[masked] = torch.nan
        self._round_masked = masked
        self._metrics[self._mode()]["trajectory/masked_ratio"].append(masked.float().mean().item())
        weights = self.reward_weights.to(rewards_per_func.device)
        total = (rewards_per_func * weights.unsqueeze(0)).nansum(dim=1)
        total[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
        self._round_rewards = total
        return rewards_per_func

    # -- logging --

    def log(self, logs: dict, start_time: float | None = None) -> None:
        super().log(logs, start_time)
        step = self.state.global_step
        if not (self._table and self.accelerator.is_main_process and self._logs["prompt"]) \
                or step == self._last_table_step:
            return
        self._last_table_step = step
        rows = table_rows(self._logs, step)
        write_jsonl(rows, self.args.output_dir, step)
        if self.args.report_to and "wandb" in self.args.report_to:
            import wandb

            if wandb.run is not None:
                wandb.log({"completions": wandb_table(rows)})
