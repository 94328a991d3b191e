"""MIR accuracy of a checkpoint on held-out records, scored as the learning checks score it: MIR's benchmark prompt
(question and options, no reference context), no tools, one turn, as ``python -m eval ... --mir_prompt_stage 0``."""

from __future__ import annotations

from pathlib import Path


def mir_accuracy(model: Path, data: Path, out: Path, gray: bool = False, records: int = 64) -> tuple[float, dict]:
    """(overall accuracy, accuracy per question family); every one of ``records`` items scored, none failed."""
    from lookcloser.eval.__main__ import main as eval_main

    metrics = eval_main(["--model", str(model), "--benchmarks", "mir", "--data_root", str(data),
                         "--mir_prompt_stage", "0", "--tools", "false", "--system_prompt", "", "--max_turns", "1",
                         "--gray_images", str(gray).lower(), "--out", str(out), "--batch_size", "32"])
    mir = metrics["benchmarks"]["mir"]
    assert mir["n"] == records and mir["n_failed"] == 0
    return mir["overall"]["accuracy"], {k: v["accuracy"] for k, v in mir["groups"]["task"].items()}
