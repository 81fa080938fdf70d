"""The chart of every visible run's loss, rasterised from a :class:`ChartSpec`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.color import Color
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widget import Widget

from tuiloss.ui.widgets.segments import span_segments
from tuiloss.ui.widgets.styles import KeptStyles

if TYPE_CHECKING:
    from tuiloss.ui.chartdata import ChartSpec

# The rasteriser (numpy) loads with the first chart drawn, after the first frame, which
# shows the chart's frame-less "loading" line (see tuiloss.ui.app, "Start-up").


#: The x axis: its line and its labels, the chart's last two rows.
X_AXIS_ROWS = 2
#: The toasts' distance from the top of the screen (``ToastRack``'s margin in tuiloss.tcss).
TOASTS_TOP = 1


class LossChart(KeptStyles, Widget):
    """Draws a :class:`ChartSpec`. Only the UI thread calls :meth:`draw`.

    Textual's Line API: each row is a strip of the rasterised frame, and a new frame repaints only
    the rows that differ from the last (a followed run's newest column, the axis labels that moved).
    """

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
        self._frame: tuple[tuple, list[Text]] | None = None  # (spec, draw, size, colour), the lines
        self._strips: dict = {}  # the frame's lines as strips, made when first painted
        self._layers = None  # each curve rasterised alone, kept between frames (see canvas.Layers)
        self._look: tuple | None = None  # what the last spec drawn draws (see canvas.drawn_look)
        #: frames whose spec drew as the last one did, whose lines were kept (for tests)
        self.kept_frames = 0

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
        """Replace what is drawn: the frame is rasterised now, and only its rows that changed are painted."""
        from tuiloss.ui.canvas import drawn_look, same_look

        look, seen = drawn_look(spec), self._look
        self._look = look
        before = self._frame
        if (seen is not None and before is not None and self.spec is not None and before[0][2:] == self._key()[2:]
                and same_look(look, seen)):  # drawn as the last frame: its lines and strips stay
            self.spec = spec
            self.draws += 1
            self._frame = (self._key(), before[1])
            self.kept_frames += 1
            return
        self.spec = spec
        self.draws += 1
        lines = self.build_frame()
        if before is None or before[0][2:] != self._key()[2:] or len(before[1]) != len(lines):
            self.refresh()
            return
        width = self.size.width
        changed = [Region(0, y, width, 1) for y, (old, new) in enumerate(zip(before[1], lines))
                   if old is not new and old != new]  # a plot row kept from the last frame is the same line
        if changed:  # one refresh: each call drops the widget's caches and checks for idle again
            self.refresh(*changed)

    def _key(self) -> tuple:
        width, height = self.size
        return (id(self.spec), self.draws, width, height, not self.app.no_color)

    def build_frame(self) -> list[Text]:
        """The chart's lines for the current spec and size, rasterised once per spec and size."""
        key = self._key()
        if self._frame is not None and self._frame[0] == key:
            return self._frame[1]
        if self.spec is None:
            lines = [Text("loading…", style="dim", justify="center")]
        else:
            from tuiloss.ui.canvas import Layers, render_chart

            if self._layers is None:
                self._layers = Layers()
            lines = render_chart(self.spec, key[2], key[3], color=key[4], layers=self._layers)
        before = self._frame
        self._frame = (key, lines)
        kept = self._strips
        self._strips = {}
        if before is not None and before[0][2:] == key[2:] and "style" in kept:  # the strips of unchanged lines stay
            self._strips = {"style": kept["style"]}
            for y, (old, new) in enumerate(zip(before[1], lines)):
                if y in kept and (old is new or old == new):
                    self._strips[y] = kept[y]
        return lines

    def render_line(self, y: int) -> Strip:
        width, base = self.size.width, self.base_style
        lines = self.build_frame()
        if self._strips.get("style") != (base, width):
            self._strips = {"style": (base, width)}
        strip = self._strips.get(y)
        if strip is None:
            if y >= len(lines):
                strip = Strip.blank(width, base)
            else:
                line = lines[y]
                if self.spec is None:  # the "loading" line, centred
                    line = Text(line.plain.center(width), style=line.style)
                strip = Strip(span_segments(line, base, self.app.console)).crop_extend(0, width, base)
            self._strips[y] = strip
        return strip

    def capture(self, width: int | None = None, height: int | None = None) -> str:
        """The chart as plain text (for the export), at the current or a given size."""
        from tuiloss.ui.canvas import render_plain

        if self.spec is None:
            return "loading…"
        return render_plain(self.spec, width or max(self.size.width, 40), height or max(self.size.height, 12))
