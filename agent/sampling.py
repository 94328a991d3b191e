"""Sample k one-turn answers per MIR question from a model: the difficulty filter's pass rates.

``data_builders.difficulty.build_difficulty`` scores what this returns (``python -m data_builders
difficulty --model``); upstream's prompt is ``data_builders.difficulty.sampling_prompt``.
"""

from __future__ import annotations

from lookcloser.agent.hf_policy import HFPolicy
from lookcloser.agent.loop import run_episodes
from lookcloser.agent.models import load_model, load_processor
from lookcloser.agent.toolkit import NoToolsEnv
from lookcloser.data_builders.difficulty import sampling_prompt


def sample_predictions(records: list[dict], model_name_or_path: str, k: int = 10, *, batch_size: int = 32,
                       max_new_tokens: int = 512, progress: bool = True, **generation) -> dict[str, list[str]]:
    """Sample ``k`` answers per record from a model through ``agent.loop`` (one turn, no tools).

    ``records`` hold absolute image paths (``mir.load_mir_records``). Sampling defaults to
    upstream's settings: temperature 0.7, top-p 0.8, repetition penalty 1.05, 512 new tokens.
    """
    from tqdm import tqdm

    settings = {"do_sample": True, "temperature": 0.7, "top_p": 0.8, "repetition_penalty": 1.05, **generation}
    policy = HFPolicy(load_model(model_name_or_path), load_processor(model_name_or_path), generation_kwargs=settings)
    examples = [{"id": str(r["id"]), "prompt": [sampling_prompt(r)], "images": r["images"]}
                for r in records for _ in range(k)]
    out: dict[str, list[str]] = {}
    for start in tqdm(range(0, len(examples), batch_size), desc="sampling", disable=None if progress else True):
        chunk = examples[start:start + batch_size]
        trajectories = run_episodes(policy, NoToolsEnv, chunk, max_turns=1, max_new_tokens_per_turn=max_new_tokens,
                                    system_prompt="")
        for example, trajectory in zip(chunk, trajectories):
            out.setdefault(example["id"], []).append(trajectory.final_response)
    return out
