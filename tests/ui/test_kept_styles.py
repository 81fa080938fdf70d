"""The Line API widgets keep their Rich styles between frames and work them out again when their
styles change (a theme, focus, a class on a container above them)."""

from __future__ import annotations

from tuiloss.ui.app import make_app
from tuiloss.ui.widgets import LossChart, RunList, StatusBar

from ui_helpers import settle, wait_loaded


def _fresh(widget) -> bool:
    """Whether the widget's kept styles are what Textual works out now."""
    components = {"run-list--header", "run-list--cursor"} if isinstance(widget, RunList) else set()
    return widget.base_style == widget.rich_style and all(
        widget.component_style(name) == widget.get_component_rich_style(name) for name in components)


async def test_kept_styles_follow_the_theme_focus_and_classes_above(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        widgets = [app.query_one(LossChart), app.query_one(RunList), app.query_one(StatusBar)]
        for widget in widgets:
            assert _fresh(widget)
        kept = [widget.base_style for widget in widgets]
        assert [widget.base_style for widget in widgets] == kept and all(
            a is b for a, b in zip(kept, [widget.base_style for widget in widgets]))  # kept, not worked out again
        run_list = app.query_one(RunList)
        run_list.focus()
        await settle(pilot, app)
        assert _fresh(run_list)
        app.screen.add_class("ascii")  # a class on the screen restyles what is under it
        await settle(pilot, app)
        for widget in widgets:
            assert _fresh(widget)
        themes = [name for name in app.available_themes if name != app.theme]
        app.theme = "textual-light" if "textual-light" in themes else themes[0]
        await settle(pilot, app)
        assert [widget.base_style for widget in widgets] != kept
        for widget in widgets:
            assert _fresh(widget)


def test_the_status_line_cut_from_its_spans_is_what_rich_renders():
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style

    from tuiloss.ui.widgets.segments import span_segments
    from tuiloss.ui.widgets.status_bar import Status, status_text

    console = Console(width=200, color_system="truecolor")
    base = Style(color="#e0e0e0", bgcolor="#1e1e1e")
    statuses = [Status(), Status(runs=100, shown=40, points=1_000_123, files=100, mode="inotify", since_last=3.0),
                Status(runs=2, points=10, mode="polling", reason="NFS", skipped=12, filter="lr=3e-4", paused=True,
                       loading=0.5, error="a bad line", ascii=True),
                Status(runs=1, points=5, mode="inotify", error="oops\ttab")]
    for status in statuses:
        text = status_text(status)
        for width in (200, 120, 60, 20):
            line = text.copy()
            line.truncate(width, overflow=line.overflow)
            rich = list(Segment.apply_style(line.render(console, end=""), base))
            ours = span_segments(text, base, console, width)

            def cells(segments):
                return [(ch, seg.style) for seg in segments for ch in seg.text]

            assert cells(ours) == cells(rich), (status, width)


async def test_a_spec_that_draws_as_the_last_one_keeps_its_lines_and_any_other_is_rendered():
    import numpy as np
    from textual.app import App, ComposeResult

    from tuiloss.ui.canvas import render_chart
    from tuiloss.ui.chartdata import ChartSpec, Label, Trace

    class One(App):
        def compose(self) -> ComposeResult:
            yield LossChart()

    xs = np.linspace(0.0, 1.0, 50)
    traces = [Trace(xs, xs ** 2, (200, 50, 50), "braille"), Trace(xs, 1 - xs, (50, 50, 200), "braille")]

    def spec(traces=traces, **changes) -> ChartSpec:
        made = ChartSpec(traces=list(traces), x_lim=(0.0, 1.0), y_lim=(0.0, 1.0), title="loss",
                         x_ticks=([0.0, 1.0], ["0", "1"]), y_ticks=([0.0, 1.0], ["0", "1"]))
        for name, value in changes.items():
            setattr(made, name, value)
        return made

    app = One()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(LossChart)
        await pilot.pause()
        width, height = chart.size
        same_points = Trace(xs, xs ** 2, (200, 50, 50), "braille")  # equal, but another trace: drawn again
        frames = [(spec(), False), (spec(), True), (spec(), True),
                  (spec(labels=[Label("*", 0.5, 0.5, (1, 2, 3))]), False),
                  (spec(labels=[Label("*", 0.5, 0.5, (1, 2, 3))]), True),
                  (spec(title="loss · log y"), False), (spec(y_lim=(0.0, 2.0)), False),
                  (spec(traces=[same_points, traces[1]], y_lim=(0.0, 2.0)), False),
                  (spec(traces=[same_points, traces[1]], y_lim=(0.0, 2.0)), True),
                  (spec(traces=traces[:1], y_lim=(0.0, 2.0)), False)]
        for k, (made, kept) in enumerate(frames):
            before = chart.kept_frames
            chart.draw(made)
            await pilot.pause()
            assert chart.kept_frames - before == kept, k
            assert chart.spec is made
            fresh = render_chart(made, width, height)
            assert [(line.plain, line.spans) for line in chart.build_frame()] == [
                (line.plain, line.spans) for line in fresh], k
