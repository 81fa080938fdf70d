"""The runs list, which is also the chart's legend: swatch, label, value, state, findings.

It shows a sequence of :class:`~tuiloss.ui.runstate.RunRow` values (a
:class:`~tuiloss.ui.runstate.ListedRuns`, which works a row out when it is asked for) with
Textual's Line API: only the rows on screen are rendered, and a new model repaints only the
lines that changed, so ten thousand runs cost what a dozen do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tuiloss.ui.markup import safe_label
from tuiloss.ui.widgets.styles import KeptStyles

if TYPE_CHECKING:  # the rows are computed after the first frame, with the store
    from tuiloss.ui.runstate import RunRow

STATE_STYLES = {"running": "bold green", "stalled": "yellow", "finished": "dim", "stopped": "dim", "killed": "yellow",
                "crashed": "bold red", "deleted": "red", "waiting": "dim", "unread": "yellow"}
#: The fixed columns' widths: number, swatch, (label), value, state, findings; each cell has one
#: blank column either side.
NUMBER, SWATCH, VALUE, STATE, COUNT = 2, 1, 7, 8, 2
PADDING = 1
HEADER_LINES = 1


class RunList(KeptStyles, ScrollView, can_focus=True):
    """One row per run under a fixed header. Up/down move the highlight; the app's keys do the rest.

    Left/right/home/end are left to the app's step cursor.
    """

    COMPONENT_CLASSES = {"run-list--header", "run-list--cursor"}
    DEFAULT_CSS = """
    RunList {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &:focus { background-tint: $foreground 5%; }
        & > .run-list--header { text-style: bold; background: $panel; color: $foreground; }
        &:focus > .run-list--header { background-tint: $foreground 5%; }
        &:ansi > .run-list--header { background: ansi_bright_blue; color: ansi_default; }
        & > .run-list--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .run-list--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self._rows: Sequence[RunRow] = ()
        self._value_header = "last"
        self._label_width = 0  # the most a label may take
        self._label_column = 3  # what the label column takes now: the longest label shown, within that
        self._labels_measured: tuple[list[str], int] | None = None  # (labels, limit) last measured
        self.cursor_row = 0
        self.ascii = False  # labels shortened with "..." (--ascii)
        self._strips: dict[tuple, Strip] = {}
        self._styles_key: tuple | None = None

    # -- what is shown ------------------------------------------------------------------------

    @property
    def highlighted_key(self) -> str | None:
        if not self._rows or not 0 <= self.cursor_row < len(self._rows):
            return None
        key = getattr(self._rows, "key", None)
        return key(self.cursor_row) if key is not None else self._rows[self.cursor_row].key

    @property
    def rows_shown(self) -> list[RunRow]:
        return list(self._rows)

    @property
    def value_header(self) -> str:
        """The value column's header: ``last``, or ``@STEP`` at the step cursor."""
        return self._value_header

    def show(self, rows: Sequence[RunRow], value_header: str = "last", label_width: int = 60) -> None:
        """Show ``rows``; only the lines on screen that changed are painted again."""
        old, keep = self._rows, self.highlighted_key
        same = getattr(rows, "same_rows", None)
        same = same is not None and same(old)  # the same runs, order and labels as the rows shown
        if same:
            rows.take_index(old)
            take_rows = getattr(rows, "take_rows", None)
            if take_rows is not None:  # rows whose run and inputs did not change are kept
                take_rows(old)
        self._rows = rows
        index = _index_of(rows, keep) if keep is not None else None
        self.cursor_row = index if index is not None else min(self.cursor_row, max(0, len(rows) - 1))
        column = self._label_column if same and self._labels_measured and self._labels_measured[1] == label_width \
            else self._measure_labels(rows, label_width)
        layout_changed = (value_header != self._value_header or label_width != self._label_width
                          or column != self._label_column or len(rows) != len(old))
        self._value_header, self._label_width, self._label_column = value_header, label_width, column
        if layout_changed:
            self.virtual_size = Size(self._content_width, len(rows) + HEADER_LINES)
            self._scroll_to_cursor()
            self.refresh()
            return
        if index is None and keep is not None:
            self.refresh()
            return
        first, width = self._first_row, self.size.width
        changed = []
        for line in range(HEADER_LINES, self.size.height):
            k = first + line - HEADER_LINES
            if k >= len(rows):
                break
            row, was = rows[k], old[k]
            if row is not was and row != was:  # a kept row is the same object
                changed.append(Region(0, line, width, 1))
        if changed:  # one refresh: each call drops the widget's caches and checks for idle again
            self.refresh(*changed)

    def _measure_labels(self, rows: Sequence[RunRow], limit: int) -> int:
        """The label column's width: the longest label as shown, at most ``limit`` (as a table sizes it)."""
        labels = rows.labels() if hasattr(rows, "labels") else [row.label for row in rows]
        measured = (labels, limit)
        if measured == self._labels_measured:
            return self._label_column
        longest = max((len(label) for label in labels), default=0)
        if longest > limit or not all(label.isascii() and label.isprintable() for label in labels):
            longest = max((cell_len(safe_label(label, limit, ascii=self.ascii)) for label in labels), default=0)
        self._labels_measured = measured
        return max(3, min(limit, longest))

    @property
    def _content_width(self) -> int:
        widths = (NUMBER, SWATCH, self._label_column, VALUE, STATE, COUNT)
        return sum(widths) + 2 * PADDING * len(widths)

    @property
    def _first_row(self) -> int:
        return int(self.scroll_offset.y)

    # -- the cursor ---------------------------------------------------------------------------

    def move_cursor(self, *, row: int) -> None:
        """Highlight row ``row`` (clamped) and scroll it into view."""
        if not self._rows:
            return
        row = min(max(row, 0), len(self._rows) - 1)
        if row == self.cursor_row:
            return
        before, self.cursor_row = self.cursor_row, row
        if not self._scroll_to_cursor():
            for index in (before, row):
                self.refresh(Region(0, index - self._first_row + HEADER_LINES, self.size.width, 1))

    def _scroll_to_cursor(self) -> bool:
        """Scroll so the cursor's row is on screen; whether it scrolled."""
        visible = max(1, self.size.height - HEADER_LINES)
        first = self._first_row
        if self.cursor_row < first:
            target = self.cursor_row
        elif self.cursor_row >= first + visible:
            target = self.cursor_row - visible + 1
        else:
            return False
        self.scroll_to(y=target, animate=False, immediate=True)
        self.refresh()
        return True

    def action_cursor_up(self) -> None:
        self.move_cursor(row=self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(row=self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(row=self.cursor_row - max(1, self.size.height - HEADER_LINES))

    def action_page_down(self) -> None:
        self.move_cursor(row=self.cursor_row + max(1, self.size.height - HEADER_LINES))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= HEADER_LINES:
            self.move_cursor(row=self._first_row + offset.y - HEADER_LINES)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self.refresh()

    # -- drawing ------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        base = self.base_style
        styles_key = (base, self.component_style("run-list--header"),
                      self.component_style("run-list--cursor"), width, self._label_column, self.ascii)
        if styles_key != self._styles_key:
            self._strips.clear()
            self._styles_key = styles_key
        if y < HEADER_LINES:
            key = ("header", self._value_header)
            row = None
        else:
            index = self._first_row + y - HEADER_LINES
            if index >= len(self._rows):
                return Strip.blank(width, base)
            row = self._rows[index]
            key = (row, index == self.cursor_row)
        strip = self._strips.get(key)
        if strip is None:
            if len(self._strips) > 512:
                self._strips.clear()
            strip = self._strips[key] = self._render_row(row, key[1] is True, width, base)
        return strip

    def _render_row(self, row: RunRow | None, cursor: bool, width: int, base: Style) -> Strip:
        if row is None:
            style = base + self.component_style("run-list--header")
            cells = [("#", "", "left"), ("", "", "left"), ("run", "", "left"), (self._value_header, "", "left"),
                     ("state", "", "left"), ("!", "", "left")]
        else:
            style = base + self.component_style("run-list--cursor") if cursor else base
            dim = "" if row.visible else "dim"
            swatch = row.swatch if row.visible else ("." if self.ascii else "·")
            count_style = "bold reverse" if row.new_anomaly else ("bold" if row.anomalies else "")
            cells = [(row.number, "bold", "left"), (swatch, row.color if row.visible else "dim", "left"),
                     (safe_label(row.label, self._label_width, ascii=self.ascii), dim, "left"),
                     (row.value, dim, "right"), (row.state, STATE_STYLES.get(row.state, ""), "left"),
                     (str(row.anomalies) if row.anomalies else "", count_style, "right")]
        widths = (NUMBER, SWATCH, self._label_column, VALUE, STATE, COUNT)
        pad = " " * PADDING
        segments = []
        for (text, cell_style, justify), cell_width in zip(cells, widths):
            text = _fit(text, cell_width)
            gap = " " * (cell_width - cell_len(text))
            body = gap + text if justify == "right" else text + gap
            segments.append(Segment(pad, style))
            segments.append(Segment(body, style + _style(cell_style) if cell_style else style))
            segments.append(Segment(pad, style))
        return Strip(segments).crop_extend(0, width, base)


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells."""
    if cell_len(text) <= width:
        return text
    out, used = [], 0
    for char in text:
        used += cell_len(char)
        if used > width:
            break
        out.append(char)
    return "".join(out)


_STYLES: dict[str, Style] = {}


def _style(text: str) -> Style:
    style = _STYLES.get(text)
    if style is None:
        style = _STYLES[text] = Style.parse(text)
    return style


def _index_of(rows: Sequence[RunRow], key: str) -> int | None:
    index_of = getattr(rows, "index_of", None)
    if index_of is not None:
        return index_of(key)
    return next((k for k, row in enumerate(rows) if row.key == key), None)
