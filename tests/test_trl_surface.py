"""Every TRL / transformers private name in ``lookcloser/trl_surface.py`` still exists with the shape
we use: an upgrade past pyproject's pins fails here, by name, instead of training wrong."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import textwrap
from pathlib import Path

import pytest

from lookcloser import trl_surface

REPO = Path(__file__).resolve().parents[1]


def _method_source_tree(cls, name: str) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(inspect.getsource(getattr(cls, name)))).body[0]


def _self_assignments(tree: ast.AST) -> set[str]:
    return {t.attr for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}


@pytest.mark.parametrize("where", sorted(trl_surface.PRIVATE_METHODS), ids=lambda w: f"{w[1]}.{w[2]}")
def test_private_methods_keep_their_parameters(where):
    module, cls_name, method = where
    cls = getattr(importlib.import_module(module), cls_name)
    params = tuple(inspect.signature(getattr(cls, method)).parameters)
    assert params == trl_surface.PRIVATE_METHODS[where], f"{cls_name}.{method}{params}"


def test_generate_returns_the_eight_named_fields():
    from trl import GRPOTrainer

    returns = [n for n in ast.walk(_method_source_tree(GRPOTrainer, "_generate")) if isinstance(n, ast.Return)]
    assert returns, "GRPOTrainer._generate returns nothing we can read"
    for node in returns:
        assert isinstance(node.value, ast.Tuple)
        assert tuple(ast.unparse(e) for e in node.value.elts) == trl_surface.GENERATE_FIELDS


def test_grpo_private_state_is_still_set_where_we_read_it():
    from trl import GRPOTrainer

    assigned = _self_assignments(ast.parse(textwrap.dedent(inspect.getsource(GRPOTrainer))))
    missing = [name for name in trl_surface.GRPO_ATTRIBUTES if name not in assigned]
    assert not missing, f"GRPOTrainer no longer sets {missing}"
    # _generate reads the per-prompt rollout state that rollout_slice() narrows to a chunk.
    generate_text = inspect.getsource(GRPOTrainer._generate)
    tool_loop_text = inspect.getsource(GRPOTrainer)
    for name in trl_surface.PER_PROMPT_STATE:
        assert f"self.{name}[" in generate_text or f"self.{name}[" in tool_loop_text, name


def test_parse_response_is_module_level_in_the_grpo_trainer():
    from trl.trainer import grpo_trainer as trl_grpo

    assert callable(trl_grpo.parse_response)
    assert "parse_response(" in inspect.getsource(trl_grpo.GRPOTrainer)
    seen = []
    with trl_surface.wrapped_parse_response(lambda original: seen.append(original) or "wrapped"):
        assert trl_grpo.parse_response == "wrapped"
    assert callable(trl_grpo.parse_response) and seen == [trl_grpo.parse_response]


def test_grpo_config_argument_by_position_and_keyword():
    from trl import GRPOTrainer

    params = list(inspect.signature(GRPOTrainer.__init__).parameters)
    assert "args" in params
    position = params.index("args") - 1  # without self
    config = object()
    by_position = [None] * position + [config]
    assert trl_surface.grpo_config_argument(tuple(by_position), {}) is config
    assert trl_surface.grpo_config_argument(("model",), {"args": config}) is config
    assert trl_surface.grpo_config_argument(("model",), {}) is None


def test_sft_trainer_sets_is_vision_dataset():
    from trl import SFTTrainer

    assert "_is_vision_dataset" in _self_assignments(_method_source_tree(SFTTrainer, "__init__"))


def test_trl_fused_head_switch_exists_and_the_patch_applies(monkeypatch):
    import trl.trainer.utils as trl_utils
    from trl.kernels.chunked_logprob import _use_triton

    monkeypatch.setattr(trl_utils, "_use_triton", trl_utils._use_triton)  # restored after the test
    assert list(inspect.signature(_use_triton).parameters) == ["device"]
    assert trl_utils._use_triton is _use_triton or getattr(trl_utils._use_triton, "lookcloser_compact_on_cpu", False)
    assert "_use_triton(" in inspect.getsource(trl_utils)  # still consulted where the head is computed
    import torch

    trl_surface.score_labelled_tokens_only()
    assert trl_utils._use_triton(torch.device("cpu")) is True


def test_qwen3vl_processor_init_sets_what_ours_sets():
    from transformers import Qwen3VLProcessor
    from transformers.processing_utils import ProcessorMixin

    upstream = _self_assignments(_method_source_tree(Qwen3VLProcessor, "__init__"))
    assert upstream == set(trl_surface.QWEN3VL_PROCESSOR_ATTRIBUTES), upstream
    assert Qwen3VLProcessor.__mro__[1] is ProcessorMixin  # what super(Qwen3VLProcessor, ...) reaches
    params = list(inspect.signature(ProcessorMixin.__init__).parameters)
    assert params == ["self", "args", "kwargs"]  # sub-processors by position, chat_template by keyword


def test_the_processor_built_by_the_fence_has_every_attribute(tiny_model_dir):
    from lookcloser.agent.models import load_processor

    processor = load_processor(str(tiny_model_dir))
    for name in trl_surface.QWEN3VL_PROCESSOR_ATTRIBUTES:
        assert getattr(processor, name) is not None, name
    assert processor.image_token_id == processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")


def test_smolvlm_processor_init_sets_what_ours_sets_and_its_chat_template_adds_only_frames():
    from transformers import SmolVLMProcessor
    from transformers.processing_utils import ProcessorMixin

    upstream = _self_assignments(_method_source_tree(SmolVLMProcessor, "__init__"))
    assert upstream == set(trl_surface.SMOLVLM_PROCESSOR_ATTRIBUTES), upstream
    assert SmolVLMProcessor.__mro__[1] is ProcessorMixin  # what super(SmolVLMProcessor, ...) reaches
    # Its apply_chat_template reads the video processor for frame settings, then calls ProcessorMixin's.
    body = inspect.getsource(SmolVLMProcessor.apply_chat_template)
    assert re.findall(r"self\.(\w+)\.", body) == ["video_processor"] * 4, "reads nothing else of its own"
    assert "super().apply_chat_template(" in body


def test_the_smolvlm_processor_built_by_the_fence_has_every_attribute_and_renders(tmp_path):
    from lookcloser.agent.families import smolvlm

    processor = smolvlm.FAMILY.processor_class.from_pretrained(smolvlm.build_tiny(tmp_path / "smolvlm"))
    for name in trl_surface.SMOLVLM_PROCESSOR_ATTRIBUTES:
        assert getattr(processor, name) is not None, name
    assert processor.image_token_id == processor.tokenizer.convert_tokens_to_ids("<image>")
    messages = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Hi"}]}]
    assert processor.apply_chat_template(messages, add_generation_prompt=True).endswith("Hi<end_of_utterance>\nAssistant:")


def test_a_compiled_response_template_is_used_as_is_and_parses_like_the_dict():
    from transformers.utils.chat_parsing import parse_response
    from transformers.utils.chat_parsing.response_templates import load_response_template
    from trl.chat_template_utils import qwen3_template

    compiled = trl_surface.compiled_response_template(qwen3_template)
    assert load_response_template(compiled) is compiled  # what saves rebuilding the regexes per call
    assert list(inspect.signature(parse_response).parameters) == ["text", "response_template", "prefix", "tools"]
    tools = [{"type": "function", "function": {"name": "crop", "parameters": {
        "type": "object", "properties": {"image_index": {"type": "integer"}}}}}]
    for text in ['<think>a</think>b<tool_call>{"name": "crop", "arguments": {"image_index": "2"}}</tool_call>',
                 "plain<|im_end|>", "<tool_call>{bad</tool_call>", ""]:
        for kwargs in ({"prefix": "<|im_start|>assistant\n"}, {"prefix": "", "tools": tools}):
            try:
                expected = parse_response(text, qwen3_template, **kwargs)
            except ValueError as err:
                with pytest.raises(type(err), match=re.escape(str(err))):
                    parse_response(text, compiled, **kwargs)
                continue
            assert parse_response(text, compiled, **kwargs) == expected, text


def _qwen3vl():
    from transformers.models.qwen3_vl import modeling_qwen3_vl

    return modeling_qwen3_vl


def test_qwen3vl_kernel_sites_are_still_where_the_liger_patch_reaches():
    """The names ``apply_liger_kernels`` replaces exist, and the modules look them up where it assumes."""
    qwen3_vl = _qwen3vl()
    for name in trl_surface.QWEN3VL_KERNEL_SITES:
        assert hasattr(qwen3_vl, name), name
    # The attention modules read the rotary functions as module globals at call time: replacing them there works.
    assert "apply_rotary_pos_emb" in qwen3_vl.Qwen3VLTextAttention.forward.__code__.co_names
    assert "apply_rotary_pos_emb_vision" in qwen3_vl.Qwen3VLVisionAttention.forward.__code__.co_names
    assert list(inspect.signature(qwen3_vl.apply_rotary_pos_emb).parameters) == ["q", "k", "cos", "sin", "unsqueeze_dim"]
    assert list(inspect.signature(qwen3_vl.apply_rotary_pos_emb_vision).parameters)[:4] == ["q", "k", "cos", "sin"]
    # RMSNorm: fp32 statistics, cast back, then x weight (Liger's "llama" casting, offset 0).
    assert _self_assignments(_method_source_tree(qwen3_vl.Qwen3VLTextRMSNorm, "__init__")) == {"weight", "variance_epsilon"}
    norm = inspect.getsource(qwen3_vl.Qwen3VLTextRMSNorm.forward)
    assert "to(torch.float32)" in norm and "return self.weight * hidden_states.to(input_dtype)" in norm
    # The MLP that _fused_swiglu_forward reproduces, with SiLU x up fused.
    assert "self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))" in inspect.getsource(
        qwen3_vl.Qwen3VLTextMLP.forward)


needs_liger = pytest.mark.skipif(importlib.util.find_spec("liger_kernel") is None,
                                 reason="liger-kernel is not installed (pip install 'lookcloser[gpu]')")


@pytest.fixture
def restored_rotary(monkeypatch):
    """apply_liger_kernels swaps module-level rotary functions for good: put them back after the test."""
    qwen3_vl = _qwen3vl()
    for name in ("apply_rotary_pos_emb", "apply_rotary_pos_emb_vision"):
        monkeypatch.setattr(qwen3_vl, name, getattr(qwen3_vl, name))
    return qwen3_vl


def _tiny_qwen3vl():
    import torch
    from transformers import Qwen3VLForConditionalGeneration

    from lookcloser.agent.tiny_qwen3_vl import build_config, build_tokenizer

    torch.manual_seed(0)
    return Qwen3VLForConditionalGeneration._from_config(build_config(build_tokenizer()))


@needs_liger
def test_liger_names_we_call_keep_their_parameters():
    from liger_kernel.transformers import LigerRMSNorm
    from liger_kernel.transformers.rope import liger_rotary_pos_emb, liger_rotary_pos_emb_vision

    assert list(inspect.signature(liger_rotary_pos_emb).parameters)[:4] == ["q", "k", "cos", "sin"]
    assert "unsqueeze_dim" in inspect.signature(liger_rotary_pos_emb).parameters
    assert list(inspect.signature(liger_rotary_pos_emb_vision).parameters) == ["q", "k", "cos", "sin"]
    assert {"eps", "offset", "casting_mode", "in_place"} <= set(inspect.signature(LigerRMSNorm).parameters)


@needs_liger
def test_liger_patch_swaps_every_text_norm_mlp_and_rotary_of_the_tiny_model(restored_rotary):
    """Nothing runs a forward here (the kernels need CUDA): the modules and functions are the expected ones."""
    from liger_kernel.transformers import LigerRMSNorm
    from liger_kernel.transformers.rope import liger_rotary_pos_emb, liger_rotary_pos_emb_vision

    qwen3_vl = restored_rotary
    model = _tiny_qwen3vl()
    before = dict(model.named_parameters())
    state = {k: v.clone() for k, v in model.state_dict().items()}
    text = model.config.text_config
    done = trl_surface.apply_liger_kernels(model)

    expected_norms = 4 * text.num_hidden_layers + 1  # input, post-attention, q and k per layer; the final norm
    assert done["rms_norms"] == expected_norms and done["swiglu_mlps"] == text.num_hidden_layers
    assert not any(isinstance(m, qwen3_vl.Qwen3VLTextRMSNorm) for m in model.modules())
    fused = {name: m for name, m in model.named_modules() if isinstance(m, LigerRMSNorm)}
    assert len(fused) == expected_norms
    for name, module in fused.items():  # the same Parameter objects: the optimizer and checkpoints see no change
        assert module.weight is before[f"{name}.weight"]
        assert module.variance_epsilon == text.rms_norm_eps and module.offset == 0.0
    assert dict(model.named_parameters()).keys() == before.keys()
    after = model.state_dict()
    assert after.keys() == state.keys() and all(after[k].equal(v) for k, v in state.items())
    for layer in model.model.language_model.layers:
        assert layer.mlp.forward.__func__ is trl_surface._fused_swiglu_forward
    assert qwen3_vl.apply_rotary_pos_emb is liger_rotary_pos_emb
    assert qwen3_vl.apply_rotary_pos_emb_vision is liger_rotary_pos_emb_vision
    assert not any(isinstance(m, LigerRMSNorm) for m in model.model.visual.modules())  # LayerNorms there


@needs_liger
def test_liger_patch_reaches_through_a_peft_wrapper_and_refuses_other_models(restored_rotary):
    from liger_kernel.transformers import LigerRMSNorm
    from peft import LoraConfig, get_peft_model
    from torch import nn

    model = get_peft_model(_tiny_qwen3vl(), LoraConfig(r=2, target_modules=["gate_proj", "up_proj"]))
    done = trl_surface.apply_liger_kernels(model)
    assert done["rms_norms"] == sum(isinstance(m, LigerRMSNorm) for m in model.modules()) > 0
    mlp = model.base_model.model.model.language_model.layers[0].mlp
    assert mlp.forward.__func__ is trl_surface._fused_swiglu_forward and hasattr(mlp.gate_proj, "lora_A")
    with pytest.raises(ValueError, match="no Qwen3-VL text decoder"):
        trl_surface.apply_liger_kernels(nn.Sequential(nn.Linear(2, 2)))


@needs_liger
def test_liger_own_qwen3vl_patch_still_fails_on_our_pins(restored_rotary):
    """Why apply_liger_kernels exists: what TRL's ``use_liger_kernel`` calls for Qwen3-VL raises on the
    pinned transformers. When this fails, Liger's own patch works: consider TRL's key instead of ours."""
    from liger_kernel.transformers import _apply_liger_kernel_to_instance

    with pytest.raises(ImportError, match="Qwen3VLCausalLMOutputWithPast"):
        _apply_liger_kernel_to_instance(model=_tiny_qwen3vl(), fused_linear_cross_entropy=False)


def test_no_private_upstream_name_outside_the_fence():
    """Product code reaches these TRL/transformers internals only through lookcloser/trl_surface.py
    (the private methods our trainer overrides are the exception: they are its extension points)."""
    fenced = [*(f".{n}" for n in trl_surface.PER_PROMPT_STATE), "._is_vision_dataset", "._image_pad_token_id", "._use_triton",
              "._get_train_sampler", "trl_grpo.parse_response", "super(Qwen3VLProcessor", "load_response_template",
              "apply_rotary_pos_emb", "from liger_kernel", "import liger_kernel",
              "_hf_deepspeed_config_weak_ref"]
    offenders = [f"{path.relative_to(REPO)}: {name}"
                 for folder in ("rewards", "data_builders", "agent", "train", "eval")
                 for path in sorted((REPO / folder).rglob("*.py"))
                 for name in fenced if name in path.read_text(encoding="utf-8")]
    assert not offenders, offenders


def test_outside_deepspeed_zero3_hides_a_live_zero3_config_and_puts_it_back():
    """transformers decides to build inside ``zero.Init`` from a module-level weakref to the live
    ``HfDeepSpeedConfig`` (a ZeRO-3 TrainingArguments makes one); the embedded default is built with it hidden."""
    from transformers.integrations import HfDeepSpeedConfig, is_deepspeed_zero3_enabled

    ds_config = HfDeepSpeedConfig({"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1})
    try:
        assert is_deepspeed_zero3_enabled()
        with trl_surface.outside_deepspeed_zero3():
            assert not is_deepspeed_zero3_enabled()
        assert is_deepspeed_zero3_enabled()
    finally:
        from transformers.integrations.deepspeed import unset_hf_deepspeed_config

        unset_hf_deepspeed_config()
        del ds_config
