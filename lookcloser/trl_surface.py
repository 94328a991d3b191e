"""Every private name of TRL and transformers that lookcloser touches, fenced in one module.

lookcloser extends TRL's GRPOTrainer / SFTTrainer and transformers' Qwen3-VL processor where they
offer no public hook (multi-turn image tool rollouts, a CPU-safe processor). Each such touch goes
through this module, and ``tests/test_trl_surface.py`` checks that every name below still exists
with the shape used here (signature, tuple order, attribute), so an upgrade past pyproject's pins
(``trl>=1.16,<1.17``, ``transformers>=5.23,<5.24``) fails that test, loudly, instead of training
wrong. Imports are lazy: importing this module loads neither torch nor TRL.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

# ``GRPOTrainer._generate(prompts)`` returns this 8-tuple (TRL 1.16); read it by name, never by index.
GENERATE_FIELDS = ("prompt_ids", "completion_ids", "tool_mask", "completions", "logprobs", "extra_fields",
                   "images", "tool_images")

# GRPOTrainer attributes holding one entry per prompt of the current rollout (set in
# ``_generate_and_score_completions``, read in ``_generate``): a rollout in chunks slices them.
PER_PROMPT_STATE = ("_sync_tool_dicts", "_async_tool_dicts", "_batch_environments")

# GRPOTrainer's private state that LookcloserGRPOTrainer reads or extends directly.
GRPO_ATTRIBUTES = ("_metrics", "_logs", "_tokenizer", "_env_tools", "_multi_environment", "_image_pad_token_id",
                   "eos_token_ids",
                   *PER_PROMPT_STATE)

# Private methods we override or call: (module, class, method) -> the parameters we rely on.
PRIVATE_METHODS = {
    ("trl.trainer.grpo_trainer", "GRPOTrainer", "_generate"): ("self", "prompts"),
    ("trl.trainer.grpo_trainer", "GRPOTrainer", "_generate_single_turn"):
        ("self", "prompt_ids", "images", "multimodal_fields", "num_generations", "has_tool_images"),
    ("trl.trainer.grpo_trainer", "GRPOTrainer", "_generate_and_score_completions"): ("self", "inputs"),
    ("trl.trainer.grpo_trainer", "GRPOTrainer", "_calculate_rewards"):
        ("self", "inputs", "prompts", "completions", "completion_ids_list"),
    ("trl.trainer.grpo_trainer", "GRPOTrainer", "_log_metric"): ("self", "name", "value"),
    ("trl.trainer.grpo_trainer", "GRPOTrainer", "_get_tool_suffix_ids"): ("self", "tool_messages"),
    ("trl.trainer.sft_trainer", "DataCollatorForVisionLanguageModeling", "_collate_language_modeling"):
        ("self", "examples"),
    ("transformers", "Trainer", "_get_train_sampler"): ("self", "train_dataset"),
}

# What ``Qwen3VLProcessor.__init__`` sets on the processor; ``init_qwen3vl_processor`` sets the same.
QWEN3VL_PROCESSOR_ATTRIBUTES = ("image_token", "video_token", "image_token_id", "video_token_id",
                                "vision_start_token", "vision_end_token", "vision_start_token_id",
                                "vision_end_token_id")


# -- GRPOTrainer --

def set_image_token_id(trainer, token_id: int) -> None:
    """Tell TRL's GRPO which token stands for an image feature.

    Why: TRL rebuilds the image-token map of prompts whose tool results hold images from
    ``_image_pad_token_id``, which it looks up as ``<|image_pad|>`` or ``<|image|>`` only (TRL 1.16,
    ``GRPOTrainer.__init__``): Gemma's ``<image_soft_token>``, InternVL's ``<IMG_CONTEXT>`` and the
    ``<image>`` families would get an all-zero map. The family spec names the token.
    """
    trainer._image_pad_token_id = token_id


def generated(out: tuple, *names: str) -> tuple:
    """Fields of a ``_generate`` result by name.

    >>> generated(tuple(range(8)), "completion_ids", "tool_images")
    (1, 7)
    """
    return tuple(out[GENERATE_FIELDS.index(name)] for name in names)


def merge_generations(outs: list[tuple]) -> tuple:
    """Concatenate the ``_generate`` results of consecutive chunks of prompts into one result.

    >>> one = ([[1]], [[2]], None, [["c"]], None, {"k": [0]}, None, [[]])
    >>> merge_generations([one, one])[:2], merge_generations([one, one])[5]
    (([[1], [1]], [[2], [2]]), {'k': [0, 0]})
    """
    fields = [dict(zip(GENERATE_FIELDS, out, strict=True)) for out in outs]
    cat = lambda name: [x for f in fields for x in f[name]]
    merged = {name: cat(name) for name in ("prompt_ids", "completion_ids", "completions", "tool_images")}
    merged["tool_mask"] = None if fields[0]["tool_mask"] is None else cat("tool_mask")
    merged["logprobs"] = None if fields[0]["logprobs"] is None else cat("logprobs")
    merged["extra_fields"] = {k: [v for f in fields for v in f["extra_fields"][k]] for k in fields[0]["extra_fields"]}
    if all(f["images"] is None for f in fields):
        merged["images"] = None
    else:
        merged["images"] = [x for f in fields
                            for x in (f["images"] if f["images"] is not None else [None] * len(f["prompt_ids"]))]
    return tuple(merged[name] for name in GENERATE_FIELDS)


def grpo_config_argument(args: tuple, kwargs: dict):
    """The ``args`` (GRPOConfig) a GRPOTrainer is being built with, given by position or keyword."""
    from trl import GRPOTrainer

    bound = inspect.signature(GRPOTrainer.__init__).bind_partial(None, *args, **kwargs)
    return bound.arguments.get("args")


def tool_dicts(trainer, index: int) -> tuple[dict, dict]:
    """The synchronous and asynchronous tool dicts TRL built for prompt ``index`` of this rollout."""
    return trainer._sync_tool_dicts[index], trainer._async_tool_dicts[index]


def set_sync_tool_dict(trainer, index: int, tools: dict) -> None:
    trainer._sync_tool_dicts[index] = tools


@contextlib.contextmanager
def rollout_slice(trainer, begin: int, end: int) -> Iterator[None]:
    """Narrow TRL's per-prompt rollout state to prompts ``begin:end`` (one chunk), then restore it."""
    saved = {name: getattr(trainer, name, None) for name in PER_PROMPT_STATE}
    try:
        for name, value in saved.items():
            if value is not None:
                setattr(trainer, name, value[begin:end])
        yield
    finally:
        for name, value in saved.items():
            setattr(trainer, name, value)


@contextlib.contextmanager
def wrapped_parse_response(wrap: Callable[[Callable], Callable]) -> Iterator[None]:
    """TRL's tool loop parses replies with its module-level ``parse_response``: route it through ``wrap``."""
    from trl.trainer import grpo_trainer as trl_grpo

    original = trl_grpo.parse_response
    trl_grpo.parse_response = wrap(original)
    try:
        yield
    finally:
        trl_grpo.parse_response = original


# -- SFTTrainer / Trainer --

def is_vision_dataset(trainer) -> bool:
    """Whether SFTTrainer saw an ``image``/``images`` column (it then uses its vision collator)."""
    return bool(trainer._is_vision_dataset)


def replace_train_sampler(trainer, make: Callable[[Callable], Callable]) -> None:
    """Replace ``Trainer._get_train_sampler`` on this trainer by ``make(original)``."""
    trainer._get_train_sampler = make(trainer._get_train_sampler)


def score_labelled_tokens_only() -> None:
    """Make TRL's fused LM head score only the positions that have a label, on CPU too.

    TRL 1.16 compacts the hidden states to the labelled positions on Triton devices only; elsewhere
    it scores every position, because on Neuron a varying tile shape recompiles the graph. On CPU
    nothing recompiles, and with assistant-only loss most positions (prompt, image, padding) have no
    label, while the head (hidden x vocab per position, then log-softmax) is the largest part of a
    small model's step. The loss, entropy and accuracy are the same sums over the same positions.
    Process-wide; a no-op on CUDA (already compact there).
    """
    import trl.trainer.utils as trl_utils
    from trl.kernels.chunked_logprob import _use_triton

    if getattr(trl_utils._use_triton, "lookcloser_compact_on_cpu", False):
        return

    def compact(device) -> bool:
        return device.type == "cpu" or _use_triton(device)

    compact.lookcloser_compact_on_cpu = True
    trl_utils._use_triton = compact


# -- transformers' response parser --

def compiled_response_template(template: dict):
    """``template`` (a ``response_template`` dict, e.g. TRL's ``qwen3_template``) with its regexes built.

    ``transformers.utils.chat_parsing.parse_response`` takes this in place of the dict, which it
    would otherwise validate and compile again on every call (most of a short reply's parsing
    time). ``load_response_template`` is not exported by ``transformers.utils.chat_parsing``.
    """
    from transformers.utils.chat_parsing.response_templates import load_response_template

    return load_response_template(template)


# -- transformers' Qwen3-VL model: Liger's fused kernels --

# What ``apply_liger_kernels`` replaces in ``transformers.models.qwen3_vl.modeling_qwen3_vl``: the two rotary
# functions the attention modules call by their module-level name, and the modules of these two classes.
QWEN3VL_KERNEL_SITES = ("apply_rotary_pos_emb", "apply_rotary_pos_emb_vision", "Qwen3VLTextRMSNorm", "Qwen3VLTextMLP")


def _fused_swiglu_forward(mlp, x):
    """``Qwen3VLTextMLP.forward`` (down(silu(gate(x)) * up(x))) with SiLU x up in one Liger kernel."""
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    return mlp.down_proj(LigerSiLUMulFunction.apply(mlp.gate_proj(x), mlp.up_proj(x)))


def apply_liger_kernels(model) -> dict:
    """Liger's Triton kernels in place of Qwen3-VL's unfused elementwise chains, in ``model`` (bare or PEFT-wrapped):
    the text RMSNorm modules (swapped for ``LigerRMSNorm`` holding the same Parameter, so the optimizer,
    checkpoints and ZeRO-3 see the same weights), the text and vision rotary embeddings, and SiLU x up in the
    text MLP. Needs liger-kernel; the kernels run on CUDA only (nothing here runs one).

    Hand-written because Liger's own ``apply_liger_kernel_to_qwen3_vl`` (0.8.5, what TRL's
    ``use_liger_kernel`` calls) imports ``Qwen3VLCausalLMOutputWithPast``, which transformers 5.23 no
    longer has, and leaves SwiGLU out for Qwen3-VL. The rotary functions are module-level: every Qwen3-VL
    model in this process uses Liger's from here on (a reference model too), and it cannot be undone.
    """
    import types
    from importlib.metadata import version

    from liger_kernel.transformers import LigerRMSNorm
    from liger_kernel.transformers.rope import liger_rotary_pos_emb, liger_rotary_pos_emb_vision
    from transformers.models.qwen3_vl import modeling_qwen3_vl as qwen3_vl

    norms = [(parent, name, child) for parent in model.modules() for name, child in parent.named_children()
             if isinstance(child, qwen3_vl.Qwen3VLTextRMSNorm)]
    mlps = [module for module in model.modules() if isinstance(module, qwen3_vl.Qwen3VLTextMLP)]
    if not norms or not mlps:
        raise ValueError(f"{type(model).__name__} has no Qwen3-VL text decoder: Liger's kernels are wired for Qwen3-VL only")
    acts = sorted({mlp.config.hidden_act for mlp in mlps})
    if acts != ["silu"]:
        raise ValueError(f"the text MLP's activation is {', '.join(acts)}: the fused SwiGLU kernel is SiLU only")

    qwen3_vl.apply_rotary_pos_emb = liger_rotary_pos_emb
    qwen3_vl.apply_rotary_pos_emb_vision = liger_rotary_pos_emb_vision
    for parent, name, child in norms:
        # Qwen3's RMSNorm: fp32 statistics, weight x normalised input cast back ("llama" casting, no offset).
        # in_place=False, as measured (docs/benchmarks.md): Liger's in-place backward writes dX over dY, which
        # is only correct where nothing else reads dY.
        fused = LigerRMSNorm(0, eps=child.variance_epsilon, offset=0.0, casting_mode="llama", in_place=False)
        fused.weight = child.weight
        setattr(parent, name, fused)
    for mlp in mlps:
        mlp.forward = types.MethodType(_fused_swiglu_forward, mlp)
    return {"liger_kernel": version("liger-kernel"), "rms_norms": len(norms), "swiglu_mlps": len(mlps),
            "patched": ["rms_norm", "rope", "rope_vision", "swiglu"]}


# -- transformers' Qwen3-VL processor --

def init_qwen3vl_processor(processor, image_processor, tokenizer, chat_template=None) -> None:
    """Initialise a ``Qwen3VLProcessor`` subclass without a video processor.

    ``Qwen3VLProcessor.__init__`` requires one (torchvision's, absent on CPU machines), so it is
    skipped: this sets the attributes it sets (``QWEN3VL_PROCESSOR_ATTRIBUTES``) and calls
    ``ProcessorMixin.__init__`` directly.
    """
    from transformers import Qwen3VLProcessor

    processor.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
    processor.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
    processor.image_token_id = tokenizer.convert_tokens_to_ids(processor.image_token)
    processor.video_token_id = tokenizer.convert_tokens_to_ids(processor.video_token)
    processor.vision_start_token = getattr(tokenizer, "vision_start_token", None) or "<|vision_start|>"
    processor.vision_end_token = getattr(tokenizer, "vision_end_token", None) or "<|vision_end|>"
    processor.vision_start_token_id = tokenizer.convert_tokens_to_ids(processor.vision_start_token)
    processor.vision_end_token_id = tokenizer.convert_tokens_to_ids(processor.vision_end_token)
    processor.video_processor = None
    super(Qwen3VLProcessor, processor).__init__(image_processor, tokenizer, chat_template=chat_template)


# -- transformers' SmolVLM processor --

# What ``SmolVLMProcessor.__init__`` sets on the processor; ``init_smolvlm_processor`` sets the same.
SMOLVLM_PROCESSOR_ATTRIBUTES = ("fake_image_token", "image_token", "image_token_id", "end_of_utterance_token",
                                "global_image_token", "image_seq_len", "video_token")


def init_smolvlm_processor(processor, image_processor, tokenizer, image_seq_len: int, chat_template=None) -> None:
    """Initialise a ``SmolVLMProcessor`` subclass without a video processor.

    ``SmolVLMProcessor.__init__`` requires one (torchvision's) and ``num2words`` (for video prompts only), so
    it is skipped: this sets the attributes it sets (``SMOLVLM_PROCESSOR_ATTRIBUTES``, read from the tokenizer
    where it names them) and calls ``ProcessorMixin.__init__`` directly.
    """
    from transformers import SmolVLMProcessor

    processor.fake_image_token = getattr(tokenizer, "fake_image_token", None) or "<fake_token_around_image>"
    processor.image_token = getattr(tokenizer, "image_token", None) or "<image>"
    processor.image_token_id = tokenizer.convert_tokens_to_ids(processor.image_token)
    processor.end_of_utterance_token = getattr(tokenizer, "end_of_utterance_token", None) or "<end_of_utterance>"
    processor.global_image_token = getattr(tokenizer, "global_image_token", None) or "<global-img>"
    processor.image_seq_len = image_seq_len
    processor.video_token = getattr(tokenizer, "video_token", None) or "<video>"
    processor.video_processor = None
    super(SmolVLMProcessor, processor).__init__(image_processor, tokenizer, chat_template=chat_template)


def smolvlm_apply_chat_template(processor, conversation, chat_template=None, **kwargs):
    """``apply_chat_template`` of a ``SmolVLMProcessor`` without a video processor: its own override only
    adds the video processor's frame settings (``num_frames``, ``fps``) before ``ProcessorMixin``'s."""
    from transformers import SmolVLMProcessor

    return super(SmolVLMProcessor, processor).apply_chat_template(conversation, chat_template, **kwargs)


@contextlib.contextmanager
def outside_deepspeed_zero3() -> Iterator[None]:
    """Build models as plain modules even inside a ZeRO-3 run.

    Why: transformers builds every model inside DeepSpeed's ``zero.Init`` (parameters partitioned, each rank
    holding an empty shard) while ``is_deepspeed_zero3_enabled()`` is true, which it is as soon as a
    ``TrainingArguments`` with a ZeRO-3 config exists (a module-level weakref to its ``HfDeepSpeedConfig``).
    A checkpoint built there is saved with empty tensors. The weakref is cleared for the block and put back.
    """
    from transformers.integrations import deepspeed as hf_deepspeed

    saved = getattr(hf_deepspeed, "_hf_deepspeed_config_weak_ref", None)
    hf_deepspeed._hf_deepspeed_config_weak_ref = None
    try:
        yield
    finally:
        hf_deepspeed._hf_deepspeed_config_weak_ref = saved

