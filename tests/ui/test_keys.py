"""Every key of the viewer, pressed in a running app on a copy of the sample logs."""

from __future__ import annotations

import time

import pandas as pd

import pytest

from tuiloss.ui.app import make_app
from tuiloss.ui.screens import HelpScreen, MetricScreen
from tuiloss.ui.widgets.status_bar import status_text

from ui_helpers import settle, wait_loaded


@pytest.fixture
def app(sample_logs, config_for, tmp_path):
    return make_app(config_for(sample_logs), export_dir=str(tmp_path / "exports"))


def labels_shown(app):
    return [run.label for run in app.shown_runs()]


async def test_number_keys_space_a_n_o(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        first = [run.label for run in app.listed_runs()]
        assert len(labels_shown(app)) == 7
        await pilot.press("1")
        assert labels_shown(app) == first[1:]
        await pilot.press("1", "3")
        assert first[2] not in labels_shown(app) and first[0] in labels_shown(app)
        await pilot.press("n")
        assert labels_shown(app) == []
        await settle(pilot, app)
        assert app.chart.spec.empty == "no runs to show"
        await pilot.press("a")
        assert labels_shown(app) == first
        await pilot.press("down", "o")  # only the highlighted (second) run
        assert labels_shown(app) == [first[1]]
        await pilot.press("space")
        assert labels_shown(app) == []
        await pilot.press("space", "0", "9")  # runs 10 and 9 do not exist: nothing happens
        assert labels_shown(app) == [first[1]]
        await settle(pilot, app)
        assert [r.visible for r in app.run_list.rows_shown] == [False, True, False, False, False, False, False]


async def test_filter_by_regex_over_labels_and_config(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("slash")
        assert app.focused.id == "filter"
        await pilot.press(*"post", "enter")
        assert [run.label for run in app.listed_runs()] == ["Post-Norm | DeepNorm | Gradient Clip=1",
                                                            "Post-Norm | DeepNorm | Gradient Clip=1 | Seed 2024"]
        assert app.focused is app.run_list
        await pilot.press("slash", *"gradient_clip=10 .*seed=1234", "enter")  # config key=values
        assert [run.label for run in app.listed_runs()] == ["Pre-Norm | Gradient Clip=10 | Run 1"]
        clip10 = app.listed_runs()[0]
        number = next(n for n, run in enumerate(app.store, 1) if run is clip10)
        assert number == 5 and app.run_list.rows_shown[0].number == "5"  # it keeps its number
        await pilot.press("1")  # run 1 is filtered out: nothing to toggle
        assert all(app.selection.is_on(run.id) for run in app.store)
        await pilot.press("5")
        assert not app.selection.is_on(clip10.id)
        await pilot.press("5")
        await pilot.press("slash", *"(", "enter")  # invalid: kept open, old filter stays
        assert app.selection.filter.pattern == "gradient_clip=10 .*seed=1234"
        await pilot.press("escape")  # clears the filter
        assert app.focused is app.run_list
        assert app.selection.filter is None and len(app.listed_runs()) == 7
        await pilot.press("slash", *"post", "enter")
        await pilot.press("slash", "ctrl+u", "enter")  # an empty filter clears it too
        assert app.selection.filter is None and len(app.listed_runs()) == 7


async def test_cursor_keys_show_values_at_a_step(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("end")
        assert app.view.cursor == pytest.approx(100_000)
        await pilot.press("home")
        assert app.view.cursor == pytest.approx(99, rel=0.02)
        await pilot.press("x")  # linear steps make the arithmetic easy to check
        await pilot.press("end")
        for _ in range(3):
            await pilot.press("left")
        assert 90_000 < app.view.cursor < 100_000
        await pilot.press("right")
        await settle(pilot, app)
        header = app.run_list.value_header
        assert header.startswith("@9") and header.endswith("K")
        values = [row.value for row in app.run_list.rows_shown]
        assert all(v not in ("", "-") for v in values)
        assert "cursor" in app.chart.spec.title
        await pilot.press("escape")
        assert app.view.cursor is None
        await settle(pilot, app)
        assert app.run_list.value_header == "last"


async def test_zoom_axes_smoothing_and_eval(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        assert app.chart.spec.x_log and app.chart.spec.x_ticks[1] == ["100", "1K", "10K", "100K"]
        await pilot.press("x")
        await settle(pilot, app)
        assert not app.chart.spec.x_log
        await pilot.press("left_square_bracket")
        await settle(pilot, app)
        assert app.chart.spec.x_lim[0] == pytest.approx(50_000, rel=0.01)
        await pilot.press("left_square_bracket")
        await settle(pilot, app)
        assert app.chart.spec.x_lim[0] == pytest.approx(75_000, rel=0.01)
        await pilot.press("right_square_bracket")
        await settle(pilot, app)
        assert app.chart.spec.x_lim[0] == pytest.approx(50_000, rel=0.01)
        await pilot.press("r")
        await settle(pilot, app)
        assert app.chart.spec.x_lim[0] < 1000
        await pilot.press("y")
        await settle(pilot, app)
        assert "log y" in app.chart.spec.title
        await pilot.press("s")
        assert app.view.smoothing == 0.6
        await settle(pilot, app)
        assert "EMA 0.6" in app.chart.spec.title
        await pilot.press("s", "s", "s")
        assert app.view.smoothing == 0.0
        await pilot.press("v")
        await settle(pilot, app)
        scatters = [t for t in app.chart.spec.traces if t.kind == "scatter"]
        assert len(scatters) == 7  # every sample run has an evaluation series
        assert all(len(t.xs) == 20 for t in scatters)


async def test_metric_picker(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("m")
        assert isinstance(app.screen, MetricScreen)
        names = [name for name, _ in app.screen.metrics]
        assert "grad_norm" in names
        index = names.index("grad_norm") + 1
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("enter")
        assert app.selection.metric == "grad_norm"
        await settle(pilot, app)
        assert app.chart.spec.title.startswith("grad_norm")
        await pilot.press("m", "escape")
        assert app.selection.metric == "grad_norm"
        await pilot.press("m", "home", "enter")
        assert app.selection.metric is None


async def test_insights_toggle_pause_help_and_quit(app):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        panel = app.insights_panel
        assert panel.display and not panel.has_class("hidden")
        assert "Post-Norm | DeepNorm | Gradient Clip=1" in " ".join(panel.text.plain.split())
        await pilot.press("i")
        assert panel.has_class("hidden")
        await pilot.press("i")
        assert not panel.has_class("hidden")
        await pilot.press("p")
        assert app.ingestor.paused and app.status_bar.status.paused
        assert "PAUSED" in status_text(app.status_bar.status).plain
        await pilot.press("p")
        assert not app.ingestor.paused
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("q")
    assert not app.is_running and app.return_code in (0, None)
    assert app.ingestor.stopping()
    deadline = time.monotonic() + 10  # an analysis under way finishes its pass first
    while app.insights.worker._thread.is_alive():
        assert time.monotonic() < deadline, "the insights thread did not end"
        time.sleep(0.02)


async def test_export_writes_report_and_chart_outside_the_logs(app, tmp_path, sample_logs):
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("e")
        await pilot.press("5")  # run 5 off: the points written are those of the shown runs
        await settle(pilot, app)
        await pilot.press("e")
        report_path, chart_path, csv_path = app.last_export
        shown = {run.label: sum(len(s) for s in run.series.values()) for run in app.shown_runs()}
    assert report_path.startswith(str(tmp_path / "exports"))
    report = open(report_path).read()
    chart = open(chart_path).read()
    assert "Post-Norm | DeepNorm | Gradient Clip=1" in report
    assert "100K" in chart and "Pre-Norm | Gradient Clip=1 | Run 2" in chart
    assert "Pre-Norm | Gradient Clip=10 | Run 1" not in chart  # switched off
    table = pd.read_csv(csv_path, keep_default_na=False)
    assert list(table.columns) == ["run", "metric", "step", "value", "segment", "run_id"]
    assert len(shown) == 6 and table.groupby("run").size().to_dict() == shown
    assert not any(p.name.startswith("tuiloss-") for p in sample_logs.rglob("*"))


async def test_narrow_terminal_starts_with_insights_hidden(sample_logs, config_for):
    app = make_app(config_for(sample_logs))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        assert app.insights_panel.has_class("hidden")
        await pilot.press("i")
        await settle(pilot, app)
        assert not app.insights_panel.has_class("hidden")
        assert app.insights_panel.size.width >= 70  # stacked under the chart, full width


async def test_ctrl_c_quits(app):
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_loaded(pilot, app)
        await pilot.press("ctrl+c")
    assert not app.is_running
