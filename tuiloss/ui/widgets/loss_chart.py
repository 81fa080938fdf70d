"""The chart of every visible run's loss, drawn with plotext from a :class:`ChartSpec`."""

from __future__ import annotations

import re

from textual import events
from textual.message import Message
from textual_plotext import PlotextPlot

from tuiloss.ui.chartdata import ChartSpec

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: Columns plotext keeps for the y tick labels and the frame.
Y_LABEL_COLUMNS = 8


class LossChart(PlotextPlot):
    """Draws a :class:`ChartSpec`. Only the UI thread calls :meth:`draw`."""

    class Resized(Message):
        """The chart changed size: the data must be downsampled again."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.spec = ChartSpec(empty="loading…")
        self.draws = 0

    @property
    def plot_width(self) -> int:
        """Columns of the plotting area (the widget less the axis labels)."""
        return max(10, self.size.width - Y_LABEL_COLUMNS)

    @property
    def plot_height(self) -> int:
        """Rows of the plotting area (the widget less title and x axis)."""
        return max(4, self.size.height - 4)

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())

    def draw(self, spec: ChartSpec) -> None:
        """Replace what is plotted (``clear_data`` resets limits and ticks: set them again)."""
        self.spec = spec
        plt = self.plt
        plt.clear_data()
        plt.title(spec.title)
        if spec.empty:
            plt.xticks([], [])
            plt.yticks([], [])
            plt.text(spec.empty, 0.5, 0.5, alignment="center")
            plt.xlim(0, 1)
            plt.ylim(0, 1)
            self.draws += 1
            self.refresh()
            return
        for trace in spec.traces:
            if not trace.xs:
                continue
            if trace.kind == "scatter":
                plt.scatter(trace.xs, trace.ys, color=trace.color, marker=trace.marker)
            else:
                plt.plot(trace.xs, trace.ys, color=trace.color, marker=trace.marker)
        for x, color in spec.vlines:
            plt.vline(x, color=color)
        for label in spec.labels:
            plt.text(label.text, label.x, label.y, color=label.color, alignment=label.alignment)
        plt.xlim(*spec.x_lim)
        plt.ylim(*spec.y_lim)
        plt.xticks(list(spec.x_ticks[0]), list(spec.x_ticks[1]))
        plt.yticks(list(spec.y_ticks[0]), list(spec.y_ticks[1]))
        self.draws += 1
        self.refresh()

    def capture(self, width: int | None = None, height: int | None = None) -> str:
        """The chart as plain text (for the export), at the current or a given size."""
        plt = self.plt
        w = width or max(self.size.width, 40)
        h = height or max(self.size.height, 12)
        plt.plotsize(w, h)
        plt._set_size(w, h)
        text = _ANSI.sub("", plt.build())
        return "\n".join(line.rstrip() for line in text.splitlines())
