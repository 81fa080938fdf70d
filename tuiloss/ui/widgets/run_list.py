"""The runs list, which is also the chart's legend: swatch, label, value, state, findings.

It shows the :class:`~tuiloss.ui.runstate.RunRow` values that :func:`~tuiloss.ui.runstate.list_rows` computes.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from typing import TYPE_CHECKING

from tuiloss.ui.markup import safe_label

if TYPE_CHECKING:  # the rows are computed after the first frame, with the store
    from tuiloss.ui.runstate import RunRow

STATE_STYLES = {"running": "bold green", "stalled": "yellow", "finished": "dim", "stopped": "dim", "killed": "yellow",
                "crashed": "bold red", "deleted": "red", "waiting": "dim", "unread": "yellow"}


class RunList(DataTable, inherit_bindings=False):
    """One row per run. Up/down move the highlight; the app's keys do the rest.

    Left/right/home/end are left to the app's step cursor, so DataTable's own
    bindings are not inherited.
    """

    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        # The highlight keeps each cell's own colour (the run's swatch, the state), on its own
        # background (tuiloss.tcss gives it one that none of the run colours is close to).
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True,
                         cursor_foreground_priority="renderable")
        self._rows: list[RunRow] = []
        self._value_header = "last"
        self._label_width = 0
        self.ascii = False  # labels shortened with "..." (--ascii)

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        self.add_column("#", key="number", width=2)
        self.add_column(" ", key="swatch", width=1)
        self.add_column("run", key="label")
        self.add_column(self._value_header, key="value", width=7)
        self.add_column("state", key="state", width=8)
        self.add_column("!", key="anomalies", width=2)

    @property
    def highlighted_key(self) -> str | None:
        if not self._rows or self.cursor_row < 0 or self.cursor_row >= len(self._rows):
            return None
        return self._rows[self.cursor_row].key

    @property
    def rows_shown(self) -> list[RunRow]:
        return list(self._rows)

    def show(self, rows: list[RunRow], value_header: str = "last", label_width: int = 60) -> None:
        """Show ``rows``, updating cells in place when the same runs are listed at the same width."""
        if rows == self._rows and value_header == self._value_header and label_width == self._label_width:
            return
        keep = self.highlighted_key
        if value_header != self._value_header or label_width != self._label_width:
            # New columns: a label column sized for another width would keep that width.
            self._value_header, self._label_width = value_header, label_width
            self.clear(columns=True)
            self._add_columns()
            self._rows = []
        if [r.key for r in rows] == [r.key for r in self._rows]:
            for old, new in zip(self._rows, rows):
                if old != new:
                    for column, cell in zip(("number", "swatch", "label", "value", "state", "anomalies"),
                                            _cells(new, label_width, self.ascii)):
                        self.update_cell(new.key, column, cell, update_width=column == "label")
        else:
            self.clear()
            for row in rows:
                self.add_row(*_cells(row, label_width, self.ascii), key=row.key)
            if keep is not None:
                for index, row in enumerate(rows):
                    if row.key == keep:
                        self.move_cursor(row=index)
                        break
        self._rows = list(rows)


def _cells(row: RunRow, label_width: int, ascii: bool = False) -> tuple[Text, ...]:
    dim = "" if row.visible else "dim"
    swatch = Text(row.swatch if row.visible else ("." if ascii else "·"), style=row.color if row.visible else "dim")
    label = Text(safe_label(row.label, label_width, ascii=ascii), style=dim)
    value = Text(row.value, style=dim, justify="right")
    state = Text(row.state, style=STATE_STYLES.get(row.state, ""))
    count = Text(str(row.anomalies) if row.anomalies else "", justify="right",
                 style="bold reverse" if row.new_anomaly else ("bold" if row.anomalies else ""))
    return Text(row.number, style="bold"), swatch, label, value, state, count
