"""lookcloser's rewards inside the real trainers' code, each run in its own venv by tests/test_rewards_trainers.py.

    python testing/trainer_rewards.py rewards-only ROWS_JSON
    python testing/trainer_rewards.py verl TOKENIZER_DIR ROWS_JSON OVERRIDES_JSON [OVERRIDES_JSON ...]
    python testing/trainer_rewards.py openrlhf TOKENIZER_DIR ROWS_JSON REWARD_FILE

Each prints one JSON object for the test to check. ``ROWS_JSON`` is a file of rows
``{"data_source", "response", "gold", "extra_info", "numpy"}`` (``numpy``: hand the gold over as
a numpy array, as parquet and pandas do).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace


def _rows(path: str) -> list[dict]:
    rows = json.loads(Path(path).read_text())
    if any(row.get("numpy") for row in rows):
        import numpy as np

        for row in rows:
            if row.get("numpy"):
                row["gold"] = np.array(row["gold"], dtype=object)
    return rows


def _errors() -> dict:
    from lookcloser.rewards import scoring

    return dict(scoring.ERRORS)


def rewards_only(rows_path: str) -> dict:
    """Every benchmark through the one scoring entry, the TRL functions, the verl adapter and the OpenRLHF core."""
    from lookcloser import rewards
    from lookcloser.rewards import llm_judge, openrlhf, scoring, verl

    out = {"score": [], "trl": [], "verl": [], "openrlhf": []}
    for row in _rows(rows_path):
        source, response, gold, extra = row["data_source"], row["response"], row["gold"], row.get("extra_info")
        out["score"].append(scoring.score(source, response, gold, extra=extra))
        out["trl"].append(rewards.REGISTRY["accuracy"]([response], data_source=[source],
                                                       reward_info=[json.dumps(gold)])[0])
        out["verl"].append(verl.compute_score(source, response, gold, extra))
        label = json.dumps({"data_source": source, "reward_info": gold})
        out["openrlhf"].append(openrlhf.score_label("PROMPT" + response, "PROMPT", label))
    try:
        rewards.trl_rewards.make_judged_reward("imagemining", llm_judge=True)
        out["judge_error"] = None
    except ImportError as err:
        out["judge_error"] = str(err)
    out["judge_modules"] = list(llm_judge.JUDGE_MODULES)
    out["heavy_modules"] = sorted(m for m in sys.modules if m.split(".")[0] in
                                  ("torch", "transformers", "trl", "deepspeed", "wandb"))
    return out


def verl_rows(tokenizer_dir: str, rows_path: str, *override_sets: str) -> dict:
    """Compose verl's own ppo_trainer config with each override set, load the reward manager the way
    verl's reward loop does (``load_reward_manager``) and score every row through its ``run_single``.

    What is not verl's code here: the Ray actor that calls ``run_single`` (RewardLoopWorker), replaced by
    calling it on the manager's event loop, and the rollout, replaced by the rows' responses tokenized."""
    import numpy as np
    import torch
    import verl
    from hydra import compose, initialize_config_dir
    from transformers import AutoTokenizer
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    rows = _rows(rows_path)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Which option?"}], tokenize=False,
                                           add_generation_prompt=True)
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    results = []
    for overrides in override_sets:
        overrides = json.loads(overrides)
        with initialize_config_dir(str(Path(verl.__file__).parent / "trainer" / "config"), version_base=None):
            config = compose("ppo_trainer", overrides=overrides)
        reward = config.reward.custom_reward_function
        result = {"overrides": overrides, "path": reward.path, "name": reward.name, "scores": [], "errors": []}
        manager = load_reward_manager(config, tokenizer)
        result["manager"] = type(manager).__name__
        for row in rows:
            response_ids = tokenizer(row["response"], add_special_tokens=False)["input_ids"]
            data = DataProto.from_dict(
                tensors={"prompts": torch.tensor([prompt_ids]), "responses": torch.tensor([response_ids]),
                         "attention_mask": torch.ones(1, len(prompt_ids) + len(response_ids), dtype=torch.long)},
                non_tensors={"data_source": np.array([row["data_source"]], dtype=object),
                             "reward_model": np.array([{"ground_truth": row["gold"]}], dtype=object),
                             "extra_info": np.array([dict(row.get("extra_info") or {})], dtype=object)})
            try:
                scored = manager.loop.run_until_complete(manager.run_single(data))
                result["scores"].append(float(scored["reward_score"]))
                result["errors"].append(None)
            except Exception as err:  # noqa: BLE001 - reported to the test, which asserts on it
                result["scores"].append(None)
                result["errors"].append(f"{type(err).__name__}: {err}")
        results.append(result)
    return {"runs": results, "counted": _errors(), "verl": verl.__version__}


class ScriptedEngine:
    """Stands in for OpenRLHF's vLLM engine (a Ray actor around vLLM: neither runs here): ``generate``
    answers with the scripted response's token ids, as vLLM's RequestOutput would carry them."""

    def __init__(self, token_ids: list[int]):
        self.token_ids = token_ids

    async def generate(self, prompt_token_ids, sampling_params, multi_modal_data=None):
        output = SimpleNamespace(token_ids=self.token_ids, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


def openrlhf_rows(tokenizer_dir: str, rows_path: str, reward_file: str) -> dict:
    """OpenRLHF's own executor loads ``reward_file`` as ``--remote_rm_url`` does and scores every row."""
    from openrlhf.utils.agent import SingleTurnAgentExecutor
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    executor = SingleTurnAgentExecutor(reward_file)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Which option?"}], tokenize=False,
                                           add_generation_prompt=True)
    results = []
    for row in _rows(rows_path):
        label = row["label"] if "label" in row else json.dumps({"data_source": row["data_source"],
                                                                 "reward_info": row["gold"]})
        ids = tokenizer(row["response"] + "<|im_end|>", add_special_tokens=False)["input_ids"]
        out = asyncio.run(executor.execute(prompt, label, SimpleNamespace(max_tokens=len(ids) + 8, logprobs=None),
                                           4096, tokenizer, ScriptedEngine(ids)))
        reward = out["reward"]
        results.append({"reward": None if reward is None else float(reward), "scores": float(out["scores"]),
                        "reward_type": type(reward).__name__,
                        "logs": {k: float(v) for k, v in out["extra_logs"].items()}})
    return {"rows": results, "counted": _errors()}


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    run = {"rewards-only": rewards_only, "verl": verl_rows, "openrlhf": openrlhf_rows}[command]
    print(json.dumps(run(*args)))
