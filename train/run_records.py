"""What a training run leaves beside its checkpoint, once saved (``train/sft.py`` and ``train/grpo.py``
call ``record_run`` on the main process after ``train_and_save``), with or without W&B:

- ``training_curves.png``: the run's loss (SFT) or reward, accuracy and tool success (GRPO) by step
  (``train/curves.py``, drawn by ``lookcloser.plots``);
- ``lookcloser_run.json``: the base model (the first model of a chain of runs: the stages of a curriculum,
  a cold start among them), the model this run started from, its curriculum stage, and the W&B run
  (id, project, group, URL) when there was one: ``python -m eval`` reports that run with the
  checkpoint's digest;
- a LoRA adapter names its base as the user named it (``agent.models.name_adapter_base``).

A LoRA run's ``merged/`` checkpoint gets the same record.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from pathlib import Path

logger = logging.getLogger(__name__)

RUN_FILE = "lookcloser_run.json"
# What train/curriculum.py tells each stage it runs (train/wandb_logging.curriculum_stage sets it) (also a stage in a subprocess: the environment).
STAGE_ENV = {"group": "LOOKCLOSER_CURRICULUM", "stage": "LOOKCLOSER_CURRICULUM_STAGE",
             "order": "LOOKCLOSER_CURRICULUM_ORDER", "stages": "LOOKCLOSER_CURRICULUM_STAGES"}


def read_run_record(folder: str | Path) -> dict:
    """The run record of a checkpoint folder; {} for hub ids, older folders and unreadable files.

    >>> read_run_record("Qwen/Qwen3-VL-8B-Instruct")
    {}
    """
    path = Path(folder) / RUN_FILE
    if not path.is_file():
        return {}
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        logger.warning("%s: not valid JSON, ignored", path)
        return {}
    return record if isinstance(record, dict) else {}


def base_model_of(start: str) -> str:
    """The model a chain of runs began with: the base that the starting checkpoint records, else the
    starting model itself (a hub id, the reserved tiny name, a folder trained elsewhere).

    >>> base_model_of("lookcloser/tiny-qwen3-vl")
    'lookcloser/tiny-qwen3-vl'
    """
    return str(read_run_record(start).get("base_model") or start)


def curriculum_info() -> dict:
    """The curriculum stage this run is, as ``train/curriculum.py`` set it ({} outside a curriculum).

    >>> curriculum_info() if "LOOKCLOSER_CURRICULUM" not in os.environ else {}
    {}
    """
    if STAGE_ENV["group"] not in os.environ:
        return {}
    info = {key: os.environ.get(name) for key, name in STAGE_ENV.items()}
    for key in ("order", "stages"):
        info[key] = int(info[key]) if (info[key] or "").isdigit() else None
    return info


def run_identity() -> dict | None:
    """The active W&B run (id, project, entity, group, name, url), or None."""
    wandb = sys.modules.get("wandb")
    run = getattr(wandb, "run", None) if wandb is not None else None
    if run is None:
        return None
    url = None
    with contextlib.suppress(Exception):  # offline runs have no URL
        url = run.url
    return {"id": run.id, "project": run.project, "entity": run.entity or None, "group": run.group or None,
            "name": run.name, "url": url}


def record_run(trainer, output_dir: str | Path, model_args, settings: dict | None = None) -> None:
    """Finish the checkpoint in ``output_dir`` (main process only): adapter base name, chart, run record
    (``settings``: what the run trained with, ``train.entry.run_settings``: a later run into the folder
    compares its own)."""
    from lookcloser.agent.models import name_adapter_base
    from lookcloser.train.curves import CHART_FILE, plot

    output_dir = Path(output_dir)
    start = str(model_args.model_name_or_path)
    name_adapter_base(output_dir, start)
    history = trainer.state.log_history
    kind = "GRPO" if any("reward" in entry for entry in history) else "SFT"
    try:
        plot(history, output_dir / CHART_FILE, title=f"{kind} {output_dir}")
    except Exception as err:  # noqa: BLE001 - a chart must never cost a trained checkpoint
        logger.warning("could not draw %s: %r", output_dir / CHART_FILE, err)
    record = {"base_model": base_model_of(start), "start_model": start, "kind": kind.lower(),
              "wandb": run_identity(), "curriculum": curriculum_info() or None, "settings": settings}
    text = json.dumps(record, indent=1) + "\n"
    for folder in (output_dir, output_dir / "merged"):
        if (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file():
            (folder / RUN_FILE).write_text(text, encoding="utf-8")
