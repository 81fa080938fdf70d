"""Modal screens: the key help and the metric picker."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from tuiloss.ui.keys import KEYS, MARKS
from tuiloss.ui.markup import safe_label

class HelpScreen(ModalScreen[None]):
    """Every key, and what the marks on the chart mean."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold cyan", no_wrap=True)
        table.add_column()
        for key, what in KEYS:
            table.add_row(key, what)
        table.add_row("", "")
        for mark, what in MARKS:
            table.add_row(mark.split(" / ")[-1] if _ascii(self) else mark, what)
        with VerticalScroll(id="help-box"):
            title = Text("tuiloss keys", style="bold")
            title.append("   escape or ? closes; up/down scroll", style="dim")  # on top: seen at any height
            yield Static(title, id="help-title")
            yield Static(table)

    def on_mount(self) -> None:
        self.set_class(_ascii(self), "ascii")
        self.query_one("#help-box").focus()

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class MetricScreen(ModalScreen[str | None]):
    """Pick the metric to chart; the result is the metric name or None to cancel."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, metrics: list[tuple[str, int]], current: str | None) -> None:
        super().__init__()
        self.metrics = metrics  # (name, number of runs that have it)
        self.current = current

    def compose(self) -> ComposeResult:
        options = [Option(Text("each run's primary metric", style="italic"))]
        for name, count in self.metrics:
            prompt = Text(safe_label(name, 60))
            prompt.append(f"  ({count} run{'s' if count != 1 else ''})", style="dim")
            options.append(Option(prompt))
        with Vertical(id="metric-box"):
            yield Static(Text("Chart which metric?", style="bold"))
            yield OptionList(*options, id="metric-list")

    def on_mount(self) -> None:
        self.set_class(_ascii(self), "ascii")
        option_list = self.query_one(OptionList)
        index = 0
        for i, (name, _) in enumerate(self.metrics, 1):
            if name == self.current:
                index = i
        option_list.highlighted = index
        option_list.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        index = event.option_index
        self.dismiss("" if index == 0 else self.metrics[index - 1][0])

    def action_cancel(self) -> None:
        self.dismiss(None)


def _ascii(screen: ModalScreen) -> bool:
    """Whether the app was asked for ASCII only (``--ascii``)."""
    config = getattr(screen.app, "config", None)
    return bool(getattr(config, "ascii", False))
