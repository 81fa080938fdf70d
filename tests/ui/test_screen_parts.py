"""Where toasts sit, how wide the panel grows, the highlighted row's swatch, and the list and
panel agreeing on the numbers they share, at the sizes a user's terminal has."""

from __future__ import annotations

import json

import pytest
from textual.geometry import Region
from textual.widgets._toast import Toast, ToastRack  # where Textual keeps them

from tuiloss.core.analysis.display import fmt_value
from tuiloss.ui.app import make_app

from ui_helpers import settle, wait_for, wait_loaded

SIZES = [(60, 20), (80, 24), (120, 40), (200, 60)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_toasts_never_cover_the_runs_list_the_x_axis_or_the_filter(size, sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=size, notifications=True) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("slash")  # the filter input open at the bottom
        await wait_for(pilot, lambda: app.filter_input.is_open, what="the filter input")
        for k in range(4):  # more toasts than fit: the rack stays in its top part of the screen
            app.notify(f"run {k}: spiked to 1.60 at 100.3K (8x the 0.201 baseline), recovered by 100.4K",
                       title="new spike", severity="warning", timeout=30, markup=False)
        rack = app.screen.get_child_by_type(ToastRack)
        await wait_for(pilot, lambda: len(list(rack.walk_children(Toast))) == 4, what="the toasts")
        await pilot.pause()
        chart = app.chart.region
        x_axis = Region(chart.x, chart.bottom - 2, chart.width, 2)  # the axis line and its labels
        guarded = {"x axis": x_axis, "filter": app.filter_input.region}
        if app.run_list.display and app.run_list.region.area:
            guarded["runs list"] = app.run_list.region
        covered = {name: [] for name in guarded}
        toasts = set(rack.walk_children())
        for name, part in guarded.items():
            for y in range(part.y, part.bottom):
                for x in range(part.x, part.right):
                    widget, _ = app.screen.get_widget_at(x, y)  # what is drawn on top there
                    if widget in toasts:
                        covered[name].append((x, y))
        assert not any(covered.values()), {name: cells[:3] for name, cells in covered.items() if cells}
        top, _ = app.screen.get_widget_at(app.size.width - 2, 2)
        assert top in toasts  # and the newest toast does show, at the top right


async def test_the_panel_grows_with_the_terminal_and_keeps_labels_on_one_line(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        at_120 = app.insights_panel.outer_size.width
        await pilot.resize_terminal(200, 60)
        await settle(pilot, app)
        await wait_for(pilot, lambda: app.insights_panel.outer_size.width > at_120, what="a wider panel")
        await settle(pilot, app)
        text = app.insights_panel.text.plain
        for number, run in app.selection.numbered(list(app.store)):
            # the run's title line holds its whole label: no second line
            head = next(line for line in text.splitlines() if line.startswith(f"{number} "))
            assert head.endswith(run.label), head
        assert at_120 == 46 and app.insights_panel.outer_size.width >= 60
        assert app.chart.size.width >= 120  # the chart keeps most of the width


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_highlighted_row_keeps_the_run_colour(size, sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=size) as pilot:
        await wait_loaded(pilot, app)
        run_list = app.run_list
        assert run_list.cursor_row == 0
        for row in range(len(app.store)):
            run_list.move_cursor(row=row)
            await pilot.pause()
            key = run_list.highlighted_key
            strip = run_list.render_line(row + 1)  # line 0 is the header
            swatch = next(seg for seg in strip if seg.text.strip() == "■")
            assert swatch.style.color.get_truecolor() == app.selection.color(key)
            assert swatch.style.bgcolor != swatch.style.color  # on a bar of another colour


async def test_the_list_and_the_panel_agree_on_the_last_value_once_analysed(tmp_path, config_for):
    log = tmp_path / "run" / "metrics.jsonl"
    log.parent.mkdir()
    log.write_text("".join(json.dumps({"step": s, "loss": 2.0 / (1 + s / 100)}) + "\n" for s in range(10, 2010, 10)))
    app = make_app(config_for(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        with open(log, "a") as handle:
            handle.write(json.dumps({"step": 2010, "loss": 0.4321}) + "\n")
        await wait_for(pilot, lambda: app.run_list.rows_shown[0].value == fmt_value(0.4321), what="the new point listed")
        # the analysis that follows (the panel's next refresh) has the same last value
        await wait_for(pilot, lambda: app.report.runs[0].primary.final == 0.4321, what="the panel's analysis")
        await settle(pilot, app)
        assert app.run_list.rows_shown[0].value == fmt_value(app.report.runs[0].primary.final)
