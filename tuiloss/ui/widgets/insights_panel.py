"""The side panel with the findings of the visible runs."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static


class InsightsPanel(VerticalScroll):
    """Scrollable findings; the app fills it from the report of the visible runs."""

    can_focus = True  # tab focuses it; up/down/page keys then scroll

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.text = Text("analysing…")
        self.border_title = "Insights"

    def compose(self) -> ComposeResult:
        yield Static(self.text, id="insights-body")

    def show(self, text: Text) -> None:
        if text.plain == self.text.plain and text.spans == self.text.spans:
            return
        self.text = text
        if self.is_mounted:
            self.query_one("#insights-body", Static).update(text)
