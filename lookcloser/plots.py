"""Every chart lookcloser draws, with matplotlib (Agg: no display needed)."""

from __future__ import annotations

from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def comparison_chart(rows: list[str], columns: list[str], values: list[list[float | None]],
                     references: dict[str, float] | None, path: str | Path, title: str) -> Path:
    """Grouped bars: one group per column (benchmark), one bar per row (checkpoint or control), with a
    dashed line at each column's reference."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(columns) + 0.25 * len(rows) * len(columns)), 4.5))
    width = 0.8 / max(1, len(rows))
    for k, (label, row) in enumerate(zip(rows, values)):
        xs = [c + (k - (len(rows) - 1) / 2) * width for c in range(len(columns))]
        ax.bar(xs, [v if v is not None else 0.0 for v in row], width, label=label)
    for c, name in enumerate(columns):
        if references and references.get(name) is not None:
            ax.hlines(references[name], c - 0.45, c + 0.45, colors="black", linestyles="dashed",
                      label="reference (best answer prior)" if c == 0 else None)
    ax.set_xticks(range(len(columns)), columns)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("score on held-out items")
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
