"""Train a curriculum: stages in order, each from the previous stage's checkpoint, resumable.

    python train/curriculum.py recipes/mir_curriculum.yaml
    python train/curriculum.py recipes/mir_curriculum.yaml --skip imagenet_think --dry_run
    accelerate launch train/curriculum.py recipes/mir_curriculum.yaml

The recipe names an ``output_dir``, ``defaults`` (recipe keys of the stage script shared by every
stage) and a list of ``stages``; each stage has a ``name``, optionally a ``script`` (default
``train/sft.py``; ``train/grpo.py`` is the hook for the GRPO stage), optionally a base ``recipe``
file, ``use_defaults: false`` to ignore ``defaults`` (a script with other keys), and its own
recipe keys. A stage trains into ``output_dir/<name>``, its full recipe is written there as ``stage_recipe.yaml``, and the model it starts from is the previous stage's
output (the first stage's ``model_name_or_path`` comes from the recipe).

Resumable and never stale: a finished stage writes ``curriculum_done.json`` with what it trained
from (its recipe, a digest of its starting checkpoint and of its data). A rerun skips it only
while all three are unchanged; otherwise it trains again, and so does every stage after it (a
stage added before finished ones, e.g. one left out with ``--skip`` before, retrains the rest).
A stage that stopped half-way resumes from its last ``checkpoint-*`` when its inputs are the
same. ``--dry_run`` prints what would train and why, and checks every pending stage's data.
``launcher`` runs each stage as a subprocess (``"accelerate launch --config_file ..."``) instead
of in this process, for setups (DeepSpeed ZeRO-3) that should start fresh per stage; in-process
stages get the thread setting ``accelerate launch`` gives (OMP_NUM_THREADS, default 1).
"""

from __future__ import annotations

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

from lookcloser.recipes import RecipeError, load_recipe_mapping

DEFAULT_SCRIPT = "train/sft.py"
MARKER = "curriculum_done.json"
STAGE_KEYS = ("name", "script", "recipe", "use_defaults", "makes_model")  # curriculum bookkeeping, not passed on
TOP_KEYS = ("output_dir", "defaults", "stages", "launcher")


class CurriculumError(RecipeError):
    pass


@dataclass
class Stage:
    name: str
    script: str
    config: dict  # the stage script's full recipe
    output_dir: Path
    makes_model: bool = True  # false: a data stage (train/grpo_tasks.py), outside the checkpoint chain

    @property
    def marker(self) -> Path:
        return self.output_dir / MARKER

    @property
    def done(self) -> bool:
        return self.marker.is_file()


def _load_yaml(path: Path, what: str) -> dict:
    return load_recipe_mapping(path, what)


def plan(recipe_path: str | Path, skip: tuple[str, ...] = (), model: str | None = None) -> list[Stage]:
    """Resolve the curriculum recipe into stages with their full recipes and chained checkpoints.

    Skipped stages drop out of the chain: the next stage starts from the last one kept. Stages
    with ``makes_model: false`` (data stages) neither take nor pass a checkpoint. ``model``
    replaces the recipe's ``model_name_or_path`` wherever it is set (not chained).
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
        makes_model = bool(raw.get("makes_model", True))
        chained = [s for s in stages if s.makes_model]
        if makes_model and chained and "model_name_or_path" in own:
            raise CurriculumError(f"{recipe_path}: stage {raw['name']!r} sets model_name_or_path, but every stage "
                                  "after the first starts from the previous stage's checkpoint")
        # A stage with another script (GRPO) has other recipe keys: it can opt out of the SFT defaults.
        config = {**(defaults if raw.get("use_defaults", True) else {}), **base, **own}
        output_dir = root / raw["name"]
        config["output_dir"] = str(output_dir)
        if model and "model_name_or_path" in config:
            config["model_name_or_path"] = model
        if makes_model and chained:
            config["model_name_or_path"] = str(chained[-1].output_dir)
        stages.append(Stage(raw["name"], raw.get("script") or DEFAULT_SCRIPT, config, output_dir, makes_model))
    return stages


def check_inputs(stages: list[Stage], pending: set[str] | None = None) -> None:
    """Fail before any training when a pending stage's data is missing (not after hours of stage 1)."""
    problems = []
    writers = [s.output_dir.resolve() for s in stages if (not s.done if pending is None else s.name in pending)]
    for stage in stages:
        path = stage.config.get("dataset_path")
        to_run = not stage.done if pending is None else stage.name in pending
        made_here = bool(path) and any(Path(path).resolve().is_relative_to(out) for out in writers)
        if to_run and path and not made_here and not Path(path).exists():  # made_here: a data stage writes it
            problems.append(f"stage {stage.name!r}: dataset_path {path} not found")
    if problems:
        raise CurriculumError("; ".join(problems) + " (build it with `python -m data_builders ...`, see docs/data.md, "
                              "or leave the stage out with --skip NAME)")


# -- what a stage was trained from: a rerun is needed when any of it changed --

def path_digest(path: str | Path | None, checkpoint: bool = False) -> str | None:
    """A digest of a file, a folder (data: every file; ``checkpoint``: config + weights), or a name."""
    import hashlib

    from lookcloser.agent.checkpoint_digest import checkpoint_digest, update_file_digest

    if not path:
        return None
    p = Path(path)
    if p.is_dir() and checkpoint:
        return checkpoint_digest(p)
    digest = hashlib.sha256()
    if p.is_file():
        update_file_digest(digest, p, p.name)
    elif p.is_dir():
        for f in sorted(f for f in p.rglob("*") if f.is_file()):
            update_file_digest(digest, f, str(f.relative_to(p)))
    else:
        digest.update(str(path).encode())  # a hub id or the reserved tiny name: its name is what we know
    return digest.hexdigest()[:16]


def stage_inputs(stage: Stage) -> dict:
    """What a stage trains from: its recipe, its starting checkpoint's content and its data's content."""
    return {"config": stage.config, "start": path_digest(stage.config.get("model_name_or_path"), checkpoint=True),
            "data": path_digest(stage.config.get("dataset_path"))}


def _changes(recorded: dict, current: dict) -> list[str]:
    if "inputs" not in recorded:  # a marker from before inputs were recorded: compare the recipe only
        recorded = {"inputs": {"config": recorded.get("config"), "start": current["start"], "data": current["data"]}}
    before = recorded["inputs"]
    changes = []
    if before.get("config") != current["config"]:
        old, new = before.get("config") or {}, current["config"]
        keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        changes.append(f"its recipe changed ({', '.join(keys)})")
    elif before.get("start") != current["start"]:
        changes.append(f"its starting checkpoint {current['config'].get('model_name_or_path')} changed")
    if before.get("data") != current["data"]:
        changes.append(f"its data {current['config'].get('dataset_path')} changed")
    return changes


def decide(stages: list[Stage]) -> list[tuple[Stage, bool, str]]:
    """For each stage: whether it trains, and why. A stage that trains makes every later one train too."""
    decisions, earlier = [], None
    for stage in stages:
        if earlier is not None:
            run, why = True, f"to train: it starts after {earlier!r}, which trains"
        elif not stage.done:
            checkpoint = _last_checkpoint(stage.output_dir) if stage.output_dir.is_dir() else None
            run, why = True, "to train" + (f", resuming from {checkpoint.name}" if checkpoint else "")
        else:
            changes = _changes(json.loads(stage.marker.read_text(encoding="utf-8")), stage_inputs(stage))
            run, why = (True, "to train again: " + "; ".join(changes)) if changes else (False, "done, skipped")
        earlier = earlier or (stage.name if run else None)
        decisions.append((stage, run, why))
    return decisions


def _last_checkpoint(output_dir: Path) -> Path | None:
    checkpoints = [p for p in output_dir.glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return max(checkpoints, key=lambda p: int(p.name.split("-")[-1]), default=None)


def _module_name(script: str) -> str:
    """``train/sft.py`` -> ``lookcloser.train.sft`` (the checkout's folders install under lookcloser).

    >>> _module_name("train/grpo.py")
    'lookcloser.train.grpo'
    """
    return "lookcloser." + script.removesuffix(".py").replace("/", ".").replace("\\", ".")


STARTED = "stage_started.json"


def run_stage(stage: Stage, launcher: str | None) -> None:
    import shutil

    stage.output_dir.mkdir(parents=True, exist_ok=True)
    stage.marker.unlink(missing_ok=True)  # trains again: not done until it finishes
    inputs = stage_inputs(stage)
    started = stage.output_dir / STARTED
    if started.is_file() and json.loads(started.read_text(encoding="utf-8")).get("inputs") != inputs:
        for old in stage.output_dir.glob("checkpoint-*"):  # trained from other inputs: never resume them
            shutil.rmtree(old, ignore_errors=True)
    started.write_text(json.dumps({"inputs": inputs}, indent=1), encoding="utf-8")
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


def run(recipe_path: str | Path, skip: tuple[str, ...] = (), dry_run: bool = False,
        model: str | None = None) -> list[Stage]:
    recipe = _load_yaml(Path(recipe_path), "curriculum recipe")
    stages = plan(recipe_path, skip, model)
    decisions = decide(stages)
    for k, (stage, _, why) in enumerate(decisions, start=1):
        print(f"[curriculum] {k}/{len(stages)} {stage.name}: {stage.script} from "
              f"{stage.config.get('model_name_or_path')} -> {stage.output_dir} ({why})", flush=True)
    pending = {stage.name for stage, to_run, _ in decisions if to_run}
    check_inputs(stages, pending)  # a dry run checks the data too
    if dry_run:
        print(f"[curriculum] dry run: {len(pending)} of {len(stages)} stages would train; data found", flush=True)
        return stages
    from lookcloser.train.wandb_logging import curriculum_stage

    launcher = recipe.get("launcher")
    begun, done_seconds = time.time(), []
    for k, (stage, to_run, _) in enumerate(decisions, start=1):
        if not to_run:
            continue
        started = time.time()
        print(f"[curriculum] stage {k}/{len(stages)} {stage.name} starts", flush=True)
        with curriculum_stage(str(stage.output_dir.parent), stage.name, k, len(stages)):  # one W&B group
            run_stage(stage, launcher)
        if launcher or _is_main_process():  # in-process under accelerate: every rank trains, one writes
            stage.marker.write_text(json.dumps({"name": stage.name, "config": stage.config,
                                                "inputs": stage_inputs(stage),
                                                "seconds": round(time.time() - started, 1)}, indent=2))
        if not launcher:
            _barrier()
        gc.collect()
        done_seconds.append(time.time() - started)
        left = len(pending) - len(done_seconds)
        eta = f", about {left * sum(done_seconds) / len(done_seconds):.0f}s left at this pace" if left else ""
        print(f"[curriculum] {stage.name}: finished in {done_seconds[-1]:.0f}s "
              f"({len(done_seconds)}/{len(pending)} trained, {time.time() - begun:.0f}s so far{eta})", flush=True)
    return stages


def match_launcher_threads() -> None:
    """Give in-process stages the thread settings ``accelerate launch`` gives its processes.

    Why: accelerate sets OMP_NUM_THREADS (1 unless the user set it) before the script starts;
    torch's own default (every core) made the GRPO stage 3.6x slower on the 2-core machine.
    """
    import os

    if "LOCAL_RANK" in os.environ or "ACCELERATE_MIXED_PRECISION" in os.environ:
        return  # started by a launcher: it already chose
    threads = os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(max(1, int(threads)))


def main(argv: list[str] | None = None) -> int:
    from lookcloser.recipes import FlagParser
    from lookcloser.train.entry import report_error, user_error_classes

    parser = FlagParser(description=__doc__.splitlines()[0], prog="train/curriculum.py")
    parser.add_argument("recipe", type=Path)
    parser.add_argument("--skip", action="append", default=[], help="leave a stage out (repeatable)")
    parser.add_argument("--model", default=None,
                        help="replace the recipe's model_name_or_path (the first stage's model; chained after)")
    parser.add_argument("--dry_run", action="store_true",
                        help="print which stages would train and why, check their data exists, and stop")
    try:
        args = parser.parse_args(argv)
        recipe = load_recipe_mapping(args.recipe, "curriculum recipe")
        if not recipe.get("launcher"):
            match_launcher_threads()
        run(args.recipe, tuple(args.skip), args.dry_run, args.model)
    except user_error_classes() as err:
        return report_error(err)
    return 0


if __name__ == "__main__":
    sys.exit(main())
