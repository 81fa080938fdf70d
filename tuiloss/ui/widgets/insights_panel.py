"""The side panel with the findings of the visible runs."""

from __future__ import annotations

from rich.segment import Segment
from rich.text import Text
from textual import events
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuiloss.ui.lines import PanelLines


class InsightsPanel(ScrollView, can_focus=True):
    """Scrollable findings; the app fills it from the report of the visible runs.

    The text comes wrapped to the panel's width (:func:`~tuiloss.ui.insights.render_lines`),
    so each of its lines is one line on screen: only the lines on screen are rendered (Textual's
    Line API), read from the runs' blocks as they are kept (:class:`~tuiloss.ui.lines.PanelLines`),
    and a panel of ten thousand runs costs what a screenful does. Tab focuses it; up/down/page
    keys then scroll.
    """

    DEFAULT_CSS = """
    InsightsPanel {
        overflow-x: hidden;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.lines = PanelLines([Text("analysing…")])
        self.border_title = "Insights"
        self._strips: dict[int, Strip] = {}
        self._style_key: tuple | None = None

    @property
    def text(self) -> Text:
        """The whole text shown (joined when asked for: tests and exports)."""
        return self.lines.joined()

    def show(self, text: Text | PanelLines) -> None:
        """Show ``text``; only the lines on screen that changed are painted again (a followed run
        changes its own block: the other runs' lines keep their strips)."""
        lines = text if isinstance(text, PanelLines) else PanelLines([text])
        if lines.same(self.lines):
            return
        before, kept = self.lines, self._strips
        self.lines, self._strips = lines, {}
        self._fit()
        first, (width, height) = int(self.scroll_offset.y), self.size
        for y in range(height):
            index = first + y
            old = before.line(index) if index < len(before) else None
            new = lines.line(index) if index < len(lines) else None
            if old is None and new is None:
                continue  # blank in both
            if (old is not None and new is not None and index in kept and old.plain == new.plain
                    and old.spans == new.spans and old.style == new.style):
                self._strips[index] = kept[index]
            else:
                self.refresh(Region(0, y, width, 1))

    def on_resize(self, _: events.Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        self.virtual_size = Size(0, max(1, len(self.lines)))

    def render_line(self, y: int) -> Strip:
        width, base = self.size.width, self.rich_style
        if (width, base) != self._style_key:
            self._strips.clear()
            self._style_key = (width, base)
        index = int(self.scroll_offset.y) + y
        if index >= len(self.lines):
            return Strip.blank(width, base)
        strip = self._strips.get(index)
        if strip is None:
            line = self.lines.line(index)
            segments = Segment.apply_style(line.render(self.app.console, end=""), base)
            strip = self._strips[index] = Strip(list(segments)).crop_extend(0, width, base)
        return strip
