"""The rewards as a user of each trainer installs and runs them, with the real packages (docs/rewards.md).

- the rewards-only install (the base, no extra) into a fresh venv from PyPI: every benchmark scored
  through the one scoring entry, the TRL functions, the verl adapter and the OpenRLHF core, with
  torch neither installed nor imported;
- docs/rewards.md's TRL script in TRL's GRPOTrainer (one step of a tiny random Qwen3);
- verl 0.9.1 and OpenRLHF 0.11.2 installed ``--no-deps`` into their own venvs (never the project's),
  plus only what their reward paths import; torch and transformers come from this environment
  (a path entry), so no second torch is installed. testing/trainer_rewards.py runs inside each and
  says what is stood in for: verl's Ray actor around the reward manager, OpenRLHF's vLLM engine.

Slow (``-m slow``): each builds a venv; pip's cache keeps them short (seconds in docs/rewards.md).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "testing" / "trainer_rewards.py"
FOLDERS = ("lookcloser", "rewards", "data_builders", "agent", "train", "eval", "looktools")
# verl's reward path imports beyond torch/transformers/numpy (read from verl 0.9.1's imports:
# verl/__init__ -> protocol (ray, tensordict), trainer/ppo/reward, the reward loop's managers; the config
# is composed with hydra); pinned where verl pins (tensordict<=0.10, hydra's omegaconf 2.3 and its antlr 4.9).
AIOHTTP = ["aiohttp", "multidict", "yarl", "propcache", "aiohappyeyeballs", "aiosignal", "frozenlist", "attrs"]
VERL = ["verl==0.9.1", "ray==2.60.0", "tensordict==0.10.0", "pyvers==0.2.3", "cloudpickle", "importlib_metadata",
        "zipp", "hydra-core==1.3.2", "omegaconf==2.3.0", "antlr4-python3-runtime==4.9.3", "jsonschema",
        "jsonschema-specifications", "referencing", "rpds-py", "codetiming", *AIOHTTP]  # the reward loop imports aiohttp
OPENRLHF = ["openrlhf==0.11.2", "pylatexenc", *AIOHTTP]
TIR = {"id": 7, "task": "refcoco", "answer": "B", "prompt": "A. 65%\nB. 73%\nC. 80%", "meta_data": {}}
TOOL_OUTPUT = "0123456789abcdef " * 2000  # 36,000 characters: past the strict mode's 32,000-character cap
# One right answer per benchmark, the gold in each form loaders give.
ROWS = [
    {"data_source": "tir_bench", "response": "<think>compare</think><answer>B</answer>", "gold": TIR},
    {"data_source": "mir", "response": "Answer: C", "gold": {"answer": "C"}},
    {"data_source": "disbench", "response": '<answer>["1", "2"]</answer>', "gold": ["1", "2", "3", "4"]},
    {"data_source": "imagemining", "response": "<answer>红色</answer>", "gold": {"answer": "Red", "answer_zh": "红色"}},
]
RIGHT = [1.0, 1.0, 2 / 3, 1.0]


def _run(argv: list, cwd: Path, timeout: int = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          check=False, env=env)
    assert proc.returncode == 0, f"{argv}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel of this checkout (built from a copy, offline, as tests/test_packaging.py does)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w",
          tmp / "dist", src], cwd=tmp)
    (built,) = (tmp / "dist").glob("lookcloser-*.whl")
    return built


def _venv(path: Path, *, with_project_packages: bool) -> Path:
    """A fresh venv; with ``with_project_packages`` this environment's site-packages follow its own (torch,
    transformers: a path entry, so what the venv installs itself comes first)."""
    _run([sys.executable, "-m", "venv", "--without-pip", path], cwd=path.parent)
    python = path / "bin" / "python"
    if with_project_packages:
        purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=path.parent)
        (Path(purelib.stdout.strip()) / "project_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _pip(python: Path, *args) -> None:
    _run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--disable-pip-version-check", *args],
         cwd=python.parent, timeout=600)


def _probe(python: Path, tmp: Path, *args) -> dict:
    env = {**os.environ, "LOOKCLOSER_REWARD_ERRORS": "raise"}  # a scorer bug fails the test (tests/conftest.py)
    env.pop("PYTHONPATH", None)
    out = _run([python, PROBE, *args], cwd=tmp, env=env, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])


def _documented(section: str) -> str:
    """A trainer's section of docs/rewards.md."""
    text = (REPO / "docs" / "rewards.md").read_text(encoding="utf-8")
    return text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]


@pytest.mark.slow
def test_rewards_only_install(wheel, tmp_path):
    install = re.search(r"^pip install -e \.\s", _documented("Install"), re.MULTILINE)
    assert install, "docs/rewards.md's install line changed: update this test"
    python = _venv(tmp_path / "venv", with_project_packages=False)
    _pip(python, wheel)  # the base install: its dependencies from the index, as a user gets them
    code = "import importlib.util as u; print([m for m in ('torch', 'transformers', 'trl', 'deepspeed', 'wandb') " \
        "if u.find_spec(m)])"
    installed = _run([python, "-c", code], cwd=tmp_path).stdout.strip()
    assert installed == "[]"  # none of them installed at all
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(ROWS))
    out = _probe(python, tmp_path, "rewards-only", rows)
    for way in ("score", "trl", "verl"):
        assert out[way] == pytest.approx(RIGHT), way
    assert out["openrlhf"] == [[pytest.approx(v), None] for v in RIGHT]
    assert out["heavy_modules"] == []  # torch never imported
    assert out["judge_error"] and "httpx2 and orjson" in out["judge_error"] and "lookcloser[judge]" in out["judge_error"]


def _tiny_text_qwen3(tokenizer_dir: Path, out: Path) -> Path:
    """A random 1-layer Qwen3 (text only: AutoProcessor gives its tokenizer) with the tiny model's tokenizer."""
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
                         tie_word_embeddings=True)
    Qwen3ForCausalLM(config).save_pretrained(out)
    tokenizer.save_pretrained(out)
    settings = json.loads((out / "tokenizer_config.json").read_text())
    settings.pop("processor_class", None)  # the VL processor's name: this model has no image processor
    (out / "tokenizer_config.json").write_text(json.dumps(settings))
    return out


@pytest.mark.slow
def test_trl(tmp_path, tiny_model_dir):
    """docs/rewards.md's TRL script, as written, in TRL's own GRPOTrainer (the installed training extra)."""
    block = _documented("TRL").split("```python\n", 1)[1].split("```", 1)[0]
    assert 'model="Qwen/Qwen3-0.6B"' in block
    model = _tiny_text_qwen3(tiny_model_dir, tmp_path / "model")
    (tmp_path / "run.py").write_text(block.replace('"Qwen/Qwen3-0.6B"', repr(str(model))))
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1", "OMP_NUM_THREADS": "1"}
    out = _run([sys.executable, "run.py"], cwd=tmp_path, env=env).stdout
    logged = ast.literal_eval(out.strip().splitlines()[-1])  # the dict the script prints
    assert 0.0 <= logged["rewards/accuracy/mean"] <= 1.0 and "rewards/format/mean" in logged, logged
    assert not [k for k in logged if k.startswith("rewards/errors/")], logged  # every row scored


def _verl_overrides() -> list[str]:
    """The overrides of docs/rewards.md's verl command, as a user pastes them."""
    command = _documented("verl").split("python3 -m verl.trainer.main_ppo", 1)[1].split("```", 1)[0]
    return [word for word in command.replace("\\\n", " ").split() if "=" in word]


@pytest.mark.slow
def test_verl(wheel, tmp_path, tiny_model_dir):
    documented = _verl_overrides()
    assert documented == ["data.train_files=train.parquet", "data.val_files=val.parquet",
                          "reward.custom_reward_function.path=pkg://lookcloser.rewards.verl",
                          "reward.custom_reward_function.name=compute_score"]
    python = _venv(tmp_path / "venv", with_project_packages=True)
    _pip(python, "--no-deps", wheel, *VERL)
    rows = [*ROWS,
            {**ROWS[2], "gold": ROWS[2]["gold"], "numpy": True},  # parquet/pandas hand a numpy array over
            {"data_source": "tir_bench", "gold": json.dumps(TIR),  # multi-turn: tool output, then the answer
             "response": "<tool_call>crop</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n" + TOOL_OUTPUT
                         + "\n</tool_response><|im_end|>\n<|im_start|>assistant\n<answer>B</answer>"},
            {"data_source": "mir", "response": "Answer: C", "gold": None},  # no gold: 0.0, counted
            {"data_source": "openai/gsm8k", "response": "so #### 72", "gold": "72"}]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    fallback = [*documented[:3], "reward.custom_reward_function.name=compute_score_or_default"]
    legacy = ["custom_reward_function.path=pkg://lookcloser.rewards.verl", "custom_reward_function.name=compute_score"]
    out = _probe(python, tmp_path, "verl", tiny_model_dir, tmp_path / "rows.json",
                 *(json.dumps(o) for o in (documented, fallback, legacy)))
    assert out["verl"] == "0.9.1"
    ours, with_default, old = out["runs"]
    assert (ours["path"], ours["name"], ours["manager"]) == ("pkg://lookcloser.rewards.verl", "compute_score",
                                                             "NaiveRewardManager")
    assert ours["scores"][:7] == pytest.approx([*RIGHT, 2 / 3, 1.0, 0.0])  # numpy gold as the list; final turn
    assert "unknown data_source 'openai/gsm8k'" in ours["errors"][7] and ours["scores"][7] is None  # loud
    assert with_default["scores"] == pytest.approx([*RIGHT, 2 / 3, 1.0, 0.0, 1.0])  # gsm8k: verl's own scorer
    assert out["counted"] == {"bad_gold": 2}  # the None gold, once per run that reached it
    # The legacy top-level key composes to nothing: verl's default scorer, which knows no TIR-Bench.
    assert old["path"] is None and "NotImplementedError" in old["errors"][0]


@pytest.mark.slow
def test_openrlhf(wheel, tmp_path, tiny_model_dir):
    command = _documented("OpenRLHF").split("python3 -m openrlhf.cli.train_ppo_ray", 1)[1].split("```", 1)[0]
    assert "--reward.remote_url \"$(python3 -c 'import lookcloser.rewards.openrlhf as m; print(m.__file__)')\"" in command
    python = _venv(tmp_path / "venv", with_project_packages=True)
    _pip(python, "--no-deps", wheel, *OPENRLHF)
    # Every flag of the documented command is one OpenRLHF 0.11.2's own CLI defines (its parser sits under
    # `if __name__ == "__main__"` beside Ray and DeepSpeed start-up, so its source is read, not run).
    cli = _run([python, "-c", "import importlib.util as u; print(u.find_spec('openrlhf').submodule_search_locations[0])"],
               cwd=tmp_path).stdout.strip()
    defined = set(re.findall(r'add_argument\(\s*"(--[\w.]+)"', (Path(cli) / "cli" / "train_ppo_ray.py").read_text()))
    flags = set(re.findall(r"(?<!\S)(--[\w.]+)", command))
    assert flags == {"--data.prompt_dataset", "--data.input_key", "--data.label_key", "--data.apply_chat_template",
                     "--reward.remote_url"} and flags <= defined, flags - defined
    reward_file = _run([python, "-c", "import lookcloser.rewards.openrlhf as m; print(m.__file__)"],
                       cwd=tmp_path).stdout.strip()
    assert Path(reward_file).is_relative_to(tmp_path / "venv")  # the installed file, not the checkout's
    rows = [*ROWS,
            {"data_source": "mir", "response": "Answer: C", "label": "C"},  # not the documented label
            {"data_source": "disbench", "response": "<answer>1</answer>", "label": json.dumps(
                {"data_source": "disbench", "reward_info": {"answer": None}})},
            {"data_source": "gsm8k", "response": "72", "label": json.dumps({"data_source": "gsm8k", "reward_info": "72"})}]
    (tmp_path / "rows.json").write_text(json.dumps(rows))
    out = _probe(python, tmp_path, "openrlhf", tiny_model_dir, tmp_path / "rows.json", reward_file)
    rewards = [row["reward"] for row in out["rows"]]
    assert rewards == pytest.approx([*RIGHT, 0.0, 0.0, 0.0])  # never None
    assert {row["reward_type"] for row in out["rows"]} == {"Tensor"}
    reasons = [[k for k, v in row["logs"].items() if v] for row in out["rows"]]
    assert reasons == [[], [], [], [], ["rewards/errors/bad_label"], ["rewards/errors/bad_gold"],
                       ["rewards/errors/unknown_source"]]
    assert out["counted"] == {"bad_label": 1, "bad_gold": 1, "unknown_source": 1}
