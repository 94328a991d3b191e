"""The one plotting module: bars, lines, references, titles and axis labels where the data says."""

from __future__ import annotations

import pytest
from PIL import Image

from lookcloser.plots import bar_figure, comparison_chart, comparison_figure, line_chart, line_figure


def _bars(ax) -> list[tuple[str, float]]:
    """(legend label, length) of every bar, in drawing order."""
    out = []
    for container in ax.containers:
        out += [(container.get_label(), patch.get_height() if patch.get_width() < 1 else patch.get_width())
                for patch in container.patches]
    return out


def test_comparison_chart_a_bar_per_measured_cell_labelled_and_a_reference_per_column(tmp_path):
    figure = comparison_figure(["sft", "grpo"], ["mir", "tir_bench"], [[50.0, None], [75.0, 20.0]],
                               {"mir": 37.5}, "held-out accuracy")
    (ax,) = figure.axes
    assert _bars(ax) == [("sft", 50.0), ("grpo", 75.0), ("grpo", 20.0)]  # None: no bar
    assert [t.get_text() for t in ax.get_xticklabels()] == ["mir", "tir_bench"]
    assert (ax.get_title(), ax.get_ylabel(), ax.get_xlabel()) == ("held-out accuracy", "score (%)", "benchmark")
    assert sorted(t.get_text() for t in ax.texts if t.get_text()[0].isdigit()) == ["20.0", "37.5", "50.0", "75.0"]
    (reference,) = ax.collections  # one dashed line, over the mir group only
    (segment,) = reference.get_segments()
    assert segment[0][1] == segment[1][1] == 37.5 and segment[1][0] < 0.5
    with pytest.raises(ValueError, match="2 rows of 2 columns"):
        comparison_chart(["a", "b"], ["x", "y"], [[1.0, 2.0]], None, tmp_path / "bad.png", "t")
    assert not (tmp_path / "bad.png").exists()
    path = comparison_chart(["sft"], ["mir"], [[50.0]], None, tmp_path / "ok.png", "t")
    with Image.open(path) as img:
        assert img.format == "PNG" and img.width >= 600


def test_bar_figure_rows_top_down_and_published_ranges(tmp_path):
    figure = bar_figure(["overall", "group=a (n=2)"], ["em", "f1"], [[100.0, 50.0], [25.0, None]], "disbench",
                        references={"em": [10.0, 14.0]}, value_label="score (%)")
    (ax,) = figure.axes
    assert _bars(ax) == [("em", 100.0), ("em", 25.0), ("f1", 50.0)]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["overall", "group=a (n=2)"]
    assert ax.yaxis_inverted()  # the first row on top
    assert sorted(line.get_xdata()[0] for line in ax.lines) == [10.0, 14.0]  # both ends of "10-14"
    assert ax.get_xlabel() == "score (%)" and ax.get_title() == "disbench"


def test_line_chart_one_panel_per_quantity_and_empty_panels_say_so(tmp_path):
    figure = line_figure([("loss", {"training loss": [(1, 2.0), (2, 1.0), (3, 0.5)]}), ("accuracy", {"acc": []})],
                         "SFT run")
    loss, accuracy = figure.axes
    (line,) = loss.lines
    assert list(line.get_ydata()) == [2.0, 1.0, 0.5] and line.get_label() == "training loss"
    assert loss.get_ylabel() == "loss" and accuracy.get_xlabel() == "step"
    assert [t.get_text() for t in accuracy.texts] == ["not logged"]
    assert figure.get_suptitle() == "SFT run"
    assert line_chart([("loss", {"x": [(1, 1.0)]})], tmp_path / "c.png", "t").is_file()
