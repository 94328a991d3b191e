"""What a training run leaves beside its checkpoint, once saved (``train/sft.py`` and ``train/grpo.py``
call ``record_run`` on the main process after ``train_and_save``).

- A LoRA adapter names its base as the user named it (``agent.models.name_adapter_base``).
"""

from __future__ import annotations

from pathlib import Path


def record_run(trainer, output_dir: str | Path, model_args) -> None:
    """Finish the checkpoint in ``output_dir`` (main process only)."""
    from lookcloser.agent.models import name_adapter_base

    name_adapter_base(output_dir, model_args.model_name_or_path)
