"""Every chart lookcloser draws, in one place, with matplotlib (the Agg canvas: no display needed).

- ``line_chart``: training curves, one panel per quantity, the step on the x axis (``train/curves.py``).
- ``bar_chart``: an eval report's bars, one group of bars per row (overall, each group of items),
  one bar per metric, published values as reference lines in the metric's colour (``eval/report.py``).
- ``comparison_chart``: checkpoints or controls side by side, one group of bars per benchmark,
  one bar per row, a reference line per benchmark where given.

Each ``*_chart`` writes a PNG; its ``*_figure`` twin returns the ``Figure`` (tests read its bars,
lines and labels). Figures are built with ``matplotlib.figure.Figure`` and ``FigureCanvasAgg``, never
through ``pyplot``: no global state, no backend switch in the caller's process. Every chart has a
title, axis labels and axis values; each PNG is written to a temporary name and renamed into place.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# matplotlib's default colour cycle (tab10), named so that a metric keeps its colour across a chart.
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")
Points = Sequence[tuple[float, float]]


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _save(figure, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        figure.savefig(tmp, format="png")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def line_chart(panels: Sequence[tuple[str, Mapping[str, Points]]], path: str | Path, title: str,
               xlabel: str = "step") -> Path:
    """``line_figure`` as a PNG at ``path``.

    >>> import tempfile
    >>> out = line_chart([("loss", {"training loss": [(1, 2.0), (2, 1.5)]})], tempfile.mkdtemp() + "/c.png", "SFT")
    >>> out.stat().st_size > 1000
    True
    """
    return _save(line_figure(panels, title, xlabel), path)


def line_figure(panels: Sequence[tuple[str, Mapping[str, Points]]], title: str, xlabel: str = "step"):
    """Stacked panels sharing the x axis; each panel is ``(y label, {line label: [(x, y), ...]})``.
    A line with one point is drawn as a marker; a panel with no points says "not logged"."""
    figure = _figure(8, 1.0 + 2.6 * max(1, len(panels)))
    axes = figure.subplots(max(1, len(panels)), 1, sharex=True, squeeze=False)[:, 0]
    figure.suptitle(title)
    for ax, (ylabel, lines) in zip(axes, panels):
        drawn = 0
        for k, (label, points) in enumerate(lines.items()):
            if not points:
                continue
            xs, ys = zip(*points)
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=1.5, color=COLOURS[k % len(COLOURS)], label=label)
            drawn += 1
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        if drawn:
            ax.legend(loc="best", fontsize="small")
        else:
            ax.text(0.5, 0.5, "not logged", transform=ax.transAxes, ha="center", va="center", color="gray")
    axes[-1].set_xlabel(xlabel)
    from matplotlib.ticker import MaxNLocator

    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    return figure


def _grouped_bars(ax, groups: Sequence[str], series: Sequence[str], values: Sequence[Sequence[float | None]],
                  horizontal: bool, fmt: str) -> list[tuple[float, float]]:
    """Bars of ``values[group][series]`` in groups; returns each group's span on the category axis."""
    import numpy as np

    width = 0.8 / max(1, len(series))
    centres = np.arange(len(groups))
    spans = [(c - 0.4, c + 0.4) for c in centres]
    draw = ax.barh if horizontal else ax.bar
    ax.set_axisbelow(True)  # grid lines behind the bars
    for k, name in enumerate(series):
        offsets = centres - 0.4 + width * (k + 0.5)
        heights = [values[g][k] for g in range(len(groups))]
        shown = [(o, h) for o, h in zip(offsets, heights) if h is not None and not math.isnan(h)]
        if not shown:
            continue
        xs, hs = zip(*shown)
        bars = draw(list(xs), list(hs), width * 0.95, label=name, color=COLOURS[k % len(COLOURS)])
        ax.bar_label(bars, labels=[fmt.format(h) for h in hs], padding=2, fontsize="small")
    (ax.set_yticks if horizontal else ax.set_xticks)(centres, list(groups))
    return spans


def bar_chart(rows: Sequence[str], metrics: Sequence[str], values: Sequence[Sequence[float | None]],
              path: str | Path, title: str, references: Mapping[str, Sequence[float]] | None = None,
              value_label: str = "%", limit: float = 100.0) -> Path:
    """``bar_figure`` as a PNG at ``path``."""
    return _save(bar_figure(rows, metrics, values, title, references, value_label, limit), path)


def bar_figure(rows: Sequence[str], metrics: Sequence[str], values: Sequence[Sequence[float | None]], title: str,
               references: Mapping[str, Sequence[float]] | None = None, value_label: str = "%",
               limit: float = 100.0):
    """Horizontal bars: a group per row (top to bottom), a bar per metric, ``values[row][metric]``.

    ``references``: per metric, published values (one, or two for a range) drawn as dashed lines
    in the metric's colour across the chart and named in the legend.
    """
    figure = _figure(9, 1.6 + 0.28 * len(rows) * max(1, len(metrics)) + 0.25 * len(rows))
    ax = figure.add_subplot()
    _grouped_bars(ax, rows, metrics, values, horizontal=True, fmt="{:.1f}")
    for k, metric in enumerate(metrics):
        for j, value in enumerate((references or {}).get(metric) or ()):
            ax.axvline(value, color=COLOURS[k % len(COLOURS)], linestyle="--", linewidth=1.2,
                       label=f"published {metric}" if j == 0 else None)
    ax.invert_yaxis()  # the first row on top
    ax.set_xlim(0, limit * 1.08)
    ax.set_xlabel(value_label)
    ax.set_title(title)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return figure


def comparison_chart(rows: list[str], columns: list[str], values: list[list[float | None]],
                     references: dict[str, float] | None, path: str | Path, title: str, *,
                     value_label: str = "score (%)", limit: float | None = 100.0) -> Path:
    """``comparison_figure`` as a PNG at ``path``: checkpoints (or controls) side by side, a group of vertical bars per column (a benchmark), a bar
    per row (a checkpoint), ``values[row][column]`` (None: not measured, no bar), each bar labelled
    with its value; ``references[column]`` (e.g. a published score, or chance) as a dashed line
    over that column's group. ``limit``: the top of the value axis (None: from the data).

    >>> import tempfile
    >>> path = comparison_chart(["sft", "grpo"], ["mir", "tir_bench"], [[50.0, None], [75.0, 20.0]],
    ...                         {"mir": 37.5}, tempfile.mkdtemp() + "/compare.png", "held-out accuracy")
    >>> path.name
    'compare.png'
    """
    return _save(comparison_figure(rows, columns, values, references, title, value_label=value_label,
                                   limit=limit), path)


def comparison_figure(rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]],
                      references: Mapping[str, float] | None, title: str, *, value_label: str = "score (%)",
                      limit: float | None = 100.0):
    """The figure of ``comparison_chart`` (same arguments, no path)."""
    if len(values) != len(rows) or any(len(row) != len(columns) for row in values):
        raise ValueError(f"values must be {len(rows)} rows of {len(columns)} columns")
    by_column = [[values[r][c] for r in range(len(rows))] for c in range(len(columns))]
    figure = _figure(max(6.0, 1.2 + len(columns) * (0.5 + 0.45 * len(rows))), 5)
    ax = figure.add_subplot()
    spans = _grouped_bars(ax, columns, rows, by_column, horizontal=False, fmt="{:.1f}")
    labelled = False
    for column, (left, right) in zip(columns, spans):
        reference = (references or {}).get(column)
        if reference is not None:
            ax.hlines(reference, left, right, colors="black", linestyles="--", linewidth=1.2,
                      label=None if labelled else "reference")
            ax.annotate(f"{reference:g}", (right, reference), xytext=(2, 0), textcoords="offset points",
                        va="center", fontsize="small")
            labelled = True
    measured = [v for row in values for v in row if v is not None] + list((references or {}).values())
    top = limit if limit is not None else max(measured or [1.0])
    ax.set_ylim(0, top * 1.1)
    ax.set_ylabel(value_label)
    ax.set_xlabel("benchmark")
    ax.set_title(title)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    return figure
