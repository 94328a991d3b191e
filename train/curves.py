"""A training run's curves from its ``trainer_state.json`` as a PNG (drawn by ``lookcloser.plots``).

    python -m train.curves outputs/tool_curriculum/grpo docs/img/tool_curriculum_grpo.png
    python -m train.curves outputs/mir_stage1 /tmp/mir_stage1_curves.png

SFT: the training loss and TRL's mean token accuracy. GRPO: the mean reward with its accuracy
component, and the tool success rate (tool calls that returned an image: 1 -
``tools/failure_frequency``) with the informative-group share (``groups/informative_ratio``, else
1 - ``groups/dropped_ratio``); a run over several benchmarks adds each one's rollout accuracy. Every
SFT and GRPO run writes its chart beside its checkpoint
(``training_curves.png``, ``train/run_records.py``), with or without W&B.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CHART_FILE = "training_curves.png"
# (y-axis label, [(metric key, line label), ...]) per panel.
SFT_PANELS = (
    ("loss", [("loss", "training loss")]),
    ("token accuracy", [("mean_token_accuracy", "mean token accuracy")]),
)
GRPO_PANELS = (
    ("reward", [("reward", "mean reward"), ("rewards/accuracy/mean", "accuracy reward")]),
    ("rate", [("tool_success", "tool success rate"), ("informative", "informative groups")]),
)


def series(log_history: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """Per-step values of the plotted metrics; ``tool_success`` is 1 - failure frequency when calls were made.

    >>> series([{"step": 1, "reward": 0.5, "tools/failure_frequency": 0.25, "tools/call_frequency": 1.0}])["tool_success"]
    [(1, 0.75)]
    >>> series([{"step": 5, "loss": 2.5}, {"step": 5, "train_loss": 2.0}])
    {'loss': [(5, 2.5)]}
    """
    keys = {key for _, lines in SFT_PANELS + GRPO_PANELS for key, _ in lines}
    out: dict[str, list[tuple[int, float]]] = {}
    for entry in log_history:
        step = entry.get("step")
        if step is None:
            continue
        values = dict(entry)
        if entry.get("tools/call_frequency"):
            values["tool_success"] = 1.0 - float(entry.get("tools/failure_frequency", 0.0))
        if "groups/informative_ratio" in entry:  # with resampling: the share of the final batch that trains
            values["informative"] = entry["groups/informative_ratio"]
        elif "groups/dropped_ratio" in entry:  # drop only: the groups that were not constant
            values["informative"] = 1.0 - float(entry["groups/dropped_ratio"])
        for key in sorted(keys):
            if isinstance(values.get(key), (int, float)):
                out.setdefault(key, []).append((int(step), float(values[key])))
    return out


def benchmark_accuracies(log_history: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """Rollout accuracy per benchmark over the steps that sampled it (``accuracy/<benchmark>``, logged for
    each ``data_source`` in a batch; its sub-kinds, ``accuracy/<benchmark>/<kind>``, left out).

    >>> benchmark_accuracies([{"step": 1, "accuracy/mir": 0.5, "accuracy/mir/count": 1.0},
    ...                       {"step": 2, "accuracy/mir": 0.75, "accuracy/disbench": 0.25}])
    {'disbench': [(2, 0.25)], 'mir': [(1, 0.5), (2, 0.75)]}
    """
    out: dict[str, list[tuple[int, float]]] = {}
    for entry in log_history:
        if entry.get("step") is None:
            continue
        for key, value in entry.items():
            name = key.removeprefix("accuracy/")
            if name != key and "/" not in name and isinstance(value, (int, float)):
                out.setdefault(name, []).append((int(entry["step"]), float(value)))
    return dict(sorted(out.items()))


def panels(log_history: list[dict]) -> list[tuple[str, dict[str, list[tuple[int, float]]]]]:
    """The panels of a run: GRPO's when it logged a reward, else SFT's; a GRPO run over several benchmarks
    (a mixed run) gets a third panel, each benchmark's rollout accuracy.

    >>> [label for label, _ in panels([{"step": 1, "loss": 1.0}])]
    ['loss', 'token accuracy']
    >>> mixed = [{"step": 1, "reward": 1.0, "accuracy/mir": 1.0, "accuracy/disbench": 0.5}]
    >>> [label for label, _ in panels(mixed)]
    ['reward', 'rate', 'accuracy by benchmark']
    """
    data = series(log_history)
    chosen = GRPO_PANELS if "reward" in data else SFT_PANELS
    out = [(ylabel, {label: data.get(key, []) for key, label in lines}) for ylabel, lines in chosen]
    by_benchmark = benchmark_accuracies(log_history) if "reward" in data else {}
    if len(by_benchmark) > 1:
        out.append(("accuracy by benchmark", by_benchmark))
    return out


def plot(log_history: list[dict], out: str | Path, title: str = "") -> Path:
    from lookcloser.plots import line_chart

    return line_chart(panels(log_history), out, title or "training curves")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="an SFT or GRPO output_dir (holds trainer_state.json)")
    parser.add_argument("out", type=Path, help="PNG to write")
    args = parser.parse_args(argv)
    state = args.run_dir / "trainer_state.json"
    if not state.is_file():
        print(f"error: {state} not found (a finished training run writes it)", file=sys.stderr)
        return 2
    history = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    kind = "GRPO" if any("reward" in entry for entry in history) else "SFT"
    print(plot(history, args.out, title=f"{kind} {args.run_dir}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
