"""train/sft_data.py: featurized batches equal the on-the-fly collator's, packed loss equals padded, length grouping."""

from __future__ import annotations

import contextlib

import pytest
import torch

from lookcloser.agent.families import FAMILIES
from lookcloser.train.sft import build_trainer, parse_args
from lookcloser.train.sft_data import FeatureCollator, featurize, rope_index_fn

IMAGE_KEYS = FAMILIES["qwen3_vl"].image_keys  # the embedded default's per-image tensors

pytestmark = pytest.mark.usefixtures("repo_cwd")  # recipes name data relative to the repo root


def _trainer(tiny_model_dir, tmp_path, *extra):
    return build_trainer(*parse_args(["recipes/mir_stage1.yaml", "--model_name_or_path", str(tiny_model_dir),
                                      "--output_dir", str(tmp_path / "out"), "--report_to", "none", *extra]))


@pytest.fixture(scope="module")
def on_the_fly(tiny_model_dir, tmp_path_factory):
    """The recipe's trainer with on-the-fly collation: raw records and ToolTrajectoryCollator."""
    from tests.conftest import REPO

    with contextlib.chdir(REPO):  # module-scoped: the per-test repo_cwd does not reach it
        trainer = _trainer(tiny_model_dir, tmp_path_factory.mktemp("sft"), "--preprocess_once", "false")
    records = [trainer.train_dataset[i] for i in range(12)]
    featurized = featurize(records, trainer.data_collator, IMAGE_KEYS, rope_index_fn(trainer.model))
    return trainer, records, featurized


def test_featurized_batches_equal_the_on_the_fly_collators(on_the_fly):
    trainer, records, featurized = on_the_fly
    assert type(trainer.data_collator).__name__ == "ToolTrajectoryCollator"
    collate = FeatureCollator(trainer.processing_class.tokenizer.pad_token_id, IMAGE_KEYS)
    for rows in ([0, 1, 2, 3], [4, 9, 5], [11]):
        expected = trainer.data_collator([records[i] for i in rows])
        batch = collate([featurized[i] for i in rows])
        assert set(batch) == set(expected) | {"position_ids"}
        for key, value in expected.items():
            assert torch.equal(batch[key], value), key
        # The positions the model would compute itself for the padded batch.
        positions, _ = rope_index_fn(trainer.model)(expected["input_ids"], expected["mm_token_type_ids"],
                                                    image_grid_thw=expected["image_grid_thw"],
                                                    attention_mask=expected["attention_mask"])
        assert torch.equal(batch["position_ids"], positions)
    assert featurized.lengths == [int(trainer.data_collator([r])["attention_mask"].sum()) for r in records]


def test_packed_batch_loss_equals_padded_batch_loss(on_the_fly):
    trainer, _, featurized = on_the_fly
    model = trainer.model.eval()
    examples = [featurized[i] for i in (0, 3, 7, 10)]
    padded = FeatureCollator(trainer.processing_class.tokenizer.pad_token_id, IMAGE_KEYS)(examples)
    packed = FeatureCollator(trainer.processing_class.tokenizer.pad_token_id, IMAGE_KEYS, pack=True)(examples)
    assert packed["input_ids"].shape == (1, sum(featurized.lengths[i] for i in (0, 3, 7, 10)))
    assert "attention_mask" not in packed and packed["position_ids"].shape[:2] == (4, 1)
    assert int((packed["labels"] != -100).sum()) == int((padded["labels"][:, 1:] != -100).sum())
    with torch.no_grad():  # use_cache=False as in training (TRL sets it): with a cache transformers ignores packing
        loss_padded = model(**padded, use_cache=False).loss
        loss_packed = model(**packed, use_cache=False).loss
        fused = model(**packed, use_cache=False, fused_lm_head=True).loss  # TRL's loss path
    # sdpa on CPU runs the packed row with a block-diagonal mask built from the restarting positions.
    assert torch.allclose(fused, loss_padded, rtol=1e-5, atol=1e-6), (fused, loss_padded)
    assert torch.allclose(loss_packed, loss_padded, rtol=1e-5, atol=1e-6), (loss_packed, loss_padded)
    # Control: the same packed row without the position restarts lets examples attend to each other.
    leaky = dict(packed, position_ids=packed["position_ids"][1:])
    with torch.no_grad():
        assert not torch.allclose(model(**leaky, use_cache=False).loss, loss_padded, rtol=1e-5, atol=1e-6)


def test_recipe_trains_on_featurized_records_with_length_grouping(tiny_model_dir, tmp_path):
    from transformers.trainer_pt_utils import LengthGroupedSampler

    trainer = _trainer(tiny_model_dir, tmp_path, "--train_sampling_strategy", "group_by_length")
    dataset = trainer.train_dataset
    assert isinstance(trainer.data_collator, FeatureCollator) and not trainer.data_collator.pack  # sdpa: padded
    assert len(dataset) == 64 and dataset[0]["messages"][0]["role"] == "user"  # the record's prompt stays visible
    torch.manual_seed(0)
    sampler = trainer._get_train_sampler()
    assert isinstance(sampler, LengthGroupedSampler) and sampler.lengths == dataset.lengths
    order = list(sampler)
    assert sorted(order) == list(range(64))

    def padding(indices):
        size = trainer.args.train_batch_size
        batches = [indices[i:i + size] for i in range(0, len(indices), size)]
        return sum(max(dataset.lengths[i] for i in b) * len(b) - sum(dataset.lengths[i] for i in b) for b in batches)

    shuffled = torch.randperm(64, generator=torch.Generator().manual_seed(0)).tolist()
    assert padding(order) < padding(shuffled)


def test_scoring_only_labelled_tokens_keeps_the_loss(on_the_fly, monkeypatch):
    import trl.trainer.utils as trl_utils

    from lookcloser.trl_surface import score_labelled_tokens_only

    trainer, _, featurized = on_the_fly
    model = trainer.model.eval()
    batch = FeatureCollator(trainer.processing_class.tokenizer.pad_token_id, IMAGE_KEYS)([featurized[i] for i in range(6)])
    monkeypatch.setattr(trl_utils, "_use_triton", trl_utils._use_triton)  # restored after the test
    with torch.no_grad():
        every_position = model(**batch, use_cache=False, fused_lm_head=True)
        score_labelled_tokens_only()
        assert trl_utils._use_triton(torch.device("cpu"))
        labelled_only = model(**batch, use_cache=False, fused_lm_head=True)
    assert torch.allclose(labelled_only.loss, every_position.loss, rtol=1e-6)
    assert torch.equal(labelled_only.label_mask, every_position.label_mask)
    assert torch.allclose(labelled_only.entropy, every_position.entropy, rtol=1e-5, atol=1e-6)
