"""The side panel with the findings of the visible runs."""

from __future__ import annotations

from bisect import bisect_right

from rich.segment import Segment
from rich.text import Span, Text
from textual import events
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip


class InsightsPanel(ScrollView, can_focus=True):
    """Scrollable findings; the app fills it from the report of the visible runs.

    The text comes wrapped to the panel's width (:func:`~tuiloss.ui.insights.render_insights`),
    so each of its lines is one line on screen: only the lines on screen are rendered (Textual's
    Line API), and a panel of ten thousand runs costs what a screenful does. Tab focuses it;
    up/down/page keys then scroll.
    """

    DEFAULT_CSS = """
    InsightsPanel {
        overflow-x: hidden;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.text = Text("analysing…")
        self.border_title = "Insights"
        self._starts: list[int] = [0]  # where each line of the text starts
        self._spans: list[list[Span]] | None = None  # per line, the spans on it (found when first drawn)
        self._strips: dict[int, Strip] = {}
        self._style_key: tuple | None = None

    def show(self, text: Text) -> None:
        if text.plain == self.text.plain and text.spans == self.text.spans:
            return
        self.text = text
        plain = text.plain
        starts, at = [0], plain.find("\n")
        while at != -1:
            starts.append(at + 1)
            at = plain.find("\n", at + 1)
        self._starts, self._spans = starts, None
        self._strips.clear()
        self._fit()
        self.refresh()

    def on_resize(self, _: events.Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        self.virtual_size = Size(0, len(self._starts))

    def _line(self, index: int) -> Text:
        """Line ``index`` of the text, with its styles (``Text.split`` would cut every line at once)."""
        starts, text = self._starts, self.text
        if self._spans is None:
            self._spans = [[] for _ in starts]
            for span in text.spans:
                first = bisect_right(starts, span.start) - 1
                for k in range(first, len(starts)):
                    if starts[k] >= span.end:
                        break
                    self._spans[k].append(span)
        start = starts[index]
        end = starts[index + 1] - 1 if index + 1 < len(starts) else len(text.plain)
        spans = [Span(max(s.start, start) - start, min(s.end, end) - start, s.style)
                 for s in self._spans[index] if min(s.end, end) > max(s.start, start)]
        return Text(text.plain[start:end], style=text.style, spans=spans)

    def render_line(self, y: int) -> Strip:
        width, base = self.size.width, self.rich_style
        if (width, base) != self._style_key:
            self._strips.clear()
            self._style_key = (width, base)
        index = int(self.scroll_offset.y) + y
        if index >= len(self._starts):
            return Strip.blank(width, base)
        strip = self._strips.get(index)
        if strip is None:
            line = self._line(index)
            segments = Segment.apply_style(line.render(self.app.console, end=""), base)
            strip = self._strips[index] = Strip(list(segments)).crop_extend(0, width, base)
        return strip
