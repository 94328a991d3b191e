"""A curriculum recipe's training stages run in-process under a test's own folder (the slow learning tests).

``run_training_stages(recipe, root, model)`` runs the stages ``train.curriculum.plan`` makes of ``recipe``
(the eval stage left out), each stage's paths under the recipe's ``output_dir`` moved under ``root``,
then its last stage once more at learning rate 0 for one step (``grpo_lr0``: the control whose weights
stay the cold start's). Returns ``{stage name: its output folder}``.
"""

from __future__ import annotations

import contextlib
import importlib
from pathlib import Path

import yaml


def _moved(value, old: str, new: str):
    """A stage recipe's path under the recipe's output_dir, moved to the test's folder."""
    if isinstance(value, str) and value.startswith(old):
        return new + value[len(old):]
    return value


def run_training_stages(recipe: str, root: Path, model: str) -> dict[str, Path]:
    from lookcloser.train.curriculum import _module_name, plan

    stages = [s for s in plan(recipe, model=model) if s.script != "eval/compare.py"]
    recipe_out = str(stages[0].output_dir.parent)
    run: dict[str, Path] = {}
    for stage in [*stages, stages[-1]]:
        name = stage.name if stage.name not in run else "grpo_lr0"
        config = {k: _moved(v, recipe_out, str(root)) for k, v in stage.config.items()}
        config["output_dir"] = str(root / name)
        if name == "grpo_lr0":
            config.update(learning_rate=0.0, max_steps=1)
        (root / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        module = importlib.import_module(_module_name(stage.script))
        module.main(*module.parse_args([str(root / f"{name}.yaml")]))
        run[name] = root / name
    return run


@contextlib.contextmanager
def one_torch_thread():
    """One torch thread while the slow runs train and evaluate: on oversubscribed shared CPUs OpenMP's
    spin-waits cost 20x; TRL's experimental-feature warning silenced (environment_factory is the point)."""
    import os

    import torch

    os.environ["TRL_EXPERIMENTAL_SILENCE"] = "1"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
