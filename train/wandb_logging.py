"""What SFT and GRPO show on W&B beyond TRL's scalars (only with ``report_to: wandb``).

- The run's config: TRL's arguments, ours and the recipe's text (``train/entry.py``), plus here
  the base model (the first model of a chain: curriculum stages; ``train/run_records.py``),
  the model this run started from and, for a curriculum stage, its curriculum, stage name and order.
- A ``samples`` table: a few held-out items (``wandb_samples_path``; else the first training items,
  marked ``train``) answered by the model being trained at the start, every ``wandb_samples_steps``
  steps and at the end: their images, the question, the prediction and the gold answer. The items
  are played by ``agent.loop`` (GRPO: with the run's tools), greedy, a few short turns: cheap.
- A curriculum's stages share one W&B group (``curriculum_stage``, used by ``train/curriculum.py``).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from lookcloser.train.run_records import STAGE_ENV, base_model_of, curriculum_info

logger = logging.getLogger(__name__)

GOLD_KEYS = ("answer", "solution", "ground_truth", "gold", "conclusion")


@dataclass
class DashboardArguments:
    """The W&B samples table (train/wandb_logging.py); used only with ``report_to: wandb``."""

    wandb_samples: int = field(default=4, metadata={
        "help": "Items in the W&B samples table (image, question, prediction, gold); 0: no table."})
    wandb_samples_path: str | None = field(default=None, metadata={
        "help": "Held-out data for the samples table, in any format dataset_path takes (its images relative to "
                "its own folder). Unset: the first training items, marked `train` in the table."})
    wandb_samples_steps: int = field(default=50, metadata={
        "help": "Answer the samples every N steps too, besides the start and the end of training (0: only those)."})
    wandb_samples_max_new_tokens: int = field(default=128, metadata={
        "help": "Token cap per turn of a sample's answer."})


def reports_to_wandb(training_args) -> bool:
    return bool(training_args.report_to) and "wandb" in training_args.report_to


@contextlib.contextmanager
def curriculum_stage(group: str, stage: str, order: int, stages: int) -> Iterator[None]:
    """Run one curriculum stage as a W&B run of the curriculum's group (``WANDB_RUN_GROUP``, unless
    the user set one; a stage in a subprocess reads it from the environment it inherits), with its
    name and order in its config (``_ConfigCallback``); an in-process stage's W&B run is finished at
    the end, so that the next stage starts its own."""
    values = {STAGE_ENV["group"]: group, STAGE_ENV["stage"]: stage, STAGE_ENV["order"]: str(order),
              STAGE_ENV["stages"]: str(stages)}
    if "WANDB_RUN_GROUP" not in os.environ:
        values["WANDB_RUN_GROUP"] = group
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        wandb = sys.modules.get("wandb")
        if wandb is not None and getattr(wandb, "run", None) is not None:
            wandb.finish()


def add_wandb_dashboards(trainer, script_args, model_args, dataset, load_rows: Callable, *,
                         env_factory=None, max_turns: int = 1) -> None:
    """Add the run-config and samples callbacks to ``trainer`` (no-op unless it reports to W&B).

    ``dataset``: the training rows as loaded (before featurizing); ``load_rows(script_args)``: the
    script's own loader, used for ``wandb_samples_path``; ``env_factory``/``max_turns``: GRPO's tools.
    """
    if not reports_to_wandb(trainer.args):
        return
    trainer.add_callback(_ConfigCallback(model_args.model_name_or_path))
    count = getattr(script_args, "wandb_samples", 0)
    if count <= 0:
        return
    if script_args.wandb_samples_path:
        held_out = dataclasses.replace(script_args, dataset_path=script_args.wandb_samples_path, images_root=None,
                                       max_train_samples=None)
        rows, split = load_rows(held_out), "held-out"
    else:
        rows, split = dataset, "train"
        logger.info("W&B samples: the first %d training items (set wandb_samples_path for held-out ones)", count)
    rows = [rows[i] for i in range(min(count, len(rows)))]
    trainer.add_callback(_SamplesCallback(trainer, sample_examples(rows), split, env_factory, max_turns,
                                          script_args.wandb_samples_steps, script_args.wandb_samples_max_new_tokens))


def sample_examples(rows: list[dict]) -> list[dict]:
    """Data-set rows (SFT ``messages`` or GRPO ``prompt``) as ``agent.loop`` examples with a ``gold`` text.

    >>> ex = sample_examples([{"messages": [{"role": "user", "content": "Which?"},
    ...                                     {"role": "assistant", "content": [{"type": "text", "text": "B"}]}]}])
    >>> ex[0]["prompt"], ex[0]["gold"], ex[0]["id"]
    ([{'role': 'user', 'content': 'Which?'}], 'B', '0')
    """
    from lookcloser.train.grpo_lib.tables import content_text

    examples = []
    for index, row in enumerate(rows):
        example = {k: v for k, v in row.items() if k != "messages"}
        messages = row.get("messages")
        if messages:
            first_reply = next((i for i, m in enumerate(messages) if m.get("role") == "assistant"), len(messages))
            example["prompt"] = list(messages[:first_reply])
            replies = [m for m in messages if m.get("role") == "assistant"]
            gold = content_text(replies[-1].get("content")) if replies else ""
        else:
            gold = _gold_of(row)
        example["gold"] = gold
        example["id"] = str(row.get("id") if row.get("id") is not None else index)
        examples.append(example)
    return examples


def _gold_of(row: dict) -> str:
    info = row.get("reward_info")
    if isinstance(info, str):
        with contextlib.suppress(ValueError):
            info = json.loads(info)
    sources = [info] if isinstance(info, dict) else []
    for source in [*sources, row]:
        for key in GOLD_KEYS:
            if source.get(key) is not None:
                value = source[key]
                return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "" if info is None else str(info)


def _callback_base():
    from transformers import TrainerCallback

    return TrainerCallback


class _ConfigCallback(_callback_base()):
    """Adds the base model, the starting model and the curriculum stage to the run's config (after
    TRL's W&B callback started the run: callbacks run in the order added)."""

    def __init__(self, start_model: str):
        self.start_model = str(start_model)

    def on_train_begin(self, args, state, control, **kwargs):
        wandb = sys.modules.get("wandb")
        if wandb is None or getattr(wandb, "run", None) is None:
            return
        extra = {"base_model": base_model_of(self.start_model), "start_model": self.start_model}
        stage = curriculum_info()
        if stage:
            extra.update({"curriculum": stage["group"], "curriculum_stage": stage["stage"],
                          "curriculum_stage_order": stage["order"], "curriculum_stages": stage["stages"]})
            if args.run_name is None:  # named after its stage (wandb reads WANDB_NAME once per process)
                wandb.run.name = f"{stage['group']}/{stage['stage']}"
        wandb.run.config.update(extra, allow_val_change=True)


class _SamplesCallback(_callback_base()):
    """Answers the sample items with the model being trained and logs them as the ``samples`` table."""

    def __init__(self, trainer, examples: list[dict], split: str, env_factory, max_turns: int, every: int,
                 max_new_tokens: int):
        self.trainer, self.examples, self.split = trainer, examples, split
        self.env_factory, self.max_turns, self.every, self.max_new_tokens = env_factory, max_turns, every, max_new_tokens
        self.rows: list[list] = []

    def on_train_begin(self, args, state, control, **kwargs):
        self._log(state)

    def on_step_end(self, args, state, control, **kwargs):
        if self.every and state.global_step % self.every == 0 and state.global_step < state.max_steps:
            self._log(state)

    def on_train_end(self, args, state, control, **kwargs):
        self._log(state)

    def _answers(self) -> list:
        from trl.models import unwrap_model_for_generation

        from lookcloser.agent.hf_policy import HFPolicy
        from lookcloser.agent.loop import run_episodes
        from lookcloser.agent.toolkit import NoToolsEnv

        trainer = self.trainer
        # A copy: the policy adds a response parser to the tokenizer, which must not reach the checkpoint.
        processor = copy.copy(trainer.processing_class)
        if hasattr(processor, "tokenizer"):
            processor.tokenizer = copy.copy(processor.tokenizer)
        # A dict: each row's own environment (`environment: per_row`), played in groups; none: one plain answer.
        per_row = isinstance(self.env_factory, dict)
        factories = self.env_factory if per_row else {None: self.env_factory}
        groups: dict = {}
        for index, example in enumerate(self.examples):
            groups.setdefault(example["environment"] if per_row else None, []).append(index)
        out: list = [None] * len(self.examples)
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model:
            was_training = model.training
            model.eval()
            try:
                for name, indices in groups.items():
                    played = run_episodes(HFPolicy(model, processor, prefix_cache=False),
                                          factories[name] or NoToolsEnv, [self.examples[i] for i in indices],
                                          max_turns=self.max_turns, max_new_tokens_per_turn=self.max_new_tokens,
                                          system_prompt="")
                    for i, trajectory in zip(indices, played, strict=True):
                        out[i] = trajectory
            finally:
                model.train(was_training)
        return out

    def _log(self, state) -> None:
        trajectories = self._answers()  # every rank: generation under ZeRO-3 gathers weights collectively
        wandb = sys.modules.get("wandb")
        if not state.is_world_process_zero or wandb is None or getattr(wandb, "run", None) is None:
            return
        from lookcloser.train.grpo_lib.tables import contact_sheet, conversation_text

        for example, trajectory in zip(self.examples, trajectories):
            sheet = contact_sheet(trajectory.images)
            answer = trajectory.final_response if trajectory.stop_reason != "error" else f"error: {trajectory.error}"
            replies = [m for m in trajectory.messages if m.get("role") != "system"][1:]
            self.rows.append([state.global_step, example["id"], self.split,
                              wandb.Image(sheet) if sheet is not None else None,
                              conversation_text(example["prompt"]), answer, conversation_text(replies),
                              example["gold"]])
        columns = ["step", "id", "split", "images", "question", "prediction", "trajectory", "gold"]
        # One table holding every logged step so far: W&B shows the latest version of a key.
        wandb.log({"samples": wandb.Table(columns=columns, data=self.rows)})
