"""A checkpoint with empty or missing tensors is refused in one line naming its folder; the embedded
default's cache is rebuilt instead (issue 40: a ZeRO-3 launch once cached it with 63 of 64 tensors empty)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

from lookcloser.agent.models import TINY_MODEL_NAME, embedded_model_cache_dir, load_model, resolve_model_path
from lookcloser.checkpoints import save_checkpoint, weights_problem
from lookcloser.errors import ModelPathError


def _empty_one_tensor(folder, name="model.language_model.layers.0.mlp.up_proj.weight"):
    weights = load_file(folder / "model.safetensors")
    assert name in weights
    weights[name] = torch.empty(0)  # what a ZeRO-3 rank's shard of a zero.Init-built model holds
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})


def test_a_folder_with_an_empty_tensor_is_refused_in_one_line_naming_it(tiny_model_dir, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    assert weights_problem(broken) is None
    _empty_one_tensor(broken)
    with pytest.raises(ModelPathError) as err:
        resolve_model_path(str(broken))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{broken}: not a whole checkpoint")
    assert "1 of" in message and "up_proj" in message


def test_a_shard_or_tensor_the_index_names_but_lacks_is_refused(tiny_model_dir, tmp_path):
    sharded = tmp_path / "sharded"
    shutil.copytree(tiny_model_dir, sharded)
    names = list(load_file(sharded / "model.safetensors"))
    index = {"metadata": {}, "weight_map": {**dict.fromkeys(names, "model.safetensors"), "extra.weight": "model.safetensors"}}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    assert "in no shard, e.g. 'extra.weight'" in weights_problem(sharded)
    index["weight_map"]["extra.weight"] = "model-00002-of-00002.safetensors"
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelPathError, match="missing shard.*model-00002-of-00002"):
        resolve_model_path(str(sharded))


def test_a_poisoned_embedded_cache_is_rebuilt_whole(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("LOOKCLOSER_CACHE", str(tmp_path / "cache"))
    cached = embedded_model_cache_dir()
    assert resolve_model_path(TINY_MODEL_NAME) == str(cached)
    good = load_file(cached / "model.safetensors")
    _empty_one_tensor(cached)
    with caplog.at_level("WARNING", logger="lookcloser.agent.models"):
        assert resolve_model_path(TINY_MODEL_NAME) == str(cached)
    assert weights_problem(cached) is None
    rebuilt = load_file(cached / "model.safetensors")
    assert rebuilt.keys() == good.keys() and all(torch.equal(rebuilt[k], good[k]) for k in good)
    [line] = [r.getMessage() for r in caplog.records if "rebuilding" in r.getMessage()]
    assert line.startswith(f"{cached}: not a whole checkpoint")
    assert not list(cached.parent.glob(f".{cached.name}.tmp-*"))  # no private build folder left behind


def test_a_model_with_empty_parameters_is_not_saved(tiny_model_dir, tmp_path):
    from lookcloser.agent.models import load_processor

    model = load_model(str(tiny_model_dir))
    model.lm_head.weight.data = torch.empty(0)
    with pytest.raises(ModelPathError, match=r"not saved, 1 of the model's tensors are empty \(e.g. lm_head.weight"):
        save_checkpoint(tmp_path / "out", model, load_processor(str(tiny_model_dir)))
    assert not (tmp_path / "out").exists()
