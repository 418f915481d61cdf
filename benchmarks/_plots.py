"""The pictures the benchmarks draw for the documentation (``docs/images/``), in one look.

A benchmark that draws a picture first saves the numbers it measured in a JSON file beside
``RESULTS.md`` (``save_numbers``), then draws from those numbers, so that a picture can be drawn
again from the last run (``load_numbers``) without measuring anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["IMAGES", "Line", "Bar", "Panel", "save_numbers", "load_numbers", "run_facts", "draw_lines", "draw_bars"]

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
DPI = 120
ZOO_COLOUR, REFERENCE_COLOUR = "#e65100", "#78909c"  # zoo_lite in the site's deep orange, references in grey


@dataclass(frozen=True)
class Line:
    """One system's measurements across the x values of a line panel."""

    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


@dataclass(frozen=True)
class Bar:
    """One case of a bar panel: its value, the text written at the bar's end, and whether it is
    zoo_lite's (drawn in zoo_lite's colour) or a reference's."""

    label: str
    value: float
    note: str
    zoo_lite: bool


@dataclass(frozen=True)
class Panel:
    """One pair of axes: its title, axis labels, and dashed horizontal guides as (y, label)."""

    title: str
    x_label: str
    y_label: str
    guides: tuple[tuple[float, str], ...] = ()


def save_numbers(path: Path, numbers: dict[str, Any]) -> None:
    """Write a run's measured numbers as indented JSON (readable in a diff)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(numbers, indent=1) + "\n")


def load_numbers(path: Path) -> dict[str, Any]:
    """The numbers ``save_numbers`` wrote.

    Raises
    ------
    FileNotFoundError
        No run has saved them yet; the message names the file and says to run the benchmark.
    """
    if not path.exists():
        raise FileNotFoundError(f"no saved numbers at {path}: run the benchmark once (without the redraw option) to measure them")
    return json.loads(path.read_text())


def run_facts(numbers: dict[str, Any]) -> str:
    """The line under a picture's title that says when and on how busy a machine the numbers were
    measured: the date and the 1-minute load average before and after the run, when saved."""
    facts = [numbers["date"]]
    if "load_average" in numbers:
        before, after = numbers["load_average"]["before"][0], numbers["load_average"]["after"][0]
        facts.append(f"load average (1 min) {before:.1f} before the run, {after:.1f} after")
    return "; ".join(facts)


def draw_lines(path: Path, title: str, panels: Sequence[tuple[Panel, Sequence[Line]]], ticks: Sequence[tuple[float, str]]) -> None:
    """Panels side by side, a line with markers per system, on a log x axis whose only ticks are
    the measured x values (``ticks``: value, label).

    Parameters
    ----------
    path : Path
        The PNG to write.
    title : str
        The figure's title, above the panels.
    panels : sequence of (Panel, sequence of Line)
        Each panel and its lines.
    ticks : sequence of (float, str)
        The x values measured and their labels.
    """
    figure, axes = _figure(1, len(panels), (5.5 * len(panels), 4.5))
    for axis, (panel, lines) in zip(axes, panels):
        for line in lines:
            axis.plot(line.x, line.y, marker="o", label=line.label)
        for y, label in panel.guides:
            axis.axhline(y, color="black", linestyle="--", linewidth=1, label=label)
        axis.set_xscale("log")
        axis.set_xticks([value for value, _ in ticks], labels=[label for _, label in ticks])
        axis.minorticks_off()
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        _label(axis, panel)
        axis.legend(fontsize="small")
    _save(figure, title, path)


def draw_bars(path: Path, title: str, panels: Sequence[tuple[Panel, Sequence[Bar]]]) -> None:
    """Panels one above the other, horizontal bars sharing one value axis from 0, each bar's
    ``note`` at its end; zoo_lite's bars and the references' in two colours, with a legend.

    Parameters
    ----------
    path : Path
        The PNG to write.
    title : str
        The figure's title, above the panels.
    panels : sequence of (Panel, sequence of Bar)
        Each panel and its bars, drawn top to bottom.
    """
    from matplotlib.patches import Patch

    heights = [len(bars) for _, bars in panels]
    figure, axes = _figure(len(panels), 1, (10, 1.4 + 0.45 * sum(heights) + 0.6 * len(panels)),
                           sharex=True, gridspec_kw={"height_ratios": heights})
    widest = max(bar.value for _, bars in panels for bar in bars)
    for axis, (panel, bars) in zip(axes, panels):
        positions = range(len(bars))
        axis.barh(positions, [bar.value for bar in bars], color=[ZOO_COLOUR if bar.zoo_lite else REFERENCE_COLOUR for bar in bars])
        axis.set_yticks(positions, labels=[bar.label for bar in bars])
        axis.invert_yaxis()  # the first bar on top
        for position, bar in zip(positions, bars):
            axis.text(bar.value + widest * 0.01, position, bar.note, va="center", fontsize="small")
        axis.set_xlim(0, widest * 1.3)  # room for the notes
        axis.xaxis.set_tick_params(labelbottom=True)
        axis.xaxis.set_major_formatter("{x:,.0f}")
        axis.grid(True, axis="x", alpha=0.3)
        _label(axis, panel)
    axes[0].legend(handles=[Patch(color=ZOO_COLOUR, label="zoo_lite"), Patch(color=REFERENCE_COLOUR, label="reference")],
                   loc="lower right", fontsize="small")
    _save(figure, title, path)


def _figure(rows: int, columns: int, size: tuple[float, float], **options: Any) -> "tuple[Figure, list[Axes]]":
    """A figure of ``rows`` x ``columns`` panels on the Agg backend (no display), its axes in a flat list."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(rows, columns, figsize=size, constrained_layout=True, squeeze=False, **options)
    return figure, list(axes.flat)


def _label(axis: "Axes", panel: Panel) -> None:
    axis.set_title(panel.title)
    axis.set_xlabel(panel.x_label)
    axis.set_ylabel(panel.y_label)


def _save(figure: "Figure", title: str, path: Path) -> None:
    import matplotlib.pyplot as plt

    figure.suptitle(title)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
