"""The main screen's partial updates render only the changed rows of each widget, and send what
Textual's own compositor sends (see :mod:`tuiloss.ui.repaint`)."""

from __future__ import annotations

from rich.segment import Segment
from textual._compositor import Compositor
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from tuiloss.ui.app import make_app
from tuiloss.ui.repaint import MainScreen, RowsCompositor, rows_only_supported

from test_live import jsonl_run
from ui_helpers import settle, wait_for, wait_loaded


def _painted(update) -> list | None:
    """What a partial update paints: per span, its cells as segments (a chop that ends where a
    span starts sends only a cursor move, which paints nothing)."""
    if update is None:
        return None
    out = []
    for y, x1, x2 in update.spans:
        cells = []
        for end, (x, strip) in zip(update.chop_ends[y], update.chops[y].items()):
            if x >= x2 or end <= x1:
                continue
            cells.append(None if strip is None else
                         [(seg.text, seg.style) for seg in strip.crop(max(x1, x) - x, min(x2, end) - x)])
        out.append((y, x1, x2, cells))
    return out


def _compare_updates(compositor: Compositor, console, seen: list[tuple[str | None, str | None]], ours_only=None):
    """Have ``compositor`` note, for each partial update, what it painted and what Textual's own
    rendering of the same changed regions paints, and the text it sent (``ours_only[0]`` is true
    while it renders its own)."""
    own = compositor.render_partial_update
    sent = compositor.sent = []

    def both():
        dirty = set(compositor._dirty_regions)
        if ours_only is not None:
            ours_only[0] = True
        try:
            ours = own()
        finally:
            if ours_only is not None:
                ours_only[0] = False
        compositor._dirty_regions.update(dirty)
        theirs = Compositor.render_partial_update(compositor)
        seen.append((_painted(ours), _painted(theirs)))
        sent.append(None if ours is None else ours.render_segments(console))
        return ours

    compositor.render_partial_update = both


class Rows(Widget):
    """Lines of text; :meth:`put` repaints one."""

    def __init__(self, name: str, count: int, *, id: str) -> None:  # noqa: A002
        super().__init__(id=id)
        self.lines = [f"{name} {k}" for k in range(count)]

    def put(self, k: int, text: str) -> None:
        self.lines[k] = text
        self.refresh(Region(0, k, self.size.width, 1))

    def render_line(self, y: int) -> Strip:
        text = self.lines[y] if y < len(self.lines) else ""
        width = self.size.width
        return Strip([Segment(text.ljust(width)[:width], self.rich_style)])


class Panes(App[None]):
    CSS = """
    #left { width: 2fr; } #side { width: 1fr; } #top { height: 1fr; } #list { height: 1fr; }
    #bottom { height: 1; dock: bottom; }
    """

    def get_default_screen(self) -> MainScreen:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="left"):
                yield Rows("top", 12, id="top")
                yield Rows("list", 12, id="list")
            yield Rows("side", 30, id="side")
        yield Rows("status", 1, id="bottom")


def test_this_textual_has_what_the_rows_compositor_refines():
    assert rows_only_supported()


async def test_only_the_widgets_under_changed_rows_render_and_the_update_is_textuals():
    app = Panes()
    async with app.run_test(size=(60, 24)) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        assert isinstance(compositor, RowsCompositor)
        seen: list = []
        ours_only = [False]
        _compare_updates(compositor, app.console, seen, ours_only)
        rendered: list[tuple[str, int, int]] = []
        for widget in [app.screen, *app.screen.query("*")]:
            def noting(crop, widget=widget, render=widget.render_lines):
                if ours_only[0]:
                    rendered.append((widget.id or type(widget).__name__, crop.y, crop.height))
                return render(crop)
            widget.render_lines = noting
        top, side, bottom = (app.query_one(f"#{name}", Rows) for name in ("top", "side", "bottom"))
        top.put(2, "top 2 changed")
        bottom.put(0, "status changed")
        await pilot.pause()
        await pilot.pause()
        assert seen and all(ours == theirs for ours, theirs in seen)
        assert any("top 2 changed" in text and "status changed" in text for text in compositor.sent if text)
        # Textual's crop is the box around both changes, the whole screen: here only the two rows
        # render, and the side panel and the list between them not at all, nor the containers
        # behind the changed rows
        assert sorted(rendered) == [("bottom", 0, 1), ("top", 2, 1)]
        rendered.clear()
        side.put(20, "side 20 changed")
        top.put(5, "top 5 changed")
        await pilot.pause()
        await pilot.pause()
        assert all(ours == theirs for ours, theirs in seen)
        assert sorted(rendered) == [("side", 20, 1), ("top", 5, 1)]


async def test_a_followed_log_sends_what_textuals_compositor_would(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert isinstance(app.screen._compositor, RowsCompositor)
        seen: list = []
        _compare_updates(app.screen._compositor, app.console, seen)
        run = jsonl_run(app)
        before = len(run.series["loss"])
        path = sample_logs / "prenorm_clip1" / "metrics.jsonl"
        for k in range(6):
            with open(path, "a") as handle:
                handle.write(f'{{"step": {100100 + 100 * k}, "loss": {0.5 - 0.05 * k:.3f}}}\n')
            await wait_for(pilot, lambda k=k: len(run.series["loss"]) == before + k + 1, 15, "the point read")
            await settle(pilot, app)
        await pilot.press("down", "down", "1")  # a key's frame and the list's cursor
        await settle(pilot, app)
        sent = [pair for pair in seen if pair[0] is not None]
        assert len(sent) >= 6
        assert all(ours == theirs for ours, theirs in seen)
