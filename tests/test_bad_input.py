"""Each kind of bad input stops with one clear message naming the file, the record and the field."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from lookcloser.data_builders.mir import load_mir_records
from lookcloser.data_builders.records import RecordError
from lookcloser.recipes import RecipeError, parse_recipe
from tests.conftest import REPO, SAMPLE_MIR


@pytest.fixture()
def mir_copy(tmp_path):
    """A writable copy of the bundled sample (JSON + images)."""
    root = tmp_path / "mir"
    shutil.copytree(SAMPLE_MIR.parent, root)
    return root / "all_data_rel.json"


def _rewrite(path, mutate):
    records = json.loads(path.read_text())
    mutate(records)
    path.write_text(json.dumps(records))


def test_missing_data_file(tmp_path):
    with pytest.raises(RecordError, match=r"nope\.json.*data file not found"):
        load_mir_records(tmp_path / "nope.json")


def test_record_missing_a_field(mir_copy):
    _rewrite(mir_copy, lambda rs: rs[3].pop("img2img"))
    with pytest.raises(RecordError) as err:
        load_mir_records(mir_copy)
    assert (err.value.source, err.value.record_id, err.value.field) == (str(mir_copy), "colour_003", "img2img")
    assert "missing required field" in str(err.value)


def test_placeholder_count_must_match_images(mir_copy):
    _rewrite(mir_copy, lambda rs: rs[20].__setitem__("question", rs[20]["question"] + " And <image>?"))
    with pytest.raises(RecordError, match=r"record 'which_red_004', field 'images': the question has 3 <image>"):
        load_mir_records(mir_copy)


def test_numbered_placeholders_are_accepted(mir_copy):
    _rewrite(mir_copy, lambda rs: rs[20].__setitem__("question", "Is it in <image1> or in <image2>?"))
    assert len(load_mir_records(mir_copy)) == 64


def test_missing_image(mir_copy):
    (mir_copy.parent / "colour" / "005.png").unlink()
    with pytest.raises(RecordError, match=r"record 'colour_005', field 'images': image file not found"):
        load_mir_records(mir_copy)


def test_image_that_does_not_decode(mir_copy):
    (mir_copy.parent / "count" / "002.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    with pytest.raises(RecordError, match=r"record 'count_002', field 'images': image .* does not decode"):
        load_mir_records(mir_copy)


def test_image_path_may_not_leave_the_data_root(mir_copy):
    _rewrite(mir_copy, lambda rs: rs[0].__setitem__("images", ["../../etc/passwd"]))
    with pytest.raises(RecordError, match=r"record 'colour_000', field 'images': .* leaves the data root"):
        load_mir_records(mir_copy)


def test_unknown_recipe_key(tmp_path):
    from trl import ModelConfig, SFTConfig

    from lookcloser.train.sft import SFTScriptArguments

    recipe = tmp_path / "bad.yaml"
    recipe.write_text((REPO / "recipes" / "mir_stage1.yaml").read_text() + "learning_rat: 0.1\n")
    with pytest.raises(RecipeError, match=r"bad\.yaml: unknown recipe key\(s\) 'learning_rat'"):
        parse_recipe((SFTScriptArguments, SFTConfig, ModelConfig), [str(recipe)])


def test_the_script_prints_one_clear_line(mir_copy):
    _rewrite(mir_copy, lambda rs: rs[1].__setitem__("options", 42))
    proc = subprocess.run(
        [sys.executable, "train/sft.py", "recipes/mir_stage1.yaml", "--dataset_path", str(mir_copy),
         "--output_dir", str(mir_copy.parent / "out")],
        check=False, cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 2  # a user's mistake: exit 2, as argparse does
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "record 'colour_001', field 'options'" in last
    assert "Traceback" not in proc.stderr
