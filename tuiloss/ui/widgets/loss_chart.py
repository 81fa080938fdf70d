"""The chart of every visible run's loss, rasterised from a :class:`ChartSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual import events
from textual.color import Color
from textual.message import Message
from textual.widget import Widget

if TYPE_CHECKING:
    from tuiloss.ui.chartdata import ChartSpec

# The rasteriser (numpy) loads with the first chart drawn, after the first frame, which
# shows the chart's frame-less "loading" line (see tuiloss.ui.app, "Start-up").


#: The x axis: its line and its labels, the chart's last two rows.
X_AXIS_ROWS = 2
#: The toasts' distance from the top of the screen (``ToastRack``'s margin in tuiloss.tcss).
TOASTS_TOP = 1


class LossChart(Widget):
    """Draws a :class:`ChartSpec`. Only the UI thread calls :meth:`draw`."""

    DEFAULT_CSS = """
    LossChart {
        width: 1fr;
        height: 1fr;
        background: $surface;
    }
    """

    class Resized(Message):
        """The chart changed size: the data must be downsampled again."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.spec: ChartSpec | None = None  # until the first draw
        self.draws = 0
        self._rendered: tuple[tuple[int, int, int, int, bool], Text] | None = None

    @property
    def plot_width(self) -> int:
        """Columns of the plotting area (the widget less the axis labels and frame)."""
        from tuiloss.ui.canvas import Y_LABEL_COLUMNS

        return max(10, self.size.width - Y_LABEL_COLUMNS)

    @property
    def plot_height(self) -> int:
        """Rows of the plotting area (the widget less title, frame and x axis)."""
        from tuiloss.ui.canvas import FRAME_ROWS

        return max(4, self.size.height - FRAME_ROWS)

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())

    def fit_toasts(self) -> None:
        """Keep the screen's toasts (stacked from its top) above this chart's x axis and its labels.

        They sit over the chart's top or the panel, never over the runs list, the axis or the
        filter input below it; the newest stays in view and older ones scroll out of it.
        """
        room = max(1, self.region.bottom - X_AXIS_ROWS - TOASTS_TOP)
        for rack in self.screen.query_children("ToastRack"):  # absent when notifications are off
            rack.styles.max_height = room

    @property
    def background(self) -> tuple[int, int, int]:
        """The theme's surface colour, which the rasteriser blends faint dots into."""
        try:
            return Color.parse(self.app.theme_variables.get("surface", "#1e1e1e")).rgb
        except Exception:
            return (30, 30, 30)

    def draw(self, spec: ChartSpec) -> None:
        """Replace what is drawn."""
        self.spec = spec
        self.draws += 1
        self.refresh()

    def render(self) -> RenderableType:
        if self.spec is None:
            return Text("loading…", style="dim", justify="center")
        from tuiloss.ui.canvas import render_chart

        width, height = self.size
        color = not self.app.no_color
        key = (id(self.spec), self.draws, width, height, color)
        if self._rendered is None or self._rendered[0] != key:
            lines = render_chart(self.spec, width, height, color=color)
            text = Text("\n").join(lines)
            text.no_wrap = True
            text.overflow = "crop"
            self._rendered = (key, text)
        return self._rendered[1]

    def capture(self, width: int | None = None, height: int | None = None) -> str:
        """The chart as plain text (for the export), at the current or a given size."""
        from tuiloss.ui.canvas import render_plain

        if self.spec is None:
            return "loading…"
        return render_plain(self.spec, width or max(self.size.width, 40), height or max(self.size.height, 12))
