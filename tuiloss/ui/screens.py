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

from tuiloss.ui.markup import safe_label

KEYS = (
    ("1-9, 0", "show or hide run 1-10"),
    ("space", "show or hide the highlighted run"),
    ("up / down", "highlight a run"),
    ("a / n / o", "show all runs / none / only the highlighted one"),
    ("/", "filter runs by a regex over labels and config; empty or escape clears; runs keep their numbers"),
    ("left / right", "move the step cursor; values at the cursor appear in the list"),
    ("home / end", "cursor to the first / last step"),
    ("escape", "hide the cursor, then clear the NEW marks of fresh findings"),
    ("[ / ]", "zoom the step range in / out around the latest data"),
    ("r", "reset the zoom"),
    ("x", "log or linear step axis"),
    ("y", "linear or log loss axis (log by default when the values span a decade)"),
    ("s", "cycle smoothing (EMA 0, 0.6, 0.9, 0.99); the raw curve stays behind"),
    ("v", "overlay the evaluation series (val_loss, eval_loss...) as dots"),
    ("m", "pick the metric to chart"),
    ("i", "show or hide the insights panel"),
    ("tab", "focus the runs list or the insights panel (up/down scroll it)"),
    ("p", "pause or resume live updates"),
    ("e", "export a markdown report and a text capture of the chart"),
    ("?", "this help"),
    ("q", "quit"),
)

MARKS = (
    ("▲ / ^", "spike, with its peak value"),
    ("↗ / /", "upward drift (a bar spans it)"),
    ("↑ / !", "divergence"),
    ("× / X", "NaN or Inf (at the top)"),
    ("↺ / R", "a new segment: step reset, truncated or replaced log"),
)


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
            yield Static(Text("tuiloss keys", style="bold"), id="help-title")
            yield Static(table)
            yield Static(Text("escape or ? closes; up/down scroll", style="dim"))

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
