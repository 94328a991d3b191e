"""Plot a GRPO run's curves from its ``trainer_state.json`` into a PNG (PIL only, no matplotlib).

    python -m train.grpo_plot outputs/tool_curriculum/grpo docs/img/tool_curriculum_grpo.png

Panels: the mean reward with its accuracy component, and the tool success rate (tool calls that
returned an image: 1 - ``tools/failure_frequency``) with the informative-group share
(``groups/informative_ratio``, else 1 - ``groups/dropped_ratio``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

PANELS = (
    ("reward", [("reward", "mean reward", (31, 119, 180)),
                ("rewards/accuracy/mean", "accuracy", (214, 39, 40))]),
    ("tools", [("tool_success", "tool success rate", (44, 160, 44)),
               ("informative", "informative groups", (148, 103, 189))]),
)


def series(log_history: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """Per-step values of the plotted metrics; ``tool_success`` is 1 - failure frequency when calls were made.

    >>> series([{"step": 1, "reward": 0.5, "tools/failure_frequency": 0.25, "tools/call_frequency": 1.0}])["tool_success"]
    [(1, 0.75)]
    """
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
        for _, lines in PANELS:
            for key, _, _ in lines:
                if isinstance(values.get(key), (int, float)):
                    out.setdefault(key, []).append((int(step), float(values[key])))
    return out


def plot(log_history: list[dict], out: str | Path, title: str = "") -> Path:
    data = series(log_history)
    width, panel_h, margin = 720, 260, 48
    img = Image.new("RGB", (width, 30 + panel_h * len(PANELS)), "white")
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=13)
    draw.text((margin, 8), title, fill="black", font=font)
    steps = [s for values in data.values() for s, _ in values] or [0, 1]
    x0, x1 = min(steps), max(max(steps), min(steps) + 1)
    for p, (_, lines) in enumerate(PANELS):
        top = 30 + p * panel_h
        box = (margin, top + 10, width - 20, top + panel_h - 40)
        values = [v for key, _, _ in lines for _, v in data.get(key, [])] or [0.0, 1.0]
        lo, hi = min(0.0, min(values)), max(1.0, max(values))
        draw.rectangle(box, outline=(120, 120, 120))
        def px(s, box=box):
            return box[0] + (s - x0) / (x1 - x0) * (box[2] - box[0])

        def py(v, box=box, lo=lo, hi=hi):
            return box[3] - (v - lo) / (hi - lo) * (box[3] - box[1])

        for tick in (lo, (lo + hi) / 2, hi):
            draw.text((4, py(tick) - 7), f"{tick:.2f}", fill="black", font=font)
            draw.line([(box[0], py(tick)), (box[2], py(tick))], fill=(225, 225, 225))
        draw.text((box[0], box[3] + 4), f"step {x0}", fill="black", font=font)
        draw.text((box[2] - 60, box[3] + 4), f"step {x1}", fill="black", font=font)
        legend_x = box[0] + 90
        for key, label, colour in lines:
            points = [(px(s), py(v)) for s, v in data.get(key, [])]
            if len(points) > 1:
                draw.line(points, fill=colour, width=2)
            for x, y in points:
                draw.ellipse((x - 2, y - 2, x + 2, y + 2), fill=colour)
            draw.line([(legend_x, box[3] + 26), (legend_x + 20, box[3] + 26)], fill=colour, width=3)
            draw.text((legend_x + 24, box[3] + 19), label, fill="black", font=font)
            legend_x += 40 + 8 * len(label)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path, help="a GRPO output_dir (holds trainer_state.json)")
    parser.add_argument("out", type=Path, help="PNG to write")
    args = parser.parse_args(argv)
    state = args.run_dir / "trainer_state.json"
    if not state.is_file():
        print(f"error: {state} not found (a finished GRPO run writes it)", file=sys.stderr)
        return 2
    history = json.loads(state.read_text(encoding="utf-8"))["log_history"]
    print(plot(history, args.out, title=f"GRPO {args.run_dir}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
