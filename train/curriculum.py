"""Train a curriculum: stages in order, each from the previous stage's checkpoint, resumable.

    python train/curriculum.py recipes/mir_curriculum.yaml
    python train/curriculum.py recipes/mir_curriculum.yaml --skip imagenet_think --dry-run
    accelerate launch train/curriculum.py recipes/mir_curriculum.yaml

The recipe names an ``output_dir``, ``defaults`` (recipe keys of the stage script shared by every
stage) and a list of ``stages``; each stage has a ``name``, optionally a ``script`` (default
``train/sft.py``; ``train/grpo.py`` is the hook for the GRPO stage), optionally a base ``recipe``
file, ``use_defaults: false`` to ignore ``defaults`` (a script with other keys), and its own recipe keys. A stage trains into ``output_dir/<name>``, its full recipe is
written there as ``stage_recipe.yaml``, and the model it starts from is the previous stage's
output (the first stage's ``model_name_or_path`` comes from the recipe).

Resumable: a finished stage writes ``curriculum_done.json``; rerunning skips it. A stage that
stopped half-way resumes from its last ``checkpoint-*`` (when its ``save_strategy`` wrote any).
``launcher`` runs each stage as a subprocess (``"accelerate launch --config_file ..."``) instead
of in this process, for setups (DeepSpeed ZeRO-3) that should start fresh per stage.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from train.recipes import RecipeError, load_recipe_mapping

DEFAULT_SCRIPT = "train/sft.py"
MARKER = "curriculum_done.json"
STAGE_KEYS = ("name", "script", "recipe", "use_defaults")  # curriculum bookkeeping, not passed to the script
TOP_KEYS = ("output_dir", "defaults", "stages", "launcher")


class CurriculumError(RecipeError):
    pass


@dataclass
class Stage:
    name: str
    script: str
    config: dict  # the stage script's full recipe
    output_dir: Path

    @property
    def marker(self) -> Path:
        return self.output_dir / MARKER

    @property
    def done(self) -> bool:
        return self.marker.is_file()


def _load_yaml(path: Path, what: str) -> dict:
    return load_recipe_mapping(path, what)


def plan(recipe_path: str | Path, skip: tuple[str, ...] = ()) -> list[Stage]:
    """Resolve the curriculum recipe into stages with their full recipes and chained checkpoints.

    Skipped stages drop out of the chain: the next stage starts from the last one kept.
    """
    recipe_path = Path(recipe_path)
    recipe = _load_yaml(recipe_path, "curriculum recipe")
    unknown = sorted(set(recipe) - set(TOP_KEYS))
    if unknown:
        raise CurriculumError(f"{recipe_path}: unknown key(s) {unknown}; a curriculum has {list(TOP_KEYS)}")
    stages_raw = recipe.get("stages")
    if not isinstance(stages_raw, list) or not stages_raw:
        raise CurriculumError(f"{recipe_path}: 'stages' must be a non-empty list")
    root = Path(recipe.get("output_dir") or "outputs/curriculum")
    defaults = recipe.get("defaults") or {}
    names = [s.get("name") if isinstance(s, dict) else None for s in stages_raw]
    if any(not isinstance(n, str) or not n for n in names) or len(set(names)) != len(names):
        raise CurriculumError(f"{recipe_path}: every stage needs a unique 'name' (got {names})")
    missing_skips = sorted(set(skip) - set(names))
    if missing_skips:
        raise CurriculumError(f"--skip names no stage: {missing_skips}; stages are {names}")
    stages: list[Stage] = []
    for raw in stages_raw:
        if raw["name"] in skip:
            continue
        base = _load_yaml(Path(raw["recipe"]), f"base recipe of stage {raw['name']!r}") if raw.get("recipe") else {}
        own = {k: v for k, v in raw.items() if k not in STAGE_KEYS}
        if stages and "model_name_or_path" in own:
            raise CurriculumError(f"{recipe_path}: stage {raw['name']!r} sets model_name_or_path, but every stage "
                                  "after the first starts from the previous stage's checkpoint")
        # A stage with another script (GRPO) has other recipe keys: it can opt out of the SFT defaults.
        config = {**(defaults if raw.get("use_defaults", True) else {}), **base, **own}
        output_dir = root / raw["name"]
        config["output_dir"] = str(output_dir)
        if stages:
            config["model_name_or_path"] = str(stages[-1].output_dir)
        stages.append(Stage(raw["name"], raw.get("script") or DEFAULT_SCRIPT, config, output_dir))
    return stages


def check_inputs(stages: list[Stage]) -> None:
    """Fail before any training when a pending stage's data is missing (not after hours of stage 1)."""
    problems = []
    for stage in stages:
        path = stage.config.get("dataset_path")
        if not stage.done and path and not Path(path).exists():
            problems.append(f"stage {stage.name!r}: dataset_path {path} not found")
    if problems:
        raise CurriculumError("; ".join(problems) + " (build it with `python -m data_builders ...`, see docs/data.md, "
                              "or leave the stage out with --skip NAME)")


def _last_checkpoint(output_dir: Path) -> Path | None:
    checkpoints = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(checkpoints, key=lambda p: int(p.name.split("-")[-1]), default=None)


def _module_name(script: str) -> str:
    """``train/sft.py`` -> ``train.sft``.

    >>> _module_name("train/grpo.py")
    'train.grpo'
    """
    return script.removesuffix(".py").replace("/", ".").replace("\\", ".")


def run_stage(stage: Stage, launcher: str | None) -> None:
    stage.output_dir.mkdir(parents=True, exist_ok=True)
    config = dict(stage.config)
    checkpoint = _last_checkpoint(stage.output_dir)
    if checkpoint is not None:
        config["resume_from_checkpoint"] = str(checkpoint)
    stage_recipe = stage.output_dir / "stage_recipe.yaml"
    stage_recipe.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    if launcher:
        subprocess.run([*shlex.split(launcher), stage.script, str(stage_recipe)], check=True)
        return
    module = importlib.import_module(_module_name(stage.script))
    module.main(*module.parse_args([str(stage_recipe)]))


def _is_main_process() -> bool:
    from accelerate import PartialState

    return PartialState().is_main_process


def _barrier() -> None:
    from accelerate import PartialState

    PartialState().wait_for_everyone()


def run(recipe_path: str | Path, skip: tuple[str, ...] = (), dry_run: bool = False) -> list[Stage]:
    recipe = _load_yaml(Path(recipe_path), "curriculum recipe")
    stages = plan(recipe_path, skip)
    for stage in stages:
        state = "done, skipped" if stage.done else "to train"
        print(f"[curriculum] {stage.name}: {stage.script} from {stage.config.get('model_name_or_path')} -> "
              f"{stage.output_dir} ({state})", flush=True)
    if dry_run:
        return stages
    check_inputs(stages)
    launcher = recipe.get("launcher")
    for stage in stages:
        if stage.done:
            finished = json.loads(stage.marker.read_text(encoding="utf-8"))
            if finished.get("config") != stage.config:
                print(f"[curriculum] warning: {stage.name} finished with a different recipe; delete "
                      f"{stage.marker} to train it again", flush=True)
            continue
        started = time.time()
        run_stage(stage, launcher)
        if launcher or _is_main_process():  # in-process under accelerate: every rank trains, one writes
            stage.marker.write_text(json.dumps({"name": stage.name, "config": stage.config,
                                                "seconds": round(time.time() - started, 1)}, indent=2))
        if not launcher:
            _barrier()
        gc.collect()
        print(f"[curriculum] {stage.name}: finished in {time.time() - started:.0f}s", flush=True)
    return stages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("recipe", type=Path)
    parser.add_argument("--skip", action="append", default=[], help="leave a stage out (repeatable)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    args = parser.parse_args(argv)
    try:
        run(args.recipe, tuple(args.skip), args.dry_run)
    except RecipeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
