"""One line at the bottom: what is watched, how, and how fresh it is."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from tuiloss.ui.markup import safe_label
from tuiloss.ui.widgets.segments import span_segments
from tuiloss.ui.widgets.styles import KeptStyles


@dataclass(frozen=True, slots=True)
class Status:
    runs: int = 0
    shown: int = 0
    points: int = 0
    files: int = 0
    mode: str = "starting"
    reason: str = ""
    since_last: float | None = None  # seconds since the last new point
    skipped: int = 0
    paused: bool = False
    loading: float | None = None  # progress 0..1 while loading; None when done
    filter: str | None = None
    error: str | None = None
    ascii: bool = False  # separators in ASCII (--ascii)
    #: Remote roots (tuiloss.core.remote.tree.RootStatus): protocol, poll interval, last error each.
    remote: tuple = ()


def age(seconds: float | None) -> str:
    if seconds is None:
        return "no points yet"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h ago"
    return f"{seconds / 86400:.1f}d ago"


def remote_name(url: str) -> str:
    """A remote root as the status bar names it: its host or bucket, and its last folder."""
    rest = url.split("://", 1)[-1].rstrip("/")
    host, _, path = rest.partition("/")
    last = path.rsplit("/", 1)[-1]
    return f"{host}/{last}" if last else host


def interval(seconds: float) -> str:
    """A poll interval: ``every 2s``, ``every 1.5s``, ``every 1m``."""
    if seconds >= 60:
        return f"every {seconds / 60:.0f}m"
    return f"every {seconds:.1f}s".replace(".0s", "s")


def status_text(status: Status) -> Text:
    out = Text(no_wrap=True, overflow="crop" if status.ascii else "ellipsis")
    dot = " - " if status.ascii else " · "
    if status.paused:
        out.append(" PAUSED ", style="bold reverse yellow")
        out.append(" ")
    if status.loading is not None:
        out.append(f"loading {status.loading:.0%} ", style="bold cyan")
    runs = f"{status.runs} run{'s' if status.runs != 1 else ''}"
    if status.shown != status.runs:
        runs = f"{status.shown}/{status.runs} runs"
    out.append(runs, style="bold")
    out.append(f"{dot}{status.points:,} points{dot}{status.files} file{'s' if status.files != 1 else ''}{dot}")
    mode = status.mode
    out.append(mode, style="bold" if mode == "inotify" else "bold yellow")
    if status.reason:
        out.append(f" ({safe_label(status.reason, 40)})")
    for root in status.remote:
        out.append(dot)
        out.append(f"{root.protocol} {safe_label(remote_name(root.url), 24)} {interval(root.interval)}",
                   style="bold red" if root.error else "bold")
        if root.error:
            out.append(f" {safe_label(root.error, 50)}", style="red")
    out.append(f"{dot}last point {age(status.since_last)}")
    if status.skipped:
        out.append(f"{dot}{status.skipped:,} skipped", style="yellow")
    if status.filter:
        out.append(f"{dot}filter /{safe_label(status.filter, 30)}/", style="cyan")
    if status.error:
        out.append(f"{dot}{safe_label(status.error, 60)}", style="bold red")
    return out


class StatusBar(KeptStyles, Widget):
    """Shows a :class:`Status` on its one line (Textual's Line API: the line is made once per status
    and width, and a new status repaints that line alone, without laying out or wrapping text)."""

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id)
        self.status = Status()
        self.text = status_text(self.status)
        self._strip: tuple[tuple, Strip] | None = None

    def show(self, status: Status) -> None:
        if status == self.status:
            return
        self.status = status
        text = status_text(status)
        if text != self.text:  # the age of the last point moves every second, its words seldom
            self.text = text
            self._strip = None
            self.refresh()

    def render_line(self, y: int) -> Strip:
        width, base = self.size.width, self.base_style
        if y != 0:
            return Strip.blank(width, base)
        key = (width, base)
        if self._strip is None or self._strip[0] != key:
            pad = Style.from_color(bgcolor=base.bgcolor)  # the line's rest, as Textual pads a widget's content
            self._strip = (key, Strip(span_segments(self.text, base, self.app.console, width)).crop_extend(0, width, pad))
        return self._strip[1]
