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
same. Before any stage starts, every stage's full recipe goes through its script's own parser
and checks (values, data, model folders; a path an earlier stage writes counts as there), so
a mistake in stage 5 stops the run before stage 1 trains; ``--dry_run`` prints what would train
and why, runs exactly these checks, and stops. ``--set STAGE.KEY=VALUE`` overrides one stage's
recipe key, ``--set KEY=VALUE`` the recipe's ``defaults`` (VALUE is read as YAML, as in the
recipe; checked like the recipe). The run ends with a line naming the final checkpoint (and
each stage's report, where one writes one). Ctrl-C keeps the finished stages and the
interrupted stage's whole checkpoints; the same command resumes.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import yaml

from lookcloser.checks import did_you_mean
from lookcloser.cli import Interrupted, interrupt_stays_an_interrupt
from lookcloser.recipes import Recipe, RecipeError, load_recipe_mapping

DEFAULT_SCRIPT = "train/sft.py"
MARKER = "curriculum_done.json"
STAGE_KEYS = ("name", "script", "recipe", "use_defaults", "makes_model")  # curriculum bookkeeping, not passed on
TOP_KEYS = ("output_dir", "defaults", "stages", "launcher")
REPORT_FILES = ("report.md", "comparison.md")  # an eval stage's summary (python -m eval, eval/compare.py)


class CurriculumError(RecipeError):
    pass


@dataclass
class CurriculumArguments:
    """Train a curriculum's stages in order (train/curriculum.py)."""

    POSITIONAL: ClassVar = ("recipe",)
    recipe: str | None = field(default=None, metadata={"help": "the curriculum recipe (YAML)"})
    skip: list[str] = field(default_factory=list, metadata={
        "action": "extend", "help": "leave stages out (repeatable: --skip a --skip b, or --skip a b)"})
    model: str | None = field(default=None, metadata={
        "help": "replace the recipe's model_name_or_path (the first stage's model; chained after)"})
    set: list[str] = field(default_factory=list, metadata={
        "action": "extend", "help": "STAGE.KEY=VALUE (one stage's recipe key) or KEY=VALUE (the recipe's defaults); "
                                    "VALUE is YAML, as in the recipe; repeatable"})
    dry_run: bool = field(default=False, metadata={
        "help": "print which stages would train and why, check every stage's settings and data, and stop"})

    def __post_init__(self) -> None:
        if not self.recipe:
            raise RecipeError("give the curriculum recipe (first argument)")
        for item in self.set:
            if "=" not in item or not item.split("=", 1)[0].strip():
                raise RecipeError(f"--set {item}: write STAGE.KEY=VALUE or KEY=VALUE")


@dataclass
class Stage:
    name: str
    script: str
    config: dict  # the stage script's full recipe
    output_dir: Path
    makes_model: bool = True  # false: a data stage (data_builders/commands/), outside the checkpoint chain

    @property
    def marker(self) -> Path:
        return self.output_dir / MARKER

    @property
    def done(self) -> bool:
        return self.marker.is_file()


def with_overrides(recipe: dict, overrides: tuple[str, ...] | list[str]) -> dict:
    """The recipe with ``--set`` values: ``STAGE.KEY=VALUE`` in that stage, ``KEY=VALUE`` in ``defaults``.

    >>> r = with_overrides({"defaults": {"lr": 1}, "stages": [{"name": "a"}]}, ["a.mir_stage=2", "lr=1e-3"])
    >>> r["stages"][0]["mir_stage"], r["defaults"]["lr"]
    (2, '1e-3')
    """
    recipe = {**recipe, "defaults": dict(recipe.get("defaults") or {}),
              "stages": [dict(s) if isinstance(s, dict) else s for s in recipe.get("stages") or []]}
    by_name = {s.get("name"): s for s in recipe["stages"] if isinstance(s, dict)}
    for item in overrides:
        target, _, text = item.partition("=")
        target = target.strip()
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise CurriculumError(f"--set {item}: VALUE is not YAML ({' '.join(str(err).split())})") from err
        stage_name, dot, key = target.rpartition(".")
        if not dot:
            if not any(s.get("use_defaults", True) for s in by_name.values()):
                raise CurriculumError(f"--set {item}: sets the recipe's defaults, which no stage takes "
                                      "(use STAGE.KEY=VALUE)")
            recipe["defaults"][key] = value
            continue
        if stage_name not in by_name:
            raise CurriculumError(f"--set {item}: no stage named {stage_name!r}{did_you_mean(stage_name, by_name)} "
                                  f"(stages: {', '.join(map(str, by_name))})")
        if key == "name":
            raise CurriculumError(f"--set {item}: a stage's name is what --set and --skip find it by; edit the recipe")
        by_name[stage_name][key] = value
    return recipe


def plan(recipe_path: str | Path, skip: tuple[str, ...] = (), model: str | None = None,
         overrides: tuple[str, ...] = (), recipe: dict | None = None) -> list[Stage]:
    """Resolve the curriculum recipe into stages with their full recipes and chained checkpoints.

    Skipped stages drop out of the chain: the next stage starts from the last one kept. Stages
    with ``makes_model: false`` (data stages) neither take nor pass a checkpoint. ``model``
    replaces the recipe's ``model_name_or_path`` wherever it is set (not chained). ``overrides``:
    ``--set`` values. ``recipe``: the file's mapping when already read (it is read once).
    """
    recipe_path = Path(recipe_path)
    recipe = load_recipe_mapping(recipe_path, "curriculum recipe") if recipe is None else recipe
    recipe = with_overrides(recipe, overrides) if overrides else recipe
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
        raise CurriculumError(f"--skip names no stage: {missing_skips}{did_you_mean(missing_skips[0], names)} "
                              f"(stages: {', '.join(names)})")
    stages: list[Stage] = []
    for raw in stages_raw:
        if raw["name"] in skip:
            continue
        base = load_recipe_mapping(_base_recipe(raw["recipe"], recipe_path),
                                   f"base recipe of stage {raw['name']!r}") if raw.get("recipe") else {}
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


def check_stages(stages: list[Stage], recipe_path: str | Path = "the curriculum recipe") -> None:
    """Every stage's full recipe through its script's parser and checks, before any stage starts.

    A path that an earlier stage writes (its output folder: the chained checkpoint, a data stage's
    sets) is not there yet and counts as there. ``recipe_path`` names where to fix a key.
    """
    from lookcloser.errors import UserError
    from lookcloser.recipes import CommandLine

    for k, stage in enumerate(stages):
        moved = MOVED_SCRIPTS.get(Path(stage.script).as_posix().removeprefix("./"))
        if moved:
            raise CurriculumError(f"stage {stage.name!r}: {stage.script} moved to data_builders: set `script: {moved[0]}` "
                                  f"(the same keys; also `python -m data_builders {moved[1]}`)")
        try:
            module = importlib.import_module(_module_name(stage.script))
        except ModuleNotFoundError as err:
            raise CurriculumError(f"stage {stage.name!r}: script {stage.script} not found (train/sft.py, train/grpo.py "
                                  "and data_builders/commands/*.py are stage scripts)") from err
        recipe = Recipe.of(_owned_folder(stage), str(recipe_path))
        try:
            module.parse_args(CommandLine(recipe, ()), planned=[s.output_dir for s in stages[:k]])
        except UserError as err:
            hint = (" (build it with `python -m data_builders ...`, see docs/data.md, or leave the stage out with "
                    "--skip NAME)") if str(err).startswith("dataset_path") else ""
            raise CurriculumError(f"stage {stage.name!r} ({stage.script}): {err}{hint}") from err


# -- what a stage was trained from: a rerun is needed when any of it changed --

def path_digest(path: str | Path | None, checkpoint: bool = False) -> str | None:
    """A digest of a file, a folder (data: every file; ``checkpoint``: config + weights), or a name."""
    import hashlib

    from lookcloser.checkpoint_digest import checkpoint_digest, update_file_digest

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
    from lookcloser.train.entry import last_checkpoint

    return last_checkpoint(output_dir)


def _module_name(script: str) -> str:
    """``train/sft.py`` -> ``lookcloser.train.sft`` (the checkout's folders install under lookcloser).

    >>> _module_name("train/grpo.py")
    'lookcloser.train.grpo'
    """
    return "lookcloser." + script.removesuffix(".py").replace("/", ".").replace("\\", ".")


# The data stages that once lived in train/: their home and command now (a stage naming the old path gets one line).
MOVED_SCRIPTS = {
    "train/grpo_tasks.py": ("data_builders/commands/tool_tasks.py", "tool-tasks"),
    "train/search_tasks.py": ("data_builders/commands/search_benchmark_tasks.py", "search-tasks"),
    "train/mixed_tasks.py": ("data_builders/commands/mixed_tasks.py", "mixed-tasks"),
    "train/imagenet_think_data.py": ("data_builders/commands/imagenet_think_data.py", "imagenet-think-data"),
}
STARTED = "stage_started.json"
TRAINING_SCRIPTS = ("lookcloser.train.sft", "lookcloser.train.grpo")


def _owned_folder(stage: Stage) -> dict:
    """The stage's config as its script gets it: the curriculum decides when a stage trains again into
    its folder (its inputs changed), so a training script's another-run check gives way to it."""
    config = dict(stage.config)
    if _module_name(stage.script) in TRAINING_SCRIPTS:
        config["overwrite_output_dir"] = True
    return config


def run_stage(stage: Stage, launcher: str | None) -> None:
    """Train one stage; when it fails or is interrupted before a whole checkpoint, remove what this
    left in its folder (no ``stage_started.json`` claims a start that kept nothing)."""
    made = not stage.output_dir.exists()
    try:
        _run_stage(stage, launcher)
    except BaseException:
        if _last_checkpoint(stage.output_dir) is None and stage.output_dir.is_dir():
            for name in (STARTED, "stage_recipe.yaml"):
                (stage.output_dir / name).unlink(missing_ok=True)
            if made and not any(stage.output_dir.iterdir()):
                stage.output_dir.rmdir()
        raise


def _run_stage(stage: Stage, launcher: str | None) -> None:
    import shutil

    stage.output_dir.mkdir(parents=True, exist_ok=True)
    stage.marker.unlink(missing_ok=True)  # trains again: not done until it finishes
    inputs = stage_inputs(stage)
    started = stage.output_dir / STARTED
    if started.is_file() and json.loads(started.read_text(encoding="utf-8")).get("inputs") != inputs:
        for old in stage.output_dir.glob("checkpoint-*"):  # trained from other inputs: never resume them
            shutil.rmtree(old, ignore_errors=True)
    started.write_text(json.dumps({"inputs": inputs}, indent=1), encoding="utf-8")
    config = _owned_folder(stage)
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


def run(recipe_path: str | Path, skip: tuple[str, ...] = (), dry_run: bool = False, model: str | None = None,
        overrides: tuple[str, ...] = (), recipe: dict | None = None) -> list[Stage]:
    recipe = load_recipe_mapping(Path(recipe_path), "curriculum recipe") if recipe is None else recipe
    stages = plan(recipe_path, skip, model, overrides, recipe=recipe)
    decisions = decide(stages)
    for k, (stage, _, why) in enumerate(decisions, start=1):
        print(f"[curriculum] {k}/{len(stages)} {stage.name}: {stage.script} from "
              f"{stage.config.get('model_name_or_path')} -> {stage.output_dir} ({why})", flush=True)
    pending = {stage.name for stage, to_run, _ in decisions if to_run}
    check_stages(stages, recipe_path)  # a dry run runs exactly these checks
    if dry_run:
        print(f"[curriculum] dry run: {len(pending)} of {len(stages)} stages would train; every stage's settings, "
              "data and model checked", flush=True)
        return stages
    from lookcloser.train.wandb_logging import curriculum_stage

    launcher = recipe.get("launcher")
    begun, done_seconds = time.time(), []
    for k, (stage, to_run, _) in enumerate(decisions, start=1):
        if not to_run:
            continue
        started, cpu_started = time.time(), _cpu_seconds()
        print(f"[curriculum] stage {k}/{len(stages)} {stage.name} starts", flush=True)
        try:
            with curriculum_stage(str(stage.output_dir.parent), stage.name, k, len(stages)), \
                    interrupt_stays_an_interrupt():  # one W&B group
                run_stage(stage, launcher)
        except KeyboardInterrupt:
            root = stage.output_dir.parent
            if root.is_dir() and not any(root.iterdir()):  # made by this run for a stage that kept nothing
                root.rmdir()
            raise _interrupted(stages, stage) from None
        cpu = _cpu_seconds() - cpu_started
        if launcher or _is_main_process():  # in-process under accelerate: every rank trains, one writes
            stage.marker.write_text(json.dumps({"name": stage.name, "config": stage.config,
                                                "inputs": stage_inputs(stage),
                                                "seconds": round(time.time() - started, 1),
                                                "cpu_seconds": round(cpu, 1)}, indent=2))
        if not launcher:
            _barrier()
        gc.collect()
        done_seconds.append(time.time() - started)
        left = len(pending) - len(done_seconds)
        eta = f", about {left * sum(done_seconds) / len(done_seconds):.0f}s left at this pace" if left else ""
        print(f"[curriculum] {stage.name}: finished in {done_seconds[-1]:.0f}s ({cpu:.0f}s of CPU) "
              f"({len(done_seconds)}/{len(pending)} trained, {time.time() - begun:.0f}s so far{eta})", flush=True)
    print(closing_line(stages), flush=True)
    return stages


def _cpu_seconds() -> float:
    """CPU time of this process and its finished children (a launcher's stage processes)."""
    import os

    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _base_recipe(name: str, curriculum: Path) -> Path:
    """A stage's base ``recipe``: beside the curriculum recipe, else from the working folder."""
    beside = Path(curriculum).parent / name
    return beside if beside.is_file() else Path(name)


def closing_line(stages: list[Stage]) -> str:
    """Where the run's result is: the last model stage's checkpoint, and any stage's report."""
    models = [s for s in stages if s.makes_model]
    line = "[curriculum] done: " + (f"final checkpoint {models[-1].output_dir.resolve()}" if models
                                    else "no stage makes a model")
    reports = [s.output_dir / name for s in stages for name in REPORT_FILES if (s.output_dir / name).is_file()]
    return line + (f"; reports: {', '.join(map(str, reports))}" if reports else "")


def _interrupted(stages: list[Stage], stage: Stage) -> Interrupted:
    finished = [s.name for s in stages if s.done]
    checkpoint = _last_checkpoint(stage.output_dir) if stage.output_dir.is_dir() else None
    kept = (f"stage {stage.name!r} resumes from {checkpoint}" if checkpoint
            else f"stage {stage.name!r} had saved no checkpoint and starts over")
    done = f"finished stages kept ({', '.join(finished)}); " if finished else ""
    return Interrupted(done + kept)


def main(argv: list[str] | None = None) -> int:
    from lookcloser.cli import run as run_command
    from lookcloser.recipes import parse_flags

    argv = list(sys.argv[1:] if argv is None else argv)

    def train(args: CurriculumArguments) -> None:
        recipe = load_recipe_mapping(Path(args.recipe), "curriculum recipe")
        if not recipe.get("launcher"):
            from lookcloser.train.entry import match_launcher_threads

            match_launcher_threads()
        run(args.recipe, tuple(args.skip), args.dry_run, args.model, tuple(args.set), recipe=recipe)

    prog = "python train/curriculum.py"
    return run_command(train, lambda: (parse_flags(CurriculumArguments, argv, prog=prog,
                                                   description=__doc__.splitlines()[0]),), prog=prog, argv=argv)


if __name__ == "__main__":
    sys.exit(main())
